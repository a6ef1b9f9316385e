package rlock

/*
#include "shim.h"

// The election shims (see shim.h for why every failing call copies its message here). The
// callbacks reach Go through a cgo.Handle of the election's state, passed as the payload.

extern void rlockGoElected(int64_t term, uintptr_t payload);
extern void rlockGoRevoked(int64_t term, int reason, int code, char *message, uintptr_t payload);

static inline void rlock_go_elected(rlock_election *e, int64_t term, void *payload) {
  (void)e;
  rlockGoElected(term, (uintptr_t)payload);
}

static inline void rlock_go_revoked(rlock_election *e, int64_t term, rlock_revoke_reason reason,
                                    void *payload) {
  (void)e;
  int code = 0;
  char *message = NULL;
  if (reason == RLOCK_REVOKED_FAILED) { // the error that ended the campaign: copied for Go
    rlock_go_result r = rlock_go_result_of(rlock_last_error()->code);
    code = r.rc;
    message = r.message;
  }
  rlockGoRevoked(term, (int)reason, code, message, (uintptr_t)payload);
}

static inline rlock_go_result rlock_go_election_new(rlock_election **out, rlock_client *client,
                                                    const char *name, size_t name_len) {
  rlock_election_options opts = RLOCK_ELECTION_OPTIONS_INIT;
  opts.requeue = 0; // one leadership per Campaign
  return rlock_go_result_of(rlock_election_new(out, client, name, name_len, &opts));
}

static inline rlock_go_result rlock_go_election_campaign(rlock_election *e, uintptr_t payload) {
  return rlock_go_result_of(
      rlock_election_campaign(e, rlock_go_elected, rlock_go_revoked, (void *)payload));
}

static inline rlock_go_result rlock_go_election_resign(rlock_election *e) {
  return rlock_go_result_of(rlock_election_resign(e));
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// RevokeReason says why a leadership, or a campaign, ended.
type RevokeReason int

const (
	RevokedGone        RevokeReason = 1 // the key was deleted, or is held by another owner
	RevokedUnreachable RevokeReason = 2 // renewals failed until the hold's validity deadline
	RevokedResigned    RevokeReason = 4 // Resign, Close, or Lead's function returned
	RevokedClosed      RevokeReason = 5 // the client was closed
	RevokedFailed      RevokeReason = 6 // the campaign met an error that does not pass by itself
)

func (r RevokeReason) String() string {
	switch r {
	case RevokedGone:
		return "gone"
	case RevokedUnreachable:
		return "unreachable"
	case RevokedResigned:
		return "resigned"
	case RevokedClosed:
		return "closed"
	case RevokedFailed:
		return "failed"
	}
	return fmt.Sprintf("RevokeReason(%d)", int(r))
}

// ErrLeadershipLost matches (errors.Is) the error of a leadership that ended while its holder
// still acted on it; such an error also matches ErrLockLost.
var ErrLeadershipLost = errors.New("rlock: leadership lost")

// electionState is what the C callbacks report; C holds it through a cgo.Handle. It does not
// point back to the Election, so the handle does not keep the Election alive.
type electionState struct {
	mu      sync.Mutex
	term    int64 // the current leadership's term; 0 while campaigning
	ended   bool  // the leadership (or the campaign) is over
	reason  RevokeReason
	err     error         // the error that ended a failed campaign
	changed chan struct{} // closed (and replaced) at each change
	lost    chan struct{} // closed when the current leadership ends
}

func (s *electionState) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

//export rlockGoElected
func rlockGoElected(term C.int64_t, payload C.uintptr_t) {
	s := cgo.Handle(payload).Value().(*electionState)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.term = int64(term)
	s.notifyLocked()
}

//export rlockGoRevoked
func rlockGoRevoked(term C.int64_t, reason C.int, code C.int, message *C.char, payload C.uintptr_t) {
	var err error
	if RevokeReason(reason) == RevokedFailed {
		err = statusError(code, message)
	}
	s := cgo.Handle(payload).Value().(*electionState)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	s.reason = RevokeReason(reason)
	s.err = err
	close(s.lost)
	s.notifyLocked()
}

// Election is a candidacy for leader of a name among every candidate on the same Redis, in
// any process or language (docs/leader.md). Campaign waits to lead; the term it returns grows
// with every new leader of the name, for a store to refuse an old leader's writes. Safe for
// concurrent use. Most programs want Client.Lead instead.
type Election struct {
	core
	client *Client
	name   string
	state  *electionState
	handle cgo.Handle
}

func electionPtr(p unsafe.Pointer) *C.rlock_election { return (*C.rlock_election)(p) }

// NewElection returns a candidacy for leader of name (the name of a fenced lock: Redisson's
// RFencedLock sees the same key). No network call is made.
func (c *Client) NewElection(name string) (*Election, error) {
	if name == "" {
		return nil, invalid("election name must not be empty")
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var ptr *C.rlock_election
	err := c.use(func(cp *C.rlock_client) error {
		return check(C.rlock_go_election_new(&ptr, cp, cname, C.size_t(len(name))))
	})
	if err != nil {
		return nil, err
	}
	state := &electionState{changed: make(chan struct{}), lost: make(chan struct{})}
	e := &Election{core: newCore(fmt.Sprintf("election %q", name), unsafe.Pointer(ptr), true),
		client: c, name: name, state: state, handle: cgo.NewHandle(state)}
	runtime.SetFinalizer(e, func(e *Election) { e.Close() })
	return e, nil
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// Campaign waits until this candidate leads and returns its term. A waiting candidate holds no
// OS thread (the wait is the library's). When ctx ends first the campaign stops and the error
// matches ctx.Err(); a campaign that cannot succeed (the key is not a lock, an ACL refusal)
// returns its error. One leadership per Campaign: after it ends, Campaign again to run again.
func (e *Election) Campaign(ctx context.Context) (int64, error) {
	if ctx == nil {
		return 0, invalid("Campaign: ctx must not be nil")
	}
	s := e.state
	s.mu.Lock()
	if s.term != 0 && !s.ended {
		s.mu.Unlock()
		return 0, invalid("%s: already leading (term %d)", e.what, s.term)
	}
	s.term, s.ended, s.reason, s.err = 0, false, 0, nil
	s.lost = make(chan struct{})
	s.mu.Unlock()
	err := e.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_election_campaign(electionPtr(p), C.uintptr_t(e.handle)))
	})
	runtime.KeepAlive(e)
	if err != nil {
		return 0, err
	}
	for {
		s.mu.Lock()
		term, ended, failure, changed := s.term, s.ended, s.err, s.changed
		reason := s.reason
		s.mu.Unlock()
		switch {
		case term != 0:
			return term, nil
		case ended && failure != nil:
			return 0, failure
		case ended:
			return 0, newError(CodeClosed, "%s: the campaign ended (%s)", e.what, reason)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			_ = e.Resign()
			return 0, e.contextError(ctx.Err())
		}
	}
}

// IsLeader reports whether this candidate leads, checked against the hold's validity deadline
// on every call: a process paused past its lease sees false at once. Check it before each
// action of a leader, and fence each write with the term.
func (e *Election) IsLeader() bool {
	leader := false
	_ = e.use(func(p unsafe.Pointer) error {
		leader = C.rlock_election_is_leader(electionPtr(p)) == 1
		return nil
	})
	runtime.KeepAlive(e)
	return leader
}

// Term returns the current leadership's term, and false when not the leader (as IsLeader).
func (e *Election) Term() (int64, bool) {
	var term C.int64_t
	ok := false
	_ = e.use(func(p unsafe.Pointer) error {
		ok = C.rlock_election_term(&term, electionPtr(p)) == C.RLOCK_OK
		return nil
	})
	runtime.KeepAlive(e)
	return int64(term), ok
}

// Lost returns a channel closed when the current leadership (or campaign) ends, and Reason
// then says why.
func (e *Election) Lost() <-chan struct{} {
	e.state.mu.Lock()
	defer e.state.mu.Unlock()
	return e.state.lost
}

// Reason says why the last leadership or campaign ended (0 while it goes on).
func (e *Election) Reason() RevokeReason {
	e.state.mu.Lock()
	defer e.state.mu.Unlock()
	if !e.state.ended {
		return 0
	}
	return e.state.reason
}

// Resign stops campaigning, or leading: the lock is released at once, so another candidate
// takes over. Idempotent.
func (e *Election) Resign() error {
	err := e.use(func(p unsafe.Pointer) error {
		return check(C.rlock_go_election_resign(electionPtr(p)))
	})
	runtime.KeepAlive(e)
	if errors.Is(err, ErrClosed) {
		return nil // closed: it resigned then
	}
	return err
}

// Close resigns and frees the election. Idempotent.
func (e *Election) Close() error {
	e.close(func(unsafe.Pointer) {}, func(p unsafe.Pointer) {
		C.rlock_election_free(electionPtr(p)) // resigns; no callback runs after it
	})
	e.closeMu.Lock()
	if e.handle != 0 {
		e.handle.Delete()
		e.handle = 0
	}
	e.closeMu.Unlock()
	runtime.SetFinalizer(e, nil)
	return nil
}

// Lead campaigns for leader of name and, once leader, runs fn with a context that is
// cancelled the moment leadership ends (the key was deleted or taken, Redis stayed
// unreachable until the lease's deadline, the client closed), and with the term. When fn
// returns, Lead resigns (another candidate takes over at once) and returns fn's error. If
// leadership ended while fn ran and fn returned nil, the error matches ErrLeadershipLost and
// ErrLockLost. If ctx ends while campaigning, the error matches ctx.Err(). The lease is the
// client's watchdog lease (WithWatchdogLease): a leader that dies is replaced within it.
func (c *Client) Lead(ctx context.Context, name string, fn func(ctx context.Context, term int64) error) error {
	if fn == nil {
		return invalid("Lead: fn must not be nil")
	}
	e, err := c.NewElection(name)
	if err != nil {
		return err
	}
	defer e.Close()
	term, err := e.Campaign(ctx)
	if err != nil {
		return err
	}
	lost := e.Lost()
	leadCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	go func() {
		select {
		case <-lost:
			cancel(fmt.Errorf("%w (term %d, %s)", ErrLeadershipLost, term, e.Reason()))
		case <-stop:
		}
	}()
	fnErr := fn(leadCtx, term)
	close(stop)
	var lostErr error
	select {
	case <-lost:
		if reason := e.Reason(); reason != RevokedResigned {
			lostErr = &Error{Code: CodeLost, cause: ErrLeadershipLost,
				Message: fmt.Sprintf("leadership of %q (term %d) was lost while it ran: %s",
					name, term, reason)}
		}
	default:
	}
	resignErr := e.Resign()
	switch {
	case fnErr != nil:
		return fnErr
	case lostErr != nil:
		return lostErr
	}
	return resignErr
}
