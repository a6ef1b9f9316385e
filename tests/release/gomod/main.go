// Command rlock-gomod-check is the program of the release check verify_gomod
// (scripts/release/gomod.sh), built as a new user would: go get of the released module, then
// go build, with no pkg-config and no librlock installed.
//
//	rlock-gomod-check URL NAME
//
// takes the lock NAME with a 60 s lease, checks that a second client cannot, starts that client
// waiting for it (up to 30 s), releases it, and checks that the waiter got it well before the
// lease would have ended. Exit 0 on success.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	rlock "github.com/rlock/rlock/bindings/go"
)

const (
	lease = 60 * time.Second
	// Far below the lease: a waiter that only got the lock when the lease ran out fails.
	wakeBound = 10 * time.Second
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: rlock-gomod-check URL NAME")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "rlock-gomod-check:", err)
		os.Exit(1)
	}
}

func run(url, name string) error {
	ctx := context.Background()
	a, err := rlock.NewClient(url, rlock.WithCommandTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := rlock.NewClient(url, rlock.WithCommandTimeout(5*time.Second))
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

	if ok, err := la.TryLock(ctx, 0, lease); err != nil || !ok {
		return fmt.Errorf("acquire: ok=%v err=%v", ok, err)
	}
	if ok, err := lb.TryLock(ctx, 0, lease); err != nil || ok {
		return fmt.Errorf("a second client on a held lock: ok=%v err=%v", ok, err)
	}
	type result struct {
		ok  bool
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ok, err := lb.TryLock(ctx, 30*time.Second, lease)
		done <- result{ok, err, time.Now()}
	}()
	// The waiter must still be waiting while the lock is held.
	select {
	case r := <-done:
		return fmt.Errorf("the waiter returned while the lock was held: ok=%v err=%v", r.ok, r.err)
	case <-time.After(time.Second):
	}
	released := time.Now()
	if err := la.Unlock(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(wakeBound):
		return fmt.Errorf("the waiter did not get the lock within %v of its release", wakeBound)
	}
	if r.err != nil || !r.ok {
		return fmt.Errorf("the waiter: ok=%v err=%v", r.ok, r.err)
	}
	woke := r.at.Sub(released)
	if err := lb.Unlock(); err != nil {
		return fmt.Errorf("release (the waiter): %w", err)
	}
	fmt.Printf("ok: took and released %s, the waiter got it %v after the release; librlock %s\n",
		name, woke.Round(time.Millisecond), rlock.Version())
	return nil
}
