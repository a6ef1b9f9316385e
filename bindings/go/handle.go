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

func check(r C.rlock_go_result) error {
	if r.rc == C.RLOCK_OK {
		return nil
	}
	msg := C.GoString(C.rlock_strerror(r.rc)) // the shim could not allocate the copy
	if r.message != nil {
		msg = C.GoString(r.message)
		C.free(unsafe.Pointer(r.message))
	}
	return &Error{Code: Code(r.rc), Message: msg}
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

// attempt is one C acquire: wait in ms (-1 = forever) and an optional cancel token.
type attempt func(p unsafe.Pointer, waitMS int64, token *C.rlock_cancel_token) error

// acquire takes the value's hold. forever: wait without bound (Lock); otherwise wait at most
// `wait`, 0 meaning try once (TryLock). The context's deadline also bounds the wait and its
// cancellation wakes the C call through a cancel token. It returns (false, nil) only when
// `wait` ran out; a context that ends gives an error that unwraps to ctx.Err().
func (c *core) acquire(ctx context.Context, wait time.Duration, forever bool, try attempt) (bool, error) {
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

	waitMS := int64(C.RLOCK_WAIT_FOREVER)
	if tryOnce {
		waitMS = 0
	} else if !deadline.IsZero() {
		waitMS = max(durationMS(time.Until(deadline)), 0)
	}
	err := withCancelToken(ctx, func(token *C.rlock_cancel_token) error {
		return c.use(func(p unsafe.Pointer) error { return try(p, waitMS, token) })
	})
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

// withCancelToken runs fn with a cancel token that ctx's end cancels, or with none when ctx
// can never end. The token is freed only after the AfterFunc that may use it has finished.
func withCancelToken(ctx context.Context, fn func(token *C.rlock_cancel_token) error) error {
	if ctx.Done() == nil {
		return fn(nil)
	}
	var token *C.rlock_cancel_token
	if err := check(C.rlock_go_cancel_token_new(&token)); err != nil {
		return err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		C.rlock_cancel_token_cancel(token)
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
		C.rlock_cancel_token_free(token)
	}()
	return fn(token)
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
