#!/usr/bin/env bash
# Makes the servers of the server matrix runnable on this Debian 12 host, without installing
# them: each comes from the Debian suite that ships it (Redis 6.0 from bullseye, 8.0 and
# Valkey 8.1 from trixie, Valkey 9.1 from sid; Redis 7.0 is this host's own). Its package and
# the libraries it needs are unpacked into a tree of that suite, and it runs with that suite's
# dynamic loader and libraries, so a server built for a newer glibc runs here unchanged.
#
# Usage: scripts/servers.sh [NAME...]   NAME: redis-6.0 redis-7.0 redis-8.0 valkey-8.1 valkey-9.1
#   (default: all). Prints one line per server, "NAME DIR VERSION": DIR holds a `redis-server`
#   to put first on PATH (it also answers to --sentinel). Made once, kept in
#   $RLOCK_SERVERS_CACHE (default /var/cache/rlock-servers); a second run only checks.
#   Fails, saying so, when a suite no longer ships the version a name asks for.
set -euo pipefail
cache=${RLOCK_SERVERS_CACHE:-/var/cache/rlock-servers}
mirror=${RLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
all=(redis-6.0 redis-7.0 redis-8.0 valkey-8.1 valkey-9.1)

die() { echo "servers.sh: $*" >&2; exit 1; }

suite_of() {
  case $1 in
    redis-6.0) echo bullseye ;;
    redis-8.0 | valkey-8.1) echo trixie ;;
    valkey-9.1) echo sid ;;
    *) die "unknown server '$1' (known: ${all[*]})" ;;
  esac
}

# apt-get and apt-cache on a private state directory for one suite: nothing of the host's apt
# configuration or package lists is read or changed.
apt_in() {
  local dir=$1 tool=$2; shift 2
  "$tool" -q -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=- \
    -o Dir::Etc::Parts="$dir/none" -o Dir::Etc::Preferences=/dev/null \
    -o Dir::Etc::PreferencesParts="$dir/none" \
    -o Dir::State="$dir/state" -o Dir::State::status="$dir/state/status" -o Dir::Cache="$dir/cache" \
    -o Debug::NoLocking=1 -o Acquire::Languages=none -o APT::Sandbox::User=root "$@"
}

# Unpacks the suite's server packages and every library they need into $cache/<suite>/root.
ensure_suite() {
  local suite=$1 dir=$cache/$1 packages closure f
  [ -f "$dir/.ready" ] && return 0
  rm -rf "$dir"
  mkdir -p "$dir/state/lists/partial" "$dir/cache/archives/partial" "$dir/debs" "$dir/root" \
    "$dir/none"
  touch "$dir/state/status"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
    >"$dir/sources.list"
  apt_in "$dir" apt-get update >"$dir/apt.log" 2>&1 || die "apt-get update of $suite failed; see $dir/apt.log"
  case $suite in
    bullseye) packages=(redis-tools) ;;
    trixie) packages=(redis-tools valkey-tools) ;;
    sid) packages=(valkey-tools) ;;
  esac
  # The servers' binaries are in the -tools packages; of their dependencies only the shared
  # libraries matter (no maintainer script runs).
  closure=$(apt_in "$dir" apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${packages[@]}" | grep -v '^ ' |
    grep -E '^(lib|gcc-[0-9]+-base|redis-tools|valkey-tools|lua-)' | sort -u)
  # shellcheck disable=SC2086 # one word per package
  (cd "$dir/debs" && apt_in "$dir" apt-get download $closure >>"$dir/apt.log" 2>&1) ||
    die "downloading $suite's packages failed; see $dir/apt.log"
  for f in "$dir"/debs/*.deb; do dpkg-deb -x "$f" "$dir/root"; done
  rm -rf "$dir/debs" "$dir/cache" "$dir/state/lists"  # only the unpacked tree is used
  touch "$dir/.ready"
}

# Writes DIR/redis-server for a server of a suite tree and prints "NAME DIR VERSION".
make_runner() {
  local name=$1 root=$cache/$(suite_of "$1")/root product=${1%-*} want=${1#*-} loader real dir
  loader=$root/lib64/ld-linux-x86-64.so.2
  [ -L "$loader" ] || [ -e "$loader" ] || loader=$root/usr/lib64/ld-linux-x86-64.so.2
  # Its link may be absolute, meant for the suite's own root.
  if [ -L "$loader" ]; then
    real=$(readlink "$loader")
    case $real in /*) loader=$root$real ;; *) loader=$(dirname "$loader")/$real ;; esac
  fi
  [ -f "$loader" ] || die "no dynamic loader in $root"
  # The server is the binary the check tools link to; it acts by the name it is started as.
  real=$root/usr/bin/$product-check-rdb
  [ -f "$real" ] && [ ! -L "$real" ] || real=$(readlink -f "$real")
  ln -sf "$real" "$root/usr/bin/$product-server"
  dir=$cache/bin/$name
  mkdir -p "$dir"
  cat >"$dir/redis-server" <<EOF
#!/bin/sh
# $name from Debian $(suite_of "$name"), with that suite's loader and libraries (scripts/servers.sh).
exec "$loader" --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu" \\
  "$root/usr/bin/$product-server" "\$@"
EOF
  chmod +x "$dir/redis-server"
  report "$name" "$dir" "$want"
}

report() {  # NAME DIR WANTED_VERSION: checks the version the server says it is
  local version
  version=$("$2/redis-server" --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
  case $version in
    "$3" | "$3".*) echo "$1 $2 $version" ;;
    *) die "$1: the server found is version '${version:-unknown}', not $3.x (has Debian moved on? update scripts/servers.sh)" ;;
  esac
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")
[ "$(id -u)" -eq 0 ] || die "needs root (writes $cache)"
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
for name in "${names[@]}"; do
  if [ "$name" = redis-7.0 ]; then
    command -v redis-server >/dev/null || die "redis-server is not installed (scripts/install-deps.sh)"
    dir=$cache/bin/$name
    mkdir -p "$dir"
    ln -sf "$(command -v redis-server)" "$dir/redis-server"
    report "$name" "$dir" 7.0
    continue
  fi
  ensure_suite "$(suite_of "$name")"
  make_runner "$name"
done
