package rlock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlock/rlock/bindings/go/internal/redistest"
)

// TLS servers made once for the package: certificates from tests/fixtures/tls-certs.sh in a
// temporary directory, and redis-servers started on first use, stopped by TestMain.

var tlsFixture struct {
	mu      sync.Mutex
	dir     string // the certificates
	servers map[string]*redistest.Server
	err     error
}

// certDir returns the directory of the test certificates, made on first use.
func certDir(t *testing.T) string {
	t.Helper()
	tlsFixture.mu.Lock()
	defer tlsFixture.mu.Unlock()
	if tlsFixture.dir == "" && tlsFixture.err == nil {
		tlsFixture.err = makeCerts()
	}
	if tlsFixture.err != nil {
		t.Fatalf("TLS test certificates: %v", tlsFixture.err)
	}
	return tlsFixture.dir
}

func makeCerts() error {
	dir, err := os.MkdirTemp("", "rlock-go-tls-")
	if err != nil {
		return err
	}
	out, err := exec.Command("bash", "../../tests/fixtures/tls-certs.sh", dir).CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("tls-certs.sh: %v: %s", err, out)
	}
	tlsFixture.dir = dir
	return nil
}

// tlsServer returns the shared server of one kind, started on first use: "tls" (server.crt),
// "mtls" (asks for a client certificate), "mtls12" (the same, TLS 1.2 only), "expired"
// (expired.crt) or "plain" (no TLS).
func tlsServer(t *testing.T, kind string) *redistest.Server {
	t.Helper()
	dir := certDir(t)
	tlsFixture.mu.Lock()
	defer tlsFixture.mu.Unlock()
	if s := tlsFixture.servers[kind]; s != nil {
		return s
	}
	var s *redistest.Server
	var err error
	switch kind {
	case "tls":
		s, err = redistest.StartTLS(redistest.TLS{Dir: dir})
	case "mtls":
		s, err = redistest.StartTLS(redistest.TLS{Dir: dir, AuthClients: true})
	case "mtls12":
		s, err = redistest.StartTLS(redistest.TLS{Dir: dir, AuthClients: true, Protocols: "TLSv1.2"})
	case "expired":
		s, err = redistest.StartTLS(redistest.TLS{Dir: dir, Cert: "expired"})
	case "plain":
		s, err = redistest.StartPrivate()
	default:
		t.Fatalf("no TLS test server %q", kind)
	}
	if err != nil {
		t.Fatalf("starting the %s redis-server: %v", kind, err)
	}
	if tlsFixture.servers == nil {
		tlsFixture.servers = map[string]*redistest.Server{}
	}
	tlsFixture.servers[kind] = s
	return s
}

// stopTLSFixture stops the servers and removes the certificates (TestMain, after the tests).
func stopTLSFixture() {
	tlsFixture.mu.Lock()
	defer tlsFixture.mu.Unlock()
	for _, s := range tlsFixture.servers {
		s.Stop()
	}
	if tlsFixture.dir != "" {
		os.RemoveAll(tlsFixture.dir)
	}
}

// caURL is the server's URL verified against the test CA.
func caURL(t *testing.T, s *redistest.Server) string {
	return s.URL + "?tls_ca_file=" + filepath.Join(certDir(t), "ca.crt")
}

func newTLSClient(t *testing.T, url string, opts ...Option) *Client {
	t.Helper()
	c, err := NewClient(url, opts...)
	if err != nil {
		t.Fatalf("NewClient(%q): %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wantMessage checks err's message has every part and never the secret.
func wantMessage(t *testing.T, err error, secret string, parts ...string) {
	t.Helper()
	t.Log(err)
	for _, part := range parts {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the message does not say %q: %v", part, err)
		}
	}
	if secret != "" && strings.Contains(err.Error(), secret) {
		t.Errorf("the message shows the password: %v", err)
	}
}

// lockUnlock takes and gives back a lock through c, checking the key on the server.
func lockUnlock(t *testing.T, c *Client, s *redistest.Server) {
	t.Helper()
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	if err := l.Lock(bg); err != nil {
		t.Fatalf("Lock over TLS: %v", err)
	}
	if ok, err := s.Exists(name); err != nil || !ok {
		t.Fatalf("the lock's key is not on the TLS server (%v, %v)", ok, err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock over TLS: %v", err)
	}
	if ok, err := s.Exists(name); err != nil || ok {
		t.Fatalf("the lock's key is still on the TLS server (%v, %v)", ok, err)
	}
}

func TestTLSAcquireRelease(t *testing.T) {
	s := tlsServer(t, "tls")
	ca := filepath.Join(certDir(t), "ca.crt")
	t.Run("URL", func(t *testing.T) { lockUnlock(t, newTLSClient(t, caURL(t, s)), s) })
	t.Run("WithTLS", func(t *testing.T) {
		lockUnlock(t, newTLSClient(t, s.URL, WithTLS(TLSOptions{CAFile: ca})), s)
	})
	t.Run("CADir", func(t *testing.T) {
		// A directory of hashed certificates, as openssl rehash leaves it.
		dir := t.TempDir()
		hash, err := exec.Command("openssl", "x509", "-hash", "-noout", "-in", ca).Output()
		if err != nil {
			t.Fatalf("openssl x509 -hash: %v", err)
		}
		if err := os.Symlink(ca, filepath.Join(dir, strings.TrimSpace(string(hash))+".0")); err != nil {
			t.Fatal(err)
		}
		lockUnlock(t, newTLSClient(t, s.URL, WithTLS(TLSOptions{CADir: dir})), s)
	})
	t.Run("TLS13", func(t *testing.T) {
		lockUnlock(t, newTLSClient(t, s.URL, WithTLS(TLSOptions{CAFile: ca, MinVersion: TLS13})), s)
	})
	t.Run("URLAndOptionAgreeing", func(t *testing.T) {
		c := newTLSClient(t, caURL(t, s)+"&tls_verify=full", WithTLS(TLSOptions{CAFile: ca, ServerName: "localhost"}))
		lockUnlock(t, c, s)
	})
}

// A connection the server killed comes back resuming the TLS session of the first one.
func TestTLSReconnectResumesTheSession(t *testing.T) {
	s, err := redistest.StartTLS(redistest.TLS{Dir: certDir(t)})
	if err != nil {
		t.Fatalf("starting a TLS redis-server: %v", err)
	}
	t.Cleanup(s.Stop)
	c := newTLSClient(t, caURL(t, s))
	lockUnlock(t, c, s)
	first, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if first.TLSHandshakes < 1 || first.TLSSessionsResumed != 0 {
		t.Fatalf("before the kill: %d handshakes, %d resumed", first.TLSHandshakes, first.TLSSessionsResumed)
	}
	if _, err := s.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"); err != nil {
		t.Fatalf("CLIENT KILL: %v", err)
	}
	lockUnlock(t, c, s)
	after, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if after.TLSHandshakes != first.TLSHandshakes+1 || after.TLSSessionsResumed != 1 {
		t.Fatalf("after the kill: %d handshakes (before %d), %d resumed, want one more, resumed",
			after.TLSHandshakes, first.TLSHandshakes, after.TLSSessionsResumed)
	}
}

// Waiters on another client, woken by the holder's release through pub/sub on TLS
// connections: their poll cap is far beyond the test's bound, so only the wake-up can end
// their wait in time.
func TestTLSWaitersWoken(t *testing.T) {
	s := tlsServer(t, "tls")
	holderClient := newTLSClient(t, caURL(t, s))
	waiterClient := newTLSClient(t, caURL(t, s), WithPollCap(10*time.Minute))
	name := uniqueName(t)
	holder := mustLock(t, holderClient.Lock, name)
	if err := holder.Lock(bg); err != nil {
		t.Fatal(err)
	}
	const n = 20
	pending := asyncPending.Load()
	errs := make(chan error, n)
	for range n {
		l := mustLock(t, waiterClient.Lock, name)
		go func() {
			if err := l.Lock(bg); err != nil {
				errs <- err
				return
			}
			errs <- l.Unlock()
		}()
	}
	// Each waiter parks on an asynchronous C call (a goroutine, no OS thread).
	waitFor(t, "every goroutine to wait", time.Minute, func() bool {
		return asyncPending.Load()-pending >= n
	})
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	waitAll(t, errs, n, time.Minute, "a waiter over TLS")
	if ok, err := s.Exists(name); err != nil || ok {
		t.Fatalf("the lock is still held after every waiter unlocked (%v, %v)", ok, err)
	}
}

func TestTLSTryLockWaitAndCancel(t *testing.T) {
	s := tlsServer(t, "tls")
	c := newTLSClient(t, caURL(t, s))
	name := uniqueName(t)
	holder := mustLock(t, c.Lock, name)
	if err := holder.Lock(bg); err != nil {
		t.Fatal(err)
	}
	waiter := mustLock(t, c.Lock, name)
	ok, err := waiter.TryLock(bg, 200*time.Millisecond, 0)
	if ok || err != nil {
		t.Fatalf("TryLock of a held lock: %v, %v; want false, nil", ok, err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := result(func() error { return waiter.Lock(ctx) })
	cancel()
	if err := within(t, done, 30*time.Second, "the cancelled Lock"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock: %v", err)
	}
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	if ok, err := waiter.TryLock(bg, 10*time.Second, 0); !ok || err != nil {
		t.Fatalf("TryLock after the release: %v, %v", ok, err)
	}
	if err := waiter.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// The watchdog's renewals go over TLS: the hold outlives its lease several times.
func TestTLSWatchdogRenews(t *testing.T) {
	s := tlsServer(t, "tls")
	const lease = 900 * time.Millisecond
	c := newTLSClient(t, caURL(t, s), WithWatchdogLease(lease))
	name := uniqueName(t)
	l := mustLock(t, c.Lock, name)
	lost := make(chan LostReason, 1)
	if err := l.OnLost(func(r LostReason) { lost <- r }); err != nil {
		t.Fatal(err)
	}
	if err := l.Lock(bg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * lease)
	ttl, err := s.PTTL(name)
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > lease.Milliseconds() {
		t.Fatalf("after 4 leases the key's PTTL is %d ms, want a renewed lease (0, %d]", ttl, lease.Milliseconds())
	}
	select {
	case r := <-lost:
		t.Fatalf("the watched hold was lost: %v", r)
	default:
	}
	if !l.Held() {
		t.Fatal("Held() is false while the watchdog renews")
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestTLSMutual(t *testing.T) {
	s := tlsServer(t, "mtls")
	dir := certDir(t)
	ca, cert, key := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	t.Run("WithTLS", func(t *testing.T) {
		lockUnlock(t, newTLSClient(t, s.URL, WithTLS(TLSOptions{CAFile: ca, CertFile: cert, KeyFile: key})), s)
	})
	t.Run("URL", func(t *testing.T) {
		lockUnlock(t, newTLSClient(t, caURL(t, s)+"&tls_cert_file="+cert+"&tls_key_file="+key), s)
	})
	t.Run("MinVersion", func(t *testing.T) {
		// A server that speaks TLS 1.2 only: fine by default, refused with MinVersion TLS13.
		s12 := tlsServer(t, "mtls12")
		opts := TLSOptions{CAFile: ca, CertFile: cert, KeyFile: key}
		lockUnlock(t, newTLSClient(t, s12.URL, WithTLS(opts)), s12)
		opts.MinVersion = TLS13
		_, err := NewClient(s12.URL, WithTLS(opts))
		wantCode(t, err, CodeTLS, ErrTLS)
		wantMessage(t, err, "", "TLS")
	})
	t.Run("WithoutClientCertificateTLS12", func(t *testing.T) {
		// TLS 1.2: the server refuses within the handshake.
		_, err := NewClient(tlsServer(t, "mtls12").URL, WithTLS(TLSOptions{CAFile: ca}))
		wantCode(t, err, CodeTLS, ErrTLS)
		wantMessage(t, err, "", "TLS")
	})
	t.Run("WithoutClientCertificateTLS13", func(t *testing.T) {
		// TLS 1.3: the server refuses after the client's handshake is done, with an alert and a
		// close that may meet the client's first command; the alert is still what is reported.
		_, err := NewClient(s.URL, WithTLS(TLSOptions{CAFile: ca}))
		wantCode(t, err, CodeTLS, ErrTLS)
		wantMessage(t, err, "", "client certificate")
	})
}

func TestTLSVerification(t *testing.T) {
	s := tlsServer(t, "tls")
	ca := filepath.Join(certDir(t), "ca.crt")
	t.Run("FullWrongName", func(t *testing.T) {
		_, err := NewClient(s.URL, WithTLS(TLSOptions{CAFile: ca, ServerName: "other.invalid"}))
		wantCode(t, err, CodeTLS, ErrTLS)
		wantMessage(t, err, "", "mismatch")
	})
	t.Run("CAIgnoresTheName", func(t *testing.T) {
		c := newTLSClient(t, s.URL, WithTLS(TLSOptions{CAFile: ca, ServerName: "other.invalid", Verify: VerifyCA}))
		lockUnlock(t, c, s)
	})
	t.Run("CAInTheURL", func(t *testing.T) {
		lockUnlock(t, newTLSClient(t, caURL(t, s)+"&tls_server_name=other.invalid&tls_verify=ca"), s)
	})
	t.Run("NoneWithoutCA", func(t *testing.T) {
		lockUnlock(t, newTLSClient(t, s.URL, WithTLS(TLSOptions{Verify: VerifyNone})), s)
	})
	t.Run("FullWithoutCA", func(t *testing.T) {
		// The system's trust store does not know the test CA.
		_, err := NewClient(s.URL)
		wantCode(t, err, CodeTLS, ErrTLS)
		wantMessage(t, err, "", "certificate verify failed")
	})
	t.Run("WrongCA", func(t *testing.T) {
		const password = "s3cr3t-tls-pw"
		url := "rediss://:" + password + "@" + strings.TrimPrefix(s.URL, "rediss://")
		_, err := NewClient(url, WithTLS(TLSOptions{CAFile: filepath.Join(certDir(t), "other-ca.crt")}))
		wantCode(t, err, CodeTLS, ErrTLS)
		wantMessage(t, err, password, "certificate verify failed")
	})
}

func TestTLSExpiredCertificate(t *testing.T) {
	s := tlsServer(t, "expired")
	_, err := NewClient(caURL(t, s))
	wantCode(t, err, CodeTLS, ErrTLS)
	wantMessage(t, err, "", "expired")
}

func TestTLSPlaintextMixups(t *testing.T) {
	const password = "s3cr3t-mixup-pw"
	t.Run("PlaintextServerOnRediss", func(t *testing.T) {
		plain := tlsServer(t, "plain")
		url := "rediss://:" + password + "@" + strings.TrimPrefix(plain.URL, "redis://") +
			"?tls_ca_file=" + filepath.Join(certDir(t), "ca.crt")
		_, err := NewClient(url, WithConnectTimeout(2*time.Second))
		if !errors.Is(err, ErrTLS) && !errors.Is(err, ErrConnection) {
			t.Fatalf("a plaintext server on rediss://: %v, want ErrTLS or ErrConnection", err)
		}
		wantMessage(t, err, password, "plaintext")
	})
	t.Run("TLSServerOnRedis", func(t *testing.T) {
		s := tlsServer(t, "tls")
		url := "redis://:" + password + "@" + strings.TrimPrefix(s.URL, "rediss://")
		_, err := NewClient(url, WithConnectTimeout(2*time.Second))
		wantCode(t, err, CodeConnection, ErrConnection)
		wantMessage(t, err, password, "TLS port")
	})
}

func TestTLSBadOptions(t *testing.T) {
	s := tlsServer(t, "tls")
	dir := certDir(t)
	ca := filepath.Join(dir, "ca.crt")
	cases := []struct {
		what  string
		url   string
		opts  TLSOptions
		field string // named in the message
	}{
		{"Verify out of range", s.URL, TLSOptions{CAFile: ca, Verify: 3}, "Verify"},
		{"negative Verify", s.URL, TLSOptions{CAFile: ca, Verify: -1}, "Verify"},
		{"MinVersion out of range", s.URL, TLSOptions{CAFile: ca, MinVersion: 2}, "MinVersion"},
		{"Sentinels out of range", s.URL, TLSOptions{CAFile: ca, Sentinels: 3}, "Sentinels"},
		{"NUL in CAFile", s.URL, TLSOptions{CAFile: ca + "\x00x"}, "CAFile"},
		{"NUL in ServerName", s.URL, TLSOptions{CAFile: ca, ServerName: "a\x00b"}, "ServerName"},
		{"missing CA file", s.URL, TLSOptions{CAFile: filepath.Join(dir, "missing.crt")}, "missing.crt"},
		{"key without certificate", s.URL, TLSOptions{CAFile: ca, KeyFile: filepath.Join(dir, "client.key")}, "tls_"},
		{"plaintext URL", strings.Replace(s.URL, "rediss://", "redis://", 1), TLSOptions{CAFile: ca}, "rediss://"},
		{"unix URL", "unix:///nonexistent.sock", TLSOptions{CAFile: ca}, "rediss://"},
		{"server name in both", caURL(t, s) + "&tls_server_name=localhost", TLSOptions{ServerName: "127.0.0.1"}, "tls_server_name"},
		{"CA file in both", caURL(t, s), TLSOptions{CAFile: filepath.Join(dir, "other-ca.crt")}, "tls_ca_file"},
		{"verify in both", caURL(t, s) + "&tls_verify=ca", TLSOptions{Verify: VerifyNone}, "tls_verify"},
		{"sentinels in both", "rediss-sentinel://127.0.0.1:1/mymaster?sentinel_tls=yes", TLSOptions{Sentinels: SentinelTLSOff}, "sentinel_tls"},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			c, err := NewClient(tc.url, WithTLS(tc.opts))
			if c != nil {
				c.Close()
			}
			wantCode(t, err, CodeInvalid, ErrInvalidArgument)
			wantMessage(t, err, "", tc.field)
		})
	}
	t.Run("TLS settings in a plaintext URL", func(t *testing.T) {
		_, err := NewClient("redis://127.0.0.1:1?tls_ca_file=" + ca)
		wantCode(t, err, CodeInvalid, ErrInvalidArgument)
		wantMessage(t, err, "", "rediss://")
	})
}

func TestTLSEnumsMatchTheHeader(t *testing.T) {
	for enum, ours := range map[string]map[string]int{
		"rlock_tls_verify": {"RLOCK_TLS_VERIFY_FULL": int(VerifyFull), "RLOCK_TLS_VERIFY_CA": int(VerifyCA),
			"RLOCK_TLS_VERIFY_NONE": int(VerifyNone)},
		"rlock_tls_version": {"RLOCK_TLS_1_2": int(TLS12), "RLOCK_TLS_1_3": int(TLS13)},
		"rlock_sentinel_tls": {"RLOCK_SENTINEL_TLS_AUTO": int(SentinelTLSAuto),
			"RLOCK_SENTINEL_TLS_ON": int(SentinelTLSOn), "RLOCK_SENTINEL_TLS_OFF": int(SentinelTLSOff)},
	} {
		header := headerEnum(t, enum)
		if len(header) != len(ours) {
			t.Errorf("%s has %d items in rlock.h, %d in tls.go", enum, len(header), len(ours))
		}
		for name, v := range header {
			if got, ok := ours[name]; !ok || got != v {
				t.Errorf("rlock.h has %s = %d; tls.go has %d (present: %v)", name, v, got, ok)
			}
		}
	}
}
