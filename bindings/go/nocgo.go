//go:build !cgo

package rlock

// The package wraps the C library, so it needs cgo. Without it the files importing "C" drop
// out and the rest would compile into a package missing most of its API, leaving the program
// to fail on some undefined rlock.X; this undefined name makes the package itself fail first,
// and reads as what to do.
var _ = rlock_needs_cgo__set_CGO_ENABLED_1_and_install_gcc
