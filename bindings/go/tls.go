package rlock

/*
#include "shim.h"
*/
import "C"

import (
	"strings"
	"unsafe"
)

// TLSVerify is how a TLS server's certificate is checked.
type TLSVerify int

// The verification modes (rlock_tls_verify).
const (
	VerifyFull TLSVerify = 0 // a trusted chain naming the host (DNS name or IP address): the default
	VerifyCA   TLSVerify = 1 // a trusted chain, whatever names it gives (clusters announcing bare IPs)
	VerifyNone TLSVerify = 2 // no check at all: encrypted, not authenticated (logged once on stderr)
)

// TLSVersion is the oldest TLS version a connection accepts.
type TLSVersion int

// The minimum versions (rlock_tls_version).
const (
	TLS12 TLSVersion = 0 // TLS 1.2 and 1.3: the default
	TLS13 TLSVersion = 1 // TLS 1.3 only
)

// SentinelTLS says whether the sentinels of a Sentinel deployment are reached over TLS too.
type SentinelTLS int

// The sentinel choices (rlock_sentinel_tls).
const (
	SentinelTLSAuto SentinelTLS = 0 // like the master: the default
	SentinelTLSOn   SentinelTLS = 1
	SentinelTLSOff  SentinelTLS = 2 // plaintext sentinels, TLS master (URL: sentinel_tls=no)
)

// TLSOptions are the TLS settings of WithTLS. The zero value is TLS verified against the
// system's trust store, with the host connected to as the name checked. Empty strings are
// unset. The URL's tls_* query options give the same settings; one given both ways must agree.
type TLSOptions struct {
	CAFile     string      // PEM file of trusted CA certificates (URL: tls_ca_file)
	CADir      string      // directory of hashed CA certificates, openssl rehash (tls_ca_dir)
	CertFile   string      // client certificate chain (PEM), for mutual TLS (tls_cert_file)
	KeyFile    string      // its private key (PEM, unencrypted); unset = in CertFile (tls_key_file)
	ServerName string      // sent as SNI and verified; unset = the host connected to (tls_server_name)
	Verify     TLSVerify   // VerifyFull (the zero value), VerifyCA or VerifyNone (tls_verify)
	MinVersion TLSVersion  // TLS12 (the zero value) or TLS13 (tls_min_version)
	Sentinels  SentinelTLS // SentinelTLSAuto (the zero value), SentinelTLSOn or SentinelTLSOff (sentinel_tls)
}

// WithTLS connects to every Redis server over TLS with these settings. The URL must be
// rediss://, rediss-sentinel:// or rediss-cluster:// (a plaintext URL is ErrInvalidArgument);
// an empty URL without $RLOCK_URL is DefaultURL over TLS, rediss://127.0.0.1:6379. NewClient
// reads the files: one it cannot use is ErrInvalidArgument naming it. A failed handshake or
// certificate check is ErrTLS, with OpenSSL's reason in the message.
func WithTLS(opts TLSOptions) Option {
	return func(c *clientConfig) {
		if err := opts.check(); err != nil && c.err == nil {
			c.err = err
		}
		tls := opts
		c.tls = &tls
	}
}

func (o *TLSOptions) check() error {
	texts := []struct{ field, value string }{
		{"CAFile", o.CAFile}, {"CADir", o.CADir}, {"CertFile", o.CertFile},
		{"KeyFile", o.KeyFile}, {"ServerName", o.ServerName},
	}
	for _, t := range texts {
		if at := strings.IndexByte(t.value, 0); at >= 0 {
			return invalid("WithTLS: %s contains a NUL byte (at byte %d); it cannot be passed to the C library", t.field, at)
		}
	}
	if o.Verify < VerifyFull || o.Verify > VerifyNone {
		return invalid("WithTLS: Verify must be VerifyFull, VerifyCA or VerifyNone, got %d", int(o.Verify))
	}
	if o.MinVersion < TLS12 || o.MinVersion > TLS13 {
		return invalid("WithTLS: MinVersion must be TLS12 or TLS13, got %d", int(o.MinVersion))
	}
	if o.Sentinels < SentinelTLSAuto || o.Sentinels > SentinelTLSOff {
		return invalid("WithTLS: Sentinels must be SentinelTLSAuto, SentinelTLSOn or SentinelTLSOff, got %d", int(o.Sentinels))
	}
	return nil
}

// cTLS is TLSOptions as the shim takes them, in C memory (a Go struct would hold Go pointers
// next to it); free releases it and its strings.
type cTLS struct {
	opts    *C.rlock_go_tls
	strings []*C.char
}

// newCTLS returns nil for nil (TLS only as the URL says).
func newCTLS(o *TLSOptions) *cTLS {
	if o == nil {
		return nil
	}
	t := &cTLS{opts: (*C.rlock_go_tls)(C.calloc(1, C.sizeof_rlock_go_tls))}
	text := func(s string) *C.char {
		if s == "" {
			return nil // unset: C takes NULL, and refuses an empty string
		}
		p := C.CString(s)
		t.strings = append(t.strings, p)
		return p
	}
	t.opts.ca_file = text(o.CAFile)
	t.opts.ca_dir = text(o.CADir)
	t.opts.cert_file = text(o.CertFile)
	t.opts.key_file = text(o.KeyFile)
	t.opts.server_name = text(o.ServerName)
	t.opts.verify = C.int(o.Verify)
	t.opts.min_version = C.int(o.MinVersion)
	t.opts.sentinels = C.int(o.Sentinels)
	return t
}

// ptr is what rlock_go_client_new takes: NULL without TLS options.
func (t *cTLS) ptr() *C.rlock_go_tls {
	if t == nil {
		return nil
	}
	return t.opts
}

func (t *cTLS) free() {
	if t == nil {
		return
	}
	for _, p := range t.strings {
		C.free(unsafe.Pointer(p))
	}
	C.free(unsafe.Pointer(t.opts))
}
