// Package redistest gives the tests a real Redis server and a minimal client to inspect it
// independently of rlock.
package redistest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Server is a Redis server the tests use.
type Server struct {
	URL    string // for rlock.NewClient
	cmd    *exec.Cmd
	exited chan struct{}
	dir    string
	tls    *tls.Config // nil: plaintext
}

// Start returns the server named by $RLOCK_TEST_REDIS_URL (the CTest fixture) or, when it is
// not set, starts a throwaway redis-server on a free loopback port.
func Start() (*Server, error) {
	if u := os.Getenv("RLOCK_TEST_REDIS_URL"); u != "" {
		return &Server{URL: u}, nil
	}
	return StartPrivate()
}

// StartPrivate always starts a throwaway redis-server of its own, for a test that stops it or
// changes its configuration.
func StartPrivate() (*Server, error) {
	return start(func(port int) (string, []string) {
		return fmt.Sprintf("redis://127.0.0.1:%d", port), []string{"--port", strconv.Itoa(port)}
	}, nil)
}

// TLS describes a TLS redis-server for StartTLS, with certificates from
// tests/fixtures/tls-certs.sh in Dir.
type TLS struct {
	Dir         string
	Cert        string // the server's certificate and key: Dir/Cert.crt, Dir/Cert.key ("server" if empty)
	AuthClients bool   // mutual TLS: the server asks for a client certificate signed by Dir/ca.crt
	Protocols   string // --tls-protocols, such as "TLSv1.2"; empty: the server's default
}

// StartTLS starts a throwaway redis-server that speaks only TLS. Its URL is
// rediss://127.0.0.1:PORT, without any TLS option. The server's own client (Do) presents
// Dir/client.crt and does not check the server's certificate: the tests check that through
// rlock.
func StartTLS(opts TLS) (*Server, error) {
	cert := opts.Cert
	if cert == "" {
		cert = "server"
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(opts.Dir, "client.crt"), filepath.Join(opts.Dir, "client.key"))
	if err != nil {
		return nil, err
	}
	auth := "no"
	if opts.AuthClients {
		auth = "yes"
	}
	conf := &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true}
	return start(func(port int) (string, []string) {
		args := []string{"--port", "0", "--tls-port", strconv.Itoa(port),
			"--tls-cert-file", filepath.Join(opts.Dir, cert+".crt"),
			"--tls-key-file", filepath.Join(opts.Dir, cert+".key"),
			"--tls-ca-cert-file", filepath.Join(opts.Dir, "ca.crt"),
			"--tls-auth-clients", auth}
		if opts.Protocols != "" {
			args = append(args, "--tls-protocols", opts.Protocols)
		}
		return fmt.Sprintf("rediss://127.0.0.1:%d", port), args
	}, conf)
}

// start runs redis-server with listen's URL and arguments on a free port, trying another port
// when that one was taken meanwhile.
func start(listen func(port int) (string, []string), tlsConf *tls.Config) (*Server, error) {
	bin := os.Getenv("RLOCK_TEST_REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	dir, err := os.MkdirTemp("", "rlock-go-redis-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 10 {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		url, args := listen(port)
		s := &Server{URL: url, dir: dir, tls: tlsConf}
		s.cmd = exec.Command(bin, append(args, "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--maxclients", "2000")...)
		s.cmd.Stdout = io.Discard
		s.cmd.Stderr = io.Discard
		if err := s.cmd.Start(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("starting %s: %w", bin, err)
		}
		exited := make(chan struct{})
		s.exited = exited
		go func() { s.cmd.Wait(); close(exited) }()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			if reply, err := s.Do("PING"); err == nil && reply == "PONG" {
				return s, nil
			}
			select {
			case <-exited: // port taken meanwhile: try another
				deadline = time.Time{}
			case <-time.After(20 * time.Millisecond):
			}
		}
		s.cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("redis-server on port %d did not answer", port)
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Stop stops a server that Start started.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	os.RemoveAll(s.dir)
}

func (s *Server) dial() (net.Conn, error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "unix" {
		return net.DialTimeout("unix", u.Path, 2*time.Second)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "6379")
	}
	if s.tls != nil {
		return tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", host, s.tls)
	}
	return net.DialTimeout("tcp", host, 2*time.Second)
}

// Do runs one command on a new connection. Replies: string (simple and bulk), int64, nil,
// []any, or an error for an error reply.
func (s *Server) Do(args ...string) (any, error) {
	conn, err := s.dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(conn))
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, errors.New(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		items := make([]any, n)
		for i := range items {
			if items[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return items, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// Exists reports whether key exists.
func (s *Server) Exists(key string) (bool, error) {
	n, err := s.Do("EXISTS", key)
	if err != nil {
		return false, err
	}
	return n == int64(1), nil
}

// PTTL returns the remaining TTL of key in ms (-1: none, -2: no key).
func (s *Server) PTTL(key string) (int64, error) {
	n, err := s.Do("PTTL", key)
	if err != nil {
		return 0, err
	}
	v, ok := n.(int64)
	if !ok {
		return 0, fmt.Errorf("PTTL replied %v", n)
	}
	return v, nil
}
