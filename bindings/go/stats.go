package rlock

/*
#include "shim.h"
*/
import "C"

import (
	"time"
	"unsafe"
)

// Histogram is a distribution of durations in fixed buckets, the same buckets for every
// histogram of every client (HistogramBounds). Counts[i] counts the samples above Bounds[i-1]
// and at most Bounds[i]; the last count, one more than there are bounds, counts those above
// every bound. Counts are per bucket, not cumulative (see Cumulative).
type Histogram struct {
	Bounds []time.Duration // upper bounds, ascending: 25µs to 1h
	Counts []uint64        // len(Bounds)+1 per-bucket counts
	Count  uint64          // samples
	Sum    time.Duration   // their total
}

// Cumulative returns the counts as Prometheus and OpenTelemetry's "le" buckets take them:
// element i counts the samples at most Bounds[i]; the last element counts every sample.
func (h Histogram) Cumulative() []uint64 {
	out := make([]uint64, len(h.Counts))
	var total uint64
	for i, n := range h.Counts {
		total += n
		out[i] = total
	}
	return out
}

// Stats is a snapshot of a client's statistics (Client.Stats): counters since the client was
// made, gauges now, and histograms. Fields are read one by one, so a snapshot taken while
// other goroutines make calls may be a few calls apart between fields. Lock names never
// appear here (they are unbounded); events carry them (SetEventHandler).
type Stats struct {
	// Enabled is false for a client made with WithStats(false) or the URL option stats=off:
	// every other field is then zero.
	Enabled bool

	// Acquires: one per Lock or TryLock call of a Lock (ReadLock, WriteLock...). Each round of
	// a MultiLock or Redlock acquire counts as a try-once acquire of every member, on the
	// member's client, and its release as a release of each: a MultiLock Lock that has to wait
	// counts its first, failed, round too.
	AcquiresGranted  uint64
	AcquiresTimedOut uint64 // ended with CodeTimedOut: a TryLock on a held lock too
	AcquiresCanceled uint64 // ended with CodeCanceled (a context ended the wait)
	AcquiresFailed   uint64 // ended with any other error, by code in AcquiresFailedByCode
	// AcquiresFailedByCode has an entry for each code seen at least once.
	AcquiresFailedByCode map[Code]uint64

	Releases       uint64 // release calls that released a hold
	ReleasesFailed uint64 // release calls that failed (not held, another owner, lost, Redis...)

	LocksLostGone        uint64 // holds lost, by LostReason
	LocksLostUnreachable uint64
	LocksLostExpired     uint64

	RenewalsSent     uint64 // holds renewed by the watchdog (one script renews many)
	RenewalsFailed   uint64 // of those: no answer or an error reply
	Reconnects       uint64 // connections opened again after one was lost or replaced
	Failovers        uint64 // Sentinel: the master moved to another address
	ClusterRedirects uint64 // Cluster: MOVED and ASK answers followed
	ScriptsSent      uint64 // EVALSHA and EVAL commands sent (renewals included)
	EventsDropped    uint64 // events not delivered because the queue was full

	Holds   int64 // gauge: (lock, owner) holds this client keeps, not lost
	Waiters int64 // gauge: acquires waiting for a lock

	// Leader elections of this client (Election, Lead), counted whether or not they have
	// callbacks.
	ElectionsWon       uint64 // times one of its elections became leader
	LeadershipsRevoked uint64 // leaderships that ended, for any reason
	// LeadershipsRevokedByReason has an entry for each reason seen at least once.
	LeadershipsRevokedByReason map[RevokeReason]uint64
	Leaders                    int64 // gauge: its elections that lead now

	// TLS connections of every kind (commands, subscriber, sentinels, cluster nodes); 0 in
	// plaintext.
	TLSHandshakes      uint64 // handshakes completed, full or resumed
	TLSSessionsResumed uint64 // of those, resuming an earlier connection's session

	AcquireWait Histogram // granted acquires: from the call to the grant
	Hold        Histogram // from a hold's first acquire to its last release
	Handoff     Histogram // acquires woken by an unlock message: from its arrival to the grant
	CommandRTT  Histogram // commands (a pipelined batch counts once): from the send to the reply
}

// LocksLost returns the count of holds lost for a reason.
func (s Stats) LocksLost(reason LostReason) uint64 {
	switch reason {
	case LostGone:
		return s.LocksLostGone
	case LostUnreachable:
		return s.LocksLostUnreachable
	case LostExpired:
		return s.LocksLostExpired
	}
	return 0
}

// histogramBounds is read once: the C library's bounds are static.
var histogramBounds = func() []time.Duration {
	us := unsafe.Slice((*int64)(unsafe.Pointer(C.rlock_histogram_bounds_us())), C.RLOCK_HISTOGRAM_BOUNDS)
	out := make([]time.Duration, len(us))
	for i, v := range us {
		out[i] = time.Duration(v) * time.Microsecond
	}
	return out
}()

// HistogramBounds returns the upper bounds of the buckets of every Histogram, ascending.
func HistogramBounds() []time.Duration {
	return append([]time.Duration(nil), histogramBounds...)
}

// Stats returns a snapshot of the client's statistics. It makes no I/O and costs about a
// microsecond; safe from any goroutine. It fails with ErrClosed after Close.
func (c *Client) Stats() (Stats, error) {
	// Read before the C counters, which count each of these tries first: never more than them.
	tries := c.triesBeforeWait.Load()
	var raw C.rlock_stats
	err := c.use(func(ptr *C.rlock_client) error {
		return check(C.rlock_go_client_stats(ptr, &raw))
	})
	if err != nil {
		return Stats{}, err
	}
	s := Stats{
		Enabled:              raw.enabled != 0,
		AcquiresGranted:      uint64(raw.acquires_granted),
		AcquiresTimedOut:     uint64(raw.acquires_timed_out) - min(tries, uint64(raw.acquires_timed_out)),
		AcquiresCanceled:     uint64(raw.acquires_canceled),
		AcquiresFailed:       uint64(raw.acquires_failed),
		AcquiresFailedByCode: map[Code]uint64{},
		Releases:             uint64(raw.releases),
		ReleasesFailed:       uint64(raw.releases_failed),
		LocksLostGone:        uint64(raw.locks_lost_gone),
		LocksLostUnreachable: uint64(raw.locks_lost_unreachable),
		LocksLostExpired:     uint64(raw.locks_lost_expired),
		RenewalsSent:         uint64(raw.renewals_sent),
		RenewalsFailed:       uint64(raw.renewals_failed),
		Reconnects:           uint64(raw.reconnects),
		Failovers:            uint64(raw.failovers),
		ClusterRedirects:     uint64(raw.cluster_redirects),
		ScriptsSent:          uint64(raw.scripts_sent),
		EventsDropped:        uint64(raw.events_dropped),
		Holds:                int64(raw.holds),
		Waiters:              int64(raw.waiters),
		AcquireWait:          histogramOf(&raw.acquire_wait),
		Hold:                 histogramOf(&raw.hold),
		Handoff:              histogramOf(&raw.handoff),
		CommandRTT:           histogramOf(&raw.command_rtt),
		ElectionsWon:         uint64(raw.elections_won),
		LeadershipsRevoked:   uint64(raw.leaderships_revoked),
		Leaders:              int64(raw.leaders),
		TLSHandshakes:        uint64(raw.tls_handshakes),
		TLSSessionsResumed:   uint64(raw.tls_sessions_resumed),

		LeadershipsRevokedByReason: map[RevokeReason]uint64{},
	}
	for i, n := range raw.leaderships_revoked_by_reason {
		if n != 0 {
			s.LeadershipsRevokedByReason[RevokeReason(i)] = uint64(n)
		}
	}
	for i, n := range raw.acquires_failed_by_code {
		if n != 0 {
			s.AcquiresFailedByCode[Code(-i)] = uint64(n)
		}
	}
	return s, nil
}

func histogramOf(h *C.rlock_histogram) Histogram {
	out := Histogram{
		Bounds: HistogramBounds(), // a copy: a caller may write to it
		Counts: make([]uint64, len(h.buckets)),
		Count:  uint64(h.count),
		Sum:    time.Duration(h.sum_us) * time.Microsecond,
	}
	for i, n := range h.buckets {
		out.Counts[i] = uint64(n)
	}
	return out
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// cStatsCodes is RLOCK_STATS_CODES, for the tests (which cannot use cgo).
const cStatsCodes = int(C.RLOCK_STATS_CODES)
