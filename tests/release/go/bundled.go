//go:build !rlock_shared && !rlock_static

package main

const linkMode = "bundled librlock.a"
