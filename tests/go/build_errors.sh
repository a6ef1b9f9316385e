#!/usr/bin/env bash
# The Go binding's build errors say what to do (ctest go_build_errors; docs/go.md "Install"):
# - a consumer built with CGO_ENABLED=0 fails with one error, the instruction to turn cgo on;
# - the default build of a copy with no bundled librlock (main's checkout) fails at the message
#   naming -tags rlock_shared (skipped when internal/native/include was filled in);
# - on a platform with no bundled archive the build takes link_unsupported.go, whose rlock.h
#   names the tags (read with go list and the C compiler: this host cannot build for one).
# Usage: tests/go/build_errors.sh GO BINDING_DIR
set -euo pipefail
go=${1:?usage: build_errors.sh GO BINDING_DIR}
binding=$(cd "${2:?usage: build_errors.sh GO BINDING_DIR}" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=mod GOTELEMETRY=off
cat >"$tmp/go.mod" <<MOD
module build-errors-check

go 1.22

require github.com/rlock/rlock/bindings/go v0.0.0

replace github.com/rlock/rlock/bindings/go => $binding
MOD
cat >"$tmp/main.go" <<'SRC'
package main

import (
	"time"

	rlock "github.com/rlock/rlock/bindings/go"
)

func main() {
	c, err := rlock.NewClient("", rlock.WithCommandTimeout(time.Second))
	if err == nil {
		c.Close()
	}
}
SRC
cd "$tmp"

out=$(CGO_ENABLED=0 "$go" build -o /dev/null . 2>&1) && fail "the consumer built with CGO_ENABLED=0"
errors=$(grep -v '^#' <<<"$out" || true)
if [ "$(grep -c . <<<"$errors")" != 1 ] ||
  ! grep -q 'undefined: rlock_needs_cgo__set_CGO_ENABLED_1_and_install_gcc$' <<<"$errors"; then
  fail "CGO_ENABLED=0: not the one cgo error: $out"
fi
echo "CGO_ENABLED=0: $errors"

if [ -d "$binding/internal/native/include" ]; then
  echo "no-archive case skipped: $binding/internal/native/include exists"
else
  # A build cache of its own: go caches the package by its own files, not by the headers and
  # archive under internal/native, so a cache from a build that had them would hide the error.
  out=$(CGO_ENABLED=1 PKG_CONFIG=/bin/false GOCACHE="$tmp/gocache" "$go" build -o /dev/null . 2>&1) &&
    fail "the default build succeeded without a bundled librlock"
  first=$(grep -m1 'error' <<<"$out" || true)
  grep -q 'no bundled librlock in this copy of the rlock Go module.*-tags rlock_shared' <<<"$first" ||
    fail "without a bundled librlock the first error is not the message: $out"
  echo "no bundled librlock: ${first#*error: }"
fi

files=$(GOOS=freebsd GOARCH=amd64 CGO_ENABLED=1 "$go" list -f '{{join .CgoFiles " "}}' "$binding")
if ! grep -qw link_unsupported.go <<<"$files" || grep -qw link_bundled.go <<<"$files"; then
  fail "for freebsd/amd64 the package's cgo files are not link_unsupported.go without link_bundled.go: $files"
fi
out=$("${CC:-cc}" -fsyntax-only -I"$binding/internal/native/unsupported" -x c "$binding/shim.h" 2>&1) &&
  fail "shim.h compiled with the unsupported platform's rlock.h"
grep -q 'bundles librlock only for linux/amd64 and linux/arm64.*-tags rlock_shared.*-tags rlock_static' <<<"$out" ||
  fail "the unsupported platform's rlock.h does not name the tags: $out"
echo "freebsd/amd64: takes link_unsupported.go, whose rlock.h stops the build naming the tags"
