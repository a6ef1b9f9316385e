package main

// The many-waiters scenario: --waiters goroutines wait on --locks locks that the main
// goroutine holds (see bench/README.md). Each goroutine is its own owner: a locker of its own.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"
)

// procStatus reads one numeric field (Threads, VmRSS in KiB) of /proc/self/status.
func procStatus(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// commandCalls is INFO commandstats as command name -> calls.
func commandCalls(ctx context.Context, admin *redis.Client) (map[string]int64, error) {
	text, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	calls := map[string]int64{}
	for _, line := range strings.Split(text, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, field := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				calls[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return calls, nil
}

var (
	scriptCommands = map[string]bool{"eval": true, "evalsha": true, "eval_ro": true,
		"evalsha_ro": true, "fcall": true, "fcall_ro": true}
	clientCommands = map[string]bool{"subscribe": true, "unsubscribe": true, "psubscribe": true,
		"punsubscribe": true, "ssubscribe": true, "sunsubscribe": true, "ping": true, "hello": true,
		"auth": true, "select": true, "echo": true, "multi": true, "exec": true, "discard": true,
		"quit": true, "readonly": true, "reset": true, "script": true, "client": true, "command": true}
)

// traffic is what clients sent between two commandstats: scripts and client-level commands,
// not the harness's INFO. Data commands count only when no script ran (a lock that waits with
// SET NX sends them itself; a script's are run inside it).
type traffic struct {
	requests, scripts int64
	byCommand         map[string]int64
}

func trafficOf(before, after map[string]int64) traffic {
	t := traffic{byCommand: map[string]int64{}}
	data := map[string]int64{}
	for name, calls := range after {
		delta := calls - before[name]
		base, _, _ := strings.Cut(name, "|")
		switch {
		case delta == 0 || base == "info" || base == "config":
		case scriptCommands[base]:
			t.scripts += delta
			t.requests += delta
			t.byCommand[name] += delta
		case clientCommands[base]:
			t.requests += delta
			t.byCommand[name] += delta
		default:
			data[name] += delta
		}
	}
	if t.scripts == 0 {
		for name, delta := range data {
			t.requests += delta
			t.byCommand[name] += delta
		}
	}
	return t
}

// attempts is the requests less subscriptions and pings.
func (t traffic) attempts() int64 {
	n := t.requests
	for name, calls := range t.byCommand {
		if strings.Contains(name, "subscribe") || name == "ping" {
			n -= calls
		}
	}
	return n
}

// settle waits until Redis has seen an attempt per waiter since before, or the attempts stay
// at an idle rate for two seconds in a row (fewer than 2 per lock plus 1% of the waiters each
// second), at most a minute, then 200 ms more. It returns the attempts seen.
func settle(ctx context.Context, admin *redis.Client, before map[string]int64, waiters, locks int) (int64, error) {
	idle := int64(2*locks + waiters/100)
	giveUp := time.Now().Add(time.Minute)
	var seen, secondAgo int64
	quietSeconds := 0
	mark := time.Now()
	for time.Now().Before(giveUp) {
		now, err := commandCalls(ctx, admin)
		if err != nil {
			return 0, err
		}
		if seen = trafficOf(before, now).attempts(); seen >= int64(waiters) {
			break
		}
		if time.Since(mark) >= time.Second {
			if seen-secondAgo < idle {
				quietSeconds++
			} else {
				quietSeconds = 0
			}
			if quietSeconds == 2 {
				break
			}
			secondAgo, mark = seen, time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	return seen, nil
}

// waitLocker is one owner of one lock for the many-waiters scenario.
type waitLocker interface {
	lock(ctx context.Context) error
	unlock() error
}

type waitContender interface {
	// holder is the main goroutine's locker of a name, waiter a waiting goroutine's.
	holder(name string) (waitLocker, error)
	waiter(name string) (waitLocker, error)
}

type rlockWait struct{ c *rlockContender }

func (w rlockWait) holder(name string) (waitLocker, error) { return w.waiter(name) }

func (w rlockWait) waiter(name string) (waitLocker, error) {
	l, err := w.c.client.Lock(name)
	if err != nil {
		return nil, err
	}
	return rlockWaitLocker{l.Lock, l.Unlock}, nil
}

type rlockWaitLocker struct {
	lockFn   func(context.Context) error
	unlockFn func() error
}

func (l rlockWaitLocker) lock(ctx context.Context) error { return l.lockFn(ctx) }
func (l rlockWaitLocker) unlock() error                  { return l.unlockFn() }

// redsync: the waiters retry until they get the lock (the default 32 tries would give up
// while it is held); the holder's expiry outlasts the run.
type redsyncWait struct{ c *redsyncContender }

func (w redsyncWait) holder(name string) (waitLocker, error) {
	return redsyncWaitLocker{w.c.rs.NewMutex(name, redsync.WithExpiry(10*time.Minute))}, nil
}

func (w redsyncWait) waiter(name string) (waitLocker, error) {
	return redsyncWaitLocker{w.c.rs.NewMutex(name, redsync.WithTries(math.MaxInt32))}, nil
}

type redsyncWaitLocker struct{ m *redsync.Mutex }

func (l redsyncWaitLocker) lock(ctx context.Context) error { return l.m.LockContext(ctx) }
func (l redsyncWaitLocker) unlock() error                  { return redsyncLocker{l.m}.unlock() }

type waitFigures struct {
	threadsBefore, threadsWaiting, rssBefore, rssWaiting, firstAttempts int64
	settle, window, drain                                               time.Duration
	held                                                                traffic
}

// manyWaiters runs the scenario and returns its four result lines.
func manyWaiters(ctx context.Context, admin *redis.Client, wc waitContender, o options) ([]result, []string, error) {
	names := lockNames("mw", o.contender, o.locks)
	holders := make([]waitLocker, o.locks)
	for i, name := range names {
		h, err := wc.holder(name)
		if err != nil {
			return nil, names, err
		}
		if err := h.lock(ctx); err != nil {
			return nil, names, fmt.Errorf("holder lock: %w", err)
		}
		holders[i] = h
	}
	waiters := make([]waitLocker, o.waiters)
	for i := range waiters {
		w, err := wc.waiter(names[i%o.locks])
		if err != nil {
			return nil, names, err
		}
		waiters[i] = w
	}
	f, err := waitOnHeld(ctx, admin, o, holders, waiters)
	if err != nil {
		return nil, names, err
	}
	return waitResults(o, f), names, nil
}

func waitOnHeld(ctx context.Context, admin *redis.Client, o options, holders, waiters []waitLocker) (waitFigures, error) {
	var f waitFigures
	var err error
	if f.threadsBefore, err = procStatus("Threads"); err != nil {
		return f, err
	}
	if f.rssBefore, err = procStatus("VmRSS"); err != nil {
		return f, err
	}
	start, err := commandCalls(ctx, admin)
	if err != nil {
		return f, err
	}
	t0 := time.Now()
	var (
		wg       sync.WaitGroup
		acquired atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	for _, w := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.lock(ctx)
			if err == nil {
				acquired.Add(1)
				err = w.unlock()
			}
			if err != nil {
				errOnce.Do(func() { firstErr = err })
			}
		}()
	}
	if f.firstAttempts, err = settle(ctx, admin, start, o.waiters, o.locks); err != nil {
		return f, err
	}
	f.settle = time.Since(t0)
	if err := measureHeld(ctx, admin, o, &f); err != nil {
		return f, err
	}
	if n := acquired.Load(); n != 0 {
		return f, fmt.Errorf("%d waiter(s) acquired while the locks were held", n)
	}
	release := time.Now()
	for _, h := range holders {
		if err := h.unlock(); err != nil {
			return f, fmt.Errorf("holder unlock: %w", err)
		}
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(2 * time.Minute):
		return f, errors.New("the waiters did not drain within two minutes")
	}
	f.drain = time.Since(release)
	if firstErr != nil {
		return f, firstErr
	}
	if n := acquired.Load(); n != int64(len(waiters)) {
		return f, fmt.Errorf("%d of %d waiters acquired", n, len(waiters))
	}
	return f, nil
}

// measureHeld records threads, RSS and requests over the window while the locks are held.
func measureHeld(ctx context.Context, admin *redis.Client, o options, f *waitFigures) error {
	before, err := commandCalls(ctx, admin)
	if err != nil {
		return err
	}
	t0 := time.Now()
	threads0, _ := procStatus("Threads")
	time.Sleep(time.Duration(o.seconds * float64(time.Second)))
	threads1, err := procStatus("Threads")
	if err != nil {
		return err
	}
	f.threadsWaiting = max(threads0, threads1)
	if f.rssWaiting, err = procStatus("VmRSS"); err != nil {
		return err
	}
	after, err := commandCalls(ctx, admin)
	if err != nil {
		return err
	}
	f.window = time.Since(t0)
	f.held = trafficOf(before, after)
	return nil
}

func waitResults(o options, f waitFigures) []result {
	window := f.window.Seconds()
	byCommand := map[string]float64{}
	for name, calls := range f.held.byCommand {
		byCommand[name] = float64(calls) / window
	}
	extra := map[string]any{
		"waiters": o.waiters, "locks": o.locks, "goroutines": true,
		"threads_before": f.threadsBefore, "threads_waiting": f.threadsWaiting,
		"rss_before_kib": f.rssBefore, "rss_waiting_kib": f.rssWaiting,
		"first_attempts": f.firstAttempts, "settle_s": f.settle.Seconds(), "window_s": window,
		"requests": f.held.requests, "scripts_per_s": float64(f.held.scripts) / window,
		"requests_per_s_by_command": byCommand,
	}
	line := func(metric string, value float64, unit string) result {
		return result{Scenario: "many-waiters", Contender: o.contender, Metric: metric,
			Value: value, Unit: unit, Extra: extra}
	}
	return []result{
		line("threads_added", float64(f.threadsWaiting-f.threadsBefore), "threads"),
		line("kib_per_waiter", float64(f.rssWaiting-f.rssBefore)/float64(o.waiters), "KiB"),
		line("requests_per_s", float64(f.held.requests)/window, "requests/s"),
		line("drain_ms", f.drain.Seconds()*1e3, "ms"),
	}
}
