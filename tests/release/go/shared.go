//go:build !rlock_static

package main

const linkMode = "shared librlock.so"
