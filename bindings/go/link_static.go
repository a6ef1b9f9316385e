//go:build rlock_static

package rlock

// go build -tags rlock_static: link librlock.a through rlock-static.pc, a .pc of its own because
// cgo rejects pkg-config's --static. The archive carries the C ABI, the core, hiredis and
// OpenSSL, so the binary needs no librlock.so, libhiredis or libssl at run time.

/*
#cgo pkg-config: rlock-static
*/
import "C"
