package rlock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// WithKeyPrefix: keys live under prefix+name, a client without the prefix meets the same lock
// under that spelling, events name the lock as given, and bad prefixes are refused.
func TestKeyPrefixKeepsKeysBehindThePrefix(t *testing.T) {
	ctx := context.Background()
	name := uniqueName(t)
	svc := newClient(t, WithKeyPrefix("svc:"))
	plain := newClient(t)
	l := mustLock(t, svc.Lock, name)
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists(t, "svc:"+name) || exists(t, name) {
		t.Fatalf("want the key svc:%s and not %s", name, name)
	}
	if l.Name() != name {
		t.Fatalf("Name() = %q, want the name as given %q", l.Name(), name)
	}
	other := mustLock(t, plain.Lock, "svc:"+name)
	if ok, err := other.TryLock(ctx, 0, time.Minute); err != nil || ok {
		t.Fatalf("an unprefixed client took the prefixed lock: %v %v", ok, err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestKeyPrefixEventsNameTheLockAsGiven(t *testing.T) {
	ctx := context.Background()
	name := uniqueName(t)
	svc := newClient(t, WithKeyPrefix("svc:"))
	var mu sync.Mutex
	var names []string
	if err := svc.SetEventHandler(func(e Event) {
		mu.Lock()
		names = append(names, e.Name)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	l := mustLock(t, svc.Lock, name)
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an event", 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(names) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if n != name {
			t.Fatalf("event name %q, want %q", n, name)
		}
	}
}

func TestKeyPrefixBadValuesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		url, prefix, want string
	}{
		{redis.URL, "", "must not be empty"},
		{redis.URL, "a\x00b", "NUL byte"},
		{redis.URL, strings.Repeat("p", 1025), "key_prefix is 1025 bytes"},
	} {
		_, err := NewClient(tc.url, WithKeyPrefix(tc.prefix))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WithKeyPrefix(%.20q): error %v, want one containing %q", tc.prefix, err, tc.want)
		}
	}
}

func TestWatchKeyEventsReportsExpiredAndDeletedKeys(t *testing.T) {
	before, err := redis.Do("CONFIG", "GET", "notify-keyspace-events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { redis.Do("CONFIG", "SET", "notify-keyspace-events", before.([]any)[1].(string)) })
	if _, err := redis.Do("CONFIG", "SET", "notify-keyspace-events", ""); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	name := uniqueName(t)
	svc := newClient(t, WithKeyPrefix("svc:"))
	if err := svc.WatchKeyEvents(true, true); !errors.Is(err, ErrUnsupported) ||
		!strings.Contains(err.Error(), "notify-keyspace-events") {
		t.Fatalf("WatchKeyEvents on a server without notifications: %v", err)
	}
	if _, err := redis.Do("CONFIG", "SET", "notify-keyspace-events", "Egx"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	if err := svc.SetEventHandler(func(e Event) {
		mu.Lock()
		seen[e.Kind.String()+" "+e.Name] = true
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := svc.WatchKeyEvents(true, true); err != nil {
		t.Fatal(err)
	}
	l := mustLock(t, svc.Lock, name)
	if ok, err := l.TryLock(ctx, 0, 100*time.Millisecond); err != nil || !ok {
		t.Fatalf("TryLock: %v %v", ok, err)
	}
	d := mustLock(t, svc.Lock, name+":d")
	if err := d.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Unlock(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the key events", 5*time.Second, func() bool {
		// Redis expires a key when it is read or when its expiry scan reaches it; on a server
		// shared with other tests' many keys with an expiry, the scan alone may take longer
		// than this wait. The read makes the expiry (and its event) happen now.
		if _, err := redis.Do("EXISTS", "svc:"+name); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return seen["key_expired "+name] && seen["key_deleted "+name+":d"]
	})
	if err := svc.WatchKeyEvents(false, false); err != nil {
		t.Fatal(err)
	}
}
