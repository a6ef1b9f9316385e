//go:build rlock_static

package main

const linkMode = "static librlock.a"
