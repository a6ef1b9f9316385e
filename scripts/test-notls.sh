#!/usr/bin/env bash
# Builds rlock without TLS (-DRLOCK_TLS=OFF, no OpenSSL) and checks that such a build refuses
# rediss:// as unsupported, naming the build option, instead of connecting in plaintext.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cmake --preset notls >/dev/null
cmake --build --preset notls -j "${RLOCK_JOBS:-2}"
cli=$root/build-notls/capi/cli/rlock
if ldd "$root/build-notls/capi/librlock.so" | grep -q 'libssl'; then
  echo "FAIL: librlock.so built with RLOCK_TLS=OFF links libssl" >&2
  exit 1
fi
set +e
out=$("$cli" status --url 'rediss://127.0.0.1:1?tls_ca_file=/nonexistent' some-lock 2>&1)
status=$?
set -e
if [ "$status" = 0 ] || ! grep -q 'not supported by this build (RLOCK_TLS=OFF)' <<<"$out"; then
  echo "FAIL: rediss:// without TLS: exit $status, output: $out" >&2
  exit 1
fi
echo "without TLS: rediss:// refused as expected ($out)"
