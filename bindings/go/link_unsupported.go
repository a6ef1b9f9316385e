//go:build cgo && !rlock_shared && !rlock_static && !(linux && (amd64 || arm64))

package rlock

// No bundled librlock.a for this platform: the rlock.h on this include path stops the build
// with a message naming the tags that link an installed librlock instead.

/*
#cgo CFLAGS: -I${SRCDIR}/internal/native/unsupported
*/
import "C"
