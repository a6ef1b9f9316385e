package rlock

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The semaphore tests read Redis with the test's own client (redistest), never through rlock.

// noLeaseScore is the deadline Redisson stores for a permit without a lease.
const noLeaseScore = 922337203685477

func mustSemaphore(t *testing.T, c *Client, name string) *Semaphore {
	t.Helper()
	s, err := c.Semaphore(name)
	if err != nil {
		t.Fatalf("Semaphore(%q): %v", name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustExpirable(t *testing.T, c *Client, name string, opts ...SemaphoreOption) *ExpirableSemaphore {
	t.Helper()
	s, err := c.ExpirableSemaphore(name, opts...)
	if err != nil {
		t.Fatalf("ExpirableSemaphore(%q): %v", name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// redisGet returns GET key ("" and false when missing).
func redisGet(t *testing.T, key string) (string, bool) {
	t.Helper()
	v, err := redis.Do("GET", key)
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	if v == nil {
		return "", false
	}
	return v.(string), true
}

// wantCount checks that key holds the decimal count want.
func wantCount(t *testing.T, key string, want int64) {
	t.Helper()
	got, ok := redisGet(t, key)
	if !ok || got != strconv.FormatInt(want, 10) {
		t.Fatalf("GET %s = %q (exists %v), want %d", key, got, ok, want)
	}
}

// deadlinesKey is the ZSET of an expirable semaphore's held permits (Redisson's suffixName).
func deadlinesKey(name string) string { return "{" + name + "}:timeout" }

// permitScore returns the deadline (epoch ms) stored for a permit id, looked up by its raw
// 16 bytes as Redisson stores them; false when the id is not in the set.
func permitScore(t *testing.T, name, id string) (int64, bool) {
	t.Helper()
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 16 {
		t.Fatalf("permit id %q is not 16 bytes of hex", id)
	}
	v, err := redis.Do("ZSCORE", deadlinesKey(name), string(raw))
	if err != nil {
		t.Fatalf("ZSCORE: %v", err)
	}
	if v == nil {
		return 0, false
	}
	score, err := strconv.ParseFloat(v.(string), 64)
	if err != nil {
		t.Fatalf("ZSCORE replied %q", v)
	}
	return int64(score), true
}

func zcard(t *testing.T, key string) int64 {
	t.Helper()
	v, err := redis.Do("ZCARD", key)
	if err != nil {
		t.Fatalf("ZCARD %s: %v", key, err)
	}
	return v.(int64)
}

func nowMS() int64 { return time.Now().UnixMilli() }

var permitIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestSemaphoreCountsOnRedis(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	if s.Name() != name {
		t.Fatalf("Name() = %q", s.Name())
	}
	if n, err := s.AvailablePermits(); err != nil || n != 0 {
		t.Fatalf("AvailablePermits of a missing semaphore = %d, %v; want 0", n, err)
	}
	if ok, err := s.TrySetPermits(3, 0); err != nil || !ok {
		t.Fatalf("TrySetPermits(3) = %v, %v; want true", ok, err)
	}
	wantCount(t, name, 3)
	if pttl, _ := redis.PTTL(name); pttl != -1 {
		t.Fatalf("PTTL after TrySetPermits without a ttl = %d, want -1", pttl)
	}
	if ok, err := s.TrySetPermits(7, 0); err != nil || ok {
		t.Fatalf("TrySetPermits on an existing semaphore = %v, %v; want false", ok, err)
	}
	wantCount(t, name, 3)

	if ok, err := s.TryAcquire(2); err != nil || !ok {
		t.Fatalf("TryAcquire(2) = %v, %v; want true", ok, err)
	}
	wantCount(t, name, 1)
	if held, err := s.HeldPermits(); err != nil || held != 2 {
		t.Fatalf("HeldPermits = %d, %v; want 2", held, err)
	}
	if ok, err := s.TryAcquire(2); err != nil || ok {
		t.Fatalf("TryAcquire(2) with 1 available = %v, %v; want false", ok, err)
	}
	wantCount(t, name, 1)
	if err := s.Acquire(bg, 1); err != nil {
		t.Fatal(err)
	}
	wantCount(t, name, 0)
	if err := s.Release(3); err != nil {
		t.Fatal(err)
	}
	wantCount(t, name, 3)
	if held, _ := s.HeldPermits(); held != 0 {
		t.Fatalf("HeldPermits after the release = %d", held)
	}

	if n, err := s.AddPermits(2); err != nil || n != 5 {
		t.Fatalf("AddPermits(2) = %d, %v; want 5", n, err)
	}
	wantCount(t, name, 5)
	if n, err := s.AddPermits(-7); err != nil || n != -2 {
		t.Fatalf("AddPermits(-7) = %d, %v; want -2", n, err)
	}
	wantCount(t, name, -2)
	if n, err := s.AvailablePermits(); err != nil || n != -2 {
		t.Fatalf("AvailablePermits = %d, %v; want -2", n, err)
	}
	s.AddPermits(6)
	if n, err := s.DrainPermits(); err != nil || n != 4 {
		t.Fatalf("DrainPermits = %d, %v; want 4", n, err)
	}
	wantCount(t, name, 0)
	if held, _ := s.HeldPermits(); held != 0 {
		t.Fatalf("drained permits count as held: %d", held)
	}
	if deleted, err := s.Delete(); err != nil || !deleted {
		t.Fatalf("Delete = %v, %v; want true", deleted, err)
	}
	if exists(t, name) {
		t.Fatal("the key survived Delete")
	}
	if deleted, err := s.Delete(); err != nil || deleted {
		t.Fatalf("Delete of a missing semaphore = %v, %v; want false", deleted, err)
	}
}

func TestSemaphoreTrySetPermitsTTL(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	if ok, err := s.TrySetPermits(2, 30*time.Second); err != nil || !ok {
		t.Fatalf("TrySetPermits(2, 30s) = %v, %v", ok, err)
	}
	if pttl, _ := redis.PTTL(name); pttl <= 25000 || pttl > 30000 {
		t.Fatalf("PTTL = %d, want about 30000", pttl)
	}
	// An acquire keeps the expiry (DECRBY), as Redisson's does.
	if ok, _ := s.TryAcquire(1); !ok {
		t.Fatal("TryAcquire(1) failed")
	}
	if pttl, _ := redis.PTTL(name); pttl <= 0 {
		t.Fatalf("PTTL after an acquire = %d, want the expiry kept", pttl)
	}
	s.Release(1)
}

func TestSemaphoreMissingTryOnceAndWait(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	if ok, err := s.TryAcquire(1); err != nil || ok {
		t.Fatalf("TryAcquire on a missing semaphore = %v, %v; want false, nil", ok, err)
	}
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	err := s.Acquire(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotObtained) {
		t.Fatalf("Acquire on a missing semaphore until a deadline: %v", err)
	}
	if exists(t, name) {
		t.Fatal("a failed acquire created the semaphore")
	}
}

// Waiters are woken by the other client's message: the poll cap is an hour, so a waiter that
// returns in time was woken, not polling.
func TestSemaphoreWakeUpAcrossClients(t *testing.T) {
	waiting := newClient(t, WithPollCap(time.Hour))
	other := newClient(t)
	name := uniqueName(t)
	w := mustSemaphore(t, waiting, name)
	o := mustSemaphore(t, other, name)

	// The semaphore does not exist yet: TrySetPermits wakes the waiter.
	pending := asyncPending.Load()
	done := result(func() error { return w.Acquire(bg, 2) })
	waitFor(t, "the acquire to wait", 10*time.Second, func() bool { return asyncPending.Load() > pending })
	time.Sleep(50 * time.Millisecond)
	if ok, err := o.TrySetPermits(2, 0); err != nil || !ok {
		t.Fatalf("TrySetPermits: %v %v", ok, err)
	}
	if err := within(t, done, 3*time.Second, "Acquire(2) after TrySetPermits"); err != nil {
		t.Fatal(err)
	}
	wantCount(t, name, 0)

	// A release by the first client wakes a waiter of the other.
	pending = asyncPending.Load()
	done = result(func() error { return o.Acquire(bg, 1) })
	waitFor(t, "the acquire to wait", 10*time.Second, func() bool { return asyncPending.Load() > pending })
	time.Sleep(50 * time.Millisecond)
	if err := w.Release(1); err != nil {
		t.Fatal(err)
	}
	if err := within(t, done, 3*time.Second, "Acquire(1) after Release"); err != nil {
		t.Fatal(err)
	}
	if err := o.Release(1); err != nil {
		t.Fatal(err)
	}
	if err := w.Release(1); err != nil {
		t.Fatal(err)
	}
	wantCount(t, name, 2)
}

func TestSemaphoreReleaseOnlyWhatWasTaken(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	s.TrySetPermits(3, 0)
	err := s.Release(1)
	wantCode(t, err, CodeNotHeld, ErrNotHeld)
	wantCount(t, name, 3)
	if ok, _ := s.TryAcquire(1); !ok {
		t.Fatal("TryAcquire(1) failed")
	}
	wantCode(t, s.Release(2), CodeNotHeld, ErrNotHeld)
	wantCount(t, name, 2)
	// Another client did not take them.
	other := mustSemaphore(t, newClient(t), name)
	wantCode(t, other.Release(1), CodeNotHeld, ErrNotHeld)
	wantCount(t, name, 2)
	// Another value of the same client did.
	same := mustSemaphore(t, c, name)
	if err := same.Release(1); err != nil {
		t.Fatalf("Release through another value of the client: %v", err)
	}
	wantCount(t, name, 3)
}

func TestSemaphoreReleaseAfterDeleteIsLost(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	s.TrySetPermits(1, 0)
	if ok, _ := s.TryAcquire(1); !ok {
		t.Fatal("TryAcquire(1) failed")
	}
	redis.Do("DEL", name)
	wantCode(t, s.Release(1), CodeLost, ErrLockLost)
}

func TestSemaphoreBadInputChangesNothing(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	s.TrySetPermits(3, 0)
	if ok, err := s.TryAcquire(0); !ok || err != nil { // as Redisson: at once
		t.Fatalf("TryAcquire(0): %v %v", ok, err)
	}
	if err := s.Release(0); err != nil {
		t.Fatalf("Release(0): %v", err)
	}
	if ok, err := s.TryAcquire(1001); ok || err != nil { // no cap at 1000: just not that many
		t.Fatalf("TryAcquire(1001): %v %v", ok, err)
	}
	for _, permits := range []int{-1, 1 << 31} {
		ok, err := s.TryAcquire(permits)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
		if ok {
			t.Fatalf("TryAcquire(%d) reported success", permits)
		}
		wantCode(t, s.Acquire(bg, permits), CodeInvalid, ErrInvalidArgument)
		wantCode(t, s.Release(permits), CodeInvalid, ErrInvalidArgument)
	}
	_, err := s.TrySetPermits(-1, 0)
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = s.TrySetPermits(1, -time.Second)
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	wantCount(t, name, 3)
	if held, _ := s.HeldPermits(); held != 0 {
		t.Fatalf("HeldPermits = %d after bad calls", held)
	}
	fresh := mustSemaphore(t, c, uniqueName(t))
	for _, permits := range []int64{-1, 2147483648} {
		_, err := fresh.TrySetPermits(permits, 0)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	}
	if exists(t, fresh.Name()) {
		t.Fatal("a refused TrySetPermits created the semaphore")
	}
	if _, err := c.Semaphore(""); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Semaphore(\"\"): %v", err)
	}
}

// A key of another type, or a string that is no count: a Redis error, the key unchanged.
func TestSemaphoreWrongKeyType(t *testing.T) {
	c := newClient(t)
	for _, setup := range [][]string{{"HSET", "", "f", "1"}, {"SET", "", "three"}} {
		name := uniqueName(t)
		setup[1] = name
		if _, err := redis.Do(setup...); err != nil {
			t.Fatal(err)
		}
		dump, _ := redis.Do("DUMP", name)
		s := mustSemaphore(t, c, name)
		if _, err := s.TryAcquire(1); !errors.Is(err, ErrRedis) {
			t.Errorf("%s: TryAcquire: want ErrRedis, got %v", setup[0], err)
		}
		ctx, cancel := context.WithTimeout(bg, 2*time.Second)
		if err := s.Acquire(ctx, 1); !errors.Is(err, ErrRedis) {
			t.Errorf("%s: Acquire: want ErrRedis, got %v", setup[0], err)
		}
		cancel()
		if _, err := s.AddPermits(1); !errors.Is(err, ErrRedis) {
			t.Errorf("%s: AddPermits: want ErrRedis, got %v", setup[0], err)
		}
		if _, err := s.TrySetPermits(1, 0); !errors.Is(err, ErrRedis) {
			t.Errorf("%s: TrySetPermits: want ErrRedis, got %v", setup[0], err)
		}
		if _, err := s.DrainPermits(); !errors.Is(err, ErrRedis) {
			t.Errorf("%s: DrainPermits: want ErrRedis, got %v", setup[0], err)
		}
		if _, err := s.AvailablePermits(); !errors.Is(err, ErrRedis) {
			t.Errorf("%s: AvailablePermits: want ErrRedis, got %v", setup[0], err)
		}
		if after, _ := redis.Do("DUMP", name); after != dump {
			t.Errorf("%s: the key changed", setup[0])
		}
	}
}

func TestSemaphoreContextEndsWithNothingTaken(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	s.TrySetPermits(0, 0)

	ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
	defer cancel()
	err := s.Acquire(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotObtained) {
		t.Fatalf("Acquire until a deadline: %v", err)
	}

	ctx, cancel = context.WithCancel(bg)
	pending := asyncPending.Load()
	done := result(func() error { return s.Acquire(ctx, 1) })
	waitFor(t, "the acquire to wait", 10*time.Second, func() bool { return asyncPending.Load() > pending })
	cancel()
	if err := within(t, done, 3*time.Second, "a cancelled Acquire"); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCanceled) {
		t.Fatalf("cancelled Acquire: %v", err)
	}
	wantCount(t, name, 0)
	if held, _ := s.HeldPermits(); held != 0 {
		t.Fatalf("HeldPermits = %d after the context ended", held)
	}
	if err := s.Acquire(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with an ended context: %v", err)
	}
}

// Permits granted just as the context ends go back: whatever the timing, every permit added
// is either held or available.
func TestSemaphoreCancelRacingAGrant(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	adder := mustSemaphore(t, newClient(t), name)
	s.TrySetPermits(0, 0)
	const rounds = 40
	taken := 0
	for i := 0; i < rounds; i++ {
		ctx, cancel := context.WithCancel(bg)
		done := result(func() error { return s.Acquire(ctx, 1) })
		time.Sleep(time.Duration(i%3) * time.Millisecond) // sometimes waiting, sometimes not yet
		go adder.AddPermits(1)
		time.Sleep(time.Duration(i%5) * 200 * time.Microsecond)
		cancel()
		err := within(t, done, 5*time.Second, "Acquire")
		switch {
		case err == nil:
			taken++
		case !errors.Is(err, context.Canceled):
			t.Fatalf("round %d: %v", i, err)
		}
	}
	waitFor(t, "the adds", 5*time.Second, func() bool {
		v, _ := redisGet(t, name)
		held, _ := s.HeldPermits()
		n, _ := strconv.ParseInt(v, 10, 64)
		return n+held == rounds
	})
	if held, _ := s.HeldPermits(); held != int64(taken) {
		t.Fatalf("HeldPermits = %d, but %d acquires succeeded", held, taken)
	}
	t.Logf("%d of %d acquires won the race with their cancellation", taken, rounds)
}

func TestSemaphoreCloseWakesWaiters(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s, err := c.Semaphore(name)
	if err != nil {
		t.Fatal(err)
	}
	pending := asyncPending.Load()
	done := result(func() error { return s.Acquire(bg, 1) })
	waitFor(t, "the acquire to wait", 10*time.Second, func() bool { return asyncPending.Load() > pending })
	s.Close()
	if err := within(t, done, 3*time.Second, "Acquire on a closed semaphore"); !errors.Is(err, ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
	if _, err := s.TryAcquire(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryAcquire after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// Many goroutines share N permits: never more than N inside, and the count comes back.
func TestSemaphoreBoundsConcurrency(t *testing.T) {
	const permits, goroutines, rounds = 3, 12, 15
	name := uniqueName(t)
	clients := []*Client{newClient(t), newClient(t)}
	mustSemaphore(t, clients[0], name).TrySetPermits(permits, 0)
	var mu sync.Mutex
	inside, most := 0, 0
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		s := mustSemaphore(t, clients[g%2], name)
		go func() {
			for r := 0; r < rounds; r++ {
				if err := s.Acquire(bg, 1); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				inside++
				most = max(most, inside)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inside--
				mu.Unlock()
				if err := s.Release(1); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	waitAll(t, errs, goroutines, 2*time.Minute, "a worker")
	if most > permits {
		t.Fatalf("%d goroutines were inside at once with %d permits", most, permits)
	}
	wantCount(t, name, permits)
}

func TestExpirableSemaphorePermitsOnRedis(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustExpirable(t, c, name)
	if ok, err := s.TrySetPermits(3); err != nil || !ok {
		t.Fatalf("TrySetPermits(3) = %v, %v", ok, err)
	}
	wantCount(t, name, 3)

	before := nowMS()
	p, err := s.Acquire(bg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	after := nowMS()
	if !permitIDPattern.MatchString(p.ID) {
		t.Fatalf("permit id %q is not 32 lower-case hex digits", p.ID)
	}
	wantCount(t, name, 2)
	score, ok := permitScore(t, name, p.ID)
	if !ok || score < before+10000 || score > after+10000 {
		t.Fatalf("ZSCORE of the permit = %d (present %v), want %d..%d", score, ok, before+10000, after+10000)
	}

	forever, err := s.Acquire(bg, NoLease)
	if err != nil {
		t.Fatal(err)
	}
	if score, ok := permitScore(t, name, forever.ID); !ok || score != noLeaseScore {
		t.Fatalf("ZSCORE of a permit without a lease = %d (present %v), want %d", score, ok, int64(noLeaseScore))
	}
	if n, err := s.AcquiredPermits(); err != nil || n != 2 {
		t.Fatalf("AcquiredPermits = %d, %v; want 2", n, err)
	}
	if n, err := s.AvailablePermits(); err != nil || n != 1 {
		t.Fatalf("AvailablePermits = %d, %v; want 1", n, err)
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if _, ok := permitScore(t, name, p.ID); ok {
		t.Fatal("the released permit is still in the deadlines")
	}
	wantCount(t, name, 2)
	// Upper-case hex names the same permit.
	if err := s.Release(fmt.Sprintf("%X", mustHex(t, forever.ID))); err != nil {
		t.Fatalf("Release with upper-case hex: %v", err)
	}
	wantCount(t, name, 3)
	if zcard(t, deadlinesKey(name)) != 0 {
		t.Fatal("permits left in the deadlines")
	}

	ps, err := s.AcquireN(bg, 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	ids := []string{}
	for _, p := range ps {
		if !permitIDPattern.MatchString(p.ID) || seen[p.ID] {
			t.Fatalf("bad or repeated id %q in %v", p.ID, ps)
		}
		seen[p.ID] = true
		ids = append(ids, p.ID)
		if _, ok := permitScore(t, name, p.ID); !ok {
			t.Fatalf("permit %s is not in the deadlines", p.ID)
		}
	}
	wantCount(t, name, 0)
	if got, err := s.TryAcquire(0); err != nil || got != nil {
		t.Fatalf("TryAcquire with none available = %v, %v; want nil, nil", got, err)
	}
	if err := s.Release(ids...); err != nil {
		t.Fatal(err)
	}
	wantCount(t, name, 3)
	if deleted, err := s.Delete(); err != nil || !deleted {
		t.Fatalf("Delete = %v, %v", deleted, err)
	}
	if exists(t, name) || exists(t, deadlinesKey(name)) {
		t.Fatal("keys survived Delete")
	}
}

func mustHex(t *testing.T, id string) []byte {
	t.Helper()
	b, err := hex.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExpirableSemaphoreDefaultLease(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustExpirable(t, c, name, WithPermitLease(20*time.Second))
	s.TrySetPermits(2)
	before := nowMS()
	p, err := s.Acquire(bg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if score, ok := permitScore(t, name, p.ID); !ok || score < before+20000 || score > nowMS()+20000 {
		t.Fatalf("a permit with the default lease has deadline %d, want about %d", score, before+20000)
	}
	none := mustExpirable(t, c, name, WithPermitLease(NoLease))
	q, err := none.Acquire(bg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if score, _ := permitScore(t, name, q.ID); score != noLeaseScore {
		t.Fatalf("a permit of a NoLease semaphore has deadline %d", score)
	}
	p.Release()
	q.Release()
}

func TestExpirableSemaphoreUpdateLease(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustExpirable(t, c, name)
	s.TrySetPermits(1)
	p, err := s.Acquire(bg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.UpdateLease(NoLease); err != nil || !ok {
		t.Fatalf("UpdateLease(NoLease) = %v, %v", ok, err)
	}
	if score, _ := permitScore(t, name, p.ID); score != noLeaseScore {
		t.Fatalf("deadline after UpdateLease(NoLease) = %d", score)
	}
	before := nowMS()
	if ok, err := s.UpdateLease(p.ID, time.Hour); err != nil || !ok {
		t.Fatalf("UpdateLease(1h) = %v, %v", ok, err)
	}
	if score, _ := permitScore(t, name, p.ID); score < before+3600000 || score > nowMS()+3600000 {
		t.Fatalf("deadline after UpdateLease(1h) = %d, want about %d", score, before+3600000)
	}
	unknown := "00112233445566778899aabbccddeeff"
	if ok, err := s.UpdateLease(unknown, time.Hour); err != nil || ok {
		t.Fatalf("UpdateLease of an unknown id = %v, %v; want false, nil", ok, err)
	}
	for _, bad := range []string{"", "xyz", "00112233445566778899aabbccddeefg", "00112233445566778899aabbccddeeff00"} {
		_, err := s.UpdateLease(bad, time.Hour)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	}
	for _, lease := range []time.Duration{0, -3} {
		_, err := p.UpdateLease(lease)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.UpdateLease(time.Hour); err != nil || ok {
		t.Fatalf("UpdateLease of a released permit = %v, %v; want false, nil", ok, err)
	}
	wantCount(t, name, 1)
	if zcard(t, deadlinesKey(name)) != 0 {
		t.Fatal("UpdateLease of a released permit put it back")
	}
}

func TestExpirableSemaphoreBadReleasesChangeNothing(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustExpirable(t, c, name)
	s.TrySetPermits(2)
	p, err := s.Acquire(bg, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	unknown := "00112233445566778899aabbccddeeff"
	snapshot := func() string {
		v, _ := redisGet(t, name)
		members, _ := redis.Do("ZRANGE", deadlinesKey(name), "0", "-1", "WITHSCORES")
		return fmt.Sprint(v, members)
	}
	was := snapshot()
	wantCode(t, s.Release(unknown), CodeNotHeld, ErrNotHeld)
	// All or none: the held one stays held.
	wantCode(t, s.Release(p.ID, unknown), CodeNotHeld, ErrNotHeld)
	if got := snapshot(); got != was {
		t.Fatalf("a refused release changed Redis: %s -> %s", was, got)
	}
	for _, ids := range [][]string{nil, {"xyz"}, {p.ID, ""}, {p.ID + "\x00"}} {
		wantCode(t, s.Release(ids...), CodeInvalid, ErrInvalidArgument)
	}
	tooMany := make([]string, 1001)
	for i := range tooMany {
		tooMany[i] = p.ID
	}
	wantCode(t, s.Release(tooMany...), CodeInvalid, ErrInvalidArgument)
	if _, err := s.AcquireN(bg, 0, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("AcquireN(0): %v", err)
	}
	if _, err := s.TryAcquireN(1001, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("TryAcquireN(1001): %v", err)
	}
	if _, err := s.Acquire(bg, -5); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Acquire with lease -5ns: %v", err)
	}
	if _, err := s.TrySetPermits(-1); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("TrySetPermits(-1): %v", err)
	}
	if got := snapshot(); got != was {
		t.Fatalf("bad input changed Redis: %s -> %s", was, got)
	}
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, p.Release(), CodeNotHeld, ErrNotHeld)
	wantCount(t, name, 2)
	for _, lease := range []time.Duration{0, -3, -time.Second} {
		if _, err := c.ExpirableSemaphore(name, WithPermitLease(lease)); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("WithPermitLease(%v): %v", lease, err)
		}
	}
	if _, err := c.ExpirableSemaphore(name, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a nil SemaphoreOption: %v", err)
	}
}

// A holder that never releases: its permit comes back when the lease runs out, to a waiter
// that waits for it (no message announces an expiry).
func TestExpirableSemaphoreLeaseExpiry(t *testing.T) {
	name := uniqueName(t)
	holder := mustExpirable(t, newClient(t), name)
	waiter := mustExpirable(t, newClient(t, WithPollCap(time.Hour)), name)
	holder.TrySetPermits(1)
	const lease = 400 * time.Millisecond
	p, err := holder.Acquire(bg, lease)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	q, err := waiter.Acquire(bg, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took < lease-50*time.Millisecond || took > lease+time.Second {
		t.Fatalf("the expired permit came back after %v, want about %v", took, lease)
	}
	if _, ok := permitScore(t, name, p.ID); ok {
		t.Fatal("the expired permit is still in the deadlines")
	}
	// Its holder's release now finds it gone.
	wantCode(t, p.Release(), CodeNotHeld, ErrNotHeld)
	if err := q.Release(); err != nil {
		t.Fatal(err)
	}
	wantCount(t, name, 1)
}

// A lease that ran out but was not reclaimed yet: the release reports the loss.
func TestExpirableSemaphoreReleaseAfterExpiryIsLost(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustExpirable(t, c, name)
	s.TrySetPermits(1)
	p, err := s.Acquire(bg, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	wantCode(t, p.Release(), CodeLost, ErrLockLost)
	if n, err := s.AvailablePermits(); err != nil || n != 1 {
		t.Fatalf("AvailablePermits after the lost permit = %d, %v; want 1", n, err)
	}
	if zcard(t, deadlinesKey(name)) != 0 {
		t.Fatal("the expired permit stayed in the deadlines")
	}
}

// The default lease is the client's watchdog lease, renewed while the client lives (also
// after the value is closed); the client's Close gives the permit back.
func TestExpirableSemaphoreWatchdogRenews(t *testing.T) {
	const watchdog = 600 * time.Millisecond
	c := newClient(t, WithWatchdogLease(watchdog))
	owner := newClient(t, WithWatchdogLease(watchdog))
	name := uniqueName(t)
	s, err := owner.ExpirableSemaphore(name)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.TrySetPermits(1)
	before := nowMS()
	p, err := s.Acquire(bg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if score, _ := permitScore(t, name, p.ID); score < before+500 || score > nowMS()+int64(watchdog/time.Millisecond) {
		t.Fatalf("the watchdog permit's deadline is %d ms from now, want about %v", score-before, watchdog)
	}
	other := mustExpirable(t, newClient(t), name)
	time.Sleep(3 * watchdog)
	if score, ok := permitScore(t, name, p.ID); !ok || score <= nowMS() {
		t.Fatalf("after %v the permit's deadline is %d (present %v), now %d: not renewed", 3*watchdog, score, ok, nowMS())
	}
	if got, err := other.TryAcquire(time.Minute); err != nil || got != nil {
		t.Fatalf("another client took the renewed permit: %v, %v", got, err)
	}
	s.Close()
	time.Sleep(3 * watchdog)
	if got, err := other.TryAcquire(time.Minute); err != nil || got != nil {
		t.Fatalf("the permit of a closed value was not renewed: %v, %v", got, err)
	}
	owner.Close()
	closed := time.Now()
	q, err := other.Acquire(bg, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(closed); took > 500*time.Millisecond {
		t.Fatalf("the permit came back %v after the client's Close, want at once", took)
	}
	q.Release()

	// UpdateLease(WatchdogLease) hands a leased permit to the watchdog.
	w := mustExpirable(t, c, name)
	r, err := w.Acquire(bg, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := r.UpdateLease(WatchdogLease); err != nil || !ok {
		t.Fatalf("UpdateLease(WatchdogLease) = %v, %v", ok, err)
	}
	time.Sleep(3 * watchdog)
	if err := r.Release(); err != nil {
		t.Fatalf("a permit handed to the watchdog expired: %v", err)
	}
}

func TestExpirableSemaphoreContextEndsWithNothingTaken(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustExpirable(t, c, name)
	s.TrySetPermits(1)
	ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
	defer cancel()
	ps, err := s.AcquireN(ctx, 2, time.Minute)
	if ps != nil || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNotObtained) {
		t.Fatalf("AcquireN(2) of 1 until a deadline = %v, %v", ps, err)
	}
	wantCount(t, name, 1)
	if zcard(t, deadlinesKey(name)) != 0 {
		t.Fatal("a permit was left taken")
	}

	// Racing grants go back too.
	adder := mustExpirable(t, newClient(t), name)
	s.Delete()
	s.TrySetPermits(0)
	const rounds = 30
	var held []*Permit
	for i := 0; i < rounds; i++ {
		ctx, cancel := context.WithCancel(bg)
		var p *Permit
		done := result(func() (err error) { p, err = s.Acquire(ctx, time.Minute); return })
		time.Sleep(time.Duration(i%3) * time.Millisecond) // sometimes waiting, sometimes not yet
		go adder.AddPermits(1)
		time.Sleep(time.Duration(i%5) * 200 * time.Microsecond)
		cancel()
		switch err := within(t, done, 5*time.Second, "Acquire"); {
		case err == nil:
			held = append(held, p)
		case !errors.Is(err, context.Canceled):
			t.Fatalf("round %d: %v", i, err)
		}
	}
	waitFor(t, "the adds", 5*time.Second, func() bool {
		v, _ := redisGet(t, name)
		n, _ := strconv.ParseInt(v, 10, 64)
		return n+zcard(t, deadlinesKey(name)) == rounds
	})
	if got := zcard(t, deadlinesKey(name)); got != int64(len(held)) {
		t.Fatalf("%d permits in the deadlines, but %d acquires succeeded", got, len(held))
	}
	for _, p := range held {
		if err := p.Release(); err != nil {
			t.Fatal(err)
		}
	}
	wantCount(t, name, rounds)
}

func TestExpirableSemaphoreWakeUpAcrossClients(t *testing.T) {
	name := uniqueName(t)
	w := mustExpirable(t, newClient(t, WithPollCap(time.Hour)), name)
	o := mustExpirable(t, newClient(t), name)
	o.TrySetPermits(1)
	p, err := o.Acquire(bg, NoLease)
	if err != nil {
		t.Fatal(err)
	}
	pending := asyncPending.Load()
	var q *Permit
	done := result(func() (err error) { q, err = w.Acquire(bg, time.Minute); return })
	waitFor(t, "the acquire to wait", 10*time.Second, func() bool { return asyncPending.Load() > pending })
	time.Sleep(50 * time.Millisecond)
	if err := p.Release(); err != nil {
		t.Fatal(err)
	}
	if err := within(t, done, 3*time.Second, "Acquire after the other client's release"); err != nil {
		t.Fatal(err)
	}
	if err := q.Release(); err != nil {
		t.Fatal(err)
	}
	wantCount(t, name, 1)
}

// A grant that completes as the context ends (forced with testHookWaiting): the acquire
// reports the context's error and gives the permits back.
func TestSemaphoreGrantRacingCancelIsGivenBack(t *testing.T) {
	prev := blockingLimit.Swap(0)
	defer blockingLimit.Store(prev)
	c := newClient(t)
	raced := func(t *testing.T, acquire func(context.Context) error) {
		ctx, cancel := context.WithCancel(bg)
		defer cancel()
		testHookWaiting = func(ch <-chan completion) {
			waitFor(t, "the grant", 10*time.Second, func() bool { return len(ch) == 1 })
			cancel()
		}
		err := acquire(ctx)
		testHookWaiting = nil
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %v", err)
		}
	}
	t.Run("plain", func(t *testing.T) {
		name := uniqueName(t)
		s := mustSemaphore(t, c, name)
		s.TrySetPermits(3, 0)
		raced(t, func(ctx context.Context) error { return s.Acquire(ctx, 2) })
		wantCount(t, name, 3)
		if held, _ := s.HeldPermits(); held != 0 {
			t.Fatalf("HeldPermits = %d after the raced grant", held)
		}
	})
	t.Run("expirable", func(t *testing.T) {
		name := uniqueName(t)
		s := mustExpirable(t, c, name)
		s.TrySetPermits(3)
		raced(t, func(ctx context.Context) error { _, err := s.AcquireN(ctx, 2, time.Minute); return err })
		wantCount(t, name, 3)
		if n := zcard(t, deadlinesKey(name)); n != 0 {
			t.Fatalf("%d permits left in the deadlines after the raced grant", n)
		}
	})
}

// At most 3 jobs at once, across every process using the semaphore "jobs".
func ExampleSemaphore() {
	client, err := NewClient("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	jobs, err := client.Semaphore("jobs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer jobs.Close()
	if _, err := jobs.TrySetPermits(3, 0); err != nil { // only the first caller sets it
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := jobs.Acquire(ctx, 1); err != nil {
		fmt.Println(err) // errors.Is(err, context.DeadlineExceeded) after a minute
		return
	}
	defer jobs.Release(1)
	// ... the job ...
}

// A permit that frees itself if its holder dies: with the default WatchdogLease it is renewed
// while the process lives.
func ExampleExpirableSemaphore() {
	client, err := NewClient("")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	slots, err := client.ExpirableSemaphore("slots")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer slots.Close()
	slots.TrySetPermits(4)
	permit, err := slots.Acquire(context.Background(), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer permit.Release()
	fmt.Println("holding permit", permit.ID)
}

// ReleaseIfExists: Redisson's releaseIfExists, with Release's rule of the client's own permits.
func TestSemaphoreReleaseIfExists(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustSemaphore(t, c, name)
	s.TrySetPermits(3, 0)
	if ok, err := s.TryAcquire(3); !ok || err != nil {
		t.Fatalf("TryAcquire(3) = %v, %v", ok, err)
	}
	if ok, err := s.ReleaseIfExists(2); err != nil || !ok {
		t.Fatalf("ReleaseIfExists(2) = %v, %v; want true", ok, err)
	}
	wantCount(t, name, 2)
	if ok, err := s.ReleaseIfExists(0); err != nil || ok {
		t.Fatalf("ReleaseIfExists(0) = %v, %v; want false (as Redisson)", ok, err)
	}
	_, err := s.ReleaseIfExists(2)
	wantCode(t, err, CodeNotHeld, ErrNotHeld)
	for _, permits := range []int{-1, 1 << 31} {
		ok, err := s.ReleaseIfExists(permits)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
		if ok {
			t.Fatalf("ReleaseIfExists(%d) reported a release", permits)
		}
	}
	wantCount(t, name, 2)
	redis.Do("DEL", name)
	if ok, err := s.ReleaseIfExists(1); err != nil || ok {
		t.Fatalf("ReleaseIfExists of a deleted semaphore = %v, %v; want false, nil", ok, err)
	}
	if exists(t, name) {
		t.Fatal("ReleaseIfExists created the semaphore")
	}
	if held, _ := s.HeldPermits(); held != 0 {
		t.Fatalf("HeldPermits = %d; the permits went with the semaphore", held)
	}
}

// SetPermits: Redisson's setPermits sets the total, held permits included.
func TestExpirableSemaphoreSetPermits(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustExpirable(t, c, name)
	if n, err := s.SetPermits(3); err != nil || n != 3 {
		t.Fatalf("SetPermits(3) of a missing semaphore = %d, %v; want 3", n, err)
	}
	wantCount(t, name, 3)
	held, err := s.AcquireN(bg, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.SetPermits(5); err != nil || n != 3 {
		t.Fatalf("SetPermits(5) with 2 held = %d, %v; want 3", n, err)
	}
	wantCount(t, name, 3)
	if n, err := s.SetPermits(1); err != nil || n != -1 {
		t.Fatalf("SetPermits(1) with 2 held = %d, %v; want -1", n, err)
	}
	wantCount(t, name, -1)
	if err := s.Release(held[0].ID, held[1].ID); err != nil {
		t.Fatal(err)
	}
	wantCount(t, name, 1)
	for _, permits := range []int64{-1, 2147483648} {
		_, err := s.SetPermits(permits)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	}
	wantCount(t, name, 1)
}

// LeaseTime: Redisson's getLeaseTime; NoLease for a permit without one, ErrNotHeld when not held.
func TestExpirableSemaphoreLeaseTime(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	s := mustExpirable(t, c, name)
	s.TrySetPermits(3)
	leased, err := s.Acquire(bg, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if left, err := leased.LeaseTime(); err != nil || left <= 50*time.Second || left > time.Minute {
		t.Fatalf("LeaseTime of a 1 min permit = %v, %v", left, err)
	}
	forever, err := s.Acquire(bg, NoLease)
	if err != nil {
		t.Fatal(err)
	}
	if left, err := s.LeaseTime(forever.ID); err != nil || left != NoLease {
		t.Fatalf("LeaseTime of a permit without lease = %v, %v; want NoLease", left, err)
	}
	if err := leased.Release(); err != nil {
		t.Fatal(err)
	}
	_, err = leased.LeaseTime()
	wantCode(t, err, CodeNotHeld, ErrNotHeld)
	_, err = s.LeaseTime("00112233445566778899aabbccddeeff")
	wantCode(t, err, CodeNotHeld, ErrNotHeld)
	brief, err := s.Acquire(bg, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	_, err = brief.LeaseTime()
	wantCode(t, err, CodeNotHeld, ErrNotHeld)
	wantCount(t, name, 2) // the expired permit went back; forever is still held
	for _, bad := range []string{"", "xyz", "00112233445566778899aabbccddeefg", "00112233445566778899aabbccddeeff00"} {
		_, err := s.LeaseTime(bad)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	}
	if err := forever.Release(); err != nil {
		t.Fatal(err)
	}
}
