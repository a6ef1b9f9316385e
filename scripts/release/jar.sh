# Stage "jar" of scripts/build-release.sh (sourced): rlock-<v>.jar (module io.rlock) with
# librlock_jni.so for linux-x86_64 and linux-aarch64, rlock-<v>-sources.jar, rlock-<v>-javadoc.jar
# and rlock-<v>.pom (the POM as published, coordinates $jar_group:rlock), each with .md5 and .sha1
# as Maven Central asks; not signed (docs/packaging.md). Then each add-on module of $jar_modules
# (its own artifactId, depending on the base jar): <artifactId>-<v>.jar, -sources.jar,
# -javadoc.jar and .pom, the same way.
# The JNI library is compiled by the native stage inside the release root (glibc 2.31, OpenSSL and
# hiredis static), which has neither SWIG nor a JDK: stage_jni, run before build_native, runs SWIG
# here on the host once (the C wrapper for every architecture and the .java classes from the same
# run) and copies this JDK's JNI headers into the root. Maven then packs the jar here.
# Needs: $repo, $root, $work, $dist, $version, $arches, lib.sh sourced.

# Inside the root: SWIG's output (c/rlockJAVA_wrap.c, java/io/rlock/internal/*.java) and a copy of
# the JDK's include directory (jni.h, linux/jni_md.h).
jar_swig=/build/jar-swig
jar_jni_include=/opt/jni/include
jar_group=io.github.rlock  # bindings/java/pom.xml's groupId
# The add-on modules: Maven projects under bindings/java, each a jar of its own on the base jar.
jar_modules=(spring-integration)

# The cmake options build_native adds so that the JNI library is built too.
jar_native_cmake_options() {
  echo "-DRLOCK_BUILD_JAVA=ON -DRLOCK_JAVA_SWIG_WRAPPER=$jar_swig/c/rlockJAVA_wrap.c" \
    "-DRLOCK_JNI_INCLUDE_DIR=$jar_jni_include"
}

jar_jdk_home() {
  local javac
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
    echo "$JAVA_HOME"
  elif javac=$(command -v javac); then
    dirname "$(dirname "$(readlink -f "$javac")")"
  else
    die "the jar needs a JDK 11+ (javac, jar, JNI headers): none found (set JAVA_HOME)"
  fi
}

# Before build_native: the SWIG output and the JNI headers, in the root.
stage_jni() {
  local jdk out=$root$jar_swig
  jdk=$(jar_jdk_home)
  [ -f "$jdk/include/jni.h" ] && [ -f "$jdk/include/linux/jni_md.h" ] ||
    die "$jdk has no include/jni.h and include/linux/jni_md.h (a JRE, not a JDK?)"
  command -v swig >/dev/null || die "the jar needs SWIG 4 (swig, with Java) on this machine"
  # jni_md.h is OpenJDK's one header for every Unix: the x86_64 JDK's serves aarch64 too.
  rm -rf "$root$jar_jni_include" && mkdir -p "$(dirname "$root$jar_jni_include")"
  cp -r "$jdk/include" "$root$jar_jni_include"
  # The same SWIG command as bindings/java/CMakeLists.txt's (UseSWIG) in a dev build.
  rm -rf "$out" && mkdir -p "$out/c" "$out/java/io/rlock/internal"
  swig -java -I"$repo/capi/include" -package io.rlock.internal \
    -outdir "$out/java/io/rlock/internal" -o "$out/c/rlockJAVA_wrap.c" \
    "$repo/bindings/java/rlock.i" >"$work/swig.log" 2>&1 ||
    die "swig failed on bindings/java/rlock.i; see $work/swig.log"
}

# The library the native stage built for an architecture, on the host.
# RLOCK_JAR_NATIVE_TREES=/build/other- packs the libraries of other build trees (/build/other-ARCH).
jar_native_lib() {
  echo "$root${RLOCK_JAR_NATIVE_TREES:-/build/native-}$1/bindings/java/native/librlock_jni.so"
}

# Maven on the dev build's pom: the libraries of $work/jar/natives, the classes of the SWIG run;
# its release profile adds the javadoc jar and the published POM.
jar_mvn() {
  mvn -B -Dstyle.color=never -f "$repo/bindings/java/pom.xml" -Prelease "$@" package \
    "-Drevision=$version" \
    "-Drlock.build.dir=$work/jar/maven" \
    "-Drlock.native.dir=$work/jar/natives/native/linux-x86_64" \
    "-Drlock.natives.dir=$work/jar/natives" \
    "-Drlock.swig.dir=$root$jar_swig/java" \
    -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false >"$work/jar.log" 2>&1
}

build_jar() {
  local arch lib tree=$work/jar/natives its=() jdk
  jdk=$(jar_jdk_home)
  command -v mvn >/dev/null || die "the jar needs Maven (mvn) on this machine"
  rm -rf "$work/jar" && mkdir -p "$tree"
  [ -f "$root$jar_swig/c/rlockJAVA_wrap.c" ] ||
    die "no SWIG output in $root$jar_swig: run the native stage (stage_jni, build_native) first"
  for arch in "${arches[@]}"; do
    lib=$(jar_native_lib "$arch")
    [ -f "$lib" ] || die "no $lib: run the native stage for $arch (with $(jar_native_cmake_options))"
    # The library and the .java classes must come from one SWIG run: the build tree keeps a copy
    # of the wrapper it compiled.
    cmp -s "$(dirname "$lib")/../swig-c/rlockJAVA_wrap.c" "$root$jar_swig/c/rlockJAVA_wrap.c" ||
      die "$lib was not compiled from the SWIG wrapper in $root$jar_swig:" \
        "run the native stage for $arch again"
    mkdir -p "$tree/native/linux-$arch"
    cp "$lib" "$tree/native/linux-$arch/"
  done
  # The JUnit suite runs in the dev build (CTest java_junit); here only the failsafe check that a
  # JVM given the jar alone loads the library from it, which needs a redis-server and this
  # machine's (x86_64) library.
  if ! command -v redis-server >/dev/null; then
    log "no redis-server here: the jar's own loading check (JarIT) is skipped"
    its=(-DskipITs)
  elif [ ! -d "$tree/native/linux-x86_64" ]; then
    its=(-DskipITs)
  fi
  log "packing the jar (${arches[*]})"
  # Offline first: ~/.m2 has every plugin after a dev build (java_junit); else Maven fetches them.
  jar_mvn -o "${its[@]}" || {
    grep -q 'in offline mode' "$work/jar.log" ||
      die "Maven failed to pack the jar; see $work/jar.log"
    log "Maven lacks plugins offline; running it online"
    jar_mvn "${its[@]}" || die "Maven failed to pack the jar; see $work/jar.log"
  }
  cp "$work/jar/maven/rlock-$version.jar" "$work/jar/maven/rlock-$version-javadoc.jar" \
    "$work/jar/maven/rlock-$version.pom" "$dist/"
  mkdir -p "$work/jar/meta/META-INF"
  cp "$(third_party_notices)" "$work/jar/meta/META-INF/"
  "$jdk/bin/jar" --update --file "$dist/rlock-$version.jar" -C "$work/jar/meta" META-INF/THIRD-PARTY-NOTICES
  # Sources for IDEs: the hand-written and the generated classes.
  rm -f "$dist/rlock-$version-sources.jar"
  "$jdk/bin/jar" --create --file "$dist/rlock-$version-sources.jar" \
    -C "$repo/bindings/java/src/main/java" . -C "$root$jar_swig/java" .
  local f
  for f in "" -sources.jar -javadoc.jar .pom; do
    f=$dist/rlock-$version${f:-.jar}
    md5sum "$f" | cut -d' ' -f1 >"$f.md5"
    sha1sum "$f" | cut -d' ' -f1 >"$f.sha1"
  done
  local module
  for module in "${jar_modules[@]}"; do
    build_jar_module "$repo/bindings/java/$module"
  done
}

# The artifactId of a module's pom.xml (the project's own, not its parent's or a dependency's).
jar_pom_artifact() {
  python3 -c 'import sys, xml.etree.ElementTree as ET
print(ET.parse(sys.argv[1]).getroot().findtext("{http://maven.apache.org/POM/4.0.0}artifactId"))' "$1"
}

# Maven, offline first (~/.m2 has every plugin after a dev build), online if it lacks some.
# jar_mvn_logged LOG ARGS...
jar_mvn_logged() {
  local log_file=$1
  shift
  mvn -B -Dstyle.color=never -o "$@" >"$log_file" 2>&1 && return 0
  grep -q 'in offline mode' "$log_file" || return 1
  log "Maven lacks plugins offline; running it online"
  mvn -B -Dstyle.color=never "$@" >"$log_file" 2>&1
}

# An add-on module (bindings/java/<dir>): its jar, sources, javadoc and published POM into $dist.
# It resolves io.github.rlock:rlock:$version from the local repository, so the base jar just built
# (with its published POM) is installed there first.
build_jar_module() {
  local dir=$1 artifact out jdk f
  jdk=$(jar_jdk_home)
  artifact=$(jar_pom_artifact "$dir/pom.xml")
  [ -n "$artifact" ] || die "no artifactId in $dir/pom.xml"
  out=$work/jar/$artifact
  jar_mvn_logged "$work/jar-install-base.log" install:install-file \
    "-Dfile=$dist/rlock-$version.jar" "-DpomFile=$dist/rlock-$version.pom" ||
    die "installing the base jar into ~/.m2 for $artifact failed; see $work/jar-install-base.log"
  log "packing $artifact"
  # Its tests run in the dev build (CTest); here only the jar, javadoc and POM.
  jar_mvn_logged "$work/jar-$artifact.log" -f "$dir/pom.xml" -Prelease package -DskipTests \
    "-Drevision=$version" "-Drlock.build.dir=$out" ||
    die "Maven failed to pack $artifact; see $work/jar-$artifact.log"
  cp "$out/$artifact-$version.jar" "$out/$artifact-$version-javadoc.jar" \
    "$out/$artifact-$version.pom" "$dist/"
  rm -f "$dist/$artifact-$version-sources.jar"
  "$jdk/bin/jar" --create --file "$dist/$artifact-$version-sources.jar" -C "$dir/src/main/java" .
  for f in "" -sources.jar -javadoc.jar .pom; do
    f=$dist/$artifact-$version${f:-.jar}
    md5sum "$f" | cut -d' ' -f1 >"$f.md5"
    sha1sum "$f" | cut -d' ' -f1 >"$f.sha1"
  done
}

# An add-on module's artifacts: what Central requires, Java 17 class files (Spring's baseline),
# an Automatic-Module-Name, and a POM depending on this version of the base jar.
verify_jar_module() {
  local dir=$1 artifact jar manifest
  artifact=$(jar_pom_artifact "$dir/pom.xml")
  jar=$dist/$artifact-$version.jar
  [ -f "$jar" ] || die "verify_jar: no $jar (run the jar stage)"
  python3 "$repo/scripts/release/check_central.py" "$dist" "$jar_group" "$artifact" "$version" \
    --release 17 >"$work/central-$artifact.log" 2>&1 ||
    die "verify_jar: the $artifact artifacts miss what Maven Central requires:" \
      "$(tr '\n' ';' <"$work/central-$artifact.log")"
  manifest=$(unzip -p "$jar" META-INF/MANIFEST.MF | tr -d '\r')
  grep -q '^Automatic-Module-Name: io\.rlock\.' <<<"$manifest" ||
    die "verify_jar: $jar has no Automatic-Module-Name io.rlock.*"
  python3 - "$dist/$artifact-$version.pom" "$jar_group" "$version" <<'PY' ||
import sys, xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
pom, group, version = sys.argv[1:]
deps = ET.parse(pom).getroot().findall("m:dependencies/m:dependency", ns)
sys.exit(0 if any(d.findtext("m:groupId", namespaces=ns) == group
                  and d.findtext("m:artifactId", namespaces=ns) == "rlock"
                  and d.findtext("m:version", namespaces=ns) == version
                  and d.findtext("m:scope", namespaces=ns) == "compile" for d in deps) else 1)
PY
    die "verify_jar: $artifact-$version.pom does not depend on $jar_group:rlock:$version (compile)"
  log "jar: $(cat "$work/central-$artifact.log")"
  log "jar: $(basename "$jar"), $(stat -c %s "$jar") bytes, verified"
}

# A named-module user of the jar (tests/release/java/modular, without Micrometer): compiled for
# Java 11 against the jar as a module, run with both on the module path; it takes and releases a
# lock, so the module's descriptor, exports and the JNI library's loading from it all work.
# Runs while verify_jar's redis-server does (stopped here on failure).
jar_modular_check() {
  local jar=$1 tmp=$2 jdk=$3 sources
  mapfile -t sources < <(find "$repo/tests/release/java/modular" -name '*.java')
  rm -rf "$tmp/modular" && mkdir -p "$tmp/modular"
  "$jdk/bin/javac" --release 11 -Xlint:all -Werror --module-path "$jar" -d "$tmp/modular" \
    "${sources[@]}" >"$tmp/modular.log" 2>&1 || {
    stop_redis
    die "verify_jar: the modular user (requires io.rlock) did not compile against $jar;" \
      "see $tmp/modular.log"
  }
  "$jdk/bin/java" -Djava.library.path="$tmp/empty" --module-path "$jar:$tmp/modular" \
    -m rlock.release.modular/rlock.release.modular.ModularLock \
    "redis://127.0.0.1:$redis_port" "$version" >"$tmp/modular.log" 2>&1 || {
    stop_redis
    die "verify_jar: the modular user did not take a lock with module io.rlock;" \
      "see $tmp/modular.log"
  }
  log "jar: modular: $(cat "$tmp/modular.log")"
}

verify_jar() {
  local jar=$dist/rlock-$version.jar tmp=$work/verify-jar arch so summary url rc=0 jdk
  jdk=$(jar_jdk_home)
  [ -f "$jar" ] || die "verify_jar: no $jar (run the jar stage)"
  python3 "$repo/scripts/release/check_central.py" "$dist" "$jar_group" rlock "$version" \
    --optional io.micrometer:micrometer-core --release 11 >"$work/central.log" 2>&1 ||
    die "verify_jar: the Java artifacts miss what Maven Central requires:" \
      "$(tr '\n' ';' <"$work/central.log")"
  log "jar: $(cat "$work/central.log")"
  # The jar is module io.rlock, exporting its API and not io.rlock.internal (the SWIG classes).
  summary=$("$jdk/bin/jar" --describe-module --file "$jar" 2>&1) ||
    die "verify_jar: jar --describe-module failed on $jar: $summary"
  grep -q "^io\.rlock@$version jar:" <<<"$summary" &&
    grep -qx 'exports io\.rlock' <<<"$summary" &&
    grep -qx 'exports io\.rlock\.micrometer' <<<"$summary" &&
    ! grep -q '^exports io\.rlock\.internal' <<<"$summary" ||
    die "verify_jar: $jar is not module io.rlock@$version exporting io.rlock and" \
      "io.rlock.micrometer only: $(tr '\n' ';' <<<"$summary")"
  log "jar: module $(head -n1 <<<"$summary" | cut -d' ' -f1)," \
    "exports $(grep '^exports' <<<"$summary" | cut -d' ' -f2 | paste -sd' ')"
  rm -rf "$tmp" && mkdir -p "$tmp/x" "$tmp/empty"
  (cd "$tmp/x" && unzip -q "$jar") || die "verify_jar: $jar is not a zip file"
  for f in io/rlock/RedisLockClient.class io/rlock/internal/RlockNativeJNI.class \
           io/rlock/internal/NativeLoader.class; do
    [ -f "$tmp/x/$f" ] || die "verify_jar: $jar lacks $f"
  done
  for arch in "${arches[@]}"; do
    so=$tmp/x/native/linux-$arch/librlock_jni.so
    [ -f "$so" ] || die "verify_jar: $jar lacks native/linux-$arch/librlock_jni.so"
    summary=$(check_elf "$so" "$arch" '^(Java_|JNI_On)')  # an assignment, so a failure stops here
    log "jar: linux-$arch: $summary"
  done
  # This machine's JVM, given nothing but the jar (and an empty library path), takes and releases
  # a lock on a redis-server of its own, over TCP and over TLS (the jar's static OpenSSL).
  "$repo/tests/fixtures/tls-certs.sh" "$tmp/certs" >/dev/null 2>&1 ||
    die "verify_jar: making test certificates failed (tests/fixtures/tls-certs.sh; needs openssl)"
  start_redis "$tmp/certs"
  for url in "redis://127.0.0.1:$redis_port" \
             "rediss://127.0.0.1:$redis_tls_port?tls_ca_file=$tmp/certs/ca.crt"; do
    "$jdk/bin/java" -Djava.library.path="$tmp/empty" -cp "$jar" \
      "$repo/tests/release/java/JarLock.java" "$url" "$version" >"$tmp/java.log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || break
    log "jar: ${url%%\?*}: $(cat "$tmp/java.log")"
  done
  [ "$rc" != 0 ] || jar_modular_check "$jar" "$tmp" "$jdk"
  stop_redis
  [ "$rc" = 0 ] || die "verify_jar: a JVM with only the jar did not take a lock at $url;" \
    "see $tmp/java.log"
  log "jar: $(basename "$jar"), $(stat -c %s "$jar") bytes, verified"
  local module
  for module in "${jar_modules[@]}"; do
    verify_jar_module "$repo/bindings/java/$module"
  done
}
