package rlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlock/rlock/bindings/go/internal/redistest"
)

func TestSentinelTable(t *testing.T) {
	cases := []struct {
		code Code
		is   []error
		not  []error
	}{
		{CodeTimedOut, []error{ErrNotObtained}, []error{ErrNotHeld}},
		{CodeNotHeld, []error{ErrNotHeld}, []error{ErrNotOwner}},
		{CodeNotOwner, []error{ErrNotOwner, ErrNotHeld}, []error{ErrLockLost}},
		{CodeLost, []error{ErrLockLost}, []error{ErrNotHeld}},
		{CodeBusy, []error{ErrBusy, ErrRedis}, []error{ErrConnection}},
		{CodeClosed, []error{ErrClosed}, nil},
		{CodeDeadlock, []error{ErrDeadlock}, nil},
		{CodeBadHandle, []error{ErrClosed}, []error{ErrInvalidArgument}},
		{CodeForked, []error{ErrForked}, []error{ErrClosed}},
		{CodeError, nil, []error{ErrRedis, ErrInternal}},
	}
	for _, tc := range cases {
		err := fmt.Errorf("wrapped: %w", &Error{Code: tc.code, Message: "m"})
		for _, s := range tc.is {
			if !errors.Is(err, s) {
				t.Errorf("%v should match %v", tc.code, s)
			}
		}
		for _, s := range tc.not {
			if errors.Is(err, s) {
				t.Errorf("%v should not match %v", tc.code, s)
			}
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("errors.As lost the code %v", tc.code)
		}
	}
	if CodeDeadlock.String() != "RLOCK_EDEADLK" || CodeBadHandle.String() != "RLOCK_EBADHANDLE" ||
		CodeForked.String() != "RLOCK_EFORKED" ||
		Code(-99).String() != "rlock code -99" {
		t.Errorf("Code.String: %q %q %q", CodeDeadlock, CodeBadHandle, Code(-99))
	}
}

func TestH12ErrorsFromTheLibrary(t *testing.T) {
	_, err := NewClient("http://nowhere")
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	_, err = NewClient(fmt.Sprintf("redis://127.0.0.1:%d", port), WithConnectTimeout(time.Second))
	wantCode(t, err, CodeConnection, ErrConnection)

	if !strings.HasPrefix(redis.URL, "redis://") {
		t.Log("the server is on a unix socket: skipping the AUTH check")
		return
	}
	_, err = NewClient("redis://nobody:wrong@" + strings.TrimPrefix(redis.URL, "redis://"))
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong credentials: %v", err)
	}
}

func TestH1EmptyName(t *testing.T) {
	c := newClient(t)
	_, err := c.Lock("")
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = c.FairLock("")
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
}

func TestH2LongName(t *testing.T) {
	c := newClient(t)
	_, err := c.Lock(strings.Repeat("x", 70000))
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = c.Lock(strings.Repeat("x", 1<<20)) // 1 MiB
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	small := newClient(t, WithMaxNameLen(8))
	_, err = small.Lock("123456789")
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	if _, err := small.Lock("12345678"); err != nil {
		t.Fatalf("a name at the limit: %v", err)
	}
	_, err = NewClient(redis.URL, WithMaxNameLen(64<<20))
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
}

func TestH5H7BadLeaseAndWait(t *testing.T) {
	c := newClient(t)
	_, err := c.Lock("n", WithLease(-time.Second))
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = c.Lock("n", WithSpinBackoff(time.Millisecond, time.Second))
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = c.SpinLock("n", WithSpinBackoff(time.Second, time.Millisecond))
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)

	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	_, err = l.TryLock(bg, -time.Second, 0) // H7: a negative wait
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = l.TryLock(bg, 0, -time.Second) // H5: a negative lease
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	if exists(t, name) {
		t.Fatal("bad input reached Redis")
	}
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	wantCode(t, l.Extend(0), CodeInvalid, ErrInvalidArgument)
	wantCode(t, l.Extend(-time.Second), CodeInvalid, ErrInvalidArgument)
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if exists(t, name) {
		t.Fatal("bad input left a lock behind")
	}
}

func TestH9NilArguments(t *testing.T) {
	c := newClient(t)
	_, err := c.Lock("n", nil)
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = NewClient(redis.URL, nil)
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	var nilCtx context.Context
	wantCode(t, l.Lock(nilCtx), CodeInvalid, ErrInvalidArgument)
	_, err = NewMultiLock()
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = NewRedLock(l, nil)
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	if exists(t, name) {
		t.Fatal("bad input reached Redis")
	}
}

func TestH10ClosedValues(t *testing.T) {
	c := newClient(t)
	l := mustLock(t, c.Lock, uniqueName(t))
	name := uniqueName(t)
	closed := mustLock(t, c.Lock, name)
	closed.Close()
	wantCode(t, closed.Lock(bg), CodeClosed, ErrClosed)
	_, err := closed.TryLock(bg, 0, 0)
	wantCode(t, err, CodeClosed, ErrClosed)
	wantCode(t, closed.Unlock(), CodeClosed, ErrClosed)
	_, err = closed.State(bg)
	wantCode(t, err, CodeClosed, ErrClosed)
	_, err = closed.ForceUnlock(bg)
	wantCode(t, err, CodeClosed, ErrClosed)
	wantCode(t, closed.OnLost(func(LostReason) {}), CodeClosed, ErrClosed)
	_, err = NewMultiLock(l, closed)
	wantCode(t, err, CodeClosed, ErrClosed)
	if err := closed.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if exists(t, name) {
		t.Fatal("a closed value reached Redis")
	}
}

func TestH11BadClientOptions(t *testing.T) {
	for _, url := range []string{"http://nowhere", "redis://", "redis://127.0.0.1:0", "redis://[::1:6379"} {
		_, err := NewClient(url)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	}
	_, err := NewClient(redis.URL, WithPoolSize(0))
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
	_, err = NewClient(redis.URL, WithCommandTimeout(-1))
	wantCode(t, err, CodeInvalid, ErrInvalidArgument)
}

// Braces are kept byte for byte (the key is the name itself, as in Redisson).
func TestH4NamesWithBraces(t *testing.T) {
	c := newClient(t)
	for _, name := range []string{uniqueName(t) + "a}b{c", "{" + uniqueName(t) + "}:x", uniqueName(t) + "}{"} {
		l := mustLock(t, c.Lock, name)
		other := mustLock(t, c.Lock, name)
		if err := l.Lock(bg); err != nil {
			t.Fatal(err)
		}
		if !exists(t, name) {
			t.Fatalf("no key named %q", name)
		}
		if ok, err := other.TryLock(bg, 0, 0); ok || err != nil {
			t.Fatalf("another value got %q: %v %v", name, ok, err)
		}
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
		if exists(t, name) {
			t.Fatalf("%q left behind", name)
		}
	}
}

func TestH3NameWithNUL(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t) + "\x00tail"
	l := mustLock(t, c.Lock, name)
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	if !exists(t, name) {
		t.Fatal("the key is not the full binary name")
	}
	l.Unlock()
}

func TestVersionCheck(t *testing.T) {
	if err := checkLoadedVersion(); err != nil {
		t.Fatalf("the loaded library: %v", err)
	}
	if HeaderVersion/100 != 3 || !strings.HasPrefix(Version(), "0.3.") {
		t.Fatalf("HeaderVersion %d, Version %q", HeaderVersion, Version())
	}
	for _, tc := range []struct {
		header, loaded uint
		ok             bool
	}{
		{100, 100, true},
		{100, 107, true},    // newer patch
		{100, 300, true},    // newer minor
		{105, 100, true},    // older patch
		{200, 100, false},   // older minor
		{100, 10100, false}, // other major
		{10100, 100, false},
	} {
		err := checkVersion(tc.header, tc.loaded)
		if (err == nil) != tc.ok {
			t.Errorf("checkVersion(%d, %d) = %v, want ok=%v", tc.header, tc.loaded, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrVersion) {
			t.Errorf("checkVersion error %v is not ErrVersion", err)
		}
	}
}

// A dropped value's finalizer frees the handle only: the key is not deleted, but it is no
// longer renewed, so it expires. While renewed the TTL stays above 2/3 of the 4s lease; a
// release would delete the key at that level, an expiry only after the TTL ran down.
func TestH21FinalizerOnlyFrees(t *testing.T) {
	c := newClient(t, WithWatchdogLease(4*time.Second))
	name := uniqueName(t)
	func() {
		l, err := c.Lock(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Lock(bg); err != nil {
			t.Fatal(err)
		}
	}()
	for range 3 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	lastTTL := int64(-2)
	for deadline := time.Now().Add(20 * time.Second); ; {
		ttl, err := redis.PTTL(name)
		if err != nil {
			t.Fatal(err)
		}
		if ttl == -2 {
			break
		}
		lastTTL = ttl
		if time.Now().After(deadline) {
			t.Fatal("the dropped lock is still renewed: the finalizer did not free it")
		}
		runtime.GC()
		time.Sleep(25 * time.Millisecond)
	}
	if lastTTL == -2 {
		t.Fatal("the key was gone right after GC: the finalizer released it")
	}
	if lastTTL > 2500 {
		t.Fatalf("the key disappeared with %d ms left: deleted, not expired", lastTTL)
	}
}

// privateServer is a redis-server of this test's own, stopped at its end.
func privateServer(t *testing.T) *redistest.Server {
	t.Helper()
	s, err := redistest.StartPrivate()
	if err != nil {
		t.Fatalf("starting a private redis-server: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func TestH16UnlockWhileRedisIsDownIsErrConnectionAndBounded(t *testing.T) {
	server := privateServer(t)
	client, err := NewClient(server.URL, WithCommandTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	lock, err := client.Lock(uniqueName(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := lock.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	server.Stop()
	start := time.Now()
	err = lock.Unlock()
	took := time.Since(start)
	if !errors.Is(err, ErrConnection) {
		t.Fatalf("Unlock with Redis down: %v, want ErrConnection", err)
	}
	if took > 300*time.Millisecond+250*time.Millisecond {
		t.Errorf("Unlock took %v, more than the command timeout", took)
	}
	if lock.Held() {
		t.Error("Held() after the failed Unlock: renewal should have stopped")
	}
}

func TestH23OomAndReadOnlyAreTypedAndNeverAcquired(t *testing.T) {
	server := privateServer(t)
	master := privateServer(t)
	client, err := NewClient(server.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	name := uniqueName(t)
	lock, err := client.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	do := func(args ...string) {
		t.Helper()
		if _, err := server.Do(args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}

	do("CONFIG", "SET", "maxmemory", "1") // noeviction: every write is refused
	ok, err := lock.TryLock(context.Background(), 0, 0)
	if ok || !errors.Is(err, ErrRedisOOM) || !errors.Is(err, ErrRedis) {
		t.Fatalf("TryLock on a full server: %v, %v; want ErrRedisOOM (and ErrRedis)", ok, err)
	}
	do("CONFIG", "SET", "maxmemory", "0")

	u := strings.TrimPrefix(master.URL, "redis://127.0.0.1:")
	do("REPLICAOF", "127.0.0.1", u)
	ok, err = lock.TryLock(context.Background(), 0, 0)
	if ok || !errors.Is(err, ErrReadOnly) || !errors.Is(err, ErrRedis) {
		t.Fatalf("TryLock on a replica: %v, %v; want ErrReadOnly (and ErrRedis)", ok, err)
	}
	if lock.Held() {
		t.Fatal("Held() after refused acquires")
	}
	do("REPLICAOF", "NO", "ONE")
	if exists, err := server.Exists(name); err != nil || exists {
		t.Fatalf("the refused acquires left the key: %v %v", exists, err)
	}
	ok, err = lock.TryLock(context.Background(), 0, 0)
	if !ok || err != nil {
		t.Fatalf("TryLock once writable again: %v, %v", ok, err)
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
}
