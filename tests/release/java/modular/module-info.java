// The release jar's named-module user (scripts/release/jar.sh, verify_jar): compiled with
// `javac --module-path rlock-V.jar` and run with `java --module-path ... -m`, without Micrometer.
module rlock.release.modular {
  requires io.rlock;
}
