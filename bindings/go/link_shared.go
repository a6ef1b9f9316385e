//go:build !rlock_static

package rlock

// The default: link librlock.so, found through rlock.pc (the build tree's rlock-uninstalled.pc
// in the project's own tests).

/*
#cgo pkg-config: rlock
*/
import "C"
