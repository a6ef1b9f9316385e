package rlock

/*
#include "shim.h"

// The latch shims (see shim.h for why every failing call copies its message here).

static inline rlock_go_result rlock_go_latch_new(rlock_latch **out, rlock_client *client,
                                                 const char *name, size_t name_len) {
  return rlock_go_result_of(rlock_latch_new_n(out, client, name, name_len));
}

static inline rlock_go_result rlock_go_latch_try_set(rlock_latch *latch, int64_t count, int *set) {
  return rlock_go_result_of(rlock_latch_try_set_count(set, latch, count));
}

static inline rlock_go_result rlock_go_latch_count_down(rlock_latch *latch, int64_t *left) {
  return rlock_go_result_of(rlock_latch_count_down(left, latch));
}

static inline rlock_go_result rlock_go_latch_count(rlock_latch *latch, int64_t *count) {
  return rlock_go_result_of(rlock_latch_count(count, latch));
}

// One look, no wait: RLOCK_ETIMEDOUT while the count is above 0.
static inline rlock_go_result rlock_go_latch_is_open(rlock_latch *latch) {
  return rlock_go_result_of(rlock_latch_await(latch, 0, NULL));
}

static inline rlock_go_result rlock_go_latch_await_async(rlock_latch *latch, int64_t wait_ms,
                                                         rlock_cancel_token *cancel,
                                                         uintptr_t user) {
  return rlock_go_result_of(
      rlock_latch_await_async(latch, wait_ms, cancel, rlock_go_done_trampoline, (void *)user));
}

static inline rlock_go_result rlock_go_latch_delete(rlock_latch *latch, int *deleted) {
  return rlock_go_result_of(rlock_latch_delete(deleted, latch));
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// CountDownLatch is a count on Redis that goroutines of any process wait on until it reaches
// 0 (Redisson's RCountDownLatch, sharing its layout). A latch that does not exist is open. It
// is safe for concurrent use. Make one with Client.CountDownLatch.
type CountDownLatch struct {
	core
	client *Client // kept alive while the latch lives
	name   string
}

func latchPtr(p unsafe.Pointer) *C.rlock_latch { return (*C.rlock_latch)(p) }

// CountDownLatch returns the latch name. No network call is made. On a Redis Cluster the name
// must not contain braces (Redisson's channel for it adds its own).
func (c *Client) CountDownLatch(name string) (*CountDownLatch, error) {
	cname := C.CString(name) // copies embedded NULs too; the length is passed
	defer C.free(unsafe.Pointer(cname))
	var ptr *C.rlock_latch
	err := c.use(func(cp *C.rlock_client) error {
		return check(C.rlock_go_latch_new(&ptr, cp, cname, C.size_t(len(name))))
	})
	if err != nil {
		return nil, err
	}
	// shared: any number of goroutines await through one value at once.
	l := &CountDownLatch{core: newCore(fmt.Sprintf("latch %q", name), unsafe.Pointer(ptr), true),
		client: c, name: name}
	runtime.SetFinalizer(l, func(l *CountDownLatch) { l.Close() })
	return l, nil
}

// Name returns the latch's name (its key on Redis).
func (l *CountDownLatch) Name() string { return l.name }

// TrySetCount sets the count (1 to 999999999999999) of a latch that does not exist (is open)
// and reports whether it did (false: it exists, nothing changed).
func (l *CountDownLatch) TrySetCount(count int64) (bool, error) {
	var set C.int
	err := l.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_latch_try_set(latchPtr(p), C.int64_t(count), &set))
	})
	runtime.KeepAlive(l)
	return set == 1, err
}

// CountDown counts down by one and returns the count left; at 0 the latch opens and every
// waiter wakes. An open latch stays open (0). It is never resent: after ErrConnection it may
// or may not have counted.
func (l *CountDownLatch) CountDown() (int64, error) {
	var left C.int64_t
	err := l.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_latch_count_down(latchPtr(p), &left))
	})
	runtime.KeepAlive(l)
	return int64(left), err
}

// Count returns the count now (0: open).
func (l *CountDownLatch) Count() (int64, error) {
	var count C.int64_t
	err := l.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_latch_count(latchPtr(p), &count))
	})
	runtime.KeepAlive(l)
	return int64(count), err
}

// Await waits until the latch is open (its count is 0, or it does not exist) and returns nil
// then. A waiting goroutine holds no OS thread. ctx bounds the wait: when it ends first the
// error satisfies errors.Is(err, ctx.Err()) (and ErrNotObtained for a deadline, as Redisson's
// await(timeout) returning false).
func (l *CountDownLatch) Await(ctx context.Context) error {
	_, err := l.acquire(ctx, 0, true, &acquireOps{
		try: func(p unsafe.Pointer) (int64, error) {
			return 0, check(C.rlock_go_latch_is_open(latchPtr(p)))
		},
		start: func(p unsafe.Pointer, waitMS int64, token *C.rlock_cancel_token, user C.uintptr_t) error {
			return check(C.rlock_go_latch_await_async(latchPtr(p), C.int64_t(waitMS), token, user))
		},
		release: func(unsafe.Pointer) error { return nil }, // an await takes nothing
	})
	runtime.KeepAlive(l)
	if e, ok := err.(*Error); ok && errors.Is(err, context.DeadlineExceeded) {
		e.Message = l.what + " did not open before the context deadline"
	}
	return err
}

// Delete deletes the latch, which opens it, and reports whether it existed. As with
// Redisson's delete, waiters are not told at once: they find the latch open the next time
// they look, so prefer counting down to 0 to release them.
func (l *CountDownLatch) Delete() (bool, error) {
	var deleted C.int
	err := l.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_latch_delete(latchPtr(p), &deleted))
	})
	runtime.KeepAlive(l)
	return deleted == 1, err
}

// Close frees the value. Goroutines waiting in Await through it get ErrClosed. Idempotent.
func (l *CountDownLatch) Close() error {
	l.close(
		func(p unsafe.Pointer) { C.rlock_latch_cancel(latchPtr(p)) },
		func(p unsafe.Pointer) { C.rlock_latch_free(latchPtr(p)) })
	runtime.SetFinalizer(l, nil)
	return nil
}
