package rlock

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlock/rlock/bindings/go/internal/redistest"
)

func stats(t *testing.T, c *Client) Stats {
	t.Helper()
	s, err := c.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s
}

func checkHistogram(t *testing.T, what string, h Histogram) {
	t.Helper()
	if len(h.Bounds) != 22 || len(h.Counts) != len(h.Bounds)+1 {
		t.Fatalf("%s: %d bounds, %d counts; want 22 and 23", what, len(h.Bounds), len(h.Counts))
	}
	if h.Bounds[0] != 25*time.Microsecond || h.Bounds[len(h.Bounds)-1] != time.Hour {
		t.Fatalf("%s: bounds %v .. %v, want 25µs .. 1h", what, h.Bounds[0], h.Bounds[len(h.Bounds)-1])
	}
	var total uint64
	for _, n := range h.Counts {
		total += n
	}
	if total != h.Count {
		t.Fatalf("%s: buckets add up to %d, Count is %d", what, total, h.Count)
	}
	cum := h.Cumulative()
	if cum[len(cum)-1] != h.Count {
		t.Fatalf("%s: cumulative %v does not end at Count %d", what, cum, h.Count)
	}
	// The sum lies between the samples' bucket bounds (a sample of bucket i is > Bounds[i-1]).
	var low time.Duration
	for i, n := range h.Counts[1:] {
		low += time.Duration(n) * h.Bounds[i]
	}
	if h.Sum < low {
		t.Fatalf("%s: Sum %v is below what the buckets imply (%v)", what, h.Sum, low)
	}
}

// A workload with known counts: N grants and releases, M try-once timeouts, a cancelled wait,
// a hold lost to a DEL (found by the watchdog's renewal), then a failed release of it.
func TestStatsKnownCounts(t *testing.T) {
	c := newClient(t, WithWatchdogLease(600*time.Millisecond))
	if s := stats(t, c); !s.Enabled || s.AcquiresGranted != 0 || s.Holds != 0 {
		t.Fatalf("a new client's stats: %+v", s)
	}
	const N, M = 5, 3
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	for i := 0; i < N; i++ {
		if err := l.Lock(bg); err != nil {
			t.Fatal(err)
		}
		if s := stats(t, c); s.Holds != 1 {
			t.Fatalf("holds while holding: %d", s.Holds)
		}
		time.Sleep(2 * time.Millisecond)
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
	}

	// M try-once acquires of a held lock by another owner time out.
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	other := mustLock(t, c.Lock, name)
	for i := 0; i < M; i++ {
		if ok, err := other.TryLock(bg, 0, 0); ok || err != nil {
			t.Fatalf("TryLock of a held lock: %v %v", ok, err)
		}
	}
	// A waiter shows in the gauge; cancelling it counts a cancelled acquire.
	ctx, cancel := context.WithCancel(bg)
	waiting := result(func() error { return other.Lock(ctx) })
	waitFor(t, "a waiter in the stats", 10*time.Second, func() bool { return stats(t, c).Waiters == 1 })
	cancel()
	wantCode(t, within(t, waiting, 10*time.Second, "the cancelled Lock"), CodeCanceled, ErrCanceled)
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}

	// A hold lost: the renewal finds the key gone.
	lost := mustLock(t, c.Lock, uniqueName(t))
	if err := lost.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := redis.Do("DEL", lost.Name()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the loss", 10*time.Second, lost.Lost)
	wantCode(t, lost.Unlock(), CodeLost, ErrLockLost)

	s := stats(t, c)
	want := map[string][2]uint64{
		"AcquiresGranted":  {s.AcquiresGranted, N + 2},
		"AcquiresTimedOut": {s.AcquiresTimedOut, M},
		"AcquiresCanceled": {s.AcquiresCanceled, 1},
		"AcquiresFailed":   {s.AcquiresFailed, 0},
		"Releases":         {s.Releases, N + 1},
		"ReleasesFailed":   {s.ReleasesFailed, 1},
		"LocksLostGone":    {s.LocksLost(LostGone), 1},
		"LocksLostOther":   {s.LocksLostUnreachable + s.LocksLostExpired, 0},
		"AcquireWait":      {s.AcquireWait.Count, N + 2},
		"Hold":             {s.Hold.Count, N + 1},
		"EventsDropped":    {s.EventsDropped, 0},
		"Failovers":        {s.Failovers, 0},
	}
	for field, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s = %d, want %d", field, v[0], v[1])
		}
	}
	if len(s.AcquiresFailedByCode) != 0 {
		t.Errorf("AcquiresFailedByCode = %v, want none", s.AcquiresFailedByCode)
	}
	if s.Holds != 0 || s.Waiters != 0 {
		t.Errorf("gauges after the workload: holds %d waiters %d", s.Holds, s.Waiters)
	}
	if s.RenewalsSent < 1 || s.RenewalsFailed > s.RenewalsSent {
		t.Errorf("renewals sent %d, failed %d", s.RenewalsSent, s.RenewalsFailed)
	}
	// Every acquire and release is a script; renewals are too.
	if s.ScriptsSent < N+2+M+N+1 {
		t.Errorf("ScriptsSent %d is below the acquires and releases made", s.ScriptsSent)
	}
	if s.CommandRTT.Count == 0 {
		t.Error("no command round trip measured")
	}
	if s.Hold.Sum < N*2*time.Millisecond {
		t.Errorf("Hold.Sum %v is below the %v slept while holding", s.Hold.Sum, N*2*time.Millisecond)
	}
	for what, h := range map[string]Histogram{"AcquireWait": s.AcquireWait, "Hold": s.Hold,
		"Handoff": s.Handoff, "CommandRTT": s.CommandRTT} {
		checkHistogram(t, what, h)
	}
}

// Acquires that fail are counted by code: here ECONN, from a server that was stopped.
func TestStatsFailedByCode(t *testing.T) {
	private, err := redistest.StartPrivate()
	if err != nil {
		t.Fatal(err)
	}
	defer private.Stop()
	c, err := NewClient(private.URL, WithConnectTimeout(300*time.Millisecond),
		WithCommandTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Lock(uniqueName(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	private.Stop()
	if ok, err := l.TryLock(bg, 0, 0); ok || err == nil {
		t.Fatalf("TryLock with the server stopped: %v %v", ok, err)
	} else {
		wantCode(t, err, CodeConnection, ErrConnection)
	}
	s := stats(t, c)
	if s.AcquiresFailed != 1 || s.AcquiresFailedByCode[CodeConnection] != 1 || len(s.AcquiresFailedByCode) != 1 {
		t.Fatalf("failed %d, by code %v; want 1 ECONN", s.AcquiresFailed, s.AcquiresFailedByCode)
	}
}

func TestStatsOff(t *testing.T) {
	sep := "?"
	if strings.Contains(redis.URL, "?") {
		sep = "&"
	}
	for what, c := range map[string]*Client{
		"WithStats(false)": newClient(t, WithStats(false)),
		"stats=off": func() *Client {
			c, err := NewClient(redis.URL + sep + "stats=off")
			must(t, err)
			t.Cleanup(func() { c.Close() })
			return c
		}(),
	} {
		l := mustLock(t, c.Lock, uniqueName(t))
		must(t, l.Lock(bg))
		must(t, l.Unlock())
		s := stats(t, c)
		if s.Enabled || s.AcquiresGranted != 0 || s.Releases != 0 || s.ScriptsSent != 0 || s.AcquireWait.Count != 0 {
			t.Errorf("%s: stats kept: %+v", what, s)
		}
	}
	c := newClient(t, WithStats(true))
	if !stats(t, c).Enabled {
		t.Error("WithStats(true): not enabled")
	}
	c.Close()
	if _, err := c.Stats(); err == nil {
		t.Error("Stats after Close did not fail")
	} else {
		wantCode(t, err, CodeClosed, ErrClosed)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventLog collects events in the order the handler gets them.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (e *eventLog) add(ev Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *eventLog) snapshot() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.events...)
}

func TestEventsOrderAndFields(t *testing.T) {
	c := newClient(t, WithWatchdogLease(600*time.Millisecond))
	var log eventLog
	must(t, c.SetEventHandler(log.add))
	before := time.Now().Add(-time.Second)
	name := uniqueName(t)
	fenced := mustLock(t, c.FencedLock, name)
	must(t, fenced.Lock(bg))
	token, err := fenced.Token()
	must(t, err)
	time.Sleep(20 * time.Millisecond)
	must(t, fenced.Unlock())
	lost := mustLock(t, c.Lock, name+":lost")
	must(t, lost.Lock(bg))
	if _, err := redis.Do("DEL", lost.Name()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the loss", 10*time.Second, lost.Lost)
	waitFor(t, "four events", 10*time.Second, func() bool { return len(log.snapshot()) >= 4 })
	after := time.Now().Add(time.Second)

	got := log.snapshot()
	kinds := []EventKind{}
	for _, e := range got {
		kinds = append(kinds, e.Kind)
	}
	want := []EventKind{EventAcquired, EventReleased, EventAcquired, EventLost}
	if len(kinds) != len(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v, want %v", kinds, want)
		}
	}
	for i, e := range got {
		if e.Time.Before(before) || e.Time.After(after) {
			t.Errorf("event %d at %v, outside the test's run", i, e.Time)
		}
		if !strings.HasPrefix(e.Owner, c.ID()+":") || e.Owner != c.ID()+":"+strconv.FormatInt(e.ThreadID, 10) {
			t.Errorf("event %d: owner %q thread %d, want %s:<thread id>", i, e.Owner, e.ThreadID, c.ID())
		}
	}
	acq, rel, acq2, loss := got[0], got[1], got[2], got[3]
	if acq.Name != name || acq.Token != token || token <= 0 || acq.Waited < 0 || acq.Held != 0 {
		t.Errorf("acquired: %+v (token %d)", acq, token)
	}
	if rel.Name != name || rel.Held < 20*time.Millisecond || rel.Held > 10*time.Second || rel.ThreadID != acq.ThreadID {
		t.Errorf("released: %+v", rel)
	}
	if acq2.Name != lost.Name() || acq2.Token != 0 {
		t.Errorf("second acquired: %+v", acq2)
	}
	if loss.Name != lost.Name() || loss.LostReason() != LostGone || loss.Owner != acq2.Owner {
		t.Errorf("lost: %+v", loss)
	}

	// Cleared: no more events.
	must(t, c.SetEventHandler(nil))
	l := mustLock(t, c.Lock, uniqueName(t))
	must(t, l.Lock(bg))
	must(t, l.Unlock())
	time.Sleep(100 * time.Millisecond)
	if n := len(log.snapshot()); n != 4 {
		t.Fatalf("%d events after clearing the handler, want 4", n)
	}
}

// A handler that panics does not bring the process down; later events still come.
func TestEventHandlerPanicIsContained(t *testing.T) {
	c := newClient(t)
	events := make(chan Event, 8)
	must(t, c.SetEventHandler(func(e Event) {
		events <- e
		if e.Kind == EventAcquired {
			panic("deliberately, from the test")
		}
	}))
	l := mustLock(t, c.Lock, uniqueName(t))
	must(t, l.Lock(bg))
	must(t, l.Unlock())
	for _, want := range []EventKind{EventAcquired, EventReleased} {
		select {
		case e := <-events:
			if e.Kind != want {
				t.Fatalf("event %v, want %v", e.Kind, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v event", want)
		}
	}
}

// Close delivers the events already queued, then calls the handler no more.
func TestEventsDeliveredBeforeClose(t *testing.T) {
	c, err := NewClient(redis.URL)
	must(t, err)
	var log eventLog
	must(t, c.SetEventHandler(func(e Event) {
		time.Sleep(5 * time.Millisecond) // slow: events queue up behind it
		log.add(e)
	}))
	l, err := c.Lock(uniqueName(t))
	must(t, err)
	for i := 0; i < 10; i++ {
		must(t, l.Lock(bg))
		must(t, l.Unlock())
	}
	must(t, l.Close())
	must(t, c.Close())
	if n := len(log.snapshot()); n != 20 {
		t.Fatalf("%d events delivered by Close, want 20", n)
	}
	wantCode(t, c.SetEventHandler(log.add), CodeClosed, ErrClosed)
}

// Handlers replaced and cleared while events flow: a handler replaced gets nothing after
// SetEventHandler returns, and Close with a handler set leaves nothing behind (run with -race).
func TestEventHandlerReplacedWhileEventsFlow(t *testing.T) {
	c, err := NewClient(redis.URL)
	must(t, err)
	l, err := c.Lock(uniqueName(t))
	must(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			if l.Lock(bg) != nil || l.Unlock() != nil {
				return
			}
		}
	}()
	var calls atomic.Int64
	for i := 0; i < 50; i++ {
		var retired atomic.Bool
		must(t, c.SetEventHandler(func(Event) {
			if retired.Load() {
				t.Error("a replaced handler was called after SetEventHandler returned")
			}
			calls.Add(1)
		}))
		time.Sleep(time.Millisecond)
		if i%2 == 0 {
			must(t, c.SetEventHandler(nil))
		} else {
			must(t, c.SetEventHandler(func(Event) { calls.Add(1) }))
		}
		retired.Store(true)
	}
	<-done
	must(t, c.SetEventHandler(func(Event) { calls.Add(1) }))
	must(t, l.Close())
	must(t, c.Close())
	if calls.Load() == 0 {
		t.Fatal("no handler got any event")
	}
}
