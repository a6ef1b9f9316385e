package rlockotel_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	rlock "github.com/rlock/rlock/bindings/go"
	"github.com/rlock/rlock/bindings/go/internal/redistest"
	rlockotel "github.com/rlock/rlock/bindings/go/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

var redis *redistest.Server

func TestMain(m *testing.M) {
	s, err := redistest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "no redis server for the tests:", err)
		os.Exit(1)
	}
	redis = s
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

var bg = context.Background()

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newClient(t *testing.T, url string, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.NewClient(url, opts...)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func newLock(t *testing.T, c *rlock.Client, name string) *rlock.Lock {
	t.Helper()
	l, err := c.Lock(name)
	must(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	must(t, reader.Collect(bg, &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != rlockotel.ScopeName {
			t.Fatalf("scope %q, want %q", sm.Scope.Name, rlockotel.ScopeName)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// series returns "k=v,k=v" (sorted, without rlock.client) -> value of an int64 sum.
func series(t *testing.T, m metricdata.Metrics, client string, monotonic bool) map[string]int64 {
	t.Helper()
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: %T, want an int64 sum", m.Name, m.Data)
	}
	if sum.IsMonotonic != monotonic || sum.Temporality != metricdata.CumulativeTemporality {
		t.Fatalf("%s: monotonic %v temporality %v", m.Name, sum.IsMonotonic, sum.Temporality)
	}
	out := map[string]int64{}
	for _, dp := range sum.DataPoints {
		if v, _ := dp.Attributes.Value("rlock.client"); v.AsString() != client {
			continue
		}
		var keys []string
		for _, kv := range dp.Attributes.ToSlice() {
			if kv.Key != "rlock.client" {
				keys = append(keys, string(kv.Key)+"="+kv.Value.Emit())
			}
		}
		out[strings.Join(keys, ",")] = dp.Value
	}
	return out
}

// stableStats collects while the client's figures do not move (a renewal may land between).
func stableStats(t *testing.T, c *rlock.Client, reader *sdkmetric.ManualReader) (rlock.Stats, map[string]metricdata.Metrics) {
	t.Helper()
	for range 20 {
		before, err := c.Stats()
		must(t, err)
		got := collect(t, reader)
		after, err := c.Stats()
		must(t, err)
		if reflect.DeepEqual(before, after) {
			return after, got
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the client's stats kept moving")
	return rlock.Stats{}, nil
}

func TestExportedMetricsEqualStats(t *testing.T) {
	c := newClient(t, redis.URL, rlock.WithWatchdogLease(600*time.Millisecond))
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(bg)
	reg, err := rlockotel.Register(c, provider, rlockotel.WithAttributes(attribute.String("rlock.client", "orders")))
	must(t, err)

	name := fmt.Sprintf("otel:%d", time.Now().UnixNano())
	l := newLock(t, c, name)
	other := newLock(t, c, name)
	workload := func(grants, timeouts int, hold time.Duration) {
		for range grants {
			must(t, l.Lock(bg))
			time.Sleep(hold)
			must(t, l.Unlock())
		}
		must(t, l.Lock(bg))
		for range timeouts {
			if ok, err := other.TryLock(bg, 0, 0); ok || err != nil {
				t.Fatalf("TryLock of a held lock: %v %v", ok, err)
			}
		}
		must(t, l.Unlock())
	}
	workload(4, 2, time.Millisecond)
	collect(t, reader) // a first collection: the second must replay only what came since
	workload(3, 1, 30*time.Millisecond)
	lost := newLock(t, c, name+":lost")
	must(t, lost.Lock(bg))
	if _, err := redis.Do("DEL", lost.Name()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !lost.Lost(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hold was not lost")
		}
	}

	s, got := stableStats(t, c, reader)
	if s.AcquiresGranted != 4+1+3+1+1 || s.AcquiresTimedOut != 3 || s.LocksLostGone != 1 {
		t.Fatalf("the workload's stats: %+v", s)
	}
	counters := map[string]map[string]int64{
		"rlock.acquires": {"rlock.outcome=granted": int64(s.AcquiresGranted),
			"rlock.outcome=timed_out": int64(s.AcquiresTimedOut), "rlock.outcome=canceled": 0},
		"rlock.releases": {"rlock.outcome=released": int64(s.Releases), "rlock.outcome=failed": 0},
		"rlock.locks.lost": {"rlock.lost.reason=gone": 1, "rlock.lost.reason=unreachable": 0,
			"rlock.lost.reason=expired": 0},
		"rlock.renewals": {"rlock.outcome=renewed": int64(s.RenewalsSent - s.RenewalsFailed),
			"rlock.outcome=failed": int64(s.RenewalsFailed)},
		"rlock.reconnects":        {"": int64(s.Reconnects)},
		"rlock.failovers":         {"": 0},
		"rlock.cluster.redirects": {"": 0},
		"rlock.scripts":           {"": int64(s.ScriptsSent)},
		"rlock.events.dropped":    {"": 0},
	}
	units := map[string]string{"rlock.acquires": "{acquire}", "rlock.releases": "{release}",
		"rlock.locks.lost": "{lock}", "rlock.renewals": "{renewal}", "rlock.reconnects": "{reconnect}",
		"rlock.failovers": "{failover}", "rlock.cluster.redirects": "{redirect}",
		"rlock.scripts": "{script}", "rlock.events.dropped": "{event}",
		"rlock.holds": "{hold}", "rlock.waiters": "{waiter}"}
	for name, want := range counters {
		m, ok := got[name]
		if !ok {
			t.Errorf("%s not exported", name)
			continue
		}
		if m.Unit != units[name] {
			t.Errorf("%s: unit %q, want %q", name, m.Unit, units[name])
		}
		if have := series(t, m, "orders", true); !reflect.DeepEqual(have, want) {
			t.Errorf("%s: %v, want %v", name, have, want)
		}
	}
	if s.ScriptsSent == 0 || s.RenewalsSent == 0 {
		t.Errorf("scripts %d renewals %d: the workload should have made both", s.ScriptsSent, s.RenewalsSent)
	}
	for name, v := range map[string]int64{"rlock.holds": s.Holds, "rlock.waiters": s.Waiters} {
		if have := series(t, got[name], "orders", false); !reflect.DeepEqual(have, map[string]int64{"": v}) || got[name].Unit != units[name] {
			t.Errorf("%s (%s): %v, want %d", name, got[name].Unit, have, v)
		}
	}

	bounds := rlock.HistogramBounds()
	for name, h := range map[string]rlock.Histogram{"rlock.acquire.wait.duration": s.AcquireWait,
		"rlock.hold.duration": s.Hold, "rlock.handoff.duration": s.Handoff,
		"rlock.command.duration": s.CommandRTT} {
		m, ok := got[name]
		if !ok {
			if h.Count == 0 {
				continue // nothing recorded yet: the SDK exports no point
			}
			t.Errorf("%s not exported", name)
			continue
		}
		hist, ok := m.Data.(metricdata.Histogram[float64])
		if !ok || m.Unit != "s" || len(hist.DataPoints) != 1 {
			t.Fatalf("%s: %T unit %q, want one float64 histogram point in s", name, m.Data, m.Unit)
		}
		dp := hist.DataPoints[0]
		if v, _ := dp.Attributes.Value("rlock.client"); v.AsString() != "orders" || dp.Attributes.Len() != 1 {
			t.Errorf("%s: attributes %v", name, dp.Attributes.ToSlice())
		}
		if len(dp.Bounds) != len(bounds) {
			t.Fatalf("%s: %d bounds, want %d", name, len(dp.Bounds), len(bounds))
		}
		for i, b := range bounds {
			if dp.Bounds[i] != b.Seconds() {
				t.Errorf("%s: bound %d = %v, want %v", name, i, dp.Bounds[i], b.Seconds())
			}
		}
		if dp.Count != h.Count || !reflect.DeepEqual(dp.BucketCounts, h.Counts) {
			t.Errorf("%s: count %d buckets %v, want %d %v", name, dp.Count, dp.BucketCounts, h.Count, h.Counts)
		}
		if want := h.Sum.Seconds(); math.Abs(dp.Sum-want) > 1e-9+1e-9*want {
			t.Errorf("%s: sum %v s, want %v s", name, dp.Sum, want)
		}
	}
	if s.Hold.Count == 0 || s.CommandRTT.Count == 0 || s.AcquireWait.Count == 0 {
		t.Errorf("histograms left empty by the workload: %+v", s)
	}

	// Unregistered: the observable instruments report nothing more.
	must(t, reg.Unregister())
	after := collect(t, reader)
	if _, ok := after["rlock.acquires"]; ok {
		t.Error("rlock.acquires still exported after Unregister")
	}
}

// Failed acquires get one series per code, with error.type the code's name without RLOCK_.
func TestFailedAcquiresByErrorType(t *testing.T) {
	private, err := redistest.StartPrivate()
	must(t, err)
	defer private.Stop()
	c := newClient(t, private.URL, rlock.WithConnectTimeout(300*time.Millisecond),
		rlock.WithCommandTimeout(500*time.Millisecond))
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(bg)
	_, err = rlockotel.Register(c, provider, rlockotel.WithAttributes(attribute.String("rlock.client", "broken")),
		rlockotel.WithHistograms(false))
	must(t, err)
	l := newLock(t, c, "otel:failing")
	private.Stop()
	if ok, err := l.TryLock(bg, 0, 0); ok || err == nil {
		t.Fatalf("TryLock with the server stopped: %v %v", ok, err)
	}
	got := collect(t, reader)
	have := series(t, got["rlock.acquires"], "broken", true)
	want := map[string]int64{"error.type=ECONN,rlock.outcome=failed": 1,
		"rlock.outcome=granted": 0, "rlock.outcome=timed_out": 0, "rlock.outcome=canceled": 0}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("rlock.acquires: %v, want %v", have, want)
	}
	for name := range got {
		if strings.HasSuffix(name, ".duration") {
			t.Errorf("%s exported WithHistograms(false)", name)
		}
	}
}

// A client made with statistics off exports nothing (rather than zeros that look measured).
func TestStatsOffExportsNothing(t *testing.T) {
	c := newClient(t, redis.URL, rlock.WithStats(false))
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(bg)
	_, err := rlockotel.Register(c, provider)
	must(t, err)
	l := newLock(t, c, fmt.Sprintf("otel:off:%d", time.Now().UnixNano()))
	must(t, l.Lock(bg))
	must(t, l.Unlock())
	if got := collect(t, reader); len(got) != 0 {
		t.Errorf("exported with statistics off: %v", got)
	}
}

// An election won and resigned: the election instruments follow it, and the client's events
// and Stats say the same.
func TestElectionMetricsFollowAWonAndResignedLeadership(t *testing.T) {
	c := newClient(t, redis.URL)
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(bg)
	_, err := rlockotel.Register(c, provider, rlockotel.WithAttributes(attribute.String("rlock.client", "el")))
	must(t, err)
	var mu sync.Mutex
	var events []rlock.Event
	must(t, c.SetEventHandler(func(ev rlock.Event) {
		if ev.Kind == rlock.EventElected || ev.Kind == rlock.EventRevoked {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}
	}))

	name := fmt.Sprintf("otel-election:%d", time.Now().UnixNano())
	e, err := c.NewElection(name)
	must(t, err)
	defer e.Close()
	term, err := e.Campaign(bg)
	must(t, err)
	revokedZero := map[string]int64{"rlock.revoke.reason=gone": 0, "rlock.revoke.reason=unreachable": 0,
		"rlock.revoke.reason=expired": 0, "rlock.revoke.reason=resigned": 0,
		"rlock.revoke.reason=closed": 0, "rlock.revoke.reason=failed": 0}
	check := func(won, leaders int64, revoked map[string]int64) {
		t.Helper()
		got := collect(t, reader)
		if have := series(t, got["rlock.elections.won"], "el", true); !reflect.DeepEqual(have, map[string]int64{"": won}) {
			t.Errorf("rlock.elections.won: %v, want %d", have, won)
		}
		if have := series(t, got["rlock.leaders"], "el", false); !reflect.DeepEqual(have, map[string]int64{"": leaders}) {
			t.Errorf("rlock.leaders: %v, want %d", have, leaders)
		}
		if have := series(t, got["rlock.leaderships.revoked"], "el", true); !reflect.DeepEqual(have, revoked) {
			t.Errorf("rlock.leaderships.revoked: %v, want %v", have, revoked)
		}
		for name, unit := range map[string]string{"rlock.elections.won": "{election}",
			"rlock.leaders": "{election}", "rlock.leaderships.revoked": "{leadership}"} {
			if got[name].Unit != unit {
				t.Errorf("%s: unit %q, want %q", name, got[name].Unit, unit)
			}
		}
	}
	check(1, 1, revokedZero)

	must(t, e.Resign())
	resigned := map[string]int64{}
	for k, v := range revokedZero {
		resigned[k] = v
	}
	resigned["rlock.revoke.reason=resigned"] = 1
	check(1, 0, resigned)
	s, err := c.Stats()
	must(t, err)
	if s.ElectionsWon != 1 || s.Leaders != 0 || s.LeadershipsRevoked != 1 ||
		!reflect.DeepEqual(s.LeadershipsRevokedByReason, map[rlock.RevokeReason]uint64{rlock.RevokedResigned: 1}) {
		t.Errorf("stats: won %d leaders %d revoked %d by reason %v", s.ElectionsWon, s.Leaders,
			s.LeadershipsRevoked, s.LeadershipsRevokedByReason)
	}

	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(events)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 {
		t.Fatalf("events %+v, want ELECTED then REVOKED", events)
	}
	el, rv := events[0], events[1]
	if el.Kind != rlock.EventElected || el.Name != name || el.Token != term || el.Owner == "" {
		t.Errorf("elected event %+v, want term %d", el, term)
	}
	if rv.Kind != rlock.EventRevoked || rv.Name != name || rv.Token != term ||
		rv.RevokeReason() != rlock.RevokedResigned || rv.Owner != el.Owner {
		t.Errorf("revoked event %+v, want term %d reason resigned", rv, term)
	}
}
