//go:build cgo && !rlock_shared && !rlock_static && linux && (amd64 || arm64)

package rlock

// The default: link the librlock.a that a released module carries for this platform (written
// into internal/native by the release build, scripts/release/gomod.sh; the repository's main
// branch has none). It is the .deb's self-contained archive: the C ABI, the core, hiredis and
// OpenSSL in one object exporting only rlock_*, so a build needs no pkg-config and no installed
// librlock, and the binary needs none at run time. The second include directory is only reached
// when the first is empty: its rlock.h stops the build with a message saying what to do.

/*
#cgo CFLAGS: -I${SRCDIR}/internal/native/include -I${SRCDIR}/internal/native/absent -DRLOCK_STATIC
#cgo amd64 LDFLAGS: ${SRCDIR}/internal/native/linux_amd64/librlock.a
#cgo arm64 LDFLAGS: ${SRCDIR}/internal/native/linux_arm64/librlock.a
#cgo LDFLAGS: -lstdc++ -lm -lpthread -ldl
*/
import "C"
