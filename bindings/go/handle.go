package rlock

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Owner thread ids start above any OS thread id (Linux pids stay below 2^22), so a value of
// this package never shares an owner with a C or Python caller using gettid() in the same
// client.
var lastOwner atomic.Int64

func init() { lastOwner.Store(1<<41 - 1) }

func newOwner() int64 { return lastOwner.Add(1) }

func check(r C.rlock_go_result) error { return statusError(r.rc, r.message) }

// statusError is the error of a C status, with the message a shim copied (freed here).
func statusError(rc C.int, message *C.char) error {
	if rc == C.RLOCK_OK {
		return nil
	}
	msg := C.GoString(C.rlock_strerror(rc)) // the shim could not allocate the copy
	if message != nil {
		msg = C.GoString(message)
		C.free(unsafe.Pointer(message))
	}
	return &Error{Code: Code(rc), Message: msg}
}

// durationMS converts a positive duration to whole milliseconds, rounding up so that a wait
// or lease is never shorter than asked.
func durationMS(d time.Duration) int64 {
	return int64(math.Ceil(float64(d) / float64(time.Millisecond)))
}

// core is what a Lock and a MultiLock share: a C handle used by many goroutines, one owner id,
// and the local state that gives a value sync.Mutex semantics.
//
// C calls hold mu shared for their whole duration; Close takes it exclusively to free the
// handle, after waking any acquire blocked inside C. Nothing here refers back to the value
// that embeds it (no stored closures), so a dropped value is collectable and its finalizer runs.
type core struct {
	what    string // "lock \"name\"", for messages
	owner   int64
	mu      sync.RWMutex
	closeMu sync.Mutex     // serializes Close
	ptr     unsafe.Pointer // the C handle; nil once freed
	closing atomic.Bool
	done    chan struct{} // closed when Close starts: wakes goroutines waiting at the gate

	// shared (the read half of a read-write lock): holds add up, like sync.RWMutex.RLock;
	// any goroutine may release one. Otherwise the value is exclusive: gate is taken from
	// entering Lock until Unlock, so goroutines sharing the value exclude each other.
	shared bool
	gate   chan struct{}
	locked atomic.Bool  // exclusive: the hold exists
	holds  atomic.Int64 // shared: number of holds
}

func newCore(what string, ptr unsafe.Pointer, shared bool) core {
	return core{
		what:   what,
		owner:  newOwner(),
		ptr:    ptr,
		done:   make(chan struct{}),
		shared: shared,
		gate:   make(chan struct{}, 1),
	}
}

func (c *core) closedError() error {
	return newError(CodeClosed, "%s is closed", c.what)
}

func (c *core) notHeldError() error {
	return newError(CodeNotHeld, "%s is not locked through this value", c.what)
}

// contextError is the error of an acquire that its context ended.
func (c *core) contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeTimedOut, cause: err,
			Message: c.what + " was not obtained before the context deadline"}
	}
	return &Error{Code: CodeCanceled, cause: err,
		Message: c.what + ": acquire canceled by its context"}
}

// use runs fn with the C handle, which stays valid until fn returns.
func (c *core) use(fn func(p unsafe.Pointer) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil || c.closing.Load() {
		return c.closedError()
	}
	return fn(c.ptr)
}

// close frees the C handle once no call is using it. wake (rlock_cancel or rlock_multi_cancel)
// ends acquires blocked in C; it is repeated because an acquire may enter C just after a wake.
func (c *core) close(wake func(p unsafe.Pointer), free func(p unsafe.Pointer)) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closing.Load() {
		return
	}
	c.closing.Store(true)
	close(c.done)
	for !c.mu.TryLock() {
		wake(c.ptr) // only this goroutine frees ptr, so it is valid here
		time.Sleep(time.Millisecond)
	}
	p := c.ptr
	c.ptr = nil
	c.mu.Unlock()
	free(p)
}

// acquireOps are the C calls of one acquire of a Lock or a MultiLock.
type acquireOps struct {
	try     func(p unsafe.Pointer) (int64, error) // one attempt, blocking, without waiting
	start   func(p unsafe.Pointer, waitMS int64, token *C.rlock_cancel_token, user C.uintptr_t) error
	granted func(value int64) // optional: records the value of a grant
	// optional: told when the first try timed out and a wait follows (Client.Stats takes
	// these tries out of the timed-out acquires: the caller's call has not timed out)
	triedBeforeWait func()
	release         func(p unsafe.Pointer) error // gives back a grant that raced a cancellation
}

// testHookWaiting, when set by a test, runs after an asynchronous acquire started and before
// its goroutine waits for it.
var testHookWaiting func(<-chan completion)

// acquire takes the value's hold. forever: wait without bound (Lock); otherwise wait at most
// `wait`, 0 meaning try once (TryLock). The context's deadline also bounds the wait and its
// cancellation ends it through a cancel token. It returns (false, nil) only when `wait` ran
// out; a context that ends gives an error that unwraps to ctx.Err().
func (c *core) acquire(ctx context.Context, wait time.Duration, forever bool, ops *acquireOps) (bool, error) {
	if ctx == nil {
		return false, invalid("%s: nil context", c.what)
	}
	if c.closing.Load() {
		return false, c.closedError()
	}
	if err := ctx.Err(); err != nil {
		return false, c.contextError(err)
	}
	var deadline time.Time
	if !forever {
		deadline = time.Now().Add(wait)
	}
	ctxBound := false
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline, ctxBound = d, true
	}
	tryOnce := !forever && wait == 0
	timedOut := func() (bool, error) {
		if ctxBound {
			return false, c.contextError(context.DeadlineExceeded)
		}
		return false, nil
	}

	if !c.shared {
		entered, err := c.enterGate(ctx, deadline, tryOnce)
		if err != nil {
			return false, err
		}
		if !entered {
			return timedOut()
		}
	}

	err := c.use(func(p unsafe.Pointer) error { return c.take(ctx, p, deadline, tryOnce, ops) })
	if err == nil {
		if c.shared {
			c.holds.Add(1)
		} else {
			c.locked.Store(true)
		}
		return true, nil
	}
	if !c.shared {
		<-c.gate
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return false, err // already the context's error
	}
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Code == CodeTimedOut:
			if ctxErr := ctx.Err(); ctxErr != nil {
				return false, c.contextError(ctxErr)
			}
			return timedOut()
		case e.Code == CodeCanceled && ctx.Err() != nil:
			return false, c.contextError(ctx.Err())
		case e.Code == CodeCanceled && c.closing.Load():
			return false, c.closedError()
		}
	}
	return false, err
}

// take is the acquire in C. A first attempt blocks in C when a slot is free: it does not wait
// for the lock, so it holds its thread for one round trip. Unless that attempt settled it, an
// asynchronous acquire does the waiting while the goroutine is parked.
func (c *core) take(ctx context.Context, p unsafe.Pointer, deadline time.Time, tryOnce bool, ops *acquireOps) error {
	if enterBlocking() {
		value, err := ops.try(p)
		leaveBlocking()
		if err == nil && ops.granted != nil {
			ops.granted(value)
		}
		if e, ok := err.(*Error); tryOnce || !ok || e.Code != CodeTimedOut {
			return err
		}
		if ops.triedBeforeWait != nil {
			ops.triedBeforeWait()
		}
	}
	waitMS := int64(0)
	if !tryOnce {
		waitMS = int64(C.RLOCK_WAIT_FOREVER)
		if !deadline.IsZero() {
			waitMS = max(durationMS(time.Until(deadline)), 0)
		}
	}
	return c.waitAsync(ctx, p, waitMS, ops)
}

// waitAsync starts an asynchronous acquire and parks the goroutine until its completion. When
// ctx ends first, the acquire is cancelled through its token and still waited for, so that a
// grant that raced the cancellation is given back before the context's error is returned:
// nothing stays held and no fair-queue entry is left.
func (c *core) waitAsync(ctx context.Context, p unsafe.Pointer, waitMS int64, ops *acquireOps) error {
	var token *C.rlock_cancel_token
	var ctxDone <-chan struct{} // nil (never ready) when there is no wait to cancel
	if waitMS != 0 && ctx.Done() != nil {
		if err := check(C.rlock_go_cancel_token_new(&token)); err != nil {
			return err
		}
		defer C.rlock_cancel_token_free(token)
		ctxDone = ctx.Done()
	}
	ch, err := startAsync(func(user C.uintptr_t) error { return ops.start(p, waitMS, token, user) })
	if err != nil {
		return err
	}
	if hook := testHookWaiting; hook != nil {
		hook(ch)
	}
	if ctxDone == nil || ctx.Err() == nil {
		select {
		case done := <-ch:
			if done.err == nil && ops.granted != nil {
				ops.granted(done.value)
			}
			return done.err
		case <-ctxDone:
		}
	}
	C.rlock_cancel_token_cancel(token)
	done := <-ch
	if done.err != nil {
		return done.err
	}
	ctxErr := c.contextError(ctx.Err())
	if err := ops.release(p); err != nil {
		return errors.Join(ctxErr, err)
	}
	return ctxErr
}

// enterGate waits for the value's gate. (false, nil) means the deadline passed.
func (c *core) enterGate(ctx context.Context, deadline time.Time, tryOnce bool) (bool, error) {
	select {
	case c.gate <- struct{}{}:
		return true, nil
	default:
	}
	if tryOnce {
		return false, nil
	}
	var expired <-chan time.Time
	if !deadline.IsZero() {
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case c.gate <- struct{}{}:
		if c.closing.Load() {
			<-c.gate
			return false, c.closedError()
		}
		return true, nil
	case <-ctx.Done():
		return false, c.contextError(ctx.Err())
	case <-c.done:
		return false, c.closedError()
	case <-expired:
		return false, nil
	}
}

// release gives up the value's hold (exclusive) or one of its holds (shared) through fn.
// Without a hold it returns ErrNotHeld and does no I/O.
func (c *core) release(fn func(p unsafe.Pointer) error) error {
	if c.closing.Load() {
		return c.closedError()
	}
	if c.shared {
		for {
			n := c.holds.Load()
			if n <= 0 {
				return c.notHeldError()
			}
			if c.holds.CompareAndSwap(n, n-1) {
				break
			}
		}
		return c.use(fn)
	}
	if !c.locked.CompareAndSwap(true, false) {
		return c.notHeldError()
	}
	// Whatever the outcome (lost, connection error), the value no longer holds the lock.
	err := c.use(fn)
	<-c.gate
	return err
}

// holding reports whether the value has a hold, as far as it knows locally.
func (c *core) holding() bool {
	if c.shared {
		return c.holds.Load() > 0
	}
	return c.locked.Load()
}
