// Package rlockgocron makes rlock a gocron v2 (github.com/go-co-op/gocron/v2) Locker and
// Elector, so several schedulers running the same jobs run each tick once (Locker) or only
// the elected leader runs jobs (Elector). See docs/gocron.md.
package rlockgocron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	rlock "github.com/rlock/rlock/bindings/go"
)

// DefaultKeyPrefix is put before every job name (Locker) or election name (Elector) to make
// the Redis lock name.
const DefaultKeyPrefix = "gocron:"

// DefaultMinHold is the Locker's default minimum hold: fine for jobs every 200 ms or more
// whose schedulers fire within 100 ms of one another.
const DefaultMinHold = 100 * time.Millisecond

var (
	// ErrNotObtained is what Locker.Lock returns when another scheduler holds the job's lock
	// (gocron then skips this run).
	ErrNotObtained = errors.New("rlockgocron: job lock held by another scheduler")
	// ErrNotLeader is what Elector.IsLeader returns while this process is not the leader.
	ErrNotLeader = errors.New("rlockgocron: not the leader")
	// ErrClosed is what Elector.IsLeader returns after Close.
	ErrClosed = errors.New("rlockgocron: elector closed")
)

// Option configures NewLocker or NewElector.
type Option func(*config)

type config struct {
	prefix     string
	minHold    time.Duration
	maxHold    time.Duration
	retry      time.Duration
	lockerOnly []string // options given that only the Locker takes
	err        error
}

func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("rlockgocron: "+format, args...)
	}
}

// WithKeyPrefix sets the prefix of the lock names (default DefaultKeyPrefix; "" for none).
func WithKeyPrefix(prefix string) Option {
	return func(c *config) { c.prefix = prefix }
}

// WithMinHold sets how long (since Lock) a job's lock stays held at least, even when the job
// ends sooner (Locker only; default DefaultMinHold, 0 to release at once). Schedulers' timers
// for one tick fire a little apart; a lock released before the last of them fires lets that
// one run the tick again. Make it longer than that spread plus the clock skew between the
// hosts, and shorter than the job's interval (else the next tick is skipped too).
func WithMinHold(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.fail("WithMinHold: must not be negative, got %v", d)
		}
		c.minHold = d
		c.lockerOnly = append(c.lockerOnly, "WithMinHold")
	}
}

// WithMaxHold caps how long a job's lock is held (Locker only): the lock is taken with this
// lease and expires after it even if the job still runs (then another scheduler may start
// the same job). The default, 0, renews the lock with the client's watchdog while the job
// runs; a crashed scheduler's lock then expires after the client's watchdog lease
// (rlock.WithWatchdogLease, 30 s by default).
func WithMaxHold(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.fail("WithMaxHold: must not be negative, got %v", d)
		}
		c.maxHold = d
		c.lockerOnly = append(c.lockerOnly, "WithMaxHold")
	}
}

// WithRetry sets how long the Elector waits before campaigning again after an error from
// Redis (default 1 s).
func WithRetry(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("WithRetry: must be positive, got %v", d)
		}
		c.retry = d
	}
}

func newConfig(opts []Option) (*config, error) {
	c := &config{prefix: DefaultKeyPrefix, minHold: DefaultMinHold, retry: time.Second}
	for _, o := range opts {
		o(c)
	}
	return c, c.err
}

// Locker is a gocron.Locker over rlock: each run of a job takes the lock
// "<prefix><job name>" without waiting; the scheduler that gets it runs the job, the others
// skip the run. Give jobs names (gocron.WithName) that are the same in every scheduler.
type Locker struct {
	client *rlock.Client
	cfg    config
}

var _ gocron.Locker = (*Locker)(nil)

// NewLocker returns a Locker using client (which must outlive it).
func NewLocker(client *rlock.Client, opts ...Option) (*Locker, error) {
	if client == nil {
		return nil, errors.New("rlockgocron: NewLocker: nil client")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if cfg.maxHold > 0 && cfg.minHold > cfg.maxHold {
		return nil, fmt.Errorf("rlockgocron: NewLocker: the min hold (%v) exceeds the max hold (%v)", cfg.minHold, cfg.maxHold)
	}
	return &Locker{client: client, cfg: *cfg}, nil
}

// Lock takes the job's lock with one try; ErrNotObtained if another scheduler holds it.
func (lk *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if key == "" {
		return nil, errors.New("rlockgocron: Lock: empty job name (set one with gocron.WithName)")
	}
	l, err := lk.client.Lock(lk.cfg.prefix + key)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ok, err := l.TryLock(ctx, 0, lk.cfg.maxHold)
	if err != nil || !ok {
		l.Close()
		if err == nil {
			err = fmt.Errorf("%w: %q", ErrNotObtained, lk.cfg.prefix+key)
		}
		return nil, err
	}
	return &jobLock{l: l, start: start, minHold: lk.cfg.minHold}, nil
}

type jobLock struct {
	l       *rlock.Lock
	start   time.Time
	minHold time.Duration
	once    sync.Once
	err     error
}

// Unlock releases the lock, or, before the min hold has passed, leaves it to expire when it
// has. rlock.ErrLockLost means the hold expired or was taken while the job ran.
func (j *jobLock) Unlock(context.Context) error {
	j.once.Do(func() {
		defer j.l.Close() // stops a watchdog renewal; a hold left expires by its lease
		if left := j.minHold - time.Since(j.start); left >= time.Millisecond {
			j.err = j.l.Extend(left)
			return
		}
		j.err = j.l.Unlock()
	})
	return j.err
}

// Elector is a gocron.Elector over rlock: a background goroutine campaigns for the lock
// "<prefix><name>", held with the client's watchdog while this process lives; IsLeader is nil
// only while it is held. When rlock finds the hold lost, IsLeader fails at once and the
// campaign starts again.
type Elector struct {
	client *rlock.Client
	name   string
	retry  time.Duration

	leader atomic.Pointer[rlock.Lock] // the held lock while leader
	closed atomic.Bool
	cancel context.CancelFunc
	done   chan struct{}
	errMu  sync.Mutex
	err    error // the last campaign error, for IsLeader's message
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector starts campaigning for leadership of name (the same in every scheduler of the
// group) and returns at once. Close it to resign. client must outlive it.
func NewElector(client *rlock.Client, name string, opts ...Option) (*Elector, error) {
	if client == nil {
		return nil, errors.New("rlockgocron: NewElector: nil client")
	}
	if name == "" {
		return nil, errors.New("rlockgocron: NewElector: empty election name")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if len(cfg.lockerOnly) > 0 {
		return nil, fmt.Errorf("rlockgocron: NewElector: %s applies to the Locker only", cfg.lockerOnly[0])
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Elector{client: client, name: cfg.prefix + name, retry: cfg.retry, cancel: cancel, done: make(chan struct{})}
	go e.campaign(ctx)
	return e, nil
}

// IsLeader returns nil while this process holds the leadership lock.
func (e *Elector) IsLeader(context.Context) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if l := e.leader.Load(); l != nil && l.Held() {
		return nil
	}
	e.errMu.Lock()
	defer e.errMu.Unlock()
	if e.err != nil {
		return fmt.Errorf("%w (%q; last campaign error: %v)", ErrNotLeader, e.name, e.err)
	}
	return fmt.Errorf("%w (%q)", ErrNotLeader, e.name)
}

func (e *Elector) setErr(err error) {
	e.errMu.Lock()
	e.err = err
	e.errMu.Unlock()
}

func (e *Elector) campaign(ctx context.Context) {
	defer close(e.done)
	for ctx.Err() == nil {
		if err := e.term(ctx); err != nil && ctx.Err() == nil {
			e.setErr(err)
			select {
			case <-ctx.Done():
			case <-time.After(e.retry):
			}
		}
	}
}

// term waits for the lock, holds it until it is lost or ctx ends, and gives it back.
func (e *Elector) term(ctx context.Context) error {
	l, err := e.client.Lock(e.name)
	if err != nil {
		return err
	}
	defer l.Close()
	defer e.leader.CompareAndSwap(l, nil)
	lost := make(chan struct{}, 1)
	if err := l.OnLost(func(rlock.LostReason) {
		e.leader.Store(nil) // IsLeader fails from now on
		select {
		case lost <- struct{}{}:
		default:
		}
	}); err != nil {
		return err
	}
	if err := l.Lock(ctx); err != nil {
		return err
	}
	e.setErr(nil)
	e.leader.Store(l)
	select {
	case <-lost:
		return nil
	case <-ctx.Done():
		e.leader.Store(nil)
		// Resign so another scheduler takes over now, not after the lease.
		if err := l.Unlock(); err != nil && !errors.Is(err, rlock.ErrLockLost) {
			return err
		}
		return nil
	}
}

// Close resigns the leadership (if held) and stops campaigning. Idempotent.
func (e *Elector) Close() error {
	e.closed.Store(true)
	e.cancel()
	<-e.done
	return nil
}
