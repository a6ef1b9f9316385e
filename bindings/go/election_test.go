package rlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// termStore keeps the newest term it accepted and refuses older ones, as a fenced store does.
type termStore struct {
	mu       sync.Mutex
	newest   int64
	refused  []int64
	accepted int
}

func (s *termStore) write(term int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if term < s.newest {
		s.refused = append(s.refused, term)
		return false
	}
	s.newest = term
	s.accepted++
	return true
}

// Three candidates on three clients: fn never runs in two at once (a Lead that ran fn without
// leading would break it), each leadership has a higher term, and the store refuses none.
func TestLeadThreeCandidatesOneAtATime(t *testing.T) {
	name := uniqueName(t)
	store := &termStore{}
	var running, most atomic.Int32
	var mu sync.Mutex
	var terms []int64
	led := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		c := newClient(t, WithWatchdogLease(2*time.Second))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for round := 0; round < 2; round++ {
				err := c.Lead(bg, name, func(ctx context.Context, term int64) error {
					n := running.Add(1)
					defer running.Add(-1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					mu.Lock()
					terms = append(terms, term)
					led[i]++
					mu.Unlock()
					for k := 0; k < 5; k++ {
						if ctx.Err() != nil {
							return ctx.Err()
						}
						if !store.write(term) {
							t.Errorf("the store refused the leader's term %d", term)
						}
						time.Sleep(5 * time.Millisecond)
					}
					return nil
				})
				if err != nil {
					t.Errorf("Lead: %v", err)
				}
				time.Sleep(50 * time.Millisecond) // let another in: the lock is not fair
			}
		}(i)
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d leaders ran at once", most.Load())
	}
	if len(terms) != 6 {
		t.Fatalf("%d leaderships, want 6", len(terms))
	}
	for k := 1; k < len(terms); k++ {
		if terms[k] <= terms[k-1] {
			t.Fatalf("terms do not grow: %v", terms)
		}
	}
	if len(led) != 3 || len(store.refused) != 0 {
		t.Fatalf("led %v, refused %v", led, store.refused)
	}
	if exists(t, name) {
		t.Fatal("the lock is still held after every Lead returned")
	}
}

// The key deleted under the leader: fn's ctx is cancelled at its next renewal, and Lead
// returns an error matching ErrLeadershipLost and ErrLockLost.
func TestLeadLossCancelsTheContext(t *testing.T) {
	name := uniqueName(t)
	c := newClient(t, WithWatchdogLease(1500*time.Millisecond))
	cancelled := make(chan time.Duration, 1)
	err := c.Lead(bg, name, func(ctx context.Context, term int64) error {
		if _, err := redis.Do("DEL", name); err != nil {
			t.Errorf("DEL: %v", err)
		}
		start := time.Now()
		select {
		case <-ctx.Done():
			cancelled <- time.Since(start)
			if !errors.Is(context.Cause(ctx), ErrLeadershipLost) {
				t.Errorf("cause %v, want ErrLeadershipLost", context.Cause(ctx))
			}
		case <-time.After(5 * time.Second):
			t.Error("the context was not cancelled within 5 s of the loss")
		}
		return nil
	})
	if !errors.Is(err, ErrLeadershipLost) || !errors.Is(err, ErrLockLost) {
		t.Fatalf("Lead returned %v, want ErrLeadershipLost", err)
	}
	if !strings.Contains(err.Error(), "gone") {
		t.Fatalf("error %q does not say why", err)
	}
	select {
	case d := <-cancelled:
		if d > 1500*time.Millisecond {
			t.Fatalf("cancelled %v after the loss; renewals come every 500 ms", d)
		}
	default:
		t.Fatal("fn's context was never cancelled")
	}
}

// A campaign cancelled by its context stops, leaving nothing behind.
func TestLeadContextEndsTheCampaign(t *testing.T) {
	name := uniqueName(t)
	holder, waiter := newClient(t), newClient(t)
	release := make(chan struct{})
	leading := make(chan struct{})
	done := result(func() error {
		return holder.Lead(bg, name, func(ctx context.Context, term int64) error {
			close(leading)
			<-release
			return nil
		})
	})
	<-leading
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	ran := false
	err := waiter.Lead(ctx, name, func(context.Context, int64) error { ran = true; return nil })
	if ran || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lead = %v (ran %v), want the context's deadline", err, ran)
	}
	close(release)
	if err := within(t, done, 5*time.Second, "the holder's Lead"); err != nil {
		t.Fatal(err)
	}
	if exists(t, name) {
		t.Fatal("a key was left behind")
	}
}

// Closing the client while leading cancels fn's context.
func TestLeadClientClose(t *testing.T) {
	name := uniqueName(t)
	c, err := NewClient(redis.URL)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Lead(bg, name, func(ctx context.Context, term int64) error {
		c.Close() // tells the leader (CLOSED) first, then releases the lock
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Error("closing the client did not cancel the leader's context")
		}
		return nil
	})
	if !errors.Is(err, ErrLeadershipLost) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Lead returned %v, want a lost leadership (closed)", err)
	}
	if exists(t, name) {
		t.Fatal("the closed client left the lock held")
	}
}

func TestElectionCampaignFailsOnAKeyThatIsNoLock(t *testing.T) {
	name := uniqueName(t)
	c := newClient(t)
	if _, err := redis.Do("SET", name, "x"); err != nil {
		t.Fatal(err)
	}
	defer redis.Do("DEL", name)
	e, err := c.NewElection(name)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Campaign(bg)
	wantCode(t, err, CodeRedis, ErrRedis)
	if e.Reason() != RevokedFailed {
		t.Fatalf("reason %v, want failed", e.Reason())
	}
}

func TestElectionBadInput(t *testing.T) {
	c := newClient(t)
	if _, err := c.NewElection(""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("empty name: %v", err)
	}
	if err := c.Lead(bg, "x", nil); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "fn") {
		t.Fatalf("nil fn: %v", err)
	}
	e, err := c.NewElection(uniqueName(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Campaign(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Campaign(bg); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a second Campaign while leading: %v", err)
	}
	if term, ok := e.Term(); !ok || term <= 0 || !e.IsLeader() {
		t.Fatalf("Term() = %d, %v", term, ok)
	}
	e.Close()
	if e.IsLeader() {
		t.Fatal("a closed election leads")
	}
	if err := e.Resign(); err != nil {
		t.Fatalf("Resign after Close: %v", err)
	}
}
