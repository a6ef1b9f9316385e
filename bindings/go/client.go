package rlock

/*
#include "shim.h"
*/
import "C"

import (
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// DefaultURL is used when NewClient gets an empty URL and $RLOCK_URL is not set.
const DefaultURL = "redis://127.0.0.1:6379"

// Client is a connection pool to one Redis deployment, shared by every lock made from it. It
// is safe for concurrent use.
type Client struct {
	mu  sync.RWMutex // held shared while the C client is used, exclusively to free it
	ptr *C.rlock_client
	id  string

	events eventState // SetEventHandler (events.go)
	// A Lock that has to wait first tries once in a blocking call, then waits asynchronously:
	// two acquires for the C library, of which the first timed out. Stats subtracts these.
	triesBeforeWait atomic.Uint64
}

// Option configures NewClient.
type Option func(*clientConfig)

type clientConfig struct {
	err                                      error
	connectMS, commandMS, watchdogMS, pollMS int64
	poolSize                                 int
	maxNameLen                               uint64
	tls                                      *TLSOptions // nil: TLS only as the URL says
	statsOff                                 bool
	keyPrefix                                *string // nil: none
}

// positiveMS records an error for a duration that is not positive; 0 (the C default) is
// never passed for an option the caller set.
func (c *clientConfig) positiveMS(option string, d time.Duration) int64 {
	if d <= 0 && c.err == nil {
		c.err = invalid("%s: the duration must be positive, got %v", option, d)
	}
	return durationMS(d)
}

// WithConnectTimeout bounds each connection attempt (default 2s).
func WithConnectTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.connectMS = c.positiveMS("WithConnectTimeout", d) }
}

// WithCommandTimeout bounds every round trip to Redis (default 3s).
func WithCommandTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.commandMS = c.positiveMS("WithCommandTimeout", d) }
}

// WithPoolSize sets the number of command connections (default 8).
func WithPoolSize(n int) Option {
	return func(c *clientConfig) {
		if n <= 0 && c.err == nil {
			c.err = invalid("WithPoolSize: the pool size must be positive, got %d", n)
		}
		c.poolSize = n
	}
}

// WithWatchdogLease sets the lease of locks held without an explicit one (default 30s). The
// client's watchdog renews it every third of that while the lock is held, so a process that
// dies leaves the lock for at most this long.
func WithWatchdogLease(d time.Duration) Option {
	return func(c *clientConfig) { c.watchdogMS = c.positiveMS("WithWatchdogLease", d) }
}

// WithPollCap sets the longest a waiter sleeps before trying again without being woken
// (default 1s).
func WithPollCap(d time.Duration) Option {
	return func(c *clientConfig) { c.pollMS = c.positiveMS("WithPollCap", d) }
}

// WithMaxNameLen sets the longest lock name accepted, in bytes (default 65536, at most
// 16 MiB): names multiply into several keys and channels, so they are kept bounded.
func WithMaxNameLen(n int) Option {
	return func(c *clientConfig) {
		if n <= 0 && c.err == nil {
			c.err = invalid("WithMaxNameLen: the length must be positive, got %d", n)
		}
		c.maxNameLen = uint64(max(n, 0))
	}
}

// WithKeyPrefix puts prefix before every name, as Redisson's NameMapper does: the keys and
// channels of name N are those of prefix+N, so services sharing one Redis keep apart (a
// Redisson client with the same prefix sees the same locks). Names in events, lost
// notifications and listings come back without it; WithMaxNameLen bounds prefix and name
// together. The URL option key_prefix= sets it too; where both do they must agree.
func WithKeyPrefix(prefix string) Option {
	return func(c *clientConfig) {
		if prefix == "" && c.err == nil {
			c.err = invalid("WithKeyPrefix: the prefix must not be empty")
		}
		if at := strings.IndexByte(prefix, 0); at >= 0 && c.err == nil {
			c.err = invalid("WithKeyPrefix: the prefix contains a NUL byte (at byte %d)", at)
		}
		c.keyPrefix = &prefix
	}
}

// WithStats turns the client's statistics (Client.Stats) on, the default, or off. They cost a
// few atomic additions per call; off is for measuring that cost. The URL option stats=off
// turns them off too.
func WithStats(enabled bool) Option {
	return func(c *clientConfig) { c.statsOff = !enabled }
}

// NewClient connects to Redis once to check the address and credentials. url is
// redis://[[user]:password@]host[:port][/db], unix://[[user]:password@]/path[?db=N] or
// redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master-name[?db=N] or
// redis-cluster://[[user]:password@]host[:port][,host[:port]...]; when
// empty, $RLOCK_URL is used, then DefaultURL. rediss://, rediss-sentinel:// and
// rediss-cluster:// are the same over TLS, with the query options tls_ca_file, tls_ca_dir,
// tls_cert_file, tls_key_file, tls_server_name, tls_verify=full|ca|none,
// tls_min_version=1.2|1.3 and sentinel_tls=yes|no (or see WithTLS).
//
// It fails with ErrVersion if the loaded rlock library does not match the headers this package
// was compiled with, ErrConnection or ErrAuth if Redis cannot be used, ErrTLS if the TLS
// handshake or the server's certificate check fails, ErrInvalidArgument for a bad URL or
// option (also a URL containing a NUL byte, which a C string cannot carry).
func NewClient(url string, opts ...Option) (*Client, error) {
	if err := checkLoadedVersion(); err != nil {
		return nil, err
	}
	var cfg clientConfig
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("NewClient: nil Option")
		}
		opt(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	if url == "" {
		url = os.Getenv("RLOCK_URL")
	}
	if url == "" {
		url = DefaultURL
		if cfg.tls != nil {
			url = "rediss" + strings.TrimPrefix(DefaultURL, "redis")
		}
	}
	// A C string ends at its first NUL: a URL with one would reach the library cut short.
	if at := strings.IndexByte(url, 0); at >= 0 {
		return nil, invalid("NewClient: url contains a NUL byte (at byte %d); it cannot be passed to the C library", at)
	}
	curl := C.CString(url)
	defer C.free(unsafe.Pointer(curl))
	tls := newCTLS(cfg.tls)
	defer tls.free()
	var cprefix *C.char
	if cfg.keyPrefix != nil {
		cprefix = C.CString(*cfg.keyPrefix)
		defer C.free(unsafe.Pointer(cprefix))
	}
	var ptr *C.rlock_client
	err := check(C.rlock_go_client_new(&ptr, curl, C.int64_t(cfg.connectMS),
		C.int64_t(cfg.commandMS), C.int(cfg.poolSize), C.int64_t(cfg.watchdogMS),
		C.int64_t(cfg.pollMS), C.size_t(cfg.maxNameLen), cBool(cfg.statsOff), cprefix, tls.ptr()))
	if err != nil {
		return nil, err
	}
	c := &Client{ptr: ptr, id: C.GoString(C.rlock_client_id(ptr))}
	// Reached only when no Lock refers to the client any more (each Lock keeps its client),
	// so rlock_client_free has no hold left to release: it just stops threads and disconnects.
	runtime.SetFinalizer(c, func(c *Client) { c.Close() })
	return c, nil
}

// ID returns the client's id (a UUID), the first half of every owner it writes to Redis.
func (c *Client) ID() string {
	return c.id
}

// Close releases what the client's locks still hold (best effort; whatever it fails to
// release expires by its lease), wakes every goroutine waiting for one of its locks with ErrClosed and disconnects.
// Locks made from it return ErrClosed afterwards. Idempotent, and safe while other goroutines
// use the client or its locks.
func (c *Client) Close() error {
	c.mu.Lock()
	ptr := c.ptr
	c.ptr = nil
	c.mu.Unlock()
	if ptr != nil {
		runtime.SetFinalizer(c, nil)
		// Delivers the events already queued to the handler, so its handle goes after.
		C.rlock_client_free(ptr)
		c.events.release()
	}
	return nil
}

// use runs fn with the C client, which stays valid until fn returns.
func (c *Client) use(fn func(ptr *C.rlock_client) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return newError(CodeClosed, "the client is closed")
	}
	return fn(c.ptr)
}
