# Shared by scripts/build-release.sh and its stages (sourced, not run).
# The release root: a Debian 11 (bullseye, glibc 2.31) tree made by debootstrap, with gcc 10,
# the aarch64 cross compiler, hiredis for both architectures and OpenSSL 3 built from Debian's
# source as static libraries. It is made once and kept in $RLOCK_RELEASE_CACHE, keyed by what
# goes into it, so a second run reuses it.

release_cache=${RLOCK_RELEASE_CACHE:-/var/cache/rlock-release}
release_mirror=${RLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The packages of the root. Changing this list (or this file's root recipe) makes a new root.
release_packages=(g++ g++-aarch64-linux-gnu binutils-aarch64-linux-gnu cmake make pkg-config perl
  libhiredis-dev libhiredis-dev:arm64 file patchelf dpkg-dev fakeroot ca-certificates
  python3)
# OpenSSL 3.5 (an LTS branch) from Debian 13's source package, not bullseye's 1.1.1: the upstream
# tarball Debian ships (its orig.tar.gz), pinned by version and SHA-256 (from Debian's signed
# Sources index), so a release is rebuilt from the same bytes.
release_openssl_version=3.5.7
release_openssl_sha256=a8c0d28a529ca480f9f36cf5792e2cd21984552a3c8e4aa11a24aa31aeac98e8
release_openssl_options=(no-shared no-tests no-docs no-apps no-quic no-legacy no-engine no-dso
  no-module no-comp no-ssl3 no-srp -fPIC)

# The Python distribution's name as wheel and sdist file names spell it (PyPI's rlock-redis).
release_python_dist=rlock_redis

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
    printf 'deb %s bullseye main\ndeb %s bullseye-updates main\n' "$release_mirror" "$release_mirror" \
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

# CPython 3.14, for the cp314 and cp314t modules' headers and the interpreters that test them:
# pyenv's are 3.9 to 3.13, Debian ships 3.14 only in sid and no free-threaded build at all, so
# both flavours are compiled on this host from the upstream tarball of Debian's python3.14
# source package. The mirror keeps 3.14.7's (sid's Sources index now lists a later one), so
# the SHA-256 pinned here is the one recorded at the first download of those bytes.
release_cpython_version=3.14.7
release_cpython_sha256=3b48dac8fb59f62eaa67ac83c1eb12bda1b7a08406dd286e252c11a66be27f81

# cpython_prefix 3.14|3.14t: where that interpreter is installed (on the host).
cpython_prefix() { echo "$release_cache/cpython-$release_cpython_version${1#3.14}"; }

# Builds CPython 3.14 (3.14t: free-threaded, --disable-gil) once, with pip (ensurepip), into
# cpython_prefix; about 5 minutes each on 2 cores, then cached.
# (fetch_pinned and openssl_tarball are below; bash resolves functions when they run.)
ensure_cpython() {
  local flavour=$1 prefix tarball src gil=()
  prefix=$(cpython_prefix "$flavour")
  [ -x "$prefix/bin/python$flavour" ] && [ -f "$prefix/.rlock-ready" ] && return 0
  [ "$flavour" = 3.14t ] && gil=(--disable-gil)
  tarball=$(fetch_pinned "main/p/python3.14/python3.14_$release_cpython_version.orig.tar.xz" \
    "$release_cpython_sha256") || exit 1
  # What the interpreter's own modules need to build (ssl, zlib and ctypes for pip and pytest).
  "$repo/scripts/install-deps.sh" libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev >&2
  log "building CPython $release_cpython_version ($flavour) in $prefix: about 5 minutes, once" >&2
  src=$(mktemp -d)
  (
    cd "$src"
    tar -xJf "$tarball" --strip-components=1
    ./configure --prefix="$prefix" --with-ensurepip=install "${gil[@]}"
    make -j"${RLOCK_JOBS:-2}"
    rm -rf "$prefix"
    make install
  ) >"$release_cache/cpython-$flavour.log" 2>&1 || {
    rm -rf "$src"
    die "building CPython $flavour failed; see $release_cache/cpython-$flavour.log"
  }
  rm -rf "$src"
  "$prefix/bin/python$flavour" -c 'import ssl, zlib, ctypes' ||
    die "CPython $flavour was built without ssl, zlib or ctypes; see $release_cache/cpython-$flavour.log"
  touch "$prefix/.rlock-ready"
}

# The interpreter of a release Python version: pyenv's (3.9 to 3.13), or built by ensure_cpython.
release_python_bin() {
  case $1 in
    3.14 | 3.14t) ensure_cpython "$1" && echo "$(cpython_prefix "$1")/bin/python$1" ;;
    *) ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python"$1" 2>/dev/null | sort -V | tail -n1 ;;
  esac
}

openssl_prefix() { echo "/opt/openssl-$1"; }  # inside the root

# fetch_pinned POOL_PATH SHA256: the file $release_mirror/pool/POOL_PATH, downloaded once into
# the cache and checked against its pinned hash; prints its path there.
fetch_pinned() {
  local url=$release_mirror/pool/$1 sha=$2 file=$release_cache/${1##*/}
  mkdir -p "$release_cache"
  if ! echo "$sha  $file" | sha256sum -c --status 2>/dev/null; then
    log "fetching ${1##*/} from $release_mirror" >&2
    command -v curl >/dev/null || "$repo/scripts/install-deps.sh" curl >&2
    curl -fsSL -o "$file.part" "$url" || die "could not download $url"
    echo "$sha  $file.part" | sha256sum -c --status || die "$url does not have the pinned SHA-256 ($sha)"
    mv "$file.part" "$file"
  fi
  echo "$file"
}

# OpenSSL's source tarball from Debian, in the cache; prints its path.
openssl_tarball() {
  fetch_pinned "main/o/openssl/openssl_$release_openssl_version.orig.tar.gz" "$release_openssl_sha256"
}

# Builds OpenSSL's static libraries for an architecture inside the root, once.
ensure_openssl() {
  local root=$1 arch=$2 prefix target cross=""
  prefix=$(openssl_prefix "$arch")
  local stamp
  stamp=$(printf '%s ' "${release_openssl_options[@]}" "$release_openssl_version" | sha256sum | cut -c1-12)
  [ -f "$root$prefix/.built-$stamp" ] && return 0
  case $arch in
    x86_64) target=linux-x86_64 ;;
    aarch64) target=linux-aarch64; cross=--cross-compile-prefix=aarch64-linux-gnu- ;;
    *) die "unknown architecture $arch" ;;
  esac
  local tarball
  tarball=$(openssl_tarball) || exit 1
  mkdir -p "$root/src/openssl"
  cp "$tarball" "$root/src/openssl/"
  log "building OpenSSL $release_openssl_version for $arch: a few minutes, once"
  in_root "$root" bash -ec "
    rm -rf /src/openssl/build-$arch && mkdir /src/openssl/build-$arch && cd /src/openssl/build-$arch
    tar xzf ../openssl_$release_openssl_version.orig.tar.gz --strip-components=1
    ./Configure $target $cross ${release_openssl_options[*]} --prefix=$prefix --libdir=lib \
      --openssldir=/usr/lib/ssl
    make -j${RLOCK_JOBS:-2} build_libs >/dev/null
    make install_dev >/dev/null
    cd / && rm -rf /src/openssl/build-$arch
    touch $prefix/.built-$stamp" >"$release_cache/openssl-$arch.log" 2>&1 ||
    die "building OpenSSL for $arch failed; see $release_cache/openssl-$arch.log"
}

# A notices file's opening and its OpenSSL section (every native artifact links OpenSSL in).
notices_head() {  # WHAT: the native code the file is for
  echo "rlock's native code ($1) contains these libraries, linked in statically."
  echo "Their licences follow."
  echo
  echo "== OpenSSL $release_openssl_version (Apache License 2.0)"
  echo
  tar -xzf "$release_cache/openssl_$release_openssl_version.orig.tar.gz" -O \
    "openssl-$release_openssl_version/LICENSE.txt"
  echo
}

# The licences of what the native artifacts carry linked in (OpenSSL, hiredis), taken from their
# sources at build time, into one file each artifact ships. libstdc++ and libgcc are linked under
# the GCC Runtime Library Exception, which asks for no notice.
third_party_notices() {
  local out=$work/THIRD-PARTY-NOTICES
  {
    notices_head "the Python extension, the JNI library, librlock"
    echo "== hiredis $(in_root "$root" dpkg-query -W -f='${Version}' libhiredis-dev) (BSD 3-clause), as Debian 11 packages it"
    echo
    cat "$root/usr/share/doc/libhiredis0.14/copyright"
  } >"$out"
  echo "$out"
}

# ELF checks shared by the stages' verify functions. readelf reads every architecture's files
# (the host's objdump and nm may not), so the aarch64 artifacts are checked here too.
elf_machine_name() {
  case $1 in x86_64) echo "Advanced Micro Devices X86-64" ;; aarch64) echo AArch64 ;; *) die "unknown architecture $1" ;; esac
}

# The highest GLIBC_x.y version an ELF file asks for; none found is an error, since an empty
# reading would pass every comparison.
elf_highest_glibc() {
  local v
  v=$(readelf -W --dyn-syms "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)
  [ -n "$v" ] || die "$1 asks for no GLIBC_ version: not a dynamically linked ELF file?"
  echo "$v"
}

# Defined global symbols (the version script's node is ABS, the imports UND).
elf_exports() {
  readelf -W --dyn-syms "$1" |
    awk '$5 ~ /GLOBAL|WEAK/ && $7 != "UND" && $7 != "ABS" { sub(/@.*/, "", $8); print $8 }'
}

# (The checks grep a command's captured output, not a pipe: under pipefail a grep -q that stops
# at its first match can make the writer die of SIGPIPE, failing the pipeline.)
elf_needed() { readelf -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# check_elf FILE ARCH EXPORTS [SHARED_OK]: FILE is an ARCH ELF file needing glibc 2.31 at most,
# exporting only names matching the regex EXPORTS, and needing no shared libssl, libcrypto or
# libhiredis (nor libstdc++, unless SHARED_OK names it: librlock.so of the .deb uses the
# system's). Prints a one-line summary.
check_elf() {
  local file=$1 arch=$2 exports=$3 shared_ok=${4:-} machine glibc bad needed banned='libssl|libcrypto|libhiredis|libstdc\+\+'
  machine=$(elf_machine_name "$arch")
  grep -q "Machine: *$machine$" <<<"$(readelf -h "$file")" ||
    die "$file is not an $arch ELF file: $(readelf -h "$file" | grep Machine)"
  glibc=$(elf_highest_glibc "$file")
  printf '%s\n2.31\n' "$glibc" | sort -CV || die "$file needs glibc $glibc, newer than 2.31"
  bad=$(elf_exports "$file" | grep -Ev "$exports" || true)
  [ -z "$bad" ] || die "$file exports more than $exports: $(echo "$bad" | head -n5 | paste -sd' ')"
  needed=$(elf_needed "$file" | paste -sd' ')
  [ "$shared_ok" = libstdc++ ] && banned='libssl|libcrypto|libhiredis'
  if grep -Eq "^($banned)" <<<"$(elf_needed "$file")"; then
    die "$file needs a shared library that should be linked in: $needed"
  fi
  echo "$machine, GLIBC_$glibc, needs $needed, $(stat -c %s "$file") bytes"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_redis [CERTS]: a throwaway redis-server on this host's loopback for the checks that take
# a lock (with CERTS, a directory made by tests/fixtures/tls-certs.sh, also a TLS port). Sets
# redis_port, redis_tls_port and redis_pid; stop_redis ends it.
start_redis() {
  local certs=${1:-} dir i tls=()
  command -v redis-server >/dev/null || die "the checks need a redis-server on this machine"
  dir=$(mktemp -d)
  redis_port=$(free_port)
  redis_tls_port=
  if [ -n "$certs" ]; then
    redis_tls_port=$(free_port)
    tls=(--tls-port "$redis_tls_port" --tls-cert-file "$certs/server.crt" --tls-key-file "$certs/server.key"
      --tls-ca-cert-file "$certs/ca.crt" --tls-auth-clients no)
  fi
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    "${tls[@]}" >"$dir/redis.log" 2>&1 &
  redis_pid=$!
  for i in $(seq 100); do
    redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  die "the redis-server for the checks did not start: $(tail -n3 "$dir/redis.log")"
}

stop_redis() {
  [ -n "${redis_pid:-}" ] || return 0
  kill "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  redis_pid=
}
