# Stage "deb" of scripts/build-release.sh (sourced): the C package librlock_<v>_<arch>.deb, made by
# CPack (cmake/Package.cmake) from each architecture's native build tree, and its checks.
# Needs: $repo, $root, $dist, $work, $version, arches=(...), lib.sh sourced, and the native stage
# configured with -DRLOCK_STATIC_BUNDLE=ON (the package carries librlock.a and rlock-static.pc).

deb_arch() {
  case $1 in
    x86_64) echo amd64 ;;
    aarch64) echo arm64 ;;
    *) die "no Debian architecture for $1" ;;
  esac
}

# The dependencies of the arm64 package, given by hand: dpkg-shlibdeps stops at "cannot find
# library libstdc++.so.6", as the root has only the cross toolchain's copy (libstdc++6-arm64-cross
# under /usr/aarch64-linux-gnu), not libstdc++6:arm64. These are the floors it computes for amd64
# from the same source and compiler; verify_deb checks that the libc6 one covers the newest
# GLIBC_ version the arm64 files need.
deb_arm64_depends="libc6 (>= 2.30), libgcc-s1 (>= 3.0), libstdc++6 (>= 6)"

build_deb() {
  local arch dir out cache extra
  for arch in "${arches[@]}"; do
    dir=/build/native-$arch
    cache=$root$dir/CMakeCache.txt
    [ -f "$cache" ] || die "no native build for $arch in $root$dir: run the native stage first (--only native,deb)"
    grep -q '^RLOCK_STATIC_BUNDLE:BOOL=ON$' "$cache" ||
      die "the $arch native build was configured without -DRLOCK_STATIC_BUNDLE=ON, which the .deb needs for librlock.a"
    out=/build/deb-$arch
    extra=""
    if [ "$arch" = aarch64 ]; then
      extra="-D CPACK_DEBIAN_PACKAGE_SHLIBDEPS=OFF -D 'CPACK_DEBIAN_PACKAGE_DEPENDS=$deb_arm64_depends'"
    fi
    log "packaging librlock for $arch (cpack -G DEB)"
    in_root "$root" bash -ec "
      rm -rf $out
      cd $dir
      cpack -G DEB -B $out $extra" >"$work/deb-$arch.log" 2>&1 ||
      die "cpack for $arch failed; see $work/deb-$arch.log"
    cp "$root$out/librlock_${version}_$(deb_arch "$arch").deb" "$dist/" ||
      die "cpack made no librlock_${version}_$(deb_arch "$arch").deb; see $work/deb-$arch.log"
  done
}

# The files every package must hold, relative to /usr (LIBDIR = lib/<multiarch>).
deb_expected_files() {
  local libdir=$1
  printf '%s\n' bin/rlock include/rlock/rlock.h include/rlock/version.h \
    "$libdir/librlock.so" "$libdir/librlock.so.0" "$libdir/librlock.so.$version" "$libdir/librlock.a" \
    "$libdir/pkgconfig/rlock.pc" "$libdir/pkgconfig/rlock-static.pc" \
    "$libdir/cmake/rlock/rlockConfig.cmake" "$libdir/cmake/rlock/rlockConfigVersion.cmake" \
    "$libdir/cmake/rlock/rlockTargets.cmake"
}

# Checks of a package that need no running: control fields, contents, the ELF machine of the
# library and CLI, the highest GLIBC_ version they need (<= 2.31, bullseye's, and within the
# libc6 floor of Depends), and that librlock.so and librlock.a define only rlock_* globally.
# Extracts into $root/build/deb-verify/<arch>; the archive is read with the root's nm for the
# architecture.
deb_check_static() {
  local arch=$1 deb=$2 darch libdir tools dir f machine glibc floor bad summary exports
  darch=$(deb_arch "$arch")
  libdir=lib/$arch-linux-gnu
  machine=$(elf_machine_name "$arch")
  tools=""
  [ "$arch" = x86_64 ] || tools=$arch-linux-gnu-
  dpkg-deb --info "$deb" >"$work/deb-$arch.info" || die "$deb is not a Debian package"
  for f in "Package: librlock" "Version: $version" "Architecture: $darch" "Section: libdevel" \
    "Maintainer: rlock developers"; do
    grep -q "^ $f$" "$work/deb-$arch.info" || die "$deb: no '$f' in its control file (see $work/deb-$arch.info)"
  done
  grep -Eq '^ Depends: .*libc6 \(>= [0-9.]+\)' "$work/deb-$arch.info" ||
    die "$deb: Depends names no libc6 version (see $work/deb-$arch.info)"
  dpkg-deb --contents "$deb" >"$work/deb-$arch.contents"
  while read -r f; do
    grep -Eq " \./usr/$f( |$)" "$work/deb-$arch.contents" || die "$deb lacks /usr/$f (see $work/deb-$arch.contents)"
  done < <(deb_expected_files "$libdir")

  # The libc6 floor of Depends (dpkg-shlibdeps' for amd64, deb_arm64_depends for arm64) must
  # cover the newest GLIBC_ version the ELF files below need.
  floor=$(sed -n 's/^ Depends:.*libc6 (>= \([0-9.]*\)).*/\1/p' "$work/deb-$arch.info")

  dir=/build/deb-verify/$arch
  rm -rf "$root$dir" && mkdir -p "$root$dir"
  dpkg-deb -x "$deb" "$root$dir"
  for f in "usr/$libdir/librlock.so.$version" usr/bin/rlock; do
    # librlock.so exports rlock_* only; the CLI is an executable (whose dynamic symbols are the
    # C and C++ libraries' copied data and weak template copies), not checked for exports.
    exports='^rlock_'
    [ "$f" = usr/bin/rlock ] && exports='.'
    summary=$(check_elf "$root$dir/$f" "$arch" "$exports" libstdc++)
    glibc=$(elf_highest_glibc "$root$dir/$f")
    printf '%s\n%s\n' "$glibc" "$floor" | sort -CV ||
      die "$deb: /$f needs GLIBC_$glibc but the package depends on libc6 (>= $floor) only"
    log "deb $darch: /$f: $summary"
  done
  grep -q "Machine: *$machine$" <<<"$(readelf -h "$root$dir/usr/$libdir/librlock.a")" ||
    die "$deb: librlock.a holds no $machine object"
  # The archive too defines rlock_* only as global symbols; "u" (GNU unique) are function-local
  # statics of inline functions, which the C++ ABI wants shared.
  bad=$(in_root "$root" "${tools}nm" -g --defined-only "$dir/usr/$libdir/librlock.a" |
    awk 'NF == 3 && $2 != "u" && $3 !~ /^rlock_/ {print $3}' | head -n5)
  [ -z "$bad" ] || die "$deb: librlock.a defines more than rlock_* globally: $(echo $bad)"
  log "deb $darch: $(grep -E '^ (Depends|Installed-Size):' "$work/deb-$arch.info" | sed 's/^ //' | paste -sd' ')," \
    "$(stat -c %s "$deb") bytes"
}

# The host's Go toolchain (static) copied into the root once, for the Go check.
deb_ensure_go() {
  local goroot=${RLOCK_GOROOT:-$(go env GOROOT 2>/dev/null || echo /usr/local/go)}
  [ -x "$goroot/bin/go" ] || die "no Go toolchain for the .deb check (looked in $goroot; set RLOCK_GOROOT)"
  if ! cmp -s "$goroot/VERSION" "$root/build/deb-go/VERSION"; then
    log "copying Go ($(head -n1 "$goroot/VERSION")) into the root"
    rm -rf "$root/build/deb-go" && cp -a "$goroot" "$root/build/deb-go"
  fi
}

# The amd64 package at work: installed in the root (and removed again, so no later build finds
# it), a C consumer built through pkg-config and CMake (shared and static), and a Go program
# with -tags rlock_static; then, against a redis-server on this host, the C consumers and the
# rlock CLI run in the root, and the Go binary runs in the root after the package is gone and
# on the host.
deb_check_amd64() {
  local deb=$1 v=/build/deb-verify/run
  deb_ensure_go
  rm -rf "$root$v" && mkdir -p "$root$v/src/tests" "$root$v/src/bindings" "$root$v/out"
  cp "$deb" "$root$v/"
  cp -r "$repo/tests/release" "$root$v/src/tests/"
  cp -r "$repo/bindings/go" "$root$v/src/bindings/"
  if in_root "$root" dpkg -s librlock >/dev/null 2>&1; then
    log "removing a librlock left installed in the root"
    in_root "$root" dpkg -r librlock >/dev/null
  fi
  # A subshell, so its trap removes the package and stops the server however it ends.
  (
    deb_cleanup() {
      set +e # every step, whatever the one before returned
      stop_redis
      if in_root "$root" dpkg -s librlock >/dev/null 2>&1; then
        in_root "$root" dpkg -r librlock >/dev/null || echo "build-release: could not remove librlock from the root: dpkg -r it there" >&2
      fi
    }
    trap deb_cleanup EXIT
    in_root "$root" dpkg -i "$v/$(basename "$deb")" >"$work/deb-verify.log" 2>&1 ||
      die "dpkg -i of $(basename "$deb") in the root failed; see $work/deb-verify.log"
    log "deb amd64: installed in the root; building a C consumer (pkg-config, CMake) and a Go program"
    in_root "$root" bash -ec "
      cd $v/src/tests/release
      gcc -Wall -Werror -o $v/out/consumer-pc c/consumer.c \$(pkg-config --cflags --libs rlock)
      gcc -Wall -Werror -o $v/out/consumer-static c/consumer.c \$(pkg-config --cflags --libs rlock-static)
      cmake -S cmake -B $v/cmake-build -DCMAKE_BUILD_TYPE=Release >/dev/null
      cmake --build $v/cmake-build >/dev/null
      cp $v/cmake-build/consumer $v/out/consumer-cmake
      cp $v/cmake-build/consumer-static $v/out/consumer-cmake-static
      cd go
      PATH=/build/deb-go/bin:\$PATH GOROOT=/build/deb-go GOTELEMETRY=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=1 \
        GOCACHE=/build/deb-verify/gocache GOPATH=/build/deb-verify/gopath \
        go build -tags rlock_static -o $v/out/rlock-release-check ." >>"$work/deb-verify.log" 2>&1 ||
      die "building against the installed package failed; see $work/deb-verify.log"

    local i
    start_redis
    local url=redis://127.0.0.1:$redis_port
    for i in consumer-pc consumer-cmake consumer-static consumer-cmake-static; do
      in_root "$root" "$v/out/$i" "$url" "deb-check-$i" >>"$work/deb-verify.log" 2>&1 ||
        die "$i (built against the package) failed in the root; see $work/deb-verify.log"
    done
    grep -Eq "librlock\.so\.0 => (/usr)?/lib/x86_64-linux-gnu/librlock\.so\.0 " <<<"$(in_root "$root" ldd "$v/out/consumer-pc")" ||
      die "consumer-pc does not load the packaged librlock.so.0"
    in_root "$root" rlock exec --url "$url" --wait 5 deb-check-cli -- true >>"$work/deb-verify.log" 2>&1 ||
      die "the packaged rlock CLI failed to run a command under a lock; see $work/deb-verify.log"
    log "deb amd64: the C consumers (pkg-config and CMake, shared and static) and the rlock CLI took and released a lock"
    in_root "$root" dpkg -r librlock >>"$work/deb-verify.log" 2>&1 || die "dpkg -r librlock failed; see $work/deb-verify.log"
    [ ! -e "$root/usr/lib/x86_64-linux-gnu/librlock.so.0" ] || die "dpkg -r left librlock.so.0 in the root"
    in_root "$root" "$v/out/rlock-release-check" "$url" deb-check-go-root >>"$work/deb-verify.log" 2>&1 ||
      die "the Go program failed in the root without librlock; see $work/deb-verify.log"
    "$root$v/out/rlock-release-check" "$url" deb-check-go-host >>"$work/deb-verify.log" 2>&1 ||
      die "the Go program failed on the host; see $work/deb-verify.log"
    for i in rlock-release-check consumer-static consumer-cmake-static; do
      if grep -q 'NEEDED.*librlock' <<<"$(readelf -d "$root$v/out/$i")"; then
        die "$i, linked with the static librlock.a, needs librlock.so"
      fi
    done
    log "deb amd64: the Go binary (-tags rlock_static, $(stat -c %s "$root$v/out/rlock-release-check") bytes) took" \
      "and released a lock in the root without librlock and on the host; it needs" \
      "$(readelf -d "$root$v/out/rlock-release-check" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | paste -sd' ')"
  ) || exit 1
}

# The arm64 package run, not only read: its rlock CLI (with the packaged librlock.so, the core
# and OpenSSL inside) under qemu's user-mode emulation, with the cross toolchain's arm64 C and C++
# libraries from the root, takes a lock over redis:// and rediss:// on this host's loopback.
deb_check_arm64_run() {
  local dir=$root/build/deb-verify/aarch64 certs=$work/deb-arm64-certs url rc=0
  command -v qemu-aarch64-static >/dev/null || "$repo/scripts/install-deps.sh" qemu-user-static
  rm -rf "$certs"
  "$repo/tests/fixtures/tls-certs.sh" "$certs" >/dev/null 2>&1 || die "making test certificates failed"
  start_redis "$certs"
  for url in "redis://127.0.0.1:$redis_port" "rediss://127.0.0.1:$redis_tls_port?tls_ca_file=$certs/ca.crt"; do
    qemu-aarch64-static -L "$root/usr/aarch64-linux-gnu" -E "LD_LIBRARY_PATH=$dir/usr/lib/aarch64-linux-gnu" \
      "$dir/usr/bin/rlock" exec --url "$url" --wait 10 deb-check-arm64 -- true >>"$work/deb-verify.log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || break
  done
  stop_redis
  [ "$rc" = 0 ] || die "the arm64 rlock CLI under qemu failed at ${url%%\?*}; see $work/deb-verify.log"
  log "deb arm64: its rlock CLI and librlock.so, run under qemu-aarch64, took and released a lock over redis:// and rediss://"
}

verify_deb() {
  local arch deb
  for arch in "${arches[@]}"; do
    deb=$dist/librlock_${version}_$(deb_arch "$arch").deb
    [ -f "$deb" ] || die "no $deb: run the deb stage"
    deb_check_static "$arch" "$deb"
    case $arch in
      x86_64) deb_check_amd64 "$deb" ;;
      aarch64) deb_check_arm64_run ;;
    esac
  done
}
