package rlockgocron_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	rlock "github.com/rlock/rlock/bindings/go"
	rlockgocron "github.com/rlock/rlock/bindings/go/gocron"
	"github.com/rlock/rlock/bindings/go/internal/redistest"
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

func newClient(t *testing.T, opts ...rlock.Option) *rlock.Client {
	t.Helper()
	c, err := rlock.NewClient(redis.URL, opts...)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// uniqueName keeps tests apart on a server other tests may share.
func uniqueName(t *testing.T) string {
	b := make([]byte, 6)
	rand.Read(b)
	return strings.ReplaceAll(t.Name(), "/", ":") + ":" + hex.EncodeToString(b)
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newScheduler(t *testing.T, opts ...gocron.SchedulerOption) gocron.Scheduler {
	t.Helper()
	s, err := gocron.NewScheduler(opts...)
	must(t, err)
	t.Cleanup(func() { s.Shutdown() })
	return s
}

const interval = 200 * time.Millisecond

// runLog records the job's runs: which scheduler ran it, and when.
type runLog struct {
	mu   sync.Mutex
	runs []run
}

type run struct {
	scheduler int
	at        time.Time
}

func (r *runLog) add(scheduler int) {
	r.mu.Lock()
	r.runs = append(r.runs, run{scheduler, time.Now()})
	r.mu.Unlock()
}

func (r run) String() string { return fmt.Sprintf("s%d@%s", r.scheduler, r.at.Format("05.000")) }

func (r *runLog) snapshot() []run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]run(nil), r.runs...)
}

// ticksOnce runs three schedulers over locker(i) with one job every interval, all started
// at the same instant, for about 2 s, and returns the runs per tick.
func ticksOnce(t *testing.T, locker func(i int) gocron.Locker) (map[int][]int, int) {
	name := uniqueName(t)
	start := time.Now().Add(300 * time.Millisecond)
	var log runLog
	var scheds []gocron.Scheduler
	for i := range 3 {
		s := newScheduler(t, gocron.WithDistributedLocker(locker(i)))
		_, err := s.NewJob(gocron.DurationJob(interval), gocron.NewTask(func() { log.add(i) }),
			gocron.WithName(name), gocron.WithStartAt(gocron.WithStartDateTime(start)))
		must(t, err)
		scheds = append(scheds, s)
	}
	for _, s := range scheds {
		s.Start()
	}
	const ticks = 10
	time.Sleep(time.Until(start.Add(ticks*interval - interval/2)))
	for _, s := range scheds {
		must(t, s.Shutdown())
	}
	perTick := map[int][]int{}
	for _, r := range log.snapshot() {
		tick := int((r.at.Sub(start) + interval/2) / interval) // nearest scheduled tick
		perTick[tick] = append(perTick[tick], r.scheduler)
	}
	return perTick, ticks
}

// Three schedulers, one Locker each: every tick runs at most once, and ticks do run.
func TestLockerRunsEachTickOnce(t *testing.T) {
	perTick, ticks := ticksOnce(t, func(int) gocron.Locker {
		l, err := rlockgocron.NewLocker(newClient(t), rlockgocron.WithMinHold(150*time.Millisecond))
		must(t, err)
		return l
	})
	for tick, by := range perTick {
		if len(by) > 1 {
			t.Errorf("tick %d ran %d times, by schedulers %v", tick, len(by), by)
		}
	}
	if len(perTick) < ticks/2 {
		t.Errorf("only %d of about %d ticks ran: %v", len(perTick), ticks, perTick)
	}
}

// The check above can fail: a locker that always grants lets every scheduler run every tick.
type grantAll struct{}

func (grantAll) Lock(context.Context, string) (gocron.Lock, error) { return grantAll{}, nil }
func (grantAll) Unlock(context.Context) error                      { return nil }

func TestTickCheckCatchesAnAlwaysGrantingLocker(t *testing.T) {
	perTick, _ := ticksOnce(t, func(int) gocron.Locker { return grantAll{} })
	twice := 0
	for _, by := range perTick {
		if len(by) > 1 {
			twice++
		}
	}
	if twice == 0 {
		t.Fatalf("no tick ran twice without a real lock: %v", perTick)
	}
}

// Unlock before the min hold leaves the lock held for what is left of it; after it, releases.
func TestLockerMinHold(t *testing.T) {
	c := newClient(t)
	job := uniqueName(t)
	lk, err := rlockgocron.NewLocker(c, rlockgocron.WithMinHold(time.Second))
	must(t, err)
	l, err := lk.Lock(bg, job)
	must(t, err)
	if _, err := lk.Lock(bg, job); !errors.Is(err, rlockgocron.ErrNotObtained) {
		t.Fatalf("second Lock while held: want ErrNotObtained, got %v", err)
	}
	must(t, l.Unlock(bg))
	key := rlockgocron.DefaultKeyPrefix + job
	pttl, err := redis.PTTL(key)
	must(t, err)
	if pttl <= 0 || pttl > 1000 {
		t.Fatalf("after an early Unlock the key %s should expire within the min hold, PTTL %d", key, pttl)
	}
	if _, err := lk.Lock(bg, job); !errors.Is(err, rlockgocron.ErrNotObtained) {
		t.Fatalf("Lock within the min hold: want ErrNotObtained, got %v", err)
	}
	waitFor(t, "the lock to expire after the min hold", 5*time.Second, func() bool {
		l, err := lk.Lock(bg, job)
		if err == nil {
			must(t, l.Unlock(bg))
		}
		return err == nil
	})

	// With no min hold, Unlock releases at once.
	now, err := rlockgocron.NewLocker(c, rlockgocron.WithMinHold(0))
	must(t, err)
	l, err = now.Lock(bg, job+":now")
	must(t, err)
	must(t, l.Unlock(bg))
	l, err = now.Lock(bg, job+":now")
	must(t, err)
	must(t, l.Unlock(bg))
}

// WithMaxHold: the lock of a job that never unlocks (a crashed scheduler) expires by itself.
func TestLockerMaxHold(t *testing.T) {
	c := newClient(t)
	job := uniqueName(t)
	lk, err := rlockgocron.NewLocker(c, rlockgocron.WithMinHold(0), rlockgocron.WithMaxHold(300*time.Millisecond))
	must(t, err)
	_, err = lk.Lock(bg, job)
	must(t, err)
	if _, err := lk.Lock(bg, job); !errors.Is(err, rlockgocron.ErrNotObtained) {
		t.Fatalf("second Lock while held: want ErrNotObtained, got %v", err)
	}
	waitFor(t, "the abandoned lock to expire", 5*time.Second, func() bool {
		_, err := lk.Lock(bg, job)
		return err == nil
	})
}

func TestOptionErrors(t *testing.T) {
	c := newClient(t)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{second(rlockgocron.NewLocker(nil)), "nil client"},
		{second(rlockgocron.NewLocker(c, rlockgocron.WithMinHold(-1))), "WithMinHold: must not be negative"},
		{second(rlockgocron.NewLocker(c, rlockgocron.WithMaxHold(-1))), "WithMaxHold: must not be negative"},
		{second(rlockgocron.NewLocker(c, rlockgocron.WithMinHold(2*time.Second), rlockgocron.WithMaxHold(time.Second))), "exceeds the max hold"},
		{second(rlockgocron.NewElector(c, "")), "empty election name"},
		{second(rlockgocron.NewElector(nil, "x")), "nil client"},
		{second(rlockgocron.NewElector(c, "x", rlockgocron.WithMinHold(time.Second))), "WithMinHold applies to the Locker only"},
		{second(rlockgocron.NewElector(c, "x", rlockgocron.WithRetry(0))), "WithRetry: must be positive"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("want an error containing %q, got %v", tc.want, tc.err)
		}
	}
	lk, err := rlockgocron.NewLocker(c)
	must(t, err)
	if _, err := lk.Lock(bg, ""); err == nil || !strings.Contains(err.Error(), "empty job name") {
		t.Errorf("Lock of an empty job name: want an error naming it, got %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// Three schedulers, one Elector each: only the leader's job runs; when the leader stops,
// another takes over and the old one runs no more.
func TestElectorFailover(t *testing.T) {
	name := uniqueName(t)
	var log runLog
	scheds := make([]gocron.Scheduler, 3)
	electors := make([]*rlockgocron.Elector, 3)
	for i := range 3 {
		e, err := rlockgocron.NewElector(newClient(t), name)
		must(t, err)
		t.Cleanup(func() { e.Close() })
		electors[i] = e
		scheds[i] = newScheduler(t, gocron.WithDistributedElector(e))
		_, err = scheds[i].NewJob(gocron.DurationJob(interval), gocron.NewTask(func() { log.add(i) }))
		must(t, err)
		scheds[i].Start()
	}
	waitFor(t, "a first run", 5*time.Second, func() bool { return len(log.snapshot()) > 0 })
	time.Sleep(1500 * time.Millisecond)
	runs := log.snapshot()
	leader := runs[0].scheduler
	for _, r := range runs {
		if r.scheduler != leader {
			t.Fatalf("schedulers %d and %d both ran the job while one elector led: %v", leader, r.scheduler, runs)
		}
	}
	if len(runs) < 3 {
		t.Fatalf("the leader ran only %d times in 1.5 s", len(runs))
	}

	must(t, scheds[leader].Shutdown())
	must(t, electors[leader].Close())
	if err := electors[leader].IsLeader(bg); !errors.Is(err, rlockgocron.ErrClosed) {
		t.Fatalf("IsLeader after Close: want ErrClosed, got %v", err)
	}
	stopped := time.Now()
	newLeader := -1
	waitFor(t, "another scheduler to take over", 5*time.Second, func() bool {
		for _, r := range log.snapshot() {
			if r.at.After(stopped) {
				newLeader = r.scheduler
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second)
	for _, r := range log.snapshot() {
		if r.at.After(stopped) && r.scheduler != newLeader {
			t.Fatalf("after the failover schedulers %d and %d both ran the job (old leader %d)", newLeader, r.scheduler, leader)
		}
	}
}

// When rlock finds the leader's hold lost, IsLeader fails, and the campaign takes it back
// once it is free.
func TestElectorLoss(t *testing.T) {
	name := uniqueName(t)
	key := rlockgocron.DefaultKeyPrefix + name
	c := newClient(t, rlock.WithWatchdogLease(time.Second))
	e, err := rlockgocron.NewElector(c, name, rlockgocron.WithRetry(50*time.Millisecond))
	must(t, err)
	t.Cleanup(func() { e.Close() })
	waitFor(t, "leadership", 5*time.Second, func() bool { return e.IsLeader(bg) == nil })

	// Another owner takes the key from under the leader.
	_, err = redis.Do("DEL", key)
	must(t, err)
	other, err := newClient(t).Lock(key)
	must(t, err)
	defer other.Close()
	ok, err := other.TryLock(bg, 0, 0)
	must(t, err)
	if !ok {
		t.Fatal("the usurper could not take the deleted key")
	}
	waitFor(t, "IsLeader to fail after the loss", 5*time.Second, func() bool {
		return errors.Is(e.IsLeader(bg), rlockgocron.ErrNotLeader)
	})
	must(t, other.Unlock())
	waitFor(t, "leadership again", 5*time.Second, func() bool { return e.IsLeader(bg) == nil })
}
