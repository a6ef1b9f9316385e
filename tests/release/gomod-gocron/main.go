// Command rlock-gomod-gocron-check is the program of the release check gomod_check_gocron
// (scripts/release/gomod.sh), built as a new user would: go get of the released gocron module.
//
//	rlock-gomod-gocron-check URL NAME
//
// runs a gocron job through the Locker, checks that a second client's Locker cannot take a held
// job lock, and that an Elector's leadership passes to a second one when it closes. Exit 0 on
// success.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-co-op/gocron/v2"
	rlock "github.com/rlock/rlock/bindings/go"
	rlockgocron "github.com/rlock/rlock/bindings/go/gocron"
)

// Generous: each step takes a few round trips.
const bound = 10 * time.Second

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: rlock-gomod-gocron-check URL NAME")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "rlock-gomod-gocron-check:", err)
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
	la, err := rlockgocron.NewLocker(a, rlockgocron.WithMinHold(0))
	if err != nil {
		return err
	}
	lb, err := rlockgocron.NewLocker(b, rlockgocron.WithMinHold(0))
	if err != nil {
		return err
	}

	// A job of a scheduler with the Locker runs.
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(la))
	if err != nil {
		return err
	}
	ran := make(chan struct{})
	if _, err := s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()),
		gocron.NewTask(func() { close(ran) }), gocron.WithName(name)); err != nil {
		return err
	}
	s.Start()
	select {
	case <-ran:
	case <-time.After(bound):
		return fmt.Errorf("the job did not run within %v", bound)
	}
	if err := s.Shutdown(); err != nil {
		return err
	}

	held, err := la.Lock(ctx, name)
	if err != nil {
		return fmt.Errorf("Lock: %w", err)
	}
	if _, err := lb.Lock(ctx, name); !errors.Is(err, rlockgocron.ErrNotObtained) {
		return fmt.Errorf("a second client's Lock of a held job lock: want ErrNotObtained, got %v", err)
	}
	if err := held.Unlock(ctx); err != nil {
		return fmt.Errorf("Unlock: %w", err)
	}
	again, err := lb.Lock(ctx, name)
	if err != nil {
		return fmt.Errorf("a second client's Lock after Unlock: %w", err)
	}
	if err := again.Unlock(ctx); err != nil {
		return err
	}

	ea, err := rlockgocron.NewElector(a, name+":leader")
	if err != nil {
		return err
	}
	defer ea.Close()
	if err := waitLeader(ea, "the first elector"); err != nil {
		return err
	}
	eb, err := rlockgocron.NewElector(b, name+":leader")
	if err != nil {
		return err
	}
	defer eb.Close()
	time.Sleep(200 * time.Millisecond)
	if err := eb.IsLeader(ctx); !errors.Is(err, rlockgocron.ErrNotLeader) {
		return fmt.Errorf("a second elector while the first leads: want ErrNotLeader, got %v", err)
	}
	if err := ea.Close(); err != nil {
		return err
	}
	return waitLeader(eb, "the second elector after the first closed")
}

func waitLeader(e *rlockgocron.Elector, what string) error {
	var err error
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err = e.IsLeader(context.Background()); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s did not lead within %v: %v", what, bound, err)
}
