package rlock

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// MultiLock is several locks taken as one, owned by this value (made by NewMultiLock or
// NewRedLock). Each attempt asks every member at once and never waits while holding some, so
// two groups locking the same members in any order cannot deadlock; an attempt that falls
// short releases what it got. The members only name what to lock: the group is its own owner
// (a member value's Held stays false), and it stays usable if member values are closed.
// Like a Lock, a group value behaves as a sync.Mutex shared by goroutines.
type MultiLock struct {
	core
	members  []*Lock // keeps the members' clients alive
	validity atomic.Int64
}

// NewMultiLock returns a group held only when every member is held. Members may come from
// different clients.
func NewMultiLock(locks ...*Lock) (*MultiLock, error) {
	return newGroup("multi-lock", locks, false)
}

// NewRedLock returns a RedLock group: each member should be a lock on its own independent
// Redis server (its own client). It is held when a majority (n/2+1) granted it within the
// lease; Validity tells how long it can be relied on. Unlock succeeds once a majority released.
func NewRedLock(locks ...*Lock) (*MultiLock, error) {
	return newGroup("redlock", locks, true)
}

func newGroup(what string, locks []*Lock, redlock bool) (*MultiLock, error) {
	if len(locks) == 0 {
		return nil, invalid("%s: needs at least one lock", what)
	}
	for i, l := range locks {
		if l == nil {
			return nil, invalid("%s: lock %d is nil", what, i)
		}
	}
	// The members' handles must stay open while the group is made; the group then keeps its
	// own references to them.
	ptrs := make([]*C.rlock_lock, len(locks))
	for i, l := range locks {
		l.mu.RLock()
		defer l.mu.RUnlock()
		if l.ptr == nil || l.closing.Load() {
			return nil, newError(CodeClosed, "%s: member %s is closed", what, l.what)
		}
		ptrs[i] = lockPtr(l.ptr)
	}
	var group *C.rlock_multi
	redlockFlag := C.int(0)
	if redlock {
		redlockFlag = 1
	}
	if err := check(C.rlock_go_multi_new(&group, &ptrs[0], C.size_t(len(ptrs)), redlockFlag)); err != nil {
		return nil, err
	}
	m := &MultiLock{
		core:    newCore(fmt.Sprintf("%s of %d locks", what, len(locks)), unsafe.Pointer(group), false),
		members: append([]*Lock(nil), locks...),
	}
	runtime.SetFinalizer(m, func(m *MultiLock) { m.Close() })
	return m, nil
}

func groupPtr(p unsafe.Pointer) *C.rlock_multi { return (*C.rlock_multi)(p) }

// Lock acquires every member (a majority for a RedLock), waiting as long as it takes; ctx
// behaves as for Lock.Lock.
func (m *MultiLock) Lock(ctx context.Context) error {
	_, err := m.acquire(ctx, 0, true, 0)
	return err
}

// TryLock is Lock.TryLock for the group: false, nil when wait passes. lease 0 means the
// watchdog.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if wait < 0 {
		return false, invalid("%s: TryLock: wait must not be negative, got %v", m.what, wait)
	}
	if lease < 0 {
		return false, invalid("%s: TryLock: lease must not be negative, got %v", m.what, lease)
	}
	return m.acquire(ctx, wait, false, lease)
}

func (m *MultiLock) acquire(ctx context.Context, wait time.Duration, forever bool, lease time.Duration) (bool, error) {
	leaseMS := C.int64_t(0)
	if lease > 0 {
		leaseMS = C.int64_t(durationMS(lease))
	}
	owner := C.int64_t(m.owner)
	ok, err := m.core.acquire(ctx, wait, forever, &acquireOps{
		try: func(p unsafe.Pointer) (int64, error) {
			var validity C.int64_t
			err := check(C.rlock_go_multi_acquire(groupPtr(p), 0, leaseMS, owner, nil, &validity))
			return int64(validity), err
		},
		start: func(p unsafe.Pointer, waitMS int64, token *C.rlock_cancel_token, user C.uintptr_t) error {
			return check(C.rlock_go_multi_acquire_async(groupPtr(p), C.int64_t(waitMS), leaseMS, owner, token, user))
		},
		granted: m.validity.Store,
		release: m.releaseC,
	})
	runtime.KeepAlive(m)
	return ok, err
}

// releaseC releases the group's owner in C.
func (m *MultiLock) releaseC(p unsafe.Pointer) error {
	owner := C.int64_t(m.owner)
	return await(
		func() error { return check(C.rlock_go_multi_release(groupPtr(p), owner)) },
		func(user C.uintptr_t) error {
			return check(C.rlock_go_multi_release_async(groupPtr(p), owner, user))
		})
}

// ExtendOption changes how MultiLock.Extend treats the members.
type ExtendOption func(*extendConfig)

type extendConfig struct{ reacquire bool }

// ReacquireLost makes Extend take again, with one try, a member whose key is gone (its Redis
// node restarted without it), so that it counts towards the quorum; a key another owner holds
// is never taken. As redsync's WithSetNXOnExtend.
func ReacquireLost() ExtendOption {
	return func(c *extendConfig) { c.reacquire = true }
}

// Extend sets the lease of every member to lease, on all members at once. It succeeds when
// every member (a RedLock: a majority) was extended within the lease; Validity then tells how
// long the group is sure to be held. It returns ErrNotHeld without a network call if the group
// is not held through this value; otherwise the most telling member error (ErrLockLost for a
// member whose key is gone, see ReacquireLost), the members extended staying extended. It
// waits for the slowest member, bounded by the clients' command timeout.
func (m *MultiLock) Extend(lease time.Duration, opts ...ExtendOption) error {
	if lease <= 0 {
		return invalid("%s: Extend: lease must be positive, got %v", m.what, lease)
	}
	var cfg extendConfig
	for _, opt := range opts {
		if opt == nil {
			return invalid("%s: Extend: nil ExtendOption", m.what)
		}
		opt(&cfg)
	}
	if m.closing.Load() {
		return m.closedError()
	}
	if !m.holding() {
		return m.notHeldError()
	}
	reacquire := C.int(0)
	if cfg.reacquire {
		reacquire = 1
	}
	leaseMS, owner := C.int64_t(durationMS(lease)), C.int64_t(m.owner)
	err := m.use(func(p unsafe.Pointer) error {
		var validity C.int64_t
		err := check(C.rlock_go_multi_extend(groupPtr(p), owner, leaseMS, reacquire, &validity))
		if err == nil {
			m.validity.Store(int64(validity))
		}
		return err
	})
	runtime.KeepAlive(m)
	return err
}

// Validity is how long the group was sure to be held when the last acquire (or Extend)
// succeeded: the shortest member lease minus the time spent and a clock-drift allowance.
func (m *MultiLock) Validity() time.Duration {
	return time.Duration(m.validity.Load()) * time.Millisecond
}

// Unlock releases every member; ErrNotHeld without a network call if the group is not held
// through this value.
func (m *MultiLock) Unlock() error {
	err := m.release(m.releaseC)
	runtime.KeepAlive(m)
	return err
}

// Held reports whether the group is held through this value (local view).
func (m *MultiLock) Held() bool {
	held := false
	_ = m.use(func(p unsafe.Pointer) error {
		held = C.rlock_multi_is_held_for(groupPtr(p), C.int64_t(m.owner)) == 1
		return nil
	})
	runtime.KeepAlive(m)
	return held
}

// Close frees the group without releasing it (holds expire by their leases); waiters get
// ErrClosed. The member values are not closed. Idempotent.
func (m *MultiLock) Close() error {
	m.close(
		func(p unsafe.Pointer) { C.rlock_multi_cancel(groupPtr(p)) },
		func(p unsafe.Pointer) { C.rlock_multi_free(groupPtr(p)) })
	runtime.SetFinalizer(m, nil)
	return nil
}
