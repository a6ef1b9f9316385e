# Stage "gomod" of scripts/build-release.sh (sourced): the Go module with librlock bundled, so
# `go get` + `go build` need only Go and gcc (docs/go.md). From the native stage's trees:
#   $work/gomod/<module>@v<version>/  bindings/go's files (not the otel module, which has its own
#     go.mod), the repository's LICENSE, and internal/native/: the C ABI's headers, the .deb's
#     self-contained librlock.a for linux_amd64 and linux_arm64, THIRD-PARTY-NOTICES. The release
#     tag bindings/go/v<version> is a commit of this tree (docs/packaging.md).
#   $dist/goproxy/<module>/@v/{list,v<version>.info,.mod,.zip}  what a module proxy serves for it.
#   The same for the gocron module (bindings/go/gocron, tag bindings/go/gocron/v<version>): its
#   files and LICENSE, its go.mod requiring the base module at v<version>, without the replace.
# Needs: $repo, $root, $dist, $work, $version, lib.sh sourced (deb.sh for deb_ensure_go).

gomod_path=github.com/rlock/rlock/bindings/go
gomod_gocron_path=$gomod_path/gocron

gomod_goarch() {
  case $1 in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) die "no Go architecture for $1" ;; esac
}

build_gomod() {
  local tree=$work/gomod/$gomod_path@v$version arch lib time out
  # Both archives always: the module serves every platform whatever --arch built this time.
  for arch in x86_64 aarch64; do
    lib=$root/build/stage-$arch/usr/lib/$arch-linux-gnu/librlock.a
    [ -f "$lib" ] || die "no $lib: run the native stage for $arch first (--arch all --only native,gomod)"
  done
  cmp -s "$root/build/stage-x86_64/usr/include/rlock/rlock.h" "$root/build/stage-aarch64/usr/include/rlock/rlock.h" ||
    die "the x86_64 and aarch64 stage trees have different rlock.h: rebuild both (--arch all --only native)"
  log "Go module $gomod_path v$version"
  rm -rf "$tree" && mkdir -p "$tree"
  git -C "$repo/bindings/go" ls-files -co --exclude-standard -z . |
    (cd "$repo/bindings/go" && tar --null -T - -cf -) | tar -xf - -C "$tree"
  rm -rf "$tree/internal/native/include" "$tree/internal/native"/linux_*
  cp "$repo/LICENSE" "$tree/LICENSE"  # as the go command adds it to a subdirectory module's zip
  mkdir -p "$tree/internal/native/include/rlock"
  cp "$root/build/stage-x86_64/usr/include/rlock/"*.h "$tree/internal/native/include/rlock/"
  for arch in x86_64 aarch64; do
    mkdir -p "$tree/internal/native/linux_$(gomod_goarch "$arch")"
    cp "$root/build/stage-$arch/usr/lib/$arch-linux-gnu/librlock.a" "$tree/internal/native/linux_$(gomod_goarch "$arch")/"
  done
  cp "$(third_party_notices)" "$tree/internal/native/THIRD-PARTY-NOTICES"
  time=$(TZ=UTC git -C "$repo" log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
  out=$dist/goproxy/$gomod_path/@v
  rm -rf "$dist/goproxy" && mkdir -p "$out"
  python3 "$repo/scripts/release/make_gomod_zip.py" --module "$gomod_path" --version "v$version" \
    --time "$time" --tree "$tree" --out "$out" >"$work/gomod.log" 2>&1 ||
    die "writing the module proxy files failed; see $work/gomod.log"
  log "Go module: $(cat "$work/gomod.log"), v$version.zip $(stat -c %s "$out/v$version.zip") bytes"
  build_gomod_gocron "$time"
}

# The gocron module: in the repository its go.mod requires the base module as v0.0.0 replaced by
# ../; the released one requires the base module of the same release.
build_gomod_gocron() {
  local time=$1 src=$repo/bindings/go/gocron tree=$work/gomod/$gomod_gocron_path@v$version
  local out=$dist/goproxy/$gomod_gocron_path/@v
  log "Go module $gomod_gocron_path v$version"
  rm -rf "$tree" && mkdir -p "$tree" "$out"
  git -C "$src" ls-files -co --exclude-standard -z . | (cd "$src" && tar --null -T - -cf -) | tar -xf - -C "$tree"
  rm -f "$tree"/go-gocron-*.mod "$tree"/go-gocron-*.sum  # the dev build's test of an older gocron
  cp "$repo/LICENSE" "$tree/LICENSE"
  sed -e "s|^\([[:space:]]*\)$gomod_path v0\.0\.0\$|\1$gomod_path v$version|" -e '/^replace /d' \
    "$src/go.mod" >"$tree/go.mod"
  grep -q "^[[:space:]]*$gomod_path v$version\$" "$tree/go.mod" ||
    die "$src/go.mod has no require of $gomod_path v0.0.0 to make v$version of: see $tree/go.mod"
  if grep -q '^replace' "$tree/go.mod"; then die "$tree/go.mod keeps a replace"; fi
  python3 "$repo/scripts/release/make_gomod_zip.py" --module "$gomod_gocron_path" --version "v$version" \
    --time "$time" --tree "$tree" --out "$out" >"$work/gomod-gocron.log" 2>&1 ||
    die "writing the gocron module's proxy files failed; see $work/gomod-gocron.log"
  log "Go module: $(cat "$work/gomod-gocron.log"), v$version.zip $(stat -c %s "$out/v$version.zip") bytes"
}

# The environment of a new user's go command: the release's proxy files only, a module cache of
# its own, no pkg-config (PKG_CONFIG=/bin/false fails any #cgo pkg-config line) and no library
# path pointing at a librlock.
gomod_env() {
  local proxy=$1 home=$2
  echo "GOPROXY=file://$proxy GOSUMDB=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GOWORK=off" \
    "GOTELEMETRY=off GOPATH=$home/gopath GOMODCACHE=$home/gopath/pkg/mod PKG_CONFIG=/bin/false" \
    "PKG_CONFIG_PATH= LIBRARY_PATH= LD_LIBRARY_PATH= CGO_ENABLED=1"
}

# The consumer of tests/release/gomod built on this host as a new user would, then run.
gomod_check_host() {
  local tmp=$1 log=$work/gomod-verify.log out env
  cp -r "$repo/tests/release/gomod" "$tmp/src"
  read -ra env <<<"$(gomod_env "$dist/goproxy" "$tmp")"
  (cd "$tmp/src" && env "${env[@]}" GOCACHE="$work/gocache" go get "$gomod_path@v$version" &&
    env "${env[@]}" GOCACHE="$work/gocache" go build -o "$tmp/out/rlock-gomod-check" .) >>"$log" 2>&1 ||
    die "go get + go build of the consumer against the module proxy files failed; see $log"
  gomod_sum=$(sed -n "s|^$gomod_path v$version \(h1:.*\)|\1|p" "$tmp/src/go.sum")
  [ -n "$gomod_sum" ] || die "go get wrote no hash of $gomod_path v$version to go.sum; see $log"
  log "gomod: go get wrote to go.sum: $gomod_path v$version $gomod_sum"
  gomod_check_binary "$tmp/out/rlock-gomod-check" x86_64
  # Without cgo the package's one error says what to do.
  out=$(cd "$tmp/src" && env "${env[@]}" CGO_ENABLED=0 GOCACHE="$work/gocache" go build -o /dev/null . 2>&1) &&
    die "the consumer built with CGO_ENABLED=0"
  echo "$out" >>"$log"
  if [ "$(grep -cv '^#' <<<"$out")" != 1 ] ||
    ! grep -q 'undefined: rlock_needs_cgo__set_CGO_ENABLED_1_and_install_gcc' <<<"$out"; then
    die "CGO_ENABLED=0 go build of the consumer did not fail with just the cgo message: $out"
  fi
  log "gomod: with CGO_ENABLED=0 the build fails with: $(grep -v '^#' <<<"$out")"
}

# The consumer of tests/release/gomod-gocron: go get of the gocron module from the release's proxy
# files (the base module from there too), gocron and its dependencies from the public proxy,
# checked against the hashes bindings/go/gocron/go.sum pins.
gomod_check_gocron() {
  local tmp=$1 log=$work/gomod-verify.log env zip=$dist/goproxy/$gomod_gocron_path/@v/v$version.zip entries f
  [ -f "$zip" ] || die "no $zip: run the gomod stage"
  entries=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$zip")
  for f in go.mod LICENSE gocron.go; do
    grep -qx "$gomod_gocron_path@v$version/$f" <<<"$entries" || die "$zip lacks $f"
  done
  cp -r "$repo/tests/release/gomod-gocron" "$tmp/gocron-src"
  cp "$repo/bindings/go/gocron/go.sum" "$tmp/gocron-src/go.sum"
  read -ra env <<<"$(gomod_env "$dist/goproxy" "$tmp")"
  (cd "$tmp/gocron-src" && env "${env[@]}" GOPROXY="file://$dist/goproxy,https://proxy.golang.org" GOCACHE="$work/gocache" \
    go get "$gomod_gocron_path@v$version" &&
    env "${env[@]}" GOPROXY="file://$dist/goproxy,https://proxy.golang.org" GOCACHE="$work/gocache" \
      go build -o "$tmp/out/rlock-gomod-gocron-check" .) >>"$log" 2>&1 ||
    die "go get + go build of the gocron consumer against the module proxy files failed; see $log"
  grep -q "^$gomod_path v$version " "$tmp/gocron-src/go.sum" ||
    die "the gocron consumer did not get $gomod_path v$version with the gocron module; see $tmp/gocron-src/go.sum"
  log "gomod: go get $gomod_gocron_path@v$version and go build of a gocron consumer work"
}

# The release tag at work: a clone of this repository with bindings/go replaced by the module
# tree, committed and tagged bindings/go/v<version> as docs/go.md says; the go command fetches
# the module from that tag (git's insteadOf points github.com/rlock/rlock at the clone) and must
# get the same h1: hash as from the proxy zip, i.e. the same files.
gomod_check_tag() {
  local tmp=$1 want=$2 tree=$work/gomod/$gomod_path@v$version clone=$1/tag-repo got
  git clone -q "$repo" "$clone" || die "git clone of $repo failed"
  find "$clone/bindings/go" -mindepth 1 -maxdepth 1 ! -name otel -exec rm -rf {} +
  cp -a "$tree/." "$clone/bindings/go/"
  git -C "$clone" add -A -f bindings/go
  git -C "$clone" -c user.name="rlock release" -c user.email=release@rlock.invalid \
    commit -q -m "Go module v$version with librlock bundled" || die "committing the module tree failed"
  git -C "$clone" tag "bindings/go/v$version"
  printf '[url "file://%s"]\n\tinsteadOf = https://github.com/rlock/rlock\n' "$clone" >"$tmp/gitconfig"
  got=$(cd "$tmp" && env GIT_CONFIG_GLOBAL="$tmp/gitconfig" GOPROXY=direct GOPRIVATE=github.com/rlock \
    GOSUMDB=off GOFLAGS= GOTOOLCHAIN=local GOTELEMETRY=off GOPATH="$tmp/tag-gopath" \
    GOMODCACHE="$tmp/tag-gopath/pkg/mod" go mod download -json "$gomod_path@v$version" 2>>"$work/gomod-verify.log" |
    sed -n 's/^[[:space:]]*"Sum": "\(.*\)",*$/\1/p')
  [ -n "$got" ] || die "the go command could not fetch the module from a tag bindings/go/v$version; see $work/gomod-verify.log"
  [ "$got" = "$want" ] || die "the module from the tag bindings/go/v$version has $got, the proxy zip $want: their files differ"
  log "gomod: a release tag bindings/go/v$version of the module tree gives the zip's hash ($got)"
}

# An ARCH executable linking librlock.a: no RPATH/RUNPATH, no librlock needed.
gomod_check_binary() {
  local bin=$1 arch=$2
  grep -q "Machine: *$(elf_machine_name "$arch")$" <<<"$(readelf -h "$bin")" || die "$bin is not an $arch program"
  if grep -Eq '\((RPATH|RUNPATH)\)' <<<"$(readelf -dW "$bin")"; then die "$bin has an RPATH or RUNPATH"; fi
  if grep -q librlock <<<"$(elf_needed "$bin")"; then die "$bin needs a shared librlock"; fi
  log "gomod: $arch consumer, $(stat -c %s "$bin") bytes, needs $(elf_needed "$bin" | paste -sd' '), no RPATH"
}

# The same consumer built in the release root (gcc 10, glibc 2.31) for ARCH: for aarch64 with the
# cross compiler, as `GOARCH=arm64 CC=aarch64-linux-gnu-gcc go build` would be used.
gomod_build_in_root() {
  local arch=$1 v=/build/gomod-verify cc=gcc goarch
  goarch=$(gomod_goarch "$arch")
  [ "$arch" = aarch64 ] && cc=aarch64-linux-gnu-gcc
  rm -rf "${root:?}$v/$arch" && mkdir -p "$root$v/$arch"
  cp -r "$repo/tests/release/gomod" "$root$v/$arch/src"
  # shellcheck disable=SC2046 # gomod_env's words are NAME=value pairs without spaces
  in_root "$root" env PATH=/build/deb-go/bin:/usr/bin:/bin GOROOT=/build/deb-go HOME=/root \
    $(gomod_env "$v/goproxy" "$v/$arch") GOCACHE=$v/gocache GOARCH="$goarch" CC=$cc \
    bash -ec "cd $v/$arch/src && go get $gomod_path@v$version && go build -o ../rlock-gomod-check ." \
    >>"$work/gomod-verify.log" 2>&1 || die "building the $arch consumer in the release root failed; see $work/gomod-verify.log"
  gomod_check_binary "$root$v/$arch/rlock-gomod-check" "$arch"
}

# gomod_run WHAT CA COMMAND...: runs a consumer over redis:// and rediss:// on this host's
# loopback (CA: the test CA's path as COMMAND sees it).
gomod_run() {
  local what=$1 ca=$2 url rc=0 name; shift 2
  name=gomod-check-$(tr -c 'a-z0-9\n' - <<<"$what")
  for url in "redis://127.0.0.1:$redis_port" "rediss://127.0.0.1:$redis_tls_port?tls_ca_file=$ca"; do
    "$@" "$url" "$name" >>"$work/gomod-verify.log" 2>&1 || rc=$?
    [ "$rc" = 0 ] || die "the $what consumer failed at ${url%%\?*}; see $work/gomod-verify.log"
  done
  log "gomod: the $what consumer ${gomod_says:-took and released a lock, and woke a waiter}, over redis:// and rediss://"
}

verify_gomod() {
  local zip=$dist/goproxy/$gomod_path/@v/v$version.zip tmp certs=/build/gomod-verify/certs entries f
  [ -f "$zip" ] || die "no $zip: run the gomod stage"
  entries=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$zip")
  for f in go.mod LICENSE link_bundled.go internal/native/include/rlock/rlock.h internal/native/include/rlock/version.h \
    internal/native/linux_amd64/librlock.a internal/native/linux_arm64/librlock.a internal/native/THIRD-PARTY-NOTICES; do
    grep -qx "$gomod_path@v$version/$f" <<<"$entries" || die "$zip lacks $f"
  done
  if [ -n "$(grep -v "^$gomod_path@v$version/" <<<"$entries")" ]; then die "$zip has entries outside $gomod_path@v$version/"; fi
  if grep -q "/otel/" <<<"$entries"; then die "$zip carries the otel module"; fi
  if grep -q "/gocron/" <<<"$entries"; then die "$zip carries the gocron module"; fi
  : >"$work/gomod-verify.log"
  if grep -q librlock <<<"$(ldconfig -p)"; then die "this host has a librlock installed (ldconfig -p): the check needs none"; fi
  if grep -q librlock <<<"$(in_root "$root" ldconfig -p)"; then die "the release root has a librlock installed: dpkg -r librlock there"; fi
  tmp=$(mktemp -d)
  gomod_check_host "$tmp"
  gomod_check_tag "$tmp" "$gomod_sum"
  gomod_check_gocron "$tmp"
  deb_ensure_go
  rm -rf "$root/build/gomod-verify" && mkdir -p "$root/build/gomod-verify"
  cp -r "$dist/goproxy" "$root/build/gomod-verify/goproxy"
  gomod_build_in_root x86_64
  gomod_build_in_root aarch64
  command -v qemu-aarch64-static >/dev/null || "$repo/scripts/install-deps.sh" qemu-user-static
  # In the root, so the program run there reads the same CA file.
  "$repo/tests/fixtures/tls-certs.sh" "$root$certs" >/dev/null 2>&1 || die "making test certificates failed"
  start_redis "$root$certs"
  (
    trap stop_redis EXIT
    gomod_run host "$root$certs/ca.crt" "$tmp/out/rlock-gomod-check"
    gomod_says="ran a job through the Locker, saw a held job lock refused, and passed an Elector's leadership on" \
      gomod_run "gocron host" "$root$certs/ca.crt" "$tmp/out/rlock-gomod-gocron-check"
    gomod_run "bullseye amd64" "$certs/ca.crt" in_root "$root" /build/gomod-verify/x86_64/rlock-gomod-check
    gomod_run "arm64 (qemu)" "$root$certs/ca.crt" qemu-aarch64-static -L "$root/usr/aarch64-linux-gnu" \
      "$root/build/gomod-verify/aarch64/rlock-gomod-check"
  ) || exit 1
  rm -rf "$tmp"
}
