# Stage "jar" of scripts/build-release.sh (sourced): rlock-<v>.jar (module io.rlock) with
# librlock_jni.so for linux-x86_64 and linux-aarch64, rlock-<v>-sources.jar, rlock-<v>-javadoc.jar
# and rlock-<v>.pom (the POM as published, coordinates $jar_group:rlock), each with .md5 and .sha1
# as Maven Central asks; not signed (docs/packaging.md). Then the same four files of each module
# built on it ($jar_modules: rlock-shedlock, rlock-spring-integration), with their own artifact
# ids.
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
# The modules built on the base jar, ARTIFACT:DIR (DIR under bindings/java, its pom's artifactId
# ARTIFACT); each has a verify_jar_module_<DIR> with its own checks (a '-' in DIR as '_').
jar_modules=(rlock-shedlock:shedlock rlock-spring-integration:spring-integration)

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
  jar_checksums rlock
  local module
  for module in "${jar_modules[@]}"; do
    jar_build_module "${module%%:*}" "${module#*:}"
  done
}

# The .md5 and .sha1 Maven Central asks for, of ARTIFACT's jar, sources, javadoc and POM in $dist.
jar_checksums() {
  local f
  for f in "" -sources.jar -javadoc.jar .pom; do
    f=$dist/$1-$version${f:-.jar}
    md5sum "$f" | cut -d' ' -f1 >"$f.md5"
    sha1sum "$f" | cut -d' ' -f1 >"$f.sha1"
  done
}

# A module built on the base jar (ARTIFACT DIR, from $jar_modules): its jar, javadoc jar and POM
# as published by its pom's release profile, its sources jar, into $dist. Its tests run in the
# dev build (CTest, label java). Maven resolves io.github.rlock:rlock:$version from the local
# repository (~/.m2), so the base jar just built is installed there first with its published POM.
jar_mvn_module() {  # DIR, then Maven's options
  local dir=$1; shift
  mvn -B -Dstyle.color=never -f "$repo/bindings/java/$dir/pom.xml" -Prelease "$@" package \
    "-Drevision=$version" "-Drlock.build.dir=$work/jar/$dir" -DskipTests >"$work/jar-$dir.log" 2>&1
}

jar_build_module() {
  local artifact=$1 dir=$2 log=$work/jar-$2.log out=$work/jar/$2
  if [ -z "${jar_base_installed:-}" ]; then
    mvn -B -Dstyle.color=never org.apache.maven.plugins:maven-install-plugin:3.1.1:install-file \
      "-Dfile=$dist/rlock-$version.jar" "-DpomFile=$dist/rlock-$version.pom" \
      >"$work/jar-install.log" 2>&1 ||
      die "installing $dist/rlock-$version.jar into the local Maven repository failed;" \
        "see $work/jar-install.log"
    jar_base_installed=1
  fi
  log "packing $artifact (bindings/java/$dir)"
  rm -rf "$out"
  jar_mvn_module "$dir" -o || {
    grep -q 'in offline mode' "$log" || die "Maven failed to pack $artifact; see $log"
    log "Maven lacks plugins or dependencies offline; running it online"
    jar_mvn_module "$dir" || die "Maven failed to pack $artifact; see $log"
  }
  local f
  for f in "" -javadoc.jar .pom; do
    f=$out/$artifact-$version${f:-.jar}
    [ -f "$f" ] || die "Maven made no $f; see $log"
    cp "$f" "$dist/"
  done
  rm -f "$dist/$artifact-$version-sources.jar"
  "$(jar_jdk_home)/bin/jar" --create --file "$dist/$artifact-$version-sources.jar" \
    -C "$repo/bindings/java/$dir/src/main/java" .
  jar_checksums "$artifact"
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
    jar_verify_module "${module%%:*}" "${module#*:}"
  done
}

# What every module built on the base jar must be: Maven Central's requirements (Java 17 class
# files), and a POM depending on io.github.rlock:rlock:$version (compile); then the module's own
# checks, verify_jar_module_<DIR> (jar, summary: the files' paths).
jar_verify_module() {
  local artifact=$1 dir=$2 jar=$dist/$1-$version.jar pom=$dist/$1-$version.pom
  python3 "$repo/scripts/release/check_central.py" "$dist" "$jar_group" "$artifact" "$version" \
    --release 17 >"$work/central-$dir.log" 2>&1 ||
    die "verify_jar: $artifact misses what Maven Central requires:" \
      "$(tr '\n' ';' <"$work/central-$dir.log")"
  log "jar: $(cat "$work/central-$dir.log")"
  jar_pom_dependency "$pom" "$jar_group:rlock" compile "$version"
  "verify_jar_module_${dir//-/_}" "$jar" "$pom"
  log "jar: $(basename "$jar"), $(stat -c %s "$jar") bytes, verified"
}

# Dies unless POM has the dependency G:A with SCOPE (and VERSION when given).
jar_pom_dependency() {
  local pom=$1 ga=$2 scope=$3 want=${4:-} got
  got=$(python3 - "$pom" "$ga" <<'PY'
import sys
import xml.etree.ElementTree as ET
ns = "{http://maven.apache.org/POM/4.0.0}"
for dep in ET.parse(sys.argv[1]).getroot().iter(ns + "dependency"):
    g, a = (dep.findtext(ns + t, "").strip() for t in ("groupId", "artifactId"))
    if f"{g}:{a}" == sys.argv[2]:
        print(dep.findtext(ns + "scope", "compile").strip(), dep.findtext(ns + "version", "").strip())
PY
  ) || die "verify_jar: cannot read $pom as a POM"
  [ -n "$got" ] || die "verify_jar: $(basename "$pom") has no dependency $ga"
  [ "${got%% *}" = "$scope" ] ||
    die "verify_jar: $(basename "$pom"): $ga has scope ${got%% *}, not $scope"
  [ -z "$want" ] || [ "${got#* }" = "$want" ] ||
    die "verify_jar: $(basename "$pom"): $ga is version ${got#* }, not $want"
}

# The ShedLock release the module's jar is run with (docs/shedlock.md: 6.x and 7.x are tested
# by CTest); its shedlock-core and SLF4J's API come from the local Maven repository.
jar_shedlock_version=7.10.1
jar_slf4j_version=2.0.17

# rlock-shedlock: the provider class, the automatic module name, and shedlock-core as a provided
# dependency (the application brings its ShedLock 6 or 7; docs/shedlock.md); then a JVM with the
# released jars and ShedLock's core runs a task under the provider (tests/release/java).
verify_jar_module_shedlock() {
  local jar=$1 pom=$2 listing manifest tmp=$work/verify-jar-shedlock cp a
  listing=$(unzip -Z1 "$jar") || die "verify_jar: $jar is not a zip file"
  grep -qx 'io/rlock/shedlock/RlockLockProvider.class' <<<"$listing" ||
    die "verify_jar: $jar lacks io/rlock/shedlock/RlockLockProvider.class"
  ! grep -q '^io/rlock/[^/]*\.class$' <<<"$listing" ||
    die "verify_jar: $jar carries classes of the base jar (io/rlock/*.class)"
  manifest=$(unzip -p "$jar" META-INF/MANIFEST.MF | tr -d '\r')
  grep -qx 'Automatic-Module-Name: io.rlock.shedlock' <<<"$manifest" ||
    die "verify_jar: $jar's manifest has no Automatic-Module-Name: io.rlock.shedlock"
  jar_pom_dependency "$pom" net.javacrumbs.shedlock:shedlock-core provided
  log "jar: rlock-shedlock: RlockLockProvider, module io.rlock.shedlock, shedlock-core provided"
  rm -rf "$tmp" && mkdir -p "$tmp/lib"
  for a in "net.javacrumbs.shedlock:shedlock-core:$jar_shedlock_version" \
           "org.slf4j:slf4j-api:$jar_slf4j_version"; do
    mvn -B -Dstyle.color=never dependency:copy "-Dartifact=$a" "-DoutputDirectory=$tmp/lib" \
      >>"$tmp/mvn.log" 2>&1 || die "verify_jar: Maven could not fetch $a; see $tmp/mvn.log"
  done
  cp=$dist/rlock-$version.jar:$jar:$tmp/lib/shedlock-core-$jar_shedlock_version.jar
  cp=$cp:$tmp/lib/slf4j-api-$jar_slf4j_version.jar
  start_redis
  "$(jar_jdk_home)/bin/java" -cp "$cp" "$repo/tests/release/java/ShedLockJar.java" \
    "redis://127.0.0.1:$redis_port" >"$tmp/java.log" 2>&1 || {
    stop_redis
    die "verify_jar: a JVM with $(basename "$jar") and ShedLock $jar_shedlock_version did not" \
      "run a task under RlockLockProvider; see $tmp/java.log"
  }
  stop_redis
  log "jar: rlock-shedlock with ShedLock $jar_shedlock_version: $(grep -v '^SLF4J' "$tmp/java.log")"
}

# rlock-spring-integration: the registry class, the automatic module name, and Spring
# Integration as a provided dependency (the application's own 7.x; docs/spring-integration.md).
# Its behaviour is tested by CTest (java_spring_integration).
verify_jar_module_spring_integration() {
  local jar=$1 pom=$2 listing manifest
  listing=$(unzip -Z1 "$jar") || die "verify_jar: $jar is not a zip file"
  grep -qx 'io/rlock/spring/integration/RlockLockRegistry.class' <<<"$listing" ||
    die "verify_jar: $jar lacks io/rlock/spring/integration/RlockLockRegistry.class"
  ! grep -q '^io/rlock/[^/]*\.class$' <<<"$listing" ||
    die "verify_jar: $jar carries classes of the base jar (io/rlock/*.class)"
  manifest=$(unzip -p "$jar" META-INF/MANIFEST.MF | tr -d '\r')
  grep -qx 'Automatic-Module-Name: io.rlock.spring.integration' <<<"$manifest" ||
    die "verify_jar: $jar's manifest has no Automatic-Module-Name: io.rlock.spring.integration"
  jar_pom_dependency "$pom" org.springframework.integration:spring-integration-core provided
  log "jar: rlock-spring-integration: RlockLockRegistry, module io.rlock.spring.integration," \
    "spring-integration-core provided"
}
