package rlock

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rlock/rlock/bindings/go/internal/redistest"
)

// Strings reach Redis exactly or are refused (docs/bad-input.md H3, H24).

// connectionsReceived is the server's count of accepted connections; reading it takes one.
func connectionsReceived(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	info, err := s.Do("INFO", "stats")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info.(string), "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("INFO stats has no total_connections_received")
	return 0
}

func TestH24URLWithNULIsRefusedBeforeConnecting(t *testing.T) {
	s, err := redistest.StartPrivate()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	port := strings.TrimPrefix(s.URL, "redis://127.0.0.1:")
	for _, url := range []string{
		"redis://127.0.0.1:" + port + "\x00garbage",
		"redis://127.0.0.1\x00.evil:" + port,
		"redis://:pass\x00word@127.0.0.1:" + port,
		"redis://us\x00er:pw@127.0.0.1:" + port,
		"redis://127.0.0.1:" + port + "/0?sync_timeout_ms=50\x00",
	} {
		before := connectionsReceived(t, s)
		c, err := NewClient(url)
		if c != nil {
			c.Close()
		}
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
		if msg := err.Error(); !strings.Contains(msg, "url") || !strings.Contains(msg, "NUL") ||
			strings.Contains(msg, "word") || strings.Contains(msg, "garbage") {
			t.Errorf("%q: the message should name the url and the NUL, not echo it: %s", url, msg)
		}
		if after := connectionsReceived(t, s); after != before+1 { // +1: the INFO itself
			t.Errorf("%q: %d connections were made", url, after-before-1)
		}
	}
}

// keysWithPrefix lists the keys that start with prefix, as Redis stores them.
func keysWithPrefix(t *testing.T, prefix string) []string {
	t.Helper()
	reply, err := redis.Do("KEYS", prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, k := range reply.([]any) {
		keys = append(keys, k.(string))
	}
	sort.Strings(keys)
	return keys
}

func TestH3NamesReachRedisByteForByte(t *testing.T) {
	c := newClient(t)
	high := make([]byte, 0, 128)
	for b := 0x80; b <= 0xff; b++ {
		high = append(high, byte(b))
	}
	for _, suffix := range []string{
		":\u9501\U0001F512", // outside the BMP: 4 bytes in UTF-8
		string(high),
		"\x00after-nul",
		"\xc0\x80",     // modified UTF-8's NUL: two bytes, kept as they are
		"\xed\xa0\x80", // a surrogate encoded as if it were a character
	} {
		prefix := uniqueName(t)
		name := prefix + suffix
		l := mustLock(t, c.Lock, name)
		if err := l.Lock(bg); err != nil {
			t.Fatal(err)
		}
		if keys := keysWithPrefix(t, prefix); len(keys) != 1 || keys[0] != name {
			t.Errorf("name %q: keys %q", name, keys)
		}
		other := mustLock(t, c.Lock, name)
		if ok, err := other.TryLock(bg, 0, 0); ok || err != nil {
			t.Errorf("name %q: another value got it: %v %v", name, ok, err)
		}
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
		if keys := keysWithPrefix(t, prefix); len(keys) != 0 {
			t.Errorf("name %q: keys left %q", name, keys)
		}
	}
}

func TestH24ErrorMessagesAreCapped(t *testing.T) {
	_, err := NewClient("redis://" + strings.Repeat("h", 100000) + ":1")
	wantCode(t, err, CodeConnection, ErrConnection)
	var e *Error
	if !errors.As(err, &e) || len(e.Message) > 1024 {
		t.Fatalf("a message of %d bytes", len(err.Error()))
	}
	if !strings.HasPrefix(e.Message, "cannot connect to Redis at ") {
		t.Fatalf("message %.200s", e.Message)
	}
}
