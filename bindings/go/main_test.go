package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

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
	// Most calls of the suite settle in one round trip, which the package makes as a blocking
	// C call; RLOCK_GO_TEST_ASYNC=1 sends every call through the asynchronous path instead.
	if os.Getenv("RLOCK_GO_TEST_ASYNC") == "1" {
		blockingLimit.Store(0)
	}
	code := m.Run()
	stopTLSFixture()
	s.Stop()
	os.Exit(code)
}

func newClient(t *testing.T, opts ...Option) *Client {
	t.Helper()
	c, err := NewClient(redis.URL, opts...)
	if err != nil {
		t.Fatalf("NewClient(%q): %v", redis.URL, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// uniqueName keeps tests apart on a server other tests may share.
func uniqueName(t *testing.T) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "go:" + strings.ReplaceAll(t.Name(), "/", ":") + ":" + hex.EncodeToString(b)
}

func mustLock(t *testing.T, make func(string, ...LockOption) (*Lock, error), name string, opts ...LockOption) *Lock {
	t.Helper()
	l, err := make(name, opts...)
	if err != nil {
		t.Fatalf("making lock %q: %v", name, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func exists(t *testing.T, key string) bool {
	t.Helper()
	ok, err := redis.Exists(key)
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return ok
}

// waitFor polls cond until it holds or the generous timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// result runs fn on a goroutine and returns a channel for its error.
func result(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

// within waits up to d (a generous bound) for ch.
func within(t *testing.T, ch <-chan error, d time.Duration, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return nil
	}
}

func wantCode(t *testing.T, err error, code Code, sentinel error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *rlock.Error with %v, got %T %v", code, err, err)
	}
	if e.Code != code {
		t.Fatalf("want code %v, got %v (%v)", code, e.Code, err)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("errors.Is(%v, %v) is false", err, sentinel)
	}
}

var bg = context.Background()
