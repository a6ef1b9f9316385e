package rlock

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func mustLatch(t *testing.T, c *Client, name string) *CountDownLatch {
	t.Helper()
	l, err := c.CountDownLatch(name)
	if err != nil {
		t.Fatalf("CountDownLatch(%q): %v", name, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestLatchCountsOnRedis(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	l := mustLatch(t, c, name)
	if l.Name() != name {
		t.Fatalf("Name() = %q", l.Name())
	}
	if n, err := l.Count(); err != nil || n != 0 {
		t.Fatalf("Count of a missing latch = %d, %v; want 0", n, err)
	}
	if err := l.Await(bg); err != nil {
		t.Fatalf("Await on a missing (open) latch: %v", err)
	}
	if ok, err := l.TrySetCount(2); err != nil || !ok {
		t.Fatalf("TrySetCount(2) = %v, %v", ok, err)
	}
	wantCount(t, name, 2)
	if ok, err := l.TrySetCount(5); err != nil || ok {
		t.Fatalf("TrySetCount on a closed latch = %v, %v; want false", ok, err)
	}
	wantCount(t, name, 2)
	if n, err := l.Count(); err != nil || n != 2 {
		t.Fatalf("Count = %d, %v; want 2", n, err)
	}
	if left, err := l.CountDown(); err != nil || left != 1 {
		t.Fatalf("CountDown = %d, %v; want 1", left, err)
	}
	wantCount(t, name, 1)
	if left, err := l.CountDown(); err != nil || left != 0 {
		t.Fatalf("CountDown = %d, %v; want 0", left, err)
	}
	if exists(t, name) {
		t.Fatal("the key survived the count reaching 0")
	}
	if left, err := l.CountDown(); err != nil || left != 0 {
		t.Fatalf("CountDown of an open latch = %d, %v; want 0", left, err)
	}
	if exists(t, name) {
		t.Fatal("CountDown of an open latch created the key")
	}
	l.TrySetCount(3)
	if deleted, err := l.Delete(); err != nil || !deleted {
		t.Fatalf("Delete = %v, %v", deleted, err)
	}
	if exists(t, name) {
		t.Fatal("the key survived Delete")
	}
	if deleted, err := l.Delete(); err != nil || deleted {
		t.Fatalf("Delete of a missing latch = %v, %v; want false", deleted, err)
	}
}

func TestLatchWakesWaitersOfOtherClients(t *testing.T) {
	name := uniqueName(t)
	setter := mustLatch(t, newClient(t), name)
	setter.TrySetCount(2)
	// The poll cap is an hour: a waiter that returns in time was woken by the message.
	waiting := newClient(t, WithPollCap(time.Hour))
	const n = 5
	errs := make(chan error, n)
	pending := asyncPending.Load()
	for i := 0; i < n; i++ {
		l := mustLatch(t, waiting, name)
		go func() { errs <- l.Await(bg) }()
	}
	waitFor(t, "the waiters to wait", 10*time.Second, func() bool { return asyncPending.Load()-pending >= n })
	setter.CountDown()
	select {
	case err := <-errs:
		t.Fatalf("a waiter returned before the count reached 0: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	setter.CountDown()
	waitAll(t, errs, n, 3*time.Second, "a waiter")
}

func TestLatchAwaitContext(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	l := mustLatch(t, c, name)
	l.TrySetCount(1)
	ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := l.Await(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotObtained) {
		t.Fatalf("Await until a deadline: %v", err)
	}
	if took := time.Since(start); took < 140*time.Millisecond {
		t.Fatalf("Await returned after %v, before the deadline", took)
	}

	ctx, cancel = context.WithCancel(bg)
	pending := asyncPending.Load()
	done := result(func() error { return l.Await(ctx) })
	waitFor(t, "the await to wait", 10*time.Second, func() bool { return asyncPending.Load() > pending })
	cancel()
	if err := within(t, done, 3*time.Second, "a cancelled Await"); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCanceled) {
		t.Fatalf("cancelled Await: %v", err)
	}
	wantCount(t, name, 1)

	var noContext context.Context // a nil context is the point
	if err := l.Await(noContext); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Await(nil): %v", err)
	}
}

func TestLatchCloseWakesWaiters(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	mustLatch(t, c, name).TrySetCount(1)
	l, err := c.CountDownLatch(name)
	if err != nil {
		t.Fatal(err)
	}
	pending := asyncPending.Load()
	done := result(func() error { return l.Await(bg) })
	waitFor(t, "the await to wait", 10*time.Second, func() bool { return asyncPending.Load() > pending })
	l.Close()
	if err := within(t, done, 3*time.Second, "Await on a closed latch"); !errors.Is(err, ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
	if _, err := l.CountDown(); !errors.Is(err, ErrClosed) {
		t.Fatalf("CountDown after Close: %v", err)
	}
	wantCount(t, name, 1)
}

func TestLatchBadInputChangesNothing(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	l := mustLatch(t, c, name)
	for _, count := range []int64{0, -1, 1000000000000000} {
		ok, err := l.TrySetCount(count)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
		if ok {
			t.Fatalf("TrySetCount(%d) reported success", count)
		}
	}
	if exists(t, name) {
		t.Fatal("a refused TrySetCount created the latch")
	}
	if _, err := c.CountDownLatch(""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("CountDownLatch(\"\"): %v", err)
	}

	// A key of another type: a Redis error, the key unchanged.
	wrong := uniqueName(t)
	redis.Do("HSET", wrong, "f", "1")
	dump, _ := redis.Do("DUMP", wrong)
	w := mustLatch(t, c, wrong)
	if _, err := w.CountDown(); !errors.Is(err, ErrRedis) {
		t.Errorf("CountDown on a hash: %v", err)
	}
	if _, err := w.TrySetCount(1); !errors.Is(err, ErrRedis) {
		t.Errorf("TrySetCount on a hash: %v", err)
	}
	if _, err := w.Count(); !errors.Is(err, ErrRedis) {
		t.Errorf("Count on a hash: %v", err)
	}
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	if err := w.Await(ctx); !errors.Is(err, ErrRedis) {
		t.Errorf("Await on a hash: %v", err)
	}
	if after, _ := redis.Do("DUMP", wrong); after != dump {
		t.Error("the hash changed")
	}
}

// A thousand goroutines awaiting one latch park on channels: they add no OS threads.
func TestLatchWaitersHoldNoThread(t *testing.T) {
	n := waitersUnder(t, 1000)
	c := newClient(t)
	name := uniqueName(t)
	opener := mustLatch(t, newClient(t), name)
	opener.TrySetCount(1)
	latches := make([]*CountDownLatch, 10) // several values, shared by the goroutines
	for i := range latches {
		latches[i] = mustLatch(t, c, name)
	}
	// Warm up the runtime's and the library's threads, which exist however many wait.
	warmCtx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	latches[0].Await(warmCtx)
	cancel()
	pending := asyncPending.Load()
	before := threadCount(t)

	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		l := latches[i%len(latches)]
		go func() { errs <- l.Await(bg) }()
	}
	waitFor(t, "every goroutine to wait", 5*time.Minute, func() bool {
		return asyncPending.Load()-pending >= int64(n)
	})
	if added := threadCount(t) - before; added > threadBudget() {
		t.Errorf("%d goroutines awaiting a latch added %d OS threads; the budget is %d", n, added, threadBudget())
	} else {
		t.Logf("%d goroutines awaiting a latch added %d OS threads (budget %d)", n, added, threadBudget())
	}
	if _, err := opener.CountDown(); err != nil {
		t.Fatal(err)
	}
	waitAll(t, errs, n, time.Minute, "a waiter")
}

// Wait until the 5 shards have loaded, each counting down once when done.
func ExampleCountDownLatch_Await() {
	client, err := NewClient("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	loaded, err := client.CountDownLatch("loaded")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer loaded.Close()
	loaded.TrySetCount(5) // only while the latch is open
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := loaded.Await(ctx); err != nil {
		fmt.Println("not loaded in time:", err)
	}
}
