package rlock

/*
#include "shim.h"

// The semaphore shims (see shim.h for why every failing call copies its message here).

static inline rlock_go_result rlock_go_semaphore_new(rlock_semaphore **out, rlock_client *client,
                                                     const char *name, size_t name_len,
                                                     rlock_semaphore_kind kind,
                                                     int64_t lease_ms) {
  rlock_semaphore_options opts;
  int rc = rlock_semaphore_options_init(&opts, RLOCK_SEMAPHORE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  opts.kind = kind;
  opts.lease_ms = lease_ms;
  return rlock_go_result_of(rlock_semaphore_new_n(out, client, name, name_len, &opts));
}

static inline rlock_go_result rlock_go_semaphore_try_set(rlock_semaphore *sem, int64_t permits,
                                                         int64_t ttl_ms, int *set) {
  return rlock_go_result_of(rlock_semaphore_try_set_permits(set, sem, permits, ttl_ms));
}

static inline rlock_go_result rlock_go_semaphore_add(rlock_semaphore *sem, int64_t delta,
                                                     int64_t *available) {
  return rlock_go_result_of(rlock_semaphore_add_permits(available, sem, delta));
}

// ids: NULL for a plain semaphore, else room for `permits` ids (C memory: an asynchronous
// acquire writes them from a library thread).
static inline int rlock_go_permit_options(rlock_permit_options *opts, int64_t permits,
                                          int64_t wait_ms, int64_t lease_ms,
                                          rlock_cancel_token *cancel, rlock_permit_id *ids) {
  int rc = rlock_permit_options_init(opts, RLOCK_PERMIT_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rc;
  opts->permits = permits;
  opts->wait_ms = wait_ms;
  opts->lease_ms = lease_ms;
  opts->cancel = cancel;
  opts->ids = ids;
  return RLOCK_OK;
}

static inline rlock_go_result rlock_go_semaphore_try_acquire(rlock_semaphore *sem,
                                                             int64_t permits, int64_t lease_ms,
                                                             rlock_permit_id *ids) {
  rlock_permit_options opts;
  int rc = rlock_go_permit_options(&opts, permits, 0, lease_ms, NULL, ids);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  return rlock_go_result_of(rlock_semaphore_acquire_ex(sem, &opts));
}

static inline rlock_go_result rlock_go_semaphore_acquire_async(rlock_semaphore *sem,
                                                               int64_t permits, int64_t wait_ms,
                                                               int64_t lease_ms,
                                                               rlock_cancel_token *cancel,
                                                               rlock_permit_id *ids,
                                                               uintptr_t user) {
  rlock_permit_options opts;
  int rc = rlock_go_permit_options(&opts, permits, wait_ms, lease_ms, cancel, ids);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  return rlock_go_result_of(
      rlock_semaphore_acquire_async(sem, &opts, rlock_go_done_trampoline, (void *)user));
}

static inline rlock_go_result rlock_go_semaphore_release(rlock_semaphore *sem, int64_t permits) {
  return rlock_go_result_of(rlock_semaphore_release(sem, permits));
}

static inline rlock_go_result rlock_go_semaphore_release_if_exists(rlock_semaphore *sem,
                                                                   int64_t permits,
                                                                   int *released) {
  return rlock_go_result_of(rlock_semaphore_release_if_exists(released, sem, permits));
}

static inline rlock_go_result rlock_go_semaphore_set_permits(rlock_semaphore *sem,
                                                             int64_t permits,
                                                             int64_t *available) {
  return rlock_go_result_of(rlock_semaphore_set_permits(available, sem, permits));
}

static inline rlock_go_result rlock_go_permit_lease_time(rlock_semaphore *sem, const char *id,
                                                         int64_t *left) {
  return rlock_go_result_of(rlock_permit_lease_time(left, sem, id));
}

static inline rlock_go_result rlock_go_semaphore_available(rlock_semaphore *sem,
                                                           int64_t *available, int64_t *held) {
  return rlock_go_result_of(rlock_semaphore_available(available, held, NULL, sem));
}

static inline rlock_go_result rlock_go_semaphore_drain(rlock_semaphore *sem, int64_t *drained) {
  return rlock_go_result_of(rlock_semaphore_drain(drained, sem));
}

static inline rlock_go_result rlock_go_semaphore_delete(rlock_semaphore *sem, int *deleted) {
  return rlock_go_result_of(rlock_semaphore_delete(deleted, sem));
}

static inline rlock_go_result rlock_go_semaphore_held(rlock_semaphore *sem, int64_t *held) {
  return rlock_go_result_of(rlock_semaphore_held(held, sem));
}

static inline rlock_go_result rlock_go_permit_release(rlock_semaphore *sem,
                                                      const rlock_permit_id *ids, size_t count) {
  return rlock_go_result_of(rlock_permit_release_n(sem, ids, count));
}

static inline rlock_go_result rlock_go_permit_update_lease(rlock_semaphore *sem, const char *id,
                                                           int64_t lease_ms) {
  return rlock_go_result_of(rlock_permit_update_lease(sem, id, lease_ms));
}
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"
	"unsafe"
)

// Leases of expirable permits besides a positive duration (see ExpirableSemaphore). NoLease
// matches Redisson's lease -1.
const (
	NoLease       time.Duration = -1 // the permit never expires; only a release gives it back
	WatchdogLease time.Duration = -2 // the permit is renewed by the client's watchdog while the client lives
)

// permitLeaseMS converts a permit lease to the C library's lease_ms: 0 stays 0 (the
// semaphore's default).
func permitLeaseMS(what string, lease time.Duration) (C.int64_t, error) {
	switch {
	case lease == NoLease:
		return C.RLOCK_LEASE_NONE, nil
	case lease == WatchdogLease:
		return C.RLOCK_LEASE_WATCHDOG, nil
	case lease < 0:
		return 0, invalid("%s: lease must be positive, NoLease or WatchdogLease, got %v", what, lease)
	case lease == 0:
		return 0, nil
	}
	return C.int64_t(durationMS(lease)), nil
}

// SemaphoreOption configures an ExpirableSemaphore.
type SemaphoreOption func(*semaphoreConfig)

type semaphoreConfig struct {
	err     error
	leaseMS C.int64_t
}

// WithPermitLease sets the lease of permits acquired without one: a positive duration,
// NoLease or WatchdogLease (the default: renewed while the client lives, so a
// process that dies frees its permits after the client's watchdog lease, as a lock's).
func WithPermitLease(d time.Duration) SemaphoreOption {
	return func(c *semaphoreConfig) {
		ms, err := permitLeaseMS("WithPermitLease", d)
		if err == nil && d == 0 {
			err = invalid("WithPermitLease: lease must be positive, NoLease or WatchdogLease, got 0")
		}
		if err != nil && c.err == nil {
			c.err = err
		}
		c.leaseMS = ms
	}
}

// semaphore is what both kinds share: the C handle and the calls valid for either.
type semaphore struct {
	core
	client *Client // kept alive while the semaphore lives
	name   string
}

func semPtr(p unsafe.Pointer) *C.rlock_semaphore { return (*C.rlock_semaphore)(p) }

// initSemaphore makes the C handle of s, a new value.
func (c *Client) initSemaphore(s *semaphore, name string, kind C.rlock_semaphore_kind, leaseMS C.int64_t, what string) error {
	cname := C.CString(name) // copies embedded NULs too; the length is passed
	defer C.free(unsafe.Pointer(cname))
	var ptr *C.rlock_semaphore
	err := c.use(func(cp *C.rlock_client) error {
		return check(C.rlock_go_semaphore_new(&ptr, cp, cname, C.size_t(len(name)), kind, leaseMS))
	})
	if err != nil {
		return err
	}
	// shared: goroutines acquire through one value at once, as through separate ones.
	s.core = newCore(what, unsafe.Pointer(ptr), true)
	s.client, s.name = c, name
	return nil
}

// Name returns the semaphore's name (its key on Redis).
func (s *semaphore) Name() string { return s.name }

// AddPermits adds delta permits (a negative delta takes them away; the count may go below 0)
// and returns the new count of available permits. A missing semaphore counts as 0. Like
// Redisson's addPermits it drops an expiry set by TrySetPermits.
func (s *semaphore) AddPermits(delta int64) (int64, error) {
	var available C.int64_t
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_add(semPtr(p), C.int64_t(delta), &available))
	})
	return int64(available), err
}

// AvailablePermits returns the permits available now (0 for a missing semaphore). On an
// expirable semaphore it first gives back permits whose lease ran out.
func (s *semaphore) AvailablePermits() (int64, error) {
	available, _, err := s.available()
	return available, err
}

func (s *semaphore) available() (int64, int64, error) {
	var available, held C.int64_t
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_available(semPtr(p), &available, &held))
	})
	return int64(available), int64(held), err
}

// Delete deletes the semaphore (an expirable one's held permits too) and reports whether it
// existed.
func (s *semaphore) Delete() (bool, error) {
	var deleted C.int
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_delete(semPtr(p), &deleted))
	})
	return deleted == 1, err
}

func (s *semaphore) closeHandle() {
	s.close(
		func(p unsafe.Pointer) { C.rlock_semaphore_cancel(semPtr(p)) },
		func(p unsafe.Pointer) { C.rlock_semaphore_free(semPtr(p)) })
}

// acquire takes permits (ids: room for them on an expirable semaphore, else nil): forever
// until ctx ends, or one try.
func (s *semaphore) acquire(ctx context.Context, forever bool, permits int, leaseMS C.int64_t, ids *C.rlock_permit_id) (bool, error) {
	n := C.int64_t(permits)
	return s.core.acquire(ctx, 0, forever, &acquireOps{
		try: func(p unsafe.Pointer) (int64, error) {
			return 0, check(C.rlock_go_semaphore_try_acquire(semPtr(p), n, leaseMS, ids))
		},
		start: func(p unsafe.Pointer, waitMS int64, token *C.rlock_cancel_token, user C.uintptr_t) error {
			return check(C.rlock_go_semaphore_acquire_async(semPtr(p), n, C.int64_t(waitMS), leaseMS, token, ids, user))
		},
		// The permits granted as the context ended go back at once.
		release: func(p unsafe.Pointer) error {
			if ids != nil {
				return check(C.rlock_go_permit_release(semPtr(p), ids, C.size_t(permits)))
			}
			return check(C.rlock_go_semaphore_release(semPtr(p), n))
		},
	})
}

// Semaphore is a counting semaphore on Redis with anonymous permits (Redisson's RSemaphore,
// sharing its layout): the key holds the number of available permits. It is safe for
// concurrent use; goroutines acquiring through one value compete as separate processes do.
// The permits a client took count as its own until released (HeldPermits): Release gives back
// only those. Make one with Client.Semaphore.
type Semaphore struct {
	semaphore
}

// Semaphore returns the semaphore name. No network call is made: a semaphore that does not
// exist has no permits until TrySetPermits or AddPermits makes some.
func (c *Client) Semaphore(name string) (*Semaphore, error) {
	s := &Semaphore{}
	err := c.initSemaphore(&s.semaphore, name, C.RLOCK_SEMAPHORE_PLAIN, C.RLOCK_LEASE_WATCHDOG,
		fmt.Sprintf("semaphore %q", name))
	if err != nil {
		return nil, err
	}
	runtime.SetFinalizer(s, func(s *Semaphore) { s.Close() })
	return s, nil
}

// Close frees the value without giving anything back: permits taken stay taken, and still
// count as the client's (HeldPermits through another value; Release gives them back).
// Goroutines waiting in Acquire through it get ErrClosed. Idempotent.
func (s *Semaphore) Close() error {
	s.closeHandle()
	runtime.SetFinalizer(s, nil)
	return nil
}

// TrySetPermits sets the permits (0 to 2147483647) of a semaphore that does not exist yet and
// reports whether it did (false: it existed, nothing changed). ttl > 0 also makes the
// semaphore expire after ttl; 0 means never.
func (s *Semaphore) TrySetPermits(permits int64, ttl time.Duration) (bool, error) {
	if ttl < 0 {
		return false, invalid("%s: TrySetPermits: ttl must not be negative, got %v", s.what, ttl)
	}
	ttlMS := C.int64_t(0)
	if ttl > 0 {
		ttlMS = C.int64_t(durationMS(ttl))
	}
	var set C.int
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_try_set(semPtr(p), C.int64_t(permits), ttlMS, &set))
	})
	runtime.KeepAlive(s)
	return set == 1, err
}

// Acquire takes permits (0 to 2^31-1; 0 at once), waiting as long as it takes, also while the semaphore
// does not exist. A waiting goroutine holds no OS thread. ctx bounds the wait: when it ends
// first the error satisfies errors.Is(err, ctx.Err()) (and ErrNotObtained for a deadline) and
// no permit is left taken.
func (s *Semaphore) Acquire(ctx context.Context, permits int) error {
	_, err := s.acquire(ctx, true, permits, 0, nil)
	runtime.KeepAlive(s)
	return err
}

// TryAcquire takes permits (0 to 2^31-1) if that many are available now, without waiting, and
// reports whether it did.
func (s *Semaphore) TryAcquire(permits int) (bool, error) {
	ok, err := s.acquire(context.Background(), false, permits, 0, nil)
	runtime.KeepAlive(s)
	return ok, err
}

// Release gives back permits (0 to 2^31-1) that this client took. It returns ErrNotHeld, with
// nothing changed, for more than the client holds (AddPermits makes new permits), and
// ErrLockLost when the semaphore was deleted or expired meanwhile.
func (s *Semaphore) Release(permits int) error {
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_release(semPtr(p), C.int64_t(permits)))
	})
	runtime.KeepAlive(s)
	return err
}

// ReleaseIfExists is Release, except that a semaphore that no longer exists is no error
// (Redisson's releaseIfExists): it reports true when the permits were given back, false when
// the semaphore does not exist (nothing is created, and the permits no longer count as the
// client's) or permits is 0. ErrNotHeld, with nothing changed, for more than the client holds.
func (s *Semaphore) ReleaseIfExists(permits int) (bool, error) {
	var released C.int
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_release_if_exists(semPtr(p), C.int64_t(permits), &released))
	})
	runtime.KeepAlive(s)
	return released == 1, err
}

// HeldPermits returns the permits of this semaphore that the client (every value made from
// it) took and has not released (local view, no network call).
func (s *Semaphore) HeldPermits() (int64, error) {
	var held C.int64_t
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_held(semPtr(p), &held))
	})
	runtime.KeepAlive(s)
	return int64(held), err
}

// DrainPermits takes every available permit and returns how many there were (it may be
// negative: the count is reset to 0 then). They do not count as held by the client.
func (s *Semaphore) DrainPermits() (int64, error) {
	var drained C.int64_t
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_drain(semPtr(p), &drained))
	})
	runtime.KeepAlive(s)
	return int64(drained), err
}

// ExpirableSemaphore is a semaphore whose every permit has an id and a lease (Redisson's
// RPermitExpirableSemaphore, sharing its layout): a permit whose holder dies goes back when
// its lease runs out. It is safe for concurrent use. Make one with Client.ExpirableSemaphore.
type ExpirableSemaphore struct {
	semaphore
}

// Permit is one permit of an ExpirableSemaphore.
type Permit struct {
	ID  string // 32 lower-case hex digits, as Redisson shows them
	sem *ExpirableSemaphore
}

// ExpirableSemaphore returns the permit-expirable semaphore name. No network call is made.
// Its permits are leased as WithPermitLease says, by default renewed by the client's watchdog
// while the client lives.
func (c *Client) ExpirableSemaphore(name string, opts ...SemaphoreOption) (*ExpirableSemaphore, error) {
	cfg := semaphoreConfig{leaseMS: C.RLOCK_LEASE_WATCHDOG}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("expirable semaphore %q: nil SemaphoreOption", name)
		}
		opt(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	s := &ExpirableSemaphore{}
	err := c.initSemaphore(&s.semaphore, name, C.RLOCK_SEMAPHORE_EXPIRABLE, cfg.leaseMS,
		fmt.Sprintf("expirable semaphore %q", name))
	if err != nil {
		return nil, err
	}
	// Only frees: the client's watchdog goes on renewing its permits until they are released
	// or the client closes.
	runtime.SetFinalizer(s, func(s *ExpirableSemaphore) { s.Close() })
	return s, nil
}

// Close frees the value without releasing its permits: the client's watchdog goes on renewing
// those it renewed until they are released or the client closes (which gives them back); the
// others expire by their lease. Goroutines waiting in an acquire through
// it get ErrClosed. Idempotent.
func (s *ExpirableSemaphore) Close() error {
	s.closeHandle()
	runtime.SetFinalizer(s, nil)
	return nil
}

// TrySetPermits sets the permits (0 to 2147483647) of a semaphore that does not exist yet and
// reports whether it did (false: it existed, nothing changed).
func (s *ExpirableSemaphore) TrySetPermits(permits int64) (bool, error) {
	var set C.int
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_try_set(semPtr(p), C.int64_t(permits), 0, &set))
	})
	runtime.KeepAlive(s)
	return set == 1, err
}

// Acquire takes one permit, waiting as long as it takes (see AcquireN).
func (s *ExpirableSemaphore) Acquire(ctx context.Context, lease time.Duration) (*Permit, error) {
	permits, err := s.AcquireN(ctx, 1, lease)
	if err != nil {
		return nil, err
	}
	return permits[0], nil
}

// AcquireN takes n permits (1 to 1000) at once, waiting as long as it takes, also while the
// semaphore does not exist. lease is a positive duration, NoLease, WatchdogLease, or 0 for
// the semaphore's (WithPermitLease). A waiting goroutine holds no OS thread. ctx bounds the
// wait: when it ends first the error satisfies errors.Is(err, ctx.Err()) (and ErrNotObtained
// for a deadline) and no permit is left taken.
func (s *ExpirableSemaphore) AcquireN(ctx context.Context, n int, lease time.Duration) ([]*Permit, error) {
	return s.take(ctx, true, n, lease, "AcquireN")
}

// TryAcquire takes one permit if one is available now, without waiting; nil (and a nil
// error) when none is. lease as for AcquireN.
func (s *ExpirableSemaphore) TryAcquire(lease time.Duration) (*Permit, error) {
	permits, err := s.TryAcquireN(1, lease)
	if err != nil || permits == nil {
		return nil, err
	}
	return permits[0], nil
}

// TryAcquireN takes n permits if that many are available now, without waiting; nil (and a
// nil error) when they are not. lease as for AcquireN.
func (s *ExpirableSemaphore) TryAcquireN(n int, lease time.Duration) ([]*Permit, error) {
	return s.take(context.Background(), false, n, lease, "TryAcquireN")
}

func (s *ExpirableSemaphore) take(ctx context.Context, forever bool, n int, lease time.Duration, op string) ([]*Permit, error) {
	if n < 1 || n > C.RLOCK_MAX_PERMITS_PER_CALL {
		return nil, invalid("%s: %s: permits must be 1 to %d, got %d", s.what, op, C.RLOCK_MAX_PERMITS_PER_CALL, n)
	}
	leaseMS, err := permitLeaseMS(s.what+": "+op, lease)
	if err != nil {
		return nil, err
	}
	// C memory: an asynchronous acquire writes the ids from a library thread, after the call
	// that started it returned. Every acquire has completed when s.acquire returns.
	ids := (*C.rlock_permit_id)(C.calloc(C.size_t(n), C.sizeof_rlock_permit_id))
	if ids == nil {
		return nil, newError(CodeNoMemory, "%s: %s: no memory for %d permit ids", s.what, op, n)
	}
	defer C.free(unsafe.Pointer(ids))
	ok, err := s.acquire(ctx, forever, n, leaseMS, ids)
	runtime.KeepAlive(s)
	if !ok || err != nil {
		return nil, err
	}
	permits := make([]*Permit, n)
	for i, id := range unsafe.Slice(ids, n) {
		permits[i] = &Permit{ID: C.GoString(&id.hex[0]), sem: s}
	}
	return permits, nil
}

// Release gives back permits by id (1 to 1000 ids, any case of hex), all or none: ErrNotHeld
// when one is not held (never taken, released, or its expiry was already reclaimed), or
// ErrLockLost when one's lease ran out (it goes back to the semaphore all the same).
func (s *ExpirableSemaphore) Release(ids ...string) error {
	if len(ids) == 0 || len(ids) > C.RLOCK_MAX_PERMITS_PER_CALL {
		return invalid("%s: Release: give 1 to %d permit ids, got %d", s.what, C.RLOCK_MAX_PERMITS_PER_CALL, len(ids))
	}
	cids := make([]C.rlock_permit_id, len(ids)) // no Go pointers inside: C may read it
	for i, id := range ids {
		if err := checkPermitID(s.what+": Release", id); err != nil {
			return err
		}
		for j := 0; j < len(id); j++ {
			cids[i].hex[j] = C.char(id[j])
		}
	}
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_permit_release(semPtr(p), &cids[0], C.size_t(len(cids))))
	})
	runtime.KeepAlive(s)
	return err
}

// UpdateLease gives the held permit id a new lease from now: a positive duration, NoLease or
// WatchdogLease (renewed by the client's watchdog from now on). It reports false, like
// Redisson's updateLeaseTime, when the permit is not held (released, or expired).
func (s *ExpirableSemaphore) UpdateLease(id string, lease time.Duration) (bool, error) {
	what := s.what + ": UpdateLease"
	if lease == 0 {
		return false, invalid("%s: lease must be positive, NoLease or WatchdogLease, got 0", what)
	}
	leaseMS, err := permitLeaseMS(what, lease)
	if err != nil {
		return false, err
	}
	if err := checkPermitID(what, id); err != nil {
		return false, err
	}
	cid := C.CString(id)
	defer C.free(unsafe.Pointer(cid))
	err = s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_permit_update_lease(semPtr(p), cid, leaseMS))
	})
	runtime.KeepAlive(s)
	if e, ok := err.(*Error); ok && e.Code == CodeNotHeld {
		return false, nil
	}
	return err == nil, err
}

// SetPermits sets the total of permits (0 to 2147483647), available plus held, as Redisson's
// setPermits: permits whose lease ran out go back first, then the available count becomes
// permits minus the permits held (below 0 while more are held than the new total). A
// semaphore that does not exist is made with permits available. It returns the available
// count.
func (s *ExpirableSemaphore) SetPermits(permits int64) (int64, error) {
	var available C.int64_t
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_semaphore_set_permits(semPtr(p), C.int64_t(permits), &available))
	})
	runtime.KeepAlive(s)
	return int64(available), err
}

// LeaseTime returns the time left on the lease of the held permit id (Redisson's
// getLeaseTime), or NoLease for a permit that never expires. It returns ErrNotHeld when the
// permit is not held (never taken, released, or its lease ran out; Redisson throws then).
// Permits whose lease ran out go back to the semaphore first.
func (s *ExpirableSemaphore) LeaseTime(id string) (time.Duration, error) {
	what := s.what + ": LeaseTime"
	if err := checkPermitID(what, id); err != nil {
		return 0, err
	}
	cid := C.CString(id)
	defer C.free(unsafe.Pointer(cid))
	var left C.int64_t
	err := s.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_permit_lease_time(semPtr(p), cid, &left))
	})
	runtime.KeepAlive(s)
	if err != nil {
		return 0, err
	}
	if left == C.RLOCK_LEASE_NONE {
		return NoLease, nil
	}
	return time.Duration(left) * time.Millisecond, nil
}

// AcquiredPermits returns the permits of the semaphore held now by anyone (after giving back
// those whose lease ran out), as Redisson's acquiredPermits.
func (s *ExpirableSemaphore) AcquiredPermits() (int64, error) {
	_, held, err := s.available()
	runtime.KeepAlive(s)
	return held, err
}

// checkPermitID checks what the C library cannot see: the fixed length of an id (it travels
// in a fixed-size field) and NUL bytes (a C string ends at the first). The library checks
// the digits.
func checkPermitID(what, id string) error {
	if len(id) != C.RLOCK_PERMIT_ID_SIZE-1 || strings.IndexByte(id, 0) >= 0 {
		return invalid("%s: a permit id is %d hex digits, got %q", what, C.RLOCK_PERMIT_ID_SIZE-1, id)
	}
	return nil
}

// Release gives the permit back (see ExpirableSemaphore.Release).
func (p *Permit) Release() error { return p.sem.Release(p.ID) }

// UpdateLease gives the permit a new lease (see ExpirableSemaphore.UpdateLease).
func (p *Permit) UpdateLease(lease time.Duration) (bool, error) {
	return p.sem.UpdateLease(p.ID, lease)
}

// LeaseTime returns the time left on the permit's lease (see ExpirableSemaphore.LeaseTime).
func (p *Permit) LeaseTime() (time.Duration, error) { return p.sem.LeaseTime(p.ID) }
