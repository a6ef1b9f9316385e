// Command rlock-release-check is the Go program of the release checks (scripts/release/deb.sh,
// verify_deb), built with -tags rlock_static against the installed librlock package:
//
//	rlock-release-check URL NAME
//
// takes the lock NAME, checks that a second client cannot, releases it, checks that the second
// client now can, and prints the version of the library linked in. Exit 0 on success.
package main

import (
	"context"
	"fmt"
	"os"

	rlock "github.com/rlock/rlock/bindings/go"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: rlock-release-check URL NAME")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "rlock-release-check:", err)
		os.Exit(1)
	}
}

func run(url, name string) error {
	ctx := context.Background()
	a, err := rlock.NewClient(url)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := rlock.NewClient(url)
	if err != nil {
		return err
	}
	defer b.Close()
	la, err := a.Lock(name)
	if err != nil {
		return err
	}
	defer la.Close()
	lb, err := b.Lock(name)
	if err != nil {
		return err
	}
	defer lb.Close()

	if ok, err := la.TryLock(ctx, 0, 0); err != nil || !ok {
		return fmt.Errorf("acquire: ok=%v err=%v", ok, err)
	}
	if ok, err := lb.TryLock(ctx, 0, 0); err != nil || ok {
		return fmt.Errorf("a second client on a held lock: ok=%v err=%v", ok, err)
	}
	if err := la.Unlock(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if ok, err := lb.TryLock(ctx, 0, 0); err != nil || !ok {
		return fmt.Errorf("acquire after the release: ok=%v err=%v", ok, err)
	}
	if err := lb.Unlock(); err != nil {
		return fmt.Errorf("release (second client): %w", err)
	}
	fmt.Printf("ok: took and released %s with librlock %s (Go binding, %s)\n", name, rlock.Version(),
		linkMode)
	return nil
}
