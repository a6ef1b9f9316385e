// Package rlockotel exports the statistics of rlock clients (rlock.Client.Stats) as
// OpenTelemetry metrics. It is a module of its own so that the rlock package itself depends on
// the standard library only.
//
//	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
//	reg, err := rlockotel.Register(client, provider,
//		rlockotel.WithAttributes(attribute.String("rlock.client", "orders")))
//	if err != nil {
//		return err
//	}
//	defer reg.Unregister()
//
// The instruments and their attributes are the ones every rlock binding uses (docs/metrics.md):
// rlock.acquires (rlock.outcome = granted, timed_out, canceled, failed; with failed also
// error.type = the status code's name without RLOCK_, one series per code seen),
// rlock.releases (released, failed), rlock.locks.lost (rlock.lost.reason = gone, unreachable,
// expired), rlock.renewals (renewed, failed), rlock.reconnects, rlock.failovers,
// rlock.cluster.redirects, rlock.scripts and rlock.events.dropped as observable counters;
// rlock.holds and rlock.waiters as observable up-down counters; rlock.acquire.wait.duration,
// rlock.hold.duration, rlock.handoff.duration and rlock.command.duration as histograms in
// seconds. Lock names are never attributes: they are unbounded (events carry them, see
// rlock.Client.SetEventHandler). A client made with statistics off exports nothing.
//
// # Histograms
//
// The client keeps its histograms itself, in fixed buckets (rlock.HistogramBounds), and
// OpenTelemetry Go has no observable histogram to hand them over as they are. So each
// histogram is a synchronous Float64Histogram advised to use the client's bucket bounds (in
// seconds), and at each collection, before the collection reads it, the samples the client
// counted since the previous collection are recorded into it again: as many values as each
// bucket gained, each inside its bucket, spread within the buckets so that their total is the
// client's sum. With the advised bounds (the SDK's default unless a View changes them), the
// exported count, sum and bucket counts are the client's, exactly; only the individual values
// are reconstructed, which no histogram exports anyway. The cost is one Record per sample,
// paid by the collection (tens of nanoseconds each; a client making 10,000 commands a second,
// collected every minute, replays 600,000 command samples: some tens of milliseconds).
// WithHistograms(false) leaves them out.
package rlockotel

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"

	rlock "github.com/rlock/rlock/bindings/go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the meters this package makes.
const ScopeName = "github.com/rlock/rlock/bindings/go/otel"

// Option configures Register.
type Option func(*config)

type config struct {
	attrs      []attribute.KeyValue
	histograms bool
}

// WithAttributes adds attributes to every series of the client, such as
// attribute.String("rlock.client", "orders") to tell several clients apart. Default none.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) { c.attrs = append(c.attrs, attrs...) }
}

// WithHistograms exports the four histograms (the default) or not (see the package doc for
// their cost).
func WithHistograms(enabled bool) Option {
	return func(c *config) { c.histograms = enabled }
}

// Registration is one client's instruments; Unregister stops reporting them.
type Registration struct {
	reg metric.Registration
}

// Unregister stops reporting the client: its counters and gauges are no longer observed and
// its histograms get no more samples. Idempotent.
func (r *Registration) Unregister() error {
	return r.reg.Unregister()
}

// Register reports client's statistics through a meter of provider (nil: the global
// provider, otel.GetMeterProvider). Register one client once per provider; several clients
// are told apart with WithAttributes. After the client is closed, nothing is reported.
func Register(client *rlock.Client, provider metric.MeterProvider, opts ...Option) (*Registration, error) {
	if client == nil {
		return nil, errors.New("rlockotel.Register: nil client")
	}
	cfg := config{histograms: true}
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if provider == nil {
		provider = otel.GetMeterProvider()
	}
	meter := provider.Meter(ScopeName, metric.WithInstrumentationVersion(rlock.Version()))
	e := &exporter{client: client, base: cfg.attrs}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		inst, err := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return inst
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		inst, err := meter.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return inst
	}
	e.acquires = counter("rlock.acquires", "{acquire}", "Lock acquires ended, by outcome")
	e.releases = counter("rlock.releases", "{release}", "Lock release calls, by outcome")
	e.lost = counter("rlock.locks.lost", "{lock}", "Holds lost, by reason")
	e.renewals = counter("rlock.renewals", "{renewal}", "Watchdog renewals of holds, by outcome")
	e.reconnects = counter("rlock.reconnects", "{reconnect}", "Connections opened again")
	e.failovers = counter("rlock.failovers", "{failover}", "Sentinel master changes followed")
	e.redirects = counter("rlock.cluster.redirects", "{redirect}", "Cluster MOVED and ASK answers followed")
	e.scripts = counter("rlock.scripts", "{script}", "EVALSHA and EVAL commands sent")
	e.dropped = counter("rlock.events.dropped", "{event}", "Events dropped because the queue was full")
	e.holds = gauge("rlock.holds", "{hold}", "Holds the client keeps now")
	e.waiters = gauge("rlock.waiters", "{waiter}", "Acquires waiting for a lock now")
	e.won = counter("rlock.elections.won", "{election}", "Times an election of the client became leader")
	e.revoked = counter("rlock.leaderships.revoked", "{leadership}", "Leaderships that ended, by reason")
	e.leaders = gauge("rlock.leaders", "{election}", "Elections leading now")
	observables := []metric.Observable{e.acquires, e.releases, e.lost, e.renewals, e.reconnects,
		e.failovers, e.redirects, e.scripts, e.dropped, e.holds, e.waiters, e.won, e.revoked, e.leaders}
	if cfg.histograms {
		bounds := rlock.HistogramBounds()
		seconds := make([]float64, len(bounds))
		for i, b := range bounds {
			seconds[i] = b.Seconds()
		}
		histogram := func(name, desc string) *replayed {
			inst, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
				metric.WithExplicitBucketBoundaries(seconds...))
			errs = append(errs, err)
			return &replayed{inst: inst, bounds: seconds}
		}
		e.histograms = []*replayed{
			histogram("rlock.acquire.wait.duration", "Wait of granted acquires, from the call to the grant"),
			histogram("rlock.hold.duration", "Holds, from the first acquire to the last release"),
			histogram("rlock.handoff.duration", "Acquires woken by an unlock message: from its arrival to the grant"),
			histogram("rlock.command.duration", "Redis commands, from the send to the reply"),
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	e.makeSets()
	reg, err := meter.RegisterCallback(e.observe, observables...)
	if err != nil {
		return nil, err
	}
	return &Registration{reg: reg}, nil
}

// revokeReasonNames are the rlock.revoke.reason values, indexed by rlock_revoke_reason (3,
// expired, is the C library's, which no Go RevokeReason names yet).
var revokeReasonNames = [...]string{1: "gone", 2: "unreachable", 3: "expired", 4: "resigned", 5: "closed", 6: "failed"}

type exporter struct {
	client *rlock.Client
	base   []attribute.KeyValue

	acquires, releases, lost, renewals, reconnects, failovers, redirects, scripts, dropped metric.Int64ObservableCounter
	won, revoked                                                                           metric.Int64ObservableCounter
	holds, waiters, leaders                                                                metric.Int64ObservableUpDownCounter
	histograms                                                                             []*replayed // acquire wait, hold, handoff, command; nil when left out

	// Attribute sets made once: the callback only picks them.
	plain                       metric.MeasurementOption
	granted, timedOut, canceled metric.MeasurementOption
	released, releaseFailed     metric.MeasurementOption
	gone, unreachable, expired  metric.MeasurementOption
	renewed, renewFailed        metric.MeasurementOption
	revokedBy                   [len(revokeReasonNames)]metric.MeasurementOption
	failedByCode                map[rlock.Code]metric.MeasurementOption
	failedMu                    sync.Mutex
	record                      metric.RecordOption
	replayMu                    sync.Mutex // callbacks of several readers may run at once
}

func (e *exporter) with(kv ...attribute.KeyValue) attribute.Set {
	return attribute.NewSet(append(append([]attribute.KeyValue(nil), e.base...), kv...)...)
}

func (e *exporter) makeSets() {
	opt := func(kv ...attribute.KeyValue) metric.MeasurementOption { return metric.WithAttributeSet(e.with(kv...)) }
	outcome := func(v string) metric.MeasurementOption { return opt(attribute.String("rlock.outcome", v)) }
	reason := func(v string) metric.MeasurementOption { return opt(attribute.String("rlock.lost.reason", v)) }
	e.plain = opt()
	e.granted, e.timedOut, e.canceled = outcome("granted"), outcome("timed_out"), outcome("canceled")
	e.released, e.releaseFailed = outcome("released"), outcome("failed")
	e.gone, e.unreachable, e.expired = reason("gone"), reason("unreachable"), reason("expired")
	e.renewed, e.renewFailed = outcome("renewed"), outcome("failed")
	for i, name := range revokeReasonNames {
		if name != "" {
			e.revokedBy[i] = opt(attribute.String("rlock.revoke.reason", name))
		}
	}
	e.failedByCode = map[rlock.Code]metric.MeasurementOption{}
	e.record = metric.WithAttributeSet(e.with())
}

// failedOption is the attribute set of failed acquires with a code, made on first sight.
func (e *exporter) failedOption(code rlock.Code) metric.MeasurementOption {
	e.failedMu.Lock()
	defer e.failedMu.Unlock()
	opt, ok := e.failedByCode[code]
	if !ok {
		opt = metric.WithAttributeSet(e.with(attribute.String("rlock.outcome", "failed"),
			attribute.String("error.type", strings.TrimPrefix(code.String(), "RLOCK_"))))
		e.failedByCode[code] = opt
	}
	return opt
}

func (e *exporter) observe(ctx context.Context, o metric.Observer) error {
	s, err := e.client.Stats()
	if err != nil || !s.Enabled {
		return nil // closed, or made with statistics off: nothing to report
	}
	count := func(inst metric.Int64Observable, v uint64, opt metric.MeasurementOption) {
		o.ObserveInt64(inst, int64(min(v, math.MaxInt64)), opt)
	}
	count(e.acquires, s.AcquiresGranted, e.granted)
	count(e.acquires, s.AcquiresTimedOut, e.timedOut)
	count(e.acquires, s.AcquiresCanceled, e.canceled)
	for code, n := range s.AcquiresFailedByCode {
		count(e.acquires, n, e.failedOption(code))
	}
	count(e.releases, s.Releases, e.released)
	count(e.releases, s.ReleasesFailed, e.releaseFailed)
	count(e.lost, s.LocksLostGone, e.gone)
	count(e.lost, s.LocksLostUnreachable, e.unreachable)
	count(e.lost, s.LocksLostExpired, e.expired)
	count(e.renewals, s.RenewalsSent-min(s.RenewalsFailed, s.RenewalsSent), e.renewed)
	count(e.renewals, s.RenewalsFailed, e.renewFailed)
	count(e.reconnects, s.Reconnects, e.plain)
	count(e.failovers, s.Failovers, e.plain)
	count(e.redirects, s.ClusterRedirects, e.plain)
	count(e.scripts, s.ScriptsSent, e.plain)
	count(e.dropped, s.EventsDropped, e.plain)
	o.ObserveInt64(e.holds, s.Holds, e.plain)
	o.ObserveInt64(e.waiters, s.Waiters, e.plain)
	count(e.won, s.ElectionsWon, e.plain)
	// Every reason, seen or not, so that a rate over any of them starts from 0.
	for i, name := range revokeReasonNames {
		if name != "" {
			count(e.revoked, s.LeadershipsRevokedByReason[rlock.RevokeReason(i)], e.revokedBy[i])
		}
	}
	o.ObserveInt64(e.leaders, s.Leaders, e.plain)
	if e.histograms != nil {
		e.replayMu.Lock()
		defer e.replayMu.Unlock()
		for i, h := range []rlock.Histogram{s.AcquireWait, s.Hold, s.Handoff, s.CommandRTT} {
			e.histograms[i].replay(ctx, h, e.record)
		}
	}
	return nil
}

// replayed is one histogram and what has been recorded into it so far.
type replayed struct {
	inst     metric.Float64Histogram
	bounds   []float64 // seconds
	counts   []uint64  // per bucket, recorded so far
	recorded float64   // sum of the values recorded so far, seconds
}

// replay records the samples h gained since the last call: d[i] values inside bucket i, all
// at the same fraction of their buckets, chosen so that their total brings the recorded sum to
// h.Sum. Samples above the last bound share what the others leave. A snapshot read while
// samples are added may be a sample apart between sum and buckets; the target is h.Sum minus
// what was recorded, so the next collection makes up for it.
func (r *replayed) replay(ctx context.Context, h rlock.Histogram, opt metric.RecordOption) {
	if r.counts == nil {
		r.counts = make([]uint64, len(h.Counts))
	}
	last := len(h.Counts) - 1
	delta := make([]uint64, len(h.Counts))
	var any bool
	var low, high float64 // the least and the most the finite buckets' samples can add up to
	for i, n := range h.Counts {
		if n > r.counts[i] {
			delta[i] = n - r.counts[i]
			any = true
		}
		if i < last {
			low += float64(delta[i]) * r.lower(i)
			high += float64(delta[i]) * r.bounds[i]
		}
	}
	if !any {
		return
	}
	target := h.Sum.Seconds() - r.recorded
	top := r.bounds[last-1]
	over := float64(delta[last])
	finiteTarget := target - over*top // leave each sample above the last bound at least that
	fraction := 1.0
	if high > low {
		fraction = (finiteTarget - low) / (high - low)
	}
	// Strictly above the lower bound (it belongs to the bucket below) and at most the upper.
	fraction = max(min(fraction, 1), 1e-6)
	var finiteSum float64
	for i := 0; i < last; i++ {
		if delta[i] == 0 {
			continue
		}
		v := r.lower(i) + fraction*(r.bounds[i]-r.lower(i))
		for range delta[i] {
			r.inst.Record(ctx, v, opt)
		}
		finiteSum += float64(delta[i]) * v
	}
	if delta[last] > 0 {
		v := max((target-finiteSum)/over, math.Nextafter(top, math.Inf(1)))
		for range delta[last] {
			r.inst.Record(ctx, v, opt)
		}
		finiteSum += over * v
	}
	r.recorded += finiteSum
	for i := range delta {
		r.counts[i] += delta[i]
	}
}

func (r *replayed) lower(i int) float64 {
	if i == 0 {
		return 0
	}
	return r.bounds[i-1]
}
