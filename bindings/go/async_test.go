package rlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlock/rlock/bindings/go/internal/redistest"
)

// Waiting goroutines park on channels: these tests count OS threads (/proc/self/task), never
// times. The counts need the library's event-driven engine: a C library that runs each
// asynchronous call on a thread of its own fails them.

func threadCount(t *testing.T) int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatalf("counting threads: %v", err)
	}
	return len(tasks)
}

// threadBudget is how many OS threads a test may add however many goroutines wait: the
// goroutines allowed in blocking C calls at once, Go's own threads for GOMAXPROCS, and the
// client's library threads (at most 16), plus a little slack for the runtime.
func threadBudget() int {
	return int(blockingLimit.Load()) + runtime.GOMAXPROCS(0) + 16 + 8
}

// waitersUnder returns the number of waiters a test uses: n, or $RLOCK_GO_TEST_WAITERS (for
// the 100,000-goroutine run: RLOCK_GO_TEST_WAITERS=100000 go test -run TestWaitersHoldNoThread).
func waitersUnder(t *testing.T, n int) int {
	if s := os.Getenv("RLOCK_GO_TEST_WAITERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("RLOCK_GO_TEST_WAITERS=%q: want a positive count", s)
		}
		return v
	}
	return n
}

// waitAll collects n results from errs within a generous bound and fails on the first error.
func waitAll(t *testing.T, errs <-chan error, n int, d time.Duration, what string) {
	t.Helper()
	timeout := time.After(d)
	for i := range n {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-timeout:
			t.Fatalf("%s: only %d of %d returned within %v", what, i, n, d)
		}
	}
}

// Needs the engine.
func TestWaitersHoldNoThread(t *testing.T) {
	n := waitersUnder(t, 2000)
	c := newClient(t)
	name := uniqueName(t)
	holder := mustLock(t, c.Lock, name)
	if err := holder.Lock(bg); err != nil {
		t.Fatal(err)
	}
	locks := make([]*Lock, n)
	for i := range locks {
		locks[i] = mustLock(t, c.Lock, name)
	}
	// Warm up the runtime's and the library's threads, which exist however many wait.
	warm := mustLock(t, c.Lock, uniqueName(t))
	if err := warm.Lock(bg); err != nil {
		t.Fatal(err)
	}
	warm.Unlock()
	pending := asyncPending.Load()
	before := threadCount(t)

	errs := make(chan error, n)
	for _, l := range locks {
		go func() {
			if err := l.Lock(bg); err != nil {
				errs <- err
				return
			}
			errs <- l.Unlock()
		}()
	}
	waitFor(t, "every goroutine to wait", 5*time.Minute, func() bool {
		return asyncPending.Load()-pending >= int64(n)
	})
	if added := threadCount(t) - before; added > threadBudget() {
		t.Errorf("%d waiting goroutines added %d OS threads; the budget is %d", n, added, threadBudget())
	}
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	waitAll(t, errs, n, 5*time.Minute, "a waiter")
	if exists(t, name) {
		t.Fatal("the lock is still held after every waiter unlocked")
	}
}

// Unlocks that Redis is slow to answer: a blocking C call each would be a thread each. Needs
// the engine (a library thread per asynchronous call fails it too).
func TestSlowUnlocksHoldFewThreads(t *testing.T) {
	const n = 1000
	srv, err := redistest.StartPrivate()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	locks := make([]*Lock, n)
	for i := range locks {
		locks[i] = mustLock(t, c.Lock, uniqueName(t))
		if err := locks[i].Lock(bg); err != nil {
			t.Fatal(err)
		}
	}
	before := threadCount(t)
	// Scripts that write wait until the pause ends, well within the command timeout.
	if _, err := srv.Do("CLIENT", "PAUSE", "1000", "WRITE"); err != nil {
		t.Fatal(err)
	}
	pending := asyncPending.Load()
	errs := make(chan error, n)
	for _, l := range locks {
		go func() { errs <- l.Unlock() }()
	}
	waitFor(t, "every Unlock to be in C", 10*time.Second, func() bool {
		return asyncPending.Load()-pending+int64(blockingCalls.Load()) >= n
	})
	if added := threadCount(t) - before; added > threadBudget() {
		t.Errorf("%d Unlocks waiting for Redis added %d OS threads; the budget is %d", n, added, threadBudget())
	}
	waitAll(t, errs, n, time.Minute, "Unlock")
	// Go keeps the threads it started: once the library's own are gone, what is left shows
	// the Go side's peak.
	added := threadCount(t) - before
	for deadline := time.Now().Add(5 * time.Second); added > threadBudget() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		added = threadCount(t) - before
	}
	if added > threadBudget() {
		t.Errorf("%d Unlocks waiting for Redis left %d more OS threads; the budget is %d", n, added, threadBudget())
	}
}

func TestCancelManyWaitersLeavesNothing(t *testing.T) {
	const n = 200
	kinds := []struct {
		name string
		make func(*Client) func(string, ...LockOption) (*Lock, error)
	}{
		{"reentrant", func(c *Client) func(string, ...LockOption) (*Lock, error) { return c.Lock }},
		{"fair", func(c *Client) func(string, ...LockOption) (*Lock, error) { return c.FairLock }},
		{"spin", func(c *Client) func(string, ...LockOption) (*Lock, error) { return c.SpinLock }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			c := newClient(t)
			name := uniqueName(t)
			holder := mustLock(t, k.make(c), name)
			if err := holder.Lock(bg); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(bg)
			defer cancel()
			pending := asyncPending.Load()
			errs := make(chan error, n)
			waiters := make([]*Lock, n)
			for i := range waiters {
				waiters[i] = mustLock(t, k.make(c), name)
				go func() {
					err := waiters[i].Lock(ctx)
					if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCanceled) {
						err = fmt.Errorf("want context.Canceled and ErrCanceled, got %v", err)
					} else {
						err = nil
					}
					errs <- err
				}()
			}
			waitFor(t, "every goroutine to wait", time.Minute, func() bool {
				return asyncPending.Load()-pending >= n
			})
			cancel()
			waitAll(t, errs, n, time.Minute, "a cancelled waiter")
			for _, w := range waiters {
				if w.Held() {
					t.Fatal("a cancelled waiter holds the lock")
				}
			}
			if err := holder.Unlock(); err != nil {
				t.Fatal(err)
			}
			// A waiter the cancellation missed would take the lock now, or leave its place
			// in the fair queue.
			time.Sleep(200 * time.Millisecond)
			for _, key := range []string{name, "redisson_lock_queue:{" + name + "}", "redisson_lock_timeout:{" + name + "}"} {
				if exists(t, key) {
					t.Fatalf("%s left after every waiter was cancelled", key)
				}
			}
		})
	}
}

// The grant arrives and the context ends before the goroutine looks at either: the grant is
// given back and the context's error returned. Every call goes asynchronous here.
func TestGrantRacingCancelIsReleased(t *testing.T) {
	prev := blockingLimit.Swap(0)
	defer blockingLimit.Store(prev)
	c := newClient(t)
	acquire := func(t *testing.T, lock func(context.Context) error, held func() bool, keys ...string) {
		ctx, cancel := context.WithCancel(bg)
		defer cancel()
		testHookWaiting = func(ch <-chan completion) {
			waitFor(t, "the grant", 10*time.Second, func() bool { return len(ch) == 1 })
			cancel()
		}
		err := lock(ctx)
		testHookWaiting = nil
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
		if held() {
			t.Fatal("the value holds the grant that raced the cancellation")
		}
		for _, key := range keys {
			if exists(t, key) {
				t.Fatalf("%s left after the raced grant", key)
			}
		}
	}
	t.Run("reentrant", func(t *testing.T) {
		name := uniqueName(t)
		l := mustLock(t, c.Lock, name)
		acquire(t, l.Lock, l.Held, name)
	})
	t.Run("fair", func(t *testing.T) {
		name := uniqueName(t)
		l := mustLock(t, c.FairLock, name)
		acquire(t, l.Lock, l.Held, name, "redisson_lock_queue:{"+name+"}")
	})
	t.Run("read", func(t *testing.T) {
		name := uniqueName(t)
		rw, err := c.ReadWriteLock(name)
		if err != nil {
			t.Fatal(err)
		}
		defer rw.Close()
		acquire(t, rw.ReadLock().Lock, rw.ReadLock().Held, name)
	})
	t.Run("multi", func(t *testing.T) {
		a, b := uniqueName(t), uniqueName(t)
		group, err := NewMultiLock(mustLock(t, c.Lock, a), mustLock(t, c.Lock, b))
		if err != nil {
			t.Fatal(err)
		}
		defer group.Close()
		acquire(t, group.Lock, group.Held, a, b)
	})
}

// A cancel and a release at the same moment: the waiter either holds the lock or nothing.
func TestCancelRacingRelease(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	holder := mustLock(t, c.Lock, name)
	waiter := mustLock(t, c.Lock, name)
	for range 30 {
		if err := holder.Lock(bg); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		pending := asyncPending.Load()
		done := result(func() error { return waiter.Lock(ctx) })
		waitFor(t, "the waiter to wait", 10*time.Second, func() bool { return asyncPending.Load() > pending })
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); cancel() }()
		go func() { defer wg.Done(); holder.Unlock() }()
		wg.Wait()
		err := within(t, done, 10*time.Second, "the waiter")
		switch {
		case err == nil:
			if err := waiter.Unlock(); err != nil {
				t.Fatal(err)
			}
		case !errors.Is(err, context.Canceled):
			t.Fatalf("want nil or context.Canceled, got %v", err)
		case waiter.Held():
			t.Fatal("a cancelled waiter holds the lock")
		}
		if exists(t, name) {
			t.Fatal("the lock is held after the race")
		}
	}
}

// A failure reported by a completion carries the library's message, read inside the
// completion (rlock_last_error), not only the code.
func TestAsyncFailureHasItsMessage(t *testing.T) {
	prev := blockingLimit.Swap(0)
	defer blockingLimit.Store(prev)
	c := newClient(t)
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ForceUnlock(bg); err != nil {
		t.Fatal(err)
	}
	err := l.Unlock()
	wantCode(t, err, CodeLost, ErrLockLost)
	if msg := err.(*Error).Message; !strings.Contains(msg, name) {
		t.Fatalf("the message of an asynchronous release does not name the lock: %q", msg)
	}
}

// A goroutine looping over blocking calls yields to the scheduler now and then (leaveBlocking);
// the calls around a yield behave as any other: each Lock holds, a TryLock of another value
// fails, each Unlock frees, and a Lock that must wait still ends with its context.
func TestBlockingCallsYield(t *testing.T) {
	if blockingLimit.Load() == 0 {
		t.Skip("every call goes through the asynchronous path (RLOCK_GO_TEST_ASYNC=1)")
	}
	c := newClient(t)
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	other := mustLock(t, c.Lock, name)
	ctx := context.Background()
	before := lastYield.Load()
	for deadline := time.Now().Add(30 * time.Second); lastYield.Load() == before; {
		if time.Now().After(deadline) {
			t.Fatal("no yield after 30 s of blocking calls")
		}
		if err := l.Lock(ctx); err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if ok, err := other.TryLock(ctx, 0, 0); ok || err != nil {
			t.Fatalf("TryLock of a held lock through another value = %v, %v; want false, nil", ok, err)
		}
		if err := l.Unlock(); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}

	// The slow path after the yields: other waits (asynchronously) and its context ends it.
	if err := l.Lock(ctx); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	waitCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	pending := asyncPending.Load()
	go func() { done <- other.Lock(waitCtx) }()
	waitFor(t, "the waiter to start its asynchronous acquire", 10*time.Second,
		func() bool { return asyncPending.Load() > pending })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock ended by its context: %v; want context.Canceled", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := other.Lock(ctx); err != nil {
		t.Fatalf("Lock after the waiter was cancelled: %v", err)
	}
	if err := other.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}
