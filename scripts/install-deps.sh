#!/usr/bin/env bash
# Installs the Debian packages rlock builds and tests with, only those missing (a second run
# costs one dpkg query). Usage: scripts/install-deps.sh [extra packages...]
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libhiredis-dev libssl-dev openssl redis-server redis-tools libgtest-dev
          binutils "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
