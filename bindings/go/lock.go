package rlock

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

type kind int

const (
	kindReentrant        kind = C.RLOCK_LOCK_REENTRANT
	kindFenced           kind = C.RLOCK_LOCK_FENCED
	kindSpin             kind = C.RLOCK_LOCK_SPIN
	kindFair             kind = C.RLOCK_LOCK_FAIR
	kindRead             kind = C.RLOCK_LOCK_READ
	kindWrite            kind = C.RLOCK_LOCK_WRITE
	kindNonReentrant     kind = C.RLOCK_LOCK_NON_REENTRANT
	kindNonReentrantFair kind = C.RLOCK_LOCK_NON_REENTRANT_FAIR
)

var kindNames = map[kind]string{
	kindReentrant: "lock", kindFenced: "fenced lock", kindSpin: "spin lock",
	kindFair: "fair lock", kindRead: "read lock", kindWrite: "write lock",
	kindNonReentrant: "non-reentrant lock", kindNonReentrantFair: "non-reentrant fair lock",
}

// LockOption configures a lock made by Client.Lock and its siblings.
type LockOption func(*lockConfig)

type lockConfig struct {
	err                      error
	leaseMS                  int64
	spinInitialMS, spinMaxMS int64
	fairWaitMS               int64
	spinSet, fairSet         bool
	ownerID                  *string
}

func (c *lockConfig) positiveMS(option string, d time.Duration) int64 {
	if d <= 0 && c.err == nil {
		c.err = invalid("%s: the duration must be positive, got %v", option, d)
	}
	return durationMS(d)
}

// WithLease makes every acquire of the lock hold it for d unless renewed by Extend, instead
// of the default: held until Unlock, renewed by the client's watchdog.
func WithLease(d time.Duration) LockOption {
	return func(c *lockConfig) { c.leaseMS = c.positiveMS("WithLease", d) }
}

// WithSpinBackoff tunes a SpinLock: a waiter retries after initial, doubling up to max, with
// jitter (defaults 1ms and 128ms).
func WithSpinBackoff(initial, max time.Duration) LockOption {
	return func(c *lockConfig) {
		c.spinInitialMS = c.positiveMS("WithSpinBackoff", initial)
		c.spinMaxMS = c.positiveMS("WithSpinBackoff", max)
		c.spinSet = true
	}
}

// WithFairWaiterTimeout tunes a FairLock or NonReentrantFairLock: how long a waiter without a
// deadline keeps its place in the queue (default 5m) if it stops coming back because its
// process died.
func WithFairWaiterTimeout(d time.Duration) LockOption {
	return func(c *lockConfig) {
		c.fairWaitMS = c.positiveMS("WithFairWaiterTimeout", d)
		c.fairSet = true
	}
}

// WithOwnerID makes the lock's owner the caller-given id instead of the Lock value: every
// Lock naming the same id, in any process, language or client, is that one owner, so one
// process may Extend or Unlock what another acquired (redsync's WithValue). On Redis the owner
// is "<version-5 UUID of id>:1" (docs/protocol.md). Closing the client leaves such holds to
// their lease: give them one with WithLease, since the watchdog renews only while the client
// that acquired lives. id must be 1 to 1024 bytes.
func WithOwnerID(id string) LockOption {
	return func(c *lockConfig) {
		if (len(id) == 0 || len(id) > 1024) && c.err == nil {
			c.err = invalid("WithOwnerID: the id must be 1 to 1024 bytes, got %d", len(id))
		}
		c.ownerID = &id
	}
}

// Lock is one named lock on Redis, owned by this value. It is safe for concurrent use and
// behaves like a sync.Mutex shared by goroutines: a second Lock through the same value waits
// until Unlock (from any goroutine). Separate values on the same name contend like separate
// processes. Make one with Client.Lock, FencedLock, SpinLock, FairLock, NonReentrantLock,
// NonReentrantFairLock or ReadWriteLock.
type Lock struct {
	core
	client *Client // kept alive while the lock lives
	name   string
	kind   kind
	byID   bool // WithOwnerID: Unlock and Extend go to Redis even when this value took nothing

	lostMu     sync.Mutex
	lost       *lostHook
	lostHandle cgo.Handle // owns lost; deleted after the C handle is freed
}

// Lock returns a reentrant lock (Redisson's RLock layout); waiters are woken by pub/sub.
// No network call is made.
func (c *Client) Lock(name string, opts ...LockOption) (*Lock, error) {
	return c.newLock(name, kindReentrant, opts)
}

// FencedLock returns a lock whose every acquire gets a fencing token (see Lock.Token), strictly
// increasing across all holders (Redisson's RFencedLock).
func (c *Client) FencedLock(name string, opts ...LockOption) (*Lock, error) {
	return c.newLock(name, kindFenced, opts)
}

// SpinLock returns a lock whose waiters retry with exponential backoff instead of listening
// for the release (Redisson's RSpinLock). See WithSpinBackoff.
func (c *Client) SpinLock(name string, opts ...LockOption) (*Lock, error) {
	return c.newLock(name, kindSpin, opts)
}

// FairLock returns a lock served first come, first served across processes (Redisson's
// RFairLock). See WithFairWaiterTimeout.
func (c *Client) FairLock(name string, opts ...LockOption) (*Lock, error) {
	return c.newLock(name, kindFair, opts)
}

// NonReentrantLock returns the lock of Redisson's getNonReentrantLock: Lock's keys, but an
// owner that holds it and asks again is refused (ErrDeadlock) rather than counted twice. A
// value of this package never asks again, whatever the kind (a second Lock through a locked
// value waits for its Unlock, as with sync.Mutex), so it behaves as Lock does here; use it to
// share a name with Redisson's non-reentrant locks and the other bindings'.
func (c *Client) NonReentrantLock(name string, opts ...LockOption) (*Lock, error) {
	return c.newLock(name, kindNonReentrant, opts)
}

// NonReentrantFairLock returns the lock of Redisson's getNonReentrantFairLock: FairLock's keys
// and order, not reentrant (see NonReentrantLock). See WithFairWaiterTimeout.
func (c *Client) NonReentrantFairLock(name string, opts ...LockOption) (*Lock, error) {
	return c.newLock(name, kindNonReentrantFair, opts)
}

func (c *Client) newLock(name string, k kind, opts []LockOption) (*Lock, error) {
	cfg := lockConfig{leaseMS: int64(C.RLOCK_LEASE_WATCHDOG)}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("%s %q: nil LockOption", kindNames[k], name)
		}
		opt(&cfg)
	}
	switch {
	case cfg.err != nil:
		return nil, cfg.err
	case cfg.spinSet && k != kindSpin:
		return nil, invalid("%s %q: WithSpinBackoff applies only to SpinLock", kindNames[k], name)
	case cfg.fairSet && k != kindFair && k != kindNonReentrantFair:
		return nil, invalid("%s %q: WithFairWaiterTimeout applies only to FairLock and "+
			"NonReentrantFairLock", kindNames[k], name)
	case cfg.spinSet && cfg.spinInitialMS > cfg.spinMaxMS:
		return nil, invalid("spin lock %q: WithSpinBackoff: initial backoff above the maximum", name)
	}
	cname := C.CString(name) // copies embedded NULs too; the length is passed
	defer C.free(unsafe.Pointer(cname))
	var ownerID *C.char
	var ownerIDLen C.size_t
	if cfg.ownerID != nil {
		ownerID, ownerIDLen = C.CString(*cfg.ownerID), C.size_t(len(*cfg.ownerID))
		defer C.free(unsafe.Pointer(ownerID))
	}
	var ptr *C.rlock_lock
	err := c.use(func(cp *C.rlock_client) error {
		return check(C.rlock_go_lock_new(&ptr, cp, cname, C.size_t(len(name)), C.rlock_lock_kind(k),
			C.int64_t(cfg.leaseMS), C.int64_t(cfg.spinInitialMS), C.int64_t(cfg.spinMaxMS),
			C.int64_t(cfg.fairWaitMS), ownerID, ownerIDLen))
	})
	if err != nil {
		return nil, err
	}
	l := &Lock{
		core:   newCore(fmt.Sprintf("%s %q", kindNames[k], name), unsafe.Pointer(ptr), k == kindRead),
		client: c,
		name:   name,
		kind:   k,
		byID:   cfg.ownerID != nil,
	}
	// Only frees: a hold the value still has is not released, it expires by its lease.
	runtime.SetFinalizer(l, func(l *Lock) { l.Close() })
	return l, nil
}

func lockPtr(p unsafe.Pointer) *C.rlock_lock { return (*C.rlock_lock)(p) }

// Name returns the lock's name.
func (l *Lock) Name() string { return l.name }

// Lock acquires the lock, waiting as long as it takes. ctx bounds the wait: its deadline
// becomes the wait time, and its cancellation wakes the waiter at once. When ctx ends first,
// the error satisfies errors.Is(err, ctx.Err()) (and ErrNotObtained for a deadline) and
// nothing is left locked. The hold lasts until Unlock (renewed by the watchdog) unless the
// lock was made WithLease.
func (l *Lock) Lock(ctx context.Context) error {
	_, err := l.acquire(ctx, 0, true, 0)
	return err
}

// TryLock tries to acquire the lock within wait (0 = try once, without waiting) and returns
// false, with a nil error, when wait passes first. lease 0 means the lock's default lease;
// otherwise the hold expires after lease unless extended. ctx behaves as for Lock.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if wait < 0 {
		return false, invalid("%s: TryLock: wait must not be negative, got %v", l.what, wait)
	}
	if lease < 0 {
		return false, invalid("%s: TryLock: lease must not be negative, got %v", l.what, lease)
	}
	return l.acquire(ctx, wait, false, lease)
}

func (l *Lock) acquire(ctx context.Context, wait time.Duration, forever bool, lease time.Duration) (bool, error) {
	leaseMS := C.int64_t(0)
	if lease > 0 {
		leaseMS = C.int64_t(durationMS(lease))
	}
	owner := C.int64_t(l.owner)
	ok, err := l.core.acquire(ctx, wait, forever, &acquireOps{
		try: func(p unsafe.Pointer) (int64, error) {
			return 0, check(C.rlock_go_acquire(lockPtr(p), 0, leaseMS, owner, nil))
		},
		start: func(p unsafe.Pointer, waitMS int64, token *C.rlock_cancel_token, user C.uintptr_t) error {
			return check(C.rlock_go_acquire_async(lockPtr(p), C.int64_t(waitMS), leaseMS, owner, token, user))
		},
		release:         l.releaseC,
		triedBeforeWait: func() { l.client.triesBeforeWait.Add(1) },
	})
	runtime.KeepAlive(l)
	return ok, err
}

// releaseC gives back one hold of the value's owner in C.
func (l *Lock) releaseC(p unsafe.Pointer) error {
	owner := C.int64_t(l.owner)
	return await(
		func() error { return check(C.rlock_go_release(lockPtr(p), owner)) },
		func(user C.uintptr_t) error { return check(C.rlock_go_release_async(lockPtr(p), owner, user)) })
}

// Unlock releases the hold taken through this value; any goroutine may call it. It returns
// ErrNotHeld, without any network call, if the value holds nothing; ErrLockLost if the lock
// expired or was taken meanwhile (the work done under it may not have been exclusive). With
// WithOwnerID a value that holds nothing asks Redis, and releases a hold of the id's owner
// taken elsewhere (ErrNotHeld if the owner holds none there).
func (l *Lock) Unlock() error {
	if l.byID && !l.holding() {
		// WithOwnerID: the hold may be another value's, or another process's; Redis decides.
		// Only with the gate free: a Lock of this value in flight must not lose its grant here.
		select {
		case l.gate <- struct{}{}:
			err := l.use(l.releaseC)
			<-l.gate
			runtime.KeepAlive(l)
			return err
		default:
		}
	}
	err := l.release(l.releaseC)
	runtime.KeepAlive(l)
	return err
}

// Extend sets the remaining lease of the value's hold to lease. Same errors as Unlock.
func (l *Lock) Extend(lease time.Duration) error {
	if lease <= 0 {
		return invalid("%s: Extend: lease must be positive, got %v", l.what, lease)
	}
	if l.closing.Load() {
		return l.closedError()
	}
	if !l.holding() && !l.byID {
		return l.notHeldError()
	}
	leaseMS, owner := C.int64_t(durationMS(lease)), C.int64_t(l.owner)
	err := l.use(func(p unsafe.Pointer) error {
		return await(
			func() error { return check(C.rlock_go_extend(lockPtr(p), leaseMS, owner)) },
			func(user C.uintptr_t) error {
				return check(C.rlock_go_extend_async(lockPtr(p), leaseMS, owner, user))
			})
	})
	runtime.KeepAlive(l)
	return err
}

// ExtendBy adds d to the remaining lease of the value's hold (Extend sets it), in one round
// trip (a read lock: to this owner's own read lease). A hold taken without a lease (renewed by
// the watchdog), or a key without expiry on Redis, has none to add to: ErrInvalidArgument,
// nothing changed. Otherwise the same errors as Extend.
func (l *Lock) ExtendBy(d time.Duration) error {
	if d <= 0 {
		return invalid("%s: ExtendBy: the duration must be positive, got %v", l.what, d)
	}
	if l.closing.Load() {
		return l.closedError()
	}
	if !l.holding() && !l.byID {
		return l.notHeldError()
	}
	addMS, owner := C.int64_t(durationMS(d)), C.int64_t(l.owner)
	err := l.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_extend_by(lockPtr(p), addMS, owner))
	})
	runtime.KeepAlive(l)
	return err
}

// Held reports whether the value holds the lock and has not been told it was lost (local
// view, no network call).
func (l *Lock) Held() bool {
	held := false
	_ = l.use(func(p unsafe.Pointer) error {
		held = C.rlock_is_held_for(lockPtr(p), C.int64_t(l.owner)) == 1
		return nil
	})
	runtime.KeepAlive(l)
	return held
}

// Lost reports whether the value's hold was found lost (expired, deleted or taken) and the
// value has not unlocked or locked again since (local view, no network call).
func (l *Lock) Lost() bool {
	lost := false
	_ = l.use(func(p unsafe.Pointer) error {
		lost = C.rlock_is_lost_for(lockPtr(p), C.int64_t(l.owner)) == 1
		return nil
	})
	runtime.KeepAlive(l)
	return lost
}

// Token returns the fencing token of the value's current hold of a FencedLock (local view).
// Pass it to the protected resource, which should refuse a token lower than one it has seen.
// ErrNotHeld if the value holds no hold with a token.
func (l *Lock) Token() (int64, error) {
	var token C.int64_t
	err := l.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_token(lockPtr(p), C.int64_t(l.owner), &token))
	})
	runtime.KeepAlive(l)
	return int64(token), err
}

// ForceUnlock deletes the lock whoever holds it and wakes a waiter. It reports whether the
// lock was held. Holders find out at their next renewal (OnLost) or Unlock (ErrLockLost).
// ctx is checked before the round trip, which the client's command timeout bounds.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := ctxErr(ctx, l.what); err != nil {
		return false, err
	}
	var deleted C.int
	err := l.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_force_unlock(lockPtr(p), &deleted))
	})
	runtime.KeepAlive(l)
	return deleted == 1, err
}

// Mode is the mode of a read-write lock as stored on Redis.
type Mode int

const (
	ModeNone  Mode = C.RLOCK_MODE_NONE  // not a read-write lock, or not locked
	ModeRead  Mode = C.RLOCK_MODE_READ  // held by readers
	ModeWrite Mode = C.RLOCK_MODE_WRITE // held by a writer
)

// NoExpiry is State.TTL for a lock held without expiry.
const NoExpiry time.Duration = -1

// State is the lock as Redis sees it, from this value's point of view.
type State struct {
	Locked         bool          // the lock key exists
	HeldByMe       bool          // this value's owner holds it (for a read or write lock: that half)
	HoldCount      int64         // this value's owner's hold count
	TTL            time.Duration // remaining lease; 0 when not locked, NoExpiry without expiry
	Owners         int64         // number of owners (readers share a read lock)
	Owner          string        // the first owner, "<client-id>:<thread-id>[:write]"
	OwnerHoldCount int64         // the first owner's hold count
	Mode           Mode
}

// State reads the lock's state from Redis in one round trip. ctx is checked before it.
func (l *Lock) State(ctx context.Context) (State, error) {
	if err := ctxErr(ctx, l.what); err != nil {
		return State{}, err
	}
	var st C.rlock_lock_state
	var owner *C.char
	err := l.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_query(lockPtr(p), C.int64_t(l.owner), &st, &owner))
	})
	runtime.KeepAlive(l)
	if owner != nil {
		defer C.free(unsafe.Pointer(owner))
	}
	if err != nil {
		return State{}, err
	}
	s := State{
		Locked:         st.locked == 1,
		HeldByMe:       st.held_by_me == 1,
		HoldCount:      int64(st.hold_count),
		Owners:         int64(st.owner_count),
		OwnerHoldCount: int64(st.owner_hold_count),
		Mode:           Mode(st.mode),
	}
	switch ttl := int64(st.ttl_ms); {
	case ttl == -1:
		s.TTL = NoExpiry
	case ttl > 0:
		s.TTL = time.Duration(ttl) * time.Millisecond
	}
	if owner != nil {
		s.Owner = C.GoStringN(owner, C.int(st.owner_len))
	}
	return s, nil
}

// Holder is who holds a lock and since when (Lock.Holder), from the small record every rlock
// client keeps on Redis while it holds anything ("rlock_holder:{<client id>}"; the lock's own
// keys are Redisson's, unchanged). An owner no rlock client recorded (a Redisson JVM, an owner
// id) has Known false and only Owner set.
type Holder struct {
	Owner   string // the owner field, "<client-id>:<thread-id>[:write]"
	Known   bool   // the owner's client record was found
	Host    string // the holding client's host name
	PID     int    // its process id
	Command string // its command line, arguments joined by spaces (256 bytes at most)
	Started time.Time
	// Since is when this hold was first acquired; zero also for a hold under a second old (the
	// record lists holds from one second on).
	Since time.Time
}

// Holder asks Redis who holds the lock now (its first owner, for a shared read lock) and
// since when: nil when it is free. Three round trips; ctx is checked before them.
func (l *Lock) Holder(ctx context.Context) (*Holder, error) {
	if err := ctxErr(ctx, l.what); err != nil {
		return nil, err
	}
	cname := C.CString(l.name) // copies embedded NULs too; the length is passed
	defer C.free(unsafe.Pointer(cname))
	var info *C.rlock_lock_info
	err := l.client.use(func(c *C.rlock_client) error {
		return check(C.rlock_go_inspect(&info, c, cname, C.size_t(len(l.name))))
	})
	if err != nil {
		return nil, err
	}
	defer C.rlock_lock_info_free(info)
	if info.locked == 0 || info.owners_len == 0 {
		return nil, nil
	}
	owners := unsafe.Slice(info.owners, int(info.owners_len))
	h := &Holder{Owner: C.GoStringN(owners[0].owner, C.int(owners[0].owner_len))}
	if info.version >= 3 && info.holders_len > 0 {
		r := unsafe.Slice(info.holders, int(info.holders_len))[0]
		if r.known != 0 {
			h.Known = true
			h.Host = C.GoString(r.host)
			h.PID = int(r.pid)
			h.Command = C.GoString(r.command)
			h.Started = time.UnixMilli(int64(r.started_ms))
			if r.since_ms >= 0 {
				h.Since = time.UnixMilli(int64(r.since_ms))
			}
		}
	}
	return h, nil
}

// OnLost calls fn, on a new goroutine, once each time a hold taken through this value is found
// lost: its key was deleted, taken or expired, or Redis stayed unreachable past its lease. A
// loss that Unlock or Extend discovers first is reported by their ErrLockLost instead. nil
// removes the function. fn should not keep the Lock reachable if the Lock is meant to be
// collected without Close.
func (l *Lock) OnLost(fn func(LostReason)) error {
	l.lostMu.Lock()
	defer l.lostMu.Unlock()
	if l.lost == nil {
		if fn == nil {
			return nil
		}
		hook := &lostHook{}
		handle := cgo.NewHandle(hook)
		err := l.use(func(p unsafe.Pointer) error {
			return check(C.rlock_go_set_lost_callback(lockPtr(p), C.uintptr_t(handle)))
		})
		runtime.KeepAlive(l)
		if err != nil {
			handle.Delete()
			return err
		}
		l.lost, l.lostHandle = hook, handle
	}
	if fn == nil {
		l.lost.fn.Store(nil)
	} else {
		l.lost.fn.Store(&fn)
	}
	return nil
}

// Close frees the value without releasing its hold: a hold left expires by its lease (its
// renewal stops). Goroutines waiting in Lock through this value get ErrClosed. Idempotent.
func (l *Lock) Close() error {
	l.close(
		func(p unsafe.Pointer) { C.rlock_cancel(lockPtr(p)) },
		func(p unsafe.Pointer) {
			C.rlock_lock_free(lockPtr(p)) // waits for a running lost callback of this handle
			l.lostMu.Lock()
			if l.lost != nil {
				l.lostHandle.Delete()
				l.lost = nil
			}
			l.lostMu.Unlock()
		})
	runtime.SetFinalizer(l, nil)
	return nil
}

func ctxErr(ctx context.Context, what string) error {
	if ctx == nil {
		return invalid("%s: nil context", what)
	}
	if err := ctx.Err(); err != nil {
		return &Error{Code: CodeCanceled, cause: err, Message: what + ": " + err.Error()}
	}
	return nil
}

// ReadWriteLock is a lock with a shared read half and an exclusive write half (Redisson's
// RReadWriteLock), used like a sync.RWMutex: ReadLock().Lock may be called by many goroutines
// at once (each call adds one hold, each Unlock from any goroutine removes one), WriteLock()
// excludes readers and other writers. The halves are separate owners, so, as with
// sync.RWMutex, taking both from one goroutine waits for itself.
type ReadWriteLock struct {
	read, write *Lock
}

// ReadWriteLock returns the two halves of the read-write lock name. LockOptions apply to both.
func (c *Client) ReadWriteLock(name string, opts ...LockOption) (*ReadWriteLock, error) {
	read, err := c.newLock(name, kindRead, opts)
	if err != nil {
		return nil, err
	}
	write, err := c.newLock(name, kindWrite, opts)
	if err != nil {
		read.Close()
		return nil, err
	}
	return &ReadWriteLock{read: read, write: write}, nil
}

// ReadLock returns the shared half.
func (rw *ReadWriteLock) ReadLock() *Lock { return rw.read }

// WriteLock returns the exclusive half.
func (rw *ReadWriteLock) WriteLock() *Lock { return rw.write }

// Close closes both halves (see Lock.Close).
func (rw *ReadWriteLock) Close() error {
	rw.read.Close()
	return rw.write.Close()
}
