# Shared by scripts/build-release.sh and its stages (sourced, not run).
# The release root: a Debian 11 (bullseye, glibc 2.31) tree made by debootstrap, with gcc 10,
# the aarch64 cross compiler, hiredis for both architectures and OpenSSL 3 built from Debian's
# source as static libraries. It is made once and kept in $RLOCK_RELEASE_CACHE, keyed by what
# goes into it, so a second run reuses it.

release_cache=${RLOCK_RELEASE_CACHE:-/var/cache/rlock-release}
release_mirror=${RLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
release_arches=(x86_64 aarch64)
# The packages of the root. Changing this list (or this file's root recipe) makes a new root.
release_packages=(g++ g++-aarch64-linux-gnu binutils-aarch64-linux-gnu cmake make pkg-config perl
  libhiredis-dev libhiredis-dev:arm64 file patchelf dpkg-dev fakeroot ca-certificates
  python3)
# OpenSSL comes from the newest Debian release's source (an LTS branch), not bullseye's 1.1.1.
release_openssl_suite=trixie
release_openssl_options=(no-shared no-tests no-docs no-apps no-quic no-legacy no-engine no-dso
  no-module no-comp no-ssl3 no-srp -fPIC)

log() { echo "-- $*"; }
die() { echo "build-release: $*" >&2; exit 1; }

need_root_user() {
  [ "$(id -u)" -eq 0 ] || die "making and using the release root needs root (debootstrap, chroot); run as root or with sudo"
}

release_root_key() {
  printf '%s\n' "${release_packages[@]}" "$release_mirror" "root-recipe-1" | sha256sum | cut -c1-12
}

# Runs a command inside the root as root with a clean environment.
in_root() {
  local root=$1; shift
  chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
    LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# Prints the root's path, making it first when it is missing (about 2 minutes).
ensure_release_root() {
  need_root_user
  local key root tmp
  key=$(release_root_key)
  root=$release_cache/bullseye-$key
  mkdir -p "$release_cache"
  exec 8>"$release_cache/.lock"
  flock 8
  if [ ! -f "$root/.rlock-root-ready" ]; then
    command -v debootstrap >/dev/null || "$repo/scripts/install-deps.sh" debootstrap >&2
    tmp=$root.tmp
    rm -rf "$tmp"
    log "making the release root (debootstrap bullseye) in $root" >&2
    debootstrap --variant=minbase bullseye "$tmp" "$release_mirror" >"$release_cache/debootstrap.log" 2>&1 ||
      die "debootstrap failed; see $release_cache/debootstrap.log"
    printf 'deb %s bullseye main\ndeb %s bullseye-updates main\ndeb-src %s %s main\n' \
      "$release_mirror" "$release_mirror" "$release_mirror" "$release_openssl_suite" \
      >"$tmp/etc/apt/sources.list"
    in_root "$tmp" dpkg --add-architecture arm64
    in_root "$tmp" apt-get update -q >"$release_cache/apt.log" 2>&1 ||
      die "apt-get update in the root failed; see $release_cache/apt.log"
    in_root "$tmp" apt-get install -y -q --no-install-recommends "${release_packages[@]}" \
      >>"$release_cache/apt.log" 2>&1 || die "installing the root's packages failed; see $release_cache/apt.log"
    in_root "$tmp" apt-get clean
    touch "$tmp/.rlock-root-ready"
    mv "$tmp" "$root"
  fi
  flock -u 8
  echo "$root"
}

openssl_prefix() { echo "/opt/openssl-$1"; }  # inside the root

# Builds OpenSSL's static libraries for an architecture inside the root, once.
ensure_openssl() {
  local root=$1 arch=$2 prefix target cross=""
  prefix=$(openssl_prefix "$arch")
  local stamp
  stamp=$(printf '%s ' "${release_openssl_options[@]}" "$release_openssl_suite" | sha256sum | cut -c1-12)
  [ -f "$root$prefix/.built-$stamp" ] && return 0
  case $arch in
    x86_64) target=linux-x86_64 ;;
    aarch64) target=linux-aarch64; cross=--cross-compile-prefix=aarch64-linux-gnu- ;;
    *) die "unknown architecture $arch" ;;
  esac
  if ! ls "$root"/src/openssl/openssl_*.orig.tar.gz >/dev/null 2>&1; then
    log "fetching OpenSSL's source from Debian $release_openssl_suite (apt checks its signature)"
    mkdir -p "$root/src/openssl"
    in_root "$root" bash -c "cd /src/openssl && apt-get source -q --download-only openssl/$release_openssl_suite" \
      >"$release_cache/openssl-source.log" 2>&1 || die "apt-get source openssl failed; see $release_cache/openssl-source.log"
  fi
  log "building OpenSSL ($(basename "$root"/src/openssl/openssl_*.orig.tar.gz)) for $arch: a few minutes, once"
  in_root "$root" bash -ec "
    rm -rf /src/openssl/build-$arch && mkdir /src/openssl/build-$arch && cd /src/openssl/build-$arch
    tar xzf ../openssl_*.orig.tar.gz --strip-components=1
    ./Configure $target $cross ${release_openssl_options[*]} --prefix=$prefix --libdir=lib \
      --openssldir=/usr/lib/ssl
    make -j${RLOCK_JOBS:-2} build_libs >/dev/null
    make install_dev >/dev/null
    cd / && rm -rf /src/openssl/build-$arch
    touch $prefix/.built-$stamp" >"$release_cache/openssl-$arch.log" 2>&1 ||
    die "building OpenSSL for $arch failed; see $release_cache/openssl-$arch.log"
}
