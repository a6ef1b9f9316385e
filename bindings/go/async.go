package rlock

/*
#include <stdint.h>
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync/atomic"
	"time"
)

// How a goroutine waits for the C library without holding an OS thread.
//
// A cgo call that blocks keeps its OS thread, and Go starts another one to run the other
// goroutines, so a thousand goroutines blocked in C are a thousand threads. Every wait of this
// package therefore goes through the asynchronous C calls: the goroutine starts the operation,
// parks on a channel, and the completion (rlockGoDone, called on a library thread) sends the
// outcome to that channel.
//
// A lone round trip is cheaper as a plain blocking call than as a start, a callback from
// another thread and a goroutine wake-up. So a call that cannot wait (a first try, a release)
// blocks in C when few goroutines are inside such calls right now, and goes asynchronous
// otherwise: the threads held in C stay bounded by blockingLimit whatever the number of
// goroutines.

// completion is the outcome of one asynchronous C call.
type completion struct {
	err   error
	value int64 // fencing token or group validity (ms) of a granted acquire
}

var (
	blockingCalls atomic.Int32
	blockingLimit atomic.Int32 // tests set 0 to send every call through the asynchronous path
	asyncPending  atomic.Int64 // started and not yet completed (tests count waiters with it)
)

func init() { blockingLimit.Store(int32(max(16, 4*runtime.GOMAXPROCS(0)))) }

// enterBlocking reserves a slot for a blocking C call; leaveBlocking gives it back.
func enterBlocking() bool {
	if blockingCalls.Add(1) <= blockingLimit.Load() {
		return true
	}
	blockingCalls.Add(-1)
	return false
}

// leaveBlocking gives the slot back and, at most every yieldEvery, lets the scheduler run.
func leaveBlocking() {
	blockingCalls.Add(-1)
	// A goroutine that loops over blocking C calls never parks, so to the runtime it looks like
	// one that has run for ages: every 10 ms it signals the thread, takes the P away mid-call
	// and polls every 20 µs for a while after. Yielding now and then shows it is not stuck.
	if now := time.Now().UnixNano(); now-lastYield.Load() >= int64(yieldEvery) {
		lastYield.Store(now)
		runtime.Gosched()
	}
}

// yieldEvery is half the runtime's 10 ms time slice: a yield in every slice, few wake-ups.
const yieldEvery = 5 * time.Millisecond

var lastYield atomic.Int64

// startAsync starts an asynchronous C call with a fresh handle as its `user` and returns the
// channel its completion arrives on. The handle is deleted exactly once: by the completion,
// or here when the call did not start (C then never calls back).
func startAsync(start func(user C.uintptr_t) error) (<-chan completion, error) {
	ch := make(chan completion, 1)
	handle := cgo.NewHandle(ch)
	asyncPending.Add(1)
	if err := start(C.uintptr_t(handle)); err != nil {
		asyncPending.Add(-1)
		handle.Delete()
		return nil, err
	}
	return ch, nil
}

//export rlockGoDone
func rlockGoDone(user C.uintptr_t, status C.int, value C.int64_t, message *C.char) {
	// Runs on a library thread that serves other completions too: only a non-blocking send
	// (the channel has room for the one completion it will ever get).
	handle := cgo.Handle(user)
	ch := handle.Value().(chan completion)
	handle.Delete()
	asyncPending.Add(-1)
	ch <- completion{err: statusError(status, message), value: int64(value)}
}

// await runs one C call that does not wait for a lock (release, extend): blocking when a slot
// is free, else asynchronously with the goroutine parked.
func await(blocking func() error, async func(user C.uintptr_t) error) error {
	if enterBlocking() {
		defer leaveBlocking()
		return blocking()
	}
	ch, err := startAsync(async)
	if err != nil {
		return err
	}
	return (<-ch).err
}
