package rlock

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
)

// EventKind says what an Event reports.
type EventKind int

// The kinds of events (values are the C library's rlock_event_kind).
const (
	EventAcquired      EventKind = 1 // Name, Owner, ThreadID, Waited, Token
	EventReleased      EventKind = 2 // Name, Owner, ThreadID, Held (first acquire to last release)
	EventLost          EventKind = 3 // Name, Owner, ThreadID, Reason (a LostReason)
	EventRenewalFailed EventKind = 4 // Name, Owner, ThreadID, Reason (a Code), Detail (the message)
	EventFailover      EventKind = 5 // Detail: the new master "host:port" (Sentinel)
	EventRedirect      EventKind = 6 // Detail: "MOVED <slot> <host:port>" or "ASK ..." (Cluster)
	EventKeyExpired    EventKind = 7 // Name: a key of the client's names expired (WatchKeyEvents)
	EventKeyDeleted    EventKind = 8 // Name: a key of the client's names was deleted (WatchKeyEvents)
	EventElected       EventKind = 9 // Name, Owner, ThreadID, Token (the term): an election became leader
	// Name, Owner, ThreadID, Token (the term; 0 when a campaign ended without leading), Reason
	// (a RevokeReason): an election's leadership ended.
	EventRevoked EventKind = 10
)

func (k EventKind) String() string {
	switch k {
	case EventAcquired:
		return "acquired"
	case EventReleased:
		return "released"
	case EventLost:
		return "lost"
	case EventRenewalFailed:
		return "renewal_failed"
	case EventFailover:
		return "failover"
	case EventRedirect:
		return "redirect"
	case EventKeyExpired:
		return "key_expired"
	case EventKeyDeleted:
		return "key_deleted"
	case EventElected:
		return "elected"
	case EventRevoked:
		return "revoked"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is something that happened to a client's locks or connections (SetEventHandler).
// Fields a kind does not use are zero.
type Event struct {
	Kind     EventKind
	Time     time.Time     // when it happened (wall clock, microseconds)
	Name     string        // the lock; empty for EventFailover and EventRedirect
	Owner    string        // the hold's owner on Redis, "<client id>:<thread id>"; empty when none
	ThreadID int64         // the owner's thread id, 0 when none
	Waited   time.Duration // EventAcquired: from the call to the grant
	Held     time.Duration // EventReleased: from the first acquire to the last release
	// Token is the fencing token of a fenced lock for EventAcquired, the term for EventElected
	// and EventRevoked, else 0.
	Token int64
	// Reason is a LostReason for EventLost, a Code for EventRenewalFailed and a RevokeReason
	// for EventRevoked (see LostReason, Code and RevokeReason), else 0.
	Reason int
	Detail string // see the kinds; empty when none
}

// LostReason returns Reason as a LostReason (meaningful for EventLost).
func (e Event) LostReason() LostReason { return LostReason(e.Reason) }

// RevokeReason returns Reason as a RevokeReason (meaningful for EventRevoked).
func (e Event) RevokeReason() RevokeReason { return RevokeReason(e.Reason) }

// Code returns Reason as a status code (meaningful for EventRenewalFailed).
func (e Event) Code() Code { return Code(e.Reason) }

// eventHook is the payload C holds (through a cgo.Handle) while a handler is set.
type eventHook struct {
	fn atomic.Pointer[func(Event)]
}

// eventState is a client's handler: one handle for the client's life, made on first use.
type eventState struct {
	mu     sync.Mutex // orders SetEventHandler calls; never held while a handler runs
	hook   *eventHook
	handle cgo.Handle // 0 until the first SetEventHandler
}

// release deletes the handle once C can no longer call it (after rlock_client_free).
func (s *eventState) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handle != 0 {
		s.handle.Delete()
		s.handle = 0
	}
}

// SetEventHandler sets the function called for each event of the client, or with nil stops
// the events. Off by default.
//
// Events come in the order they happened, one at a time, on a thread of the C library started
// for the client: fn runs there (not on a new goroutine, which would lose the order), so it
// should return quickly; while it runs, later events wait in a queue of 65536 and beyond that
// are dropped and counted (Stats.EventsDropped). Queuing an event costs about a microsecond
// in the call that makes it. fn may call this package (but not SetEventHandler or Close of
// the same client). A panic in fn is recovered and printed to standard error: it must not
// unwind into C.
//
// When SetEventHandler returns, a previous handler is no longer running and gets no more
// events; events still queued go to fn. Close delivers the events already queued, then stops.
// Keep the client reachable (call Close): a handler that refers to the client keeps it from
// being collected. Fails with ErrClosed after Close.
func (c *Client) SetEventHandler(fn func(Event)) error {
	c.events.mu.Lock()
	defer c.events.mu.Unlock()
	return c.use(func(ptr *C.rlock_client) error {
		if fn == nil {
			if c.events.handle == 0 {
				return nil
			}
			err := check(C.rlock_go_set_event_callback(ptr, 0))
			c.events.hook.fn.Store(nil)
			return err
		}
		if c.events.handle == 0 {
			c.events.hook = &eventHook{}
			c.events.handle = cgo.NewHandle(c.events.hook)
		}
		c.events.hook.fn.Store(&fn)
		// Setting it again, even with the same handle, waits for a running call of the
		// previous handler to return.
		return check(C.rlock_go_set_event_callback(ptr, C.uintptr_t(c.events.handle)))
	})
}

// WatchKeyEvents reports keys of the client's names that expire (EventKeyExpired) or are
// deleted (EventKeyDeleted: DEL, UNLINK, an unlock that frees a lock) to the event handler,
// named as the caller names them (Redisson's ExpiredObjectListener and DeletedObjectListener).
// With WithKeyPrefix only keys under the prefix are reported; without, every key of the
// database. Both false stops. It returns once the server confirmed the subscription. The
// events come from Redis keyspace notifications: the server's notify-keyspace-events must
// include E and x (expired) or g (deleted), and the ErrUnsupported error names what is missing
// when the server shows it. Not on a Redis Cluster (ErrUnsupported).
func (c *Client) WatchKeyEvents(expired, deleted bool) error {
	kinds := 0
	if expired {
		kinds |= 1
	}
	if deleted {
		kinds |= 2
	}
	return c.use(func(ptr *C.rlock_client) error {
		return check(C.rlock_go_watch_key_events(ptr, C.int(kinds)))
	})
}
