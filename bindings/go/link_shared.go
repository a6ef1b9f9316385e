//go:build rlock_shared && !rlock_static

package rlock

// go build -tags rlock_shared: link librlock.so, found through rlock.pc (an installed .deb's, or
// a build tree's rlock-uninstalled.pc, as the project's own tests use).

/*
#cgo pkg-config: rlock
*/
import "C"
