package rlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlock/rlock/bindings/go/internal/redistest"
)

// exclusionCheck is a critical section that detects overlap and lost updates. The counter is
// read, the goroutine yields, and the counter is written back: without mutual exclusion
// updates get lost. Atomics keep the race detector quiet, since the happens-before edges go
// through Redis, where it cannot see them.
type exclusionCheck struct {
	inside  atomic.Int32
	counter atomic.Int64
	overlap atomic.Bool
}

func (x *exclusionCheck) critical() {
	if x.inside.Add(1) != 1 {
		x.overlap.Store(true)
	}
	v := x.counter.Load()
	time.Sleep(time.Millisecond)
	x.counter.Store(v + 1)
	x.inside.Add(-1)
}

func TestMutualExclusionAcrossGoroutines(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	const workers, rounds = 6, 15
	var x exclusionCheck
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		l := mustLock(t, c.Lock, name) // each goroutine its own value: its own owner
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := l.Lock(bg); err != nil {
					errs <- err
					return
				}
				x.critical()
				if err := l.Unlock(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if x.overlap.Load() {
		t.Fatal("two goroutines were inside at once")
	}
	if got := x.counter.Load(); got != workers*rounds {
		t.Fatalf("counter = %d, want %d (lost updates)", got, workers*rounds)
	}
	if exists(t, name) {
		t.Fatal("the lock key is left after every Unlock")
	}
}

func TestH18GoroutinesSharingOneValueExclude(t *testing.T) {
	c := newClient(t)
	l := mustLock(t, c.Lock, uniqueName(t))
	const workers, rounds = 5, 10
	var x exclusionCheck
	var wg sync.WaitGroup
	var failures atomic.Int32
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := l.Lock(bg); err != nil {
					failures.Add(1)
					return
				}
				x.critical()
				if err := l.Unlock(); err != nil {
					failures.Add(1)
					return
				}
			}
		}()
	}
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d goroutines failed", failures.Load())
	}
	if x.overlap.Load() || x.counter.Load() != workers*rounds {
		t.Fatalf("overlap=%v counter=%d, want no overlap and %d", x.overlap.Load(), x.counter.Load(), workers*rounds)
	}
}

func TestUnlockFromAnotherGoroutine(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if err := within(t, result(l.Unlock), 5*time.Second, "Unlock"); err != nil {
		t.Fatalf("Unlock from another goroutine: %v", err)
	}
	if exists(t, name) {
		t.Fatal("key left after Unlock")
	}
}

func TestH22CancelWakesWaiterAndLeavesNothing(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	holder := mustLock(t, c.Lock, name)
	waiter := mustLock(t, c.Lock, name)
	if err := holder.Lock(bg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := result(func() error { return waiter.Lock(ctx) })
	time.Sleep(300 * time.Millisecond) // let it block inside C
	cancel()
	err := within(t, done, 2*time.Second, "a cancelled Lock")
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCanceled) {
		t.Fatalf("want context.Canceled and ErrCanceled, got %v", err)
	}
	if waiter.Held() {
		t.Fatal("the cancelled waiter thinks it holds the lock")
	}
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if exists(t, name) {
		t.Fatal("the cancelled acquire left a lock behind")
	}
	// The value is still usable after a cancelled acquire.
	if ok, err := waiter.TryLock(bg, 0, 0); !ok || err != nil {
		t.Fatalf("TryLock after cancel: %v %v", ok, err)
	}
	waiter.Unlock()
}

func TestAlreadyCancelledContext(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := l.Lock(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock on a cancelled context: %v", err)
	}
	if exists(t, name) {
		t.Fatal("lock taken with a cancelled context")
	}
}

func TestH22ContextDeadline(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	holder := mustLock(t, c.Lock, name)
	waiter := mustLock(t, c.Lock, name)
	if err := holder.Lock(bg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	err := within(t, result(func() error { return waiter.Lock(ctx) }), 5*time.Second, "Lock with a deadline")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want context.DeadlineExceeded, got %v", err)
	}
	wantCode(t, err, CodeTimedOut, ErrNotObtained)
	// TryLock with a longer wait than the context allows: the context wins, with an error.
	ctx2, cancel2 := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel2()
	ok, err := waiter.TryLock(ctx2, time.Minute, 0)
	if ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryLock bounded by the context: %v %v", ok, err)
	}
	holder.Unlock()
}

func TestTryLock(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	a := mustLock(t, c.Lock, name)
	b := mustLock(t, c.Lock, name)
	if ok, err := a.TryLock(bg, 0, 0); !ok || err != nil {
		t.Fatalf("TryLock on a free lock: %v %v", ok, err)
	}
	if ok, err := b.TryLock(bg, 0, 0); ok || err != nil {
		t.Fatalf("try-once on a held lock: want false, nil; got %v %v", ok, err)
	}
	if ok, err := b.TryLock(bg, 200*time.Millisecond, 0); ok || err != nil {
		t.Fatalf("TryLock with a wait on a held lock: want false, nil; got %v %v", ok, err)
	}
	if ok, err := a.TryLock(bg, 100*time.Millisecond, 0); ok || err != nil {
		t.Fatalf("TryLock through the value that holds it: want false, nil; got %v %v", ok, err)
	}
	// A waiter gets it when the holder releases during its wait.
	done := make(chan bool, 1)
	go func() {
		ok, _ := b.TryLock(bg, 10*time.Second, 0)
		done <- ok
	}()
	time.Sleep(100 * time.Millisecond)
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("the waiter did not get the released lock")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by the release")
	}
	// An explicit lease shows as the key's TTL.
	if err := b.Unlock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.TryLock(bg, 0, 20*time.Second); !ok || err != nil {
		t.Fatalf("TryLock with a lease: %v %v", ok, err)
	}
	ttl, err := redis.PTTL(name)
	if err != nil || ttl <= 10000 || ttl > 20000 {
		t.Fatalf("PTTL after a 20s lease: %d %v", ttl, err)
	}
	a.Unlock()
}

func TestH14H13UnlockNotHeld(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	a := mustLock(t, c.Lock, name)
	b := mustLock(t, c.Lock, name)
	wantCode(t, a.Unlock(), CodeNotHeld, ErrNotHeld)
	wantCode(t, a.Extend(time.Second), CodeNotHeld, ErrNotHeld)

	if err := a.Lock(bg); err != nil {
		t.Fatal(err)
	}
	st, err := a.State(bg)
	if err != nil {
		t.Fatal(err)
	}
	// Another value: not its hold, and the holder's key is untouched.
	wantCode(t, b.Unlock(), CodeNotHeld, ErrNotHeld)
	after, err := a.State(bg)
	if err != nil || !after.HeldByMe || after.Owner != st.Owner || after.HoldCount != 1 {
		t.Fatalf("the holder's state changed: before %+v, after %+v (%v)", st, after, err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, a.Unlock(), CodeNotHeld, ErrNotHeld)

	// No network call: a value that holds nothing answers even after its client is closed.
	c2 := newClient(t)
	d := mustLock(t, c2.Lock, name)
	c2.Close()
	wantCode(t, d.Unlock(), CodeNotHeld, ErrNotHeld)
}

func TestH15UnlockAfterTakeover(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	a := mustLock(t, c.Lock, name)
	b := mustLock(t, c.Lock, name)
	if err := a.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if deleted, err := b.ForceUnlock(bg); !deleted || err != nil {
		t.Fatalf("ForceUnlock: %v %v", deleted, err)
	}
	if err := b.Lock(bg); err != nil {
		t.Fatal(err)
	}
	wantCode(t, a.Unlock(), CodeLost, ErrLockLost)
	if !b.Held() {
		t.Fatal("the new holder lost its hold")
	}
	st, err := b.State(bg)
	if err != nil || !st.HeldByMe {
		t.Fatalf("the new holder's key was touched: %+v %v", st, err)
	}
	b.Unlock()
}

func TestH17ExtendAfterExpiryIsLostAndRecreatesNothing(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	if ok, err := l.TryLock(bg, 0, 150*time.Millisecond); !ok || err != nil {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	time.Sleep(400 * time.Millisecond)
	wantCode(t, l.Extend(30*time.Second), CodeLost, ErrLockLost)
	if exists(t, name) {
		t.Fatal("the extend re-created the lock")
	}
}

// ExtendBy adds to the lease where Extend sets it, and refuses a watchdog hold.
func TestExtendBy(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name, WithLease(5*time.Second))
	wantCode(t, l.ExtendBy(time.Second), CodeNotHeld, ErrNotHeld)
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if err := l.ExtendBy(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if st, err := l.State(bg); err != nil || st.TTL <= 13*time.Second || st.TTL > 15*time.Second {
		t.Fatalf("TTL after ExtendBy(10s) of a 5 s lease: %+v %v", st, err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	w := mustLock(t, c.Lock, name)
	if err := w.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if err := w.ExtendBy(time.Second); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("ExtendBy of a watchdog hold: %v", err)
	}
	if err := w.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestExtend(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name, WithLease(2*time.Second))
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := l.State(bg)
	if err != nil || st.TTL <= 30*time.Second {
		t.Fatalf("TTL after Extend(60s): %+v %v", st, err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestLostNotification(t *testing.T) {
	c := newClient(t, WithWatchdogLease(1500*time.Millisecond))
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	reasons := make(chan LostReason, 4)
	if err := l.OnLost(func(r LostReason) { reasons <- r }); err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := redis.Do("DEL", name); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-reasons:
		if r != LostGone {
			t.Fatalf("reason %v, want %v", r, LostGone)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no lost notification")
	}
	select {
	case r := <-reasons:
		t.Fatalf("a second notification: %v", r)
	case <-time.After(time.Second):
	}
	if !l.Lost() || l.Held() {
		t.Fatalf("Lost()=%v Held()=%v after the loss", l.Lost(), l.Held())
	}
	wantCode(t, l.Unlock(), CodeLost, ErrLockLost)

	// An explicit lease that runs out while held.
	if ok, err := l.TryLock(bg, 0, 300*time.Millisecond); !ok || err != nil {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	select {
	case r := <-reasons:
		if r != LostExpired {
			t.Fatalf("reason %v, want %v", r, LostExpired)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notification for an expired lease")
	}
	wantCode(t, l.Unlock(), CodeLost, ErrLockLost)
	if err := l.OnLost(nil); err != nil {
		t.Fatal(err)
	}
}

// The callback runs with no library lock held: it may call the lock it reports on.
func TestH20CallbackMayCallTheLock(t *testing.T) {
	c := newClient(t, WithWatchdogLease(600*time.Millisecond))
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	results := make(chan error, 4)
	if err := l.OnLost(func(LostReason) {
		_, err := l.State(bg)
		results <- err
		results <- l.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := redis.Do("DEL", name); err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, ErrLockLost} {
		select {
		case err := <-results:
			if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
				t.Fatalf("call %d from the callback: %v, want %v", i, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the callback's calls did not return")
		}
	}
	if exists(t, name) {
		t.Fatal("the callback's calls re-created the lock")
	}
}

func TestFencedTokensIncrease(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	a := mustLock(t, c.FencedLock, name)
	b := mustLock(t, c.FencedLock, name)
	last := int64(0)
	for i := range 6 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if err := l.Lock(bg); err != nil {
			t.Fatal(err)
		}
		token, err := l.Token()
		if err != nil {
			t.Fatal(err)
		}
		if token <= last {
			t.Fatalf("token %d after %d: not strictly increasing", token, last)
		}
		last = token
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Token(); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Token without a hold: %v", err)
	}
	plain := mustLock(t, c.Lock, uniqueName(t))
	plain.Lock(bg)
	if _, err := plain.Token(); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Token of a plain lock: %v", err)
	}
	plain.Unlock()
}

func TestSpinLock(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	a := mustLock(t, c.SpinLock, name, WithSpinBackoff(time.Millisecond, 20*time.Millisecond))
	b := mustLock(t, c.SpinLock, name)
	if err := a.Lock(bg); err != nil {
		t.Fatal(err)
	}
	got := result(func() error { return b.Lock(bg) })
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("the spin waiter got a held lock: %v", err)
	default:
	}
	a.Unlock()
	if err := within(t, got, 5*time.Second, "the spin waiter"); err != nil {
		t.Fatal(err)
	}
	b.Unlock()
}

func TestFairLockOrder(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	holder := mustLock(t, c.FairLock, name, WithFairWaiterTimeout(time.Minute))
	if err := holder.Lock(bg); err != nil {
		t.Fatal(err)
	}
	queue := "redisson_lock_queue:{" + name + "}"
	order := make(chan int, 3)
	errs := make(chan error, 3)
	for i := range 3 {
		w := mustLock(t, c.FairLock, name)
		go func() {
			if err := w.Lock(bg); err != nil {
				errs <- err
				return
			}
			order <- i
			errs <- w.Unlock()
		}()
		// The next waiter starts only once this one is queued.
		waitFor(t, "waiter to queue", 10*time.Second, func() bool {
			n, err := redis.Do("LLEN", queue)
			return err == nil && n == int64(i+1)
		})
	}
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	for want := range 3 {
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("waiter %d got the lock in place %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("fair waiters stalled")
		}
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestNonReentrantLocks(t *testing.T) {
	c := newClient(t)
	kinds := map[string]func(string, ...LockOption) (*Lock, error){
		"plain": c.NonReentrantLock,
		"fair": func(name string, opts ...LockOption) (*Lock, error) {
			return c.NonReentrantFairLock(name, append(opts, WithFairWaiterTimeout(time.Minute))...)
		},
	}
	for label, make := range kinds {
		t.Run(label, func(t *testing.T) {
			name := uniqueName(t)
			a := mustLock(t, make, name)
			b := mustLock(t, make, name)
			if err := a.Lock(bg); err != nil {
				t.Fatal(err)
			}
			field := c.ID() + ":" + fmt.Sprint(a.owner)
			if got, err := redis.Do("HGET", name, field); err != nil || got != "1" {
				t.Fatalf("HGET %s %s: want \"1\" (Redisson's layout), got %v %v", name, field, got, err)
			}
			// Through the value that holds it: the gate waits, as for every kind.
			if ok, err := a.TryLock(bg, 100*time.Millisecond, 0); ok || err != nil {
				t.Fatalf("TryLock through the holding value: want false, nil; got %v %v", ok, err)
			}
			if ok, err := b.TryLock(bg, 0, 0); ok || err != nil {
				t.Fatalf("try-once on a held lock: want false, nil; got %v %v", ok, err)
			}
			got := result(func() error { return b.Lock(bg) })
			time.Sleep(200 * time.Millisecond)
			select {
			case err := <-got:
				t.Fatalf("the waiter got a held lock: %v", err)
			default:
			}
			if err := a.Unlock(); err != nil {
				t.Fatal(err)
			}
			if err := within(t, got, 5*time.Second, "the waiter"); err != nil {
				t.Fatal(err)
			}
			// The kind reaches the library: an owner whose field is already on Redis (a hold
			// this value's gate does not know of) is refused, not counted twice.
			if err := b.Unlock(); err != nil {
				t.Fatal(err)
			}
			if _, err := redis.Do("HSET", name, field, "1"); err != nil {
				t.Fatal(err)
			}
			ok, err := a.TryLock(bg, time.Second, 0)
			if ok || !errors.Is(err, ErrDeadlock) {
				t.Fatalf("acquire by an owner already on Redis: want ErrDeadlock, got %v %v", ok, err)
			}
			wantCode(t, err, CodeDeadlock, ErrDeadlock)
			if n, _ := redis.Do("HGET", name, field); n != "1" {
				t.Fatalf("the refused acquire changed the count to %v", n)
			}
			if deleted, err := a.ForceUnlock(bg); !deleted || err != nil {
				t.Fatalf("ForceUnlock: %v %v", deleted, err)
			}
		})
	}
	_, err := c.NonReentrantLock("x", WithFairWaiterTimeout(time.Minute))
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("WithFairWaiterTimeout on NonReentrantLock: want ErrInvalidArgument, got %v", err)
	}
}

func TestReadWriteLock(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	rw1, err := c.ReadWriteLock(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rw1.Close()
	rw2, err := c.ReadWriteLock(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rw2.Close()
	// Readers share, also through one value from several goroutines.
	if err := rw1.ReadLock().Lock(bg); err != nil {
		t.Fatal(err)
	}
	if err := within(t, result(func() error { return rw1.ReadLock().Lock(bg) }), 5*time.Second, "a second reader on one value"); err != nil {
		t.Fatal(err)
	}
	if ok, err := rw2.ReadLock().TryLock(bg, 0, 0); !ok || err != nil {
		t.Fatalf("a reader of another value: %v %v", ok, err)
	}
	st, err := rw1.ReadLock().State(bg)
	if err != nil || st.Mode != ModeRead || st.Owners != 2 || st.HoldCount != 2 {
		t.Fatalf("state with two readers: %+v %v", st, err)
	}
	// The writer is excluded while anyone reads, including a reader of its own value.
	if ok, err := rw2.WriteLock().TryLock(bg, 100*time.Millisecond, 0); ok || err != nil {
		t.Fatalf("writer with readers: want false, nil; got %v %v", ok, err)
	}
	rw2.ReadLock().Unlock()
	rw1.ReadLock().Unlock()
	if ok, err := rw2.WriteLock().TryLock(bg, 0, 0); ok || err != nil {
		t.Fatalf("writer with one reader hold left: want false, nil; got %v %v", ok, err)
	}
	if err := rw1.ReadLock().Unlock(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, rw1.ReadLock().Unlock(), CodeNotHeld, ErrNotHeld)
	if ok, err := rw2.WriteLock().TryLock(bg, 0, 0); !ok || err != nil {
		t.Fatalf("writer on a free lock: %v %v", ok, err)
	}
	if ok, err := rw1.ReadLock().TryLock(bg, 0, 0); ok || err != nil {
		t.Fatalf("reader while written: want false, nil; got %v %v", ok, err)
	}
	st, err = rw2.WriteLock().State(bg)
	if err != nil || st.Mode != ModeWrite || !st.HeldByMe {
		t.Fatalf("state while written: %+v %v", st, err)
	}
	// Two goroutines waiting for the read half of one value both get it when the writer leaves.
	first := result(func() error { return rw1.ReadLock().Lock(bg) })
	second := result(func() error { return rw1.ReadLock().Lock(bg) })
	time.Sleep(200 * time.Millisecond)
	if err := rw2.WriteLock().Unlock(); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan error{first, second} {
		if err := within(t, ch, 5*time.Second, "a waiting reader"); err != nil {
			t.Fatal(err)
		}
	}
	st, err = rw1.ReadLock().State(bg)
	if err != nil || st.HoldCount != 2 || st.Owners != 1 {
		t.Fatalf("state with two holds of one reader value: %+v %v", st, err)
	}
	rw1.ReadLock().Unlock()
	rw1.ReadLock().Unlock()
	if exists(t, name) {
		t.Fatal("key left after every release")
	}
}

func TestMultiLock(t *testing.T) {
	c := newClient(t)
	names := []string{uniqueName(t), uniqueName(t), uniqueName(t)}
	var members []*Lock
	for _, n := range names {
		members = append(members, mustLock(t, c.Lock, n))
	}
	group, err := NewMultiLock(members...)
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	if err := group.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if !group.Held() {
		t.Fatal("group not held after Lock")
	}
	other := mustLock(t, c.Lock, names[1])
	if ok, err := other.TryLock(bg, 0, 0); ok || err != nil {
		t.Fatalf("a member of a held group: want false, nil; got %v %v", ok, err)
	}
	for _, n := range names {
		if !exists(t, n) {
			t.Fatalf("member %s not locked", n)
		}
	}
	// A second group on an overlapping member cannot get it and leaves nothing behind.
	group2, err := NewMultiLock(mustLock(t, c.Lock, names[2]), mustLock(t, c.Lock, uniqueName(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer group2.Close()
	if ok, err := group2.TryLock(bg, 200*time.Millisecond, 0); ok || err != nil {
		t.Fatalf("overlapping group: want false, nil; got %v %v", ok, err)
	}
	if err := group.Unlock(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if exists(t, n) {
			t.Fatalf("member %s left locked", n)
		}
	}
	wantCode(t, group.Unlock(), CodeNotHeld, ErrNotHeld)

	red, err := NewRedLock(members...)
	if err != nil {
		t.Fatal(err)
	}
	defer red.Close()
	if ok, err := red.TryLock(bg, time.Second, 10*time.Second); !ok || err != nil {
		t.Fatalf("RedLock: %v %v", ok, err)
	}
	if v := red.Validity(); v <= 0 || v > 10*time.Second {
		t.Fatalf("validity %v", v)
	}
	if err := red.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestH19ClientCloseWakesWaitersAndReleases(t *testing.T) {
	c, err := NewClient(redis.URL)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName(t)
	holder, _ := c.Lock(name)
	waiter, _ := c.Lock(name)
	if err := holder.Lock(bg); err != nil {
		t.Fatal(err)
	}
	done := result(func() error { return waiter.Lock(bg) })
	time.Sleep(200 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, within(t, done, 2*time.Second, "a waiter of a closed client"), CodeClosed, ErrClosed)
	if exists(t, name) {
		t.Fatal("Close did not release the held lock")
	}
	wantCode(t, holder.Unlock(), CodeClosed, ErrClosed)
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.Lock(name); !errors.Is(err, ErrClosed) {
		t.Fatalf("Lock on a closed client: %v", err)
	}
	holder.Close()
	waiter.Close()
}

func TestLockCloseWakesWaiters(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	holder := mustLock(t, c.Lock, name)
	waiter := mustLock(t, c.Lock, name)
	if err := holder.Lock(bg); err != nil {
		t.Fatal(err)
	}
	inC := result(func() error { return waiter.Lock(bg) })
	time.Sleep(200 * time.Millisecond)
	atGate := result(func() error { return waiter.Lock(bg) }) // waits on the value's gate
	time.Sleep(100 * time.Millisecond)
	closed := result(waiter.Close)
	wantCode(t, within(t, inC, 2*time.Second, "a waiter in C"), CodeClosed, ErrClosed)
	wantCode(t, within(t, atGate, 2*time.Second, "a waiter at the gate"), CodeClosed, ErrClosed)
	if err := within(t, closed, 2*time.Second, "Close"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, waiter.Lock(bg), CodeClosed, ErrClosed)
	if waiter.Held() || waiter.Lost() {
		t.Fatal("a closed value reports a hold")
	}
	holder.Unlock()
	if exists(t, name) {
		t.Fatal("key left")
	}
}

func TestH21CloseWhileHeldLeavesLockToExpire(t *testing.T) {
	c := newClient(t, WithWatchdogLease(2*time.Second))
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if !exists(t, name) {
		t.Fatal("Close released the lock over the network")
	}
	waitFor(t, "the abandoned lock to expire", 15*time.Second, func() bool { return !exists(t, name) })
}

// Replica sync asked in the URL, on a server with no replica: the grant is taken back and the
// error is ErrNotSynced; nothing is held or left on the server.
func TestReplicaSyncWithoutReplicaIsErrNotSynced(t *testing.T) {
	c, err := NewClient(redis.URL + "?sync_replicas=1&sync_timeout_ms=50")
	if err != nil {
		t.Fatalf("NewClient with sync options: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	ok, err := l.TryLock(bg, 0, 0)
	if ok || !errors.Is(err, ErrNotSynced) {
		t.Fatalf("TryLock: want false, ErrNotSynced; got %v, %v", ok, err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeNotSynced || e.Code.String() != "RLOCK_ENOTSYNCED" {
		t.Fatalf("error %v: want code RLOCK_ENOTSYNCED", err)
	}
	if exists(t, name) {
		t.Fatalf("the unconfirmed grant was left on the server")
	}
}

// clusterURL is the redis-cluster:// URL of the CTest cluster fixture.
func clusterURL(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RLOCK_TEST_CLUSTER_DIR")
	if dir == "" {
		if os.Getenv("RLOCK_TEST_REDIS_URL") != "" {
			t.Fatal("RLOCK_TEST_CLUSTER_DIR is not set: the CTest test lacks the cluster fixture")
		}
		t.Skip("no cluster: run through CTest (go_test), which starts one")
	}
	b, err := os.ReadFile(filepath.Join(dir, "url"))
	if err != nil {
		t.Fatalf("reading the cluster fixture's URL: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// The binding takes a redis-cluster:// URL unchanged: names over every slot range exclude
// across clients, fenced tokens grow, and every key goes with the unlock.
func TestClusterURLLocksNamesInManySlots(t *testing.T) {
	url := clusterURL(t)
	a, err := NewClient(url)
	if err != nil {
		t.Fatalf("NewClient(%q): %v", url, err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := NewClient(url)
	if err != nil {
		t.Fatalf("NewClient(%q): %v", url, err)
	}
	t.Cleanup(func() { b.Close() })
	for i := 0; i < 16; i++ {
		name := fmt.Sprintf("%s-%d", uniqueName(t), i)
		mine := mustLock(t, a.FencedLock, name)
		theirs := mustLock(t, b.FencedLock, name)
		if ok, err := mine.TryLock(bg, 0, 0); !ok || err != nil {
			t.Fatalf("%s: TryLock: %v %v", name, ok, err)
		}
		first, err := mine.Token()
		if err != nil || first <= 0 {
			t.Fatalf("%s: token %d, %v", name, first, err)
		}
		if ok, err := theirs.TryLock(bg, 0, 0); ok || err != nil {
			t.Fatalf("%s: the other client got a held lock: %v %v", name, ok, err)
		}
		if err := mine.Unlock(); err != nil {
			t.Fatalf("%s: Unlock: %v", name, err)
		}
		if ok, err := theirs.TryLock(bg, time.Second, 0); !ok || err != nil {
			t.Fatalf("%s: the other client could not take the released lock: %v %v", name, ok, err)
		}
		if second, _ := theirs.Token(); second <= first {
			t.Fatalf("%s: token %d after %d", name, second, first)
		}
		if err := theirs.Unlock(); err != nil {
			t.Fatalf("%s: Unlock: %v", name, err)
		}
	}
}

// Extend on a RedLock: a majority is enough; a member whose key is gone counts only with
// ReacquireLost, which never takes a key another owner holds.
func TestRedLockExtend(t *testing.T) {
	var servers []*redistest.Server
	var members []*Lock
	name := uniqueName(t)
	for i := 0; i < 3; i++ {
		s, err := redistest.StartPrivate()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
		servers = append(servers, s)
		c, err := NewClient(s.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		members = append(members, mustLock(t, c.Lock, name))
	}
	red, err := NewRedLock(members...)
	if err != nil {
		t.Fatal(err)
	}
	defer red.Close()
	wantCode(t, red.Extend(time.Second), CodeNotHeld, ErrNotHeld)
	if ok, err := red.TryLock(bg, 0, 2*time.Second); !ok || err != nil {
		t.Fatalf("RedLock: %v %v", ok, err)
	}
	if err := red.Extend(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if v := red.Validity(); v <= 15*time.Second || v > 20*time.Second {
		t.Fatalf("validity after Extend: %v", v)
	}
	for i, s := range servers {
		if ttl, _ := s.PTTL(name); ttl <= 15000 {
			t.Fatalf("server %d: PTTL %d after Extend(20s)", i, ttl)
		}
	}
	// One key lost (its node restarted empty): 2 of 3 still extend.
	if _, err := servers[0].Do("DEL", name); err != nil {
		t.Fatal(err)
	}
	if err := red.Extend(20 * time.Second); err != nil {
		t.Fatalf("2 of 3: %v", err)
	}
	// Two lost: short of the majority, unless they are taken again; another owner's is not.
	if _, err := servers[1].Do("DEL", name); err != nil {
		t.Fatal(err)
	}
	if err := red.Extend(20 * time.Second); err == nil {
		t.Fatal("1 of 3 extended: want an error")
	}
	other, err := NewClient(servers[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	theirs := mustLock(t, other.Lock, name)
	if ok, err := theirs.TryLock(bg, 0, 0); !ok || err != nil {
		t.Fatalf("another owner on server 0: %v %v", ok, err)
	}
	if err := red.Extend(20*time.Second, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Extend with a nil option: %v", err)
	}
	if err := red.Extend(20*time.Second, ReacquireLost()); err != nil {
		t.Fatalf("with ReacquireLost: %v", err)
	}
	if ttl, _ := servers[1].PTTL(name); ttl <= 15000 {
		t.Fatalf("server 1 not taken again: PTTL %d", ttl)
	}
	if err := theirs.Unlock(); err != nil {
		t.Fatalf("the other owner's hold was disturbed: %v", err)
	}
	if err := red.Unlock(); err != nil {
		t.Fatal(err)
	}
	for i, s := range servers {
		if ok, _ := s.Exists(name); ok {
			t.Fatalf("server %d: key left", i)
		}
	}
}

// WithOwnerID: values on two clients (as two processes) naming one id are one owner; the field
// is the id's version-5 UUID (the C tests check the same value), and another id is a stranger.
func TestOwnerIDReleasedByAnotherClient(t *testing.T) {
	name := uniqueName(t)
	taker := mustLock(t, newClient(t).Lock, name, WithOwnerID("job-42"), WithLease(20*time.Second))
	finisher := mustLock(t, newClient(t).Lock, name, WithOwnerID("job-42"))
	stranger := mustLock(t, newClient(t).Lock, name, WithOwnerID("job-43"))
	if err := taker.Lock(bg); err != nil {
		t.Fatal(err)
	}
	st, err := finisher.State(bg)
	if err != nil || st.Owner != "bd5e3299-69d1-5f15-b688-738ddd7fa874:1" || !st.HeldByMe {
		t.Fatalf("state seen by the other client: %+v %v", st, err)
	}
	if ok, err := stranger.TryLock(bg, 0, 0); ok || err != nil {
		t.Fatalf("another id took the lock: %v %v", ok, err)
	}
	// The id never re-enters: another value naming it is refused at once, even with a wait.
	if ok, err := finisher.TryLock(bg, 5*time.Second, 0); ok || !errors.Is(err, ErrDeadlock) {
		t.Fatalf("the id's second acquire: %v %v", ok, err)
	}
	wantCode(t, stranger.Unlock(), CodeNotOwner, ErrNotOwner)
	if err := finisher.Extend(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	if st, _ := finisher.State(bg); st.TTL <= 30*time.Second {
		t.Fatalf("TTL after the other client's Extend(60s): %v", st.TTL)
	}
	if err := finisher.Unlock(); err != nil {
		t.Fatal(err)
	}
	if exists(t, name) {
		t.Fatal("the release by the other client left the key")
	}
	wantCode(t, finisher.Unlock(), CodeNotHeld, ErrNotHeld)
	for _, bad := range []string{"", strings.Repeat("x", 1025)} {
		if _, err := newClient(t).Lock(name, WithOwnerID(bad)); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("WithOwnerID(%d bytes): %v", len(bad), err)
		}
	}
}

// Holder: who holds the lock (this process: host, pid) and since when, from the holder record
// of the owner's client; nil when free.
func TestHolderNamesThisProcessAndWhenItTookTheLock(t *testing.T) {
	c := newClient(t)
	l := mustLock(t, c.Lock, uniqueName(t))
	if h, err := l.Holder(bg); h != nil || err != nil {
		t.Fatalf("Holder of a free lock: %+v %v", h, err)
	}
	before := time.Now()
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	var h *Holder
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		if h, err = l.Holder(bg); err != nil {
			t.Fatal(err)
		}
		if !h.Since.IsZero() || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	host, _ := os.Hostname()
	if !h.Known || h.Host != host || h.PID != os.Getpid() || h.Command == "" {
		t.Fatalf("holder %+v, want host %q pid %d", h, host, os.Getpid())
	}
	if h.Since.Before(before.Add(-5*time.Millisecond)) || h.Since.After(after.Add(5*time.Millisecond)) {
		t.Fatalf("since %v not within [%v, %v]", h.Since, before, after)
	}
	if h.Started.After(h.Since) {
		t.Fatalf("the client started %v after its hold %v", h.Started, h.Since)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if h, err := l.Holder(bg); h != nil || err != nil {
		t.Fatalf("Holder after Unlock: %+v %v", h, err)
	}
}
