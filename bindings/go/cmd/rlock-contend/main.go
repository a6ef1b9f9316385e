// Command rlock-contend is the Go worker of the cross-language contention test:
//
//	rlock-contend URL DIR ITERATIONS NAME [NAME...]
//
// For i in 0..ITERATIONS-1 it takes the reentrant lock NAMES[i % len(NAMES)] (waiting without
// bound, watchdog lease), creates DIR/NAME.inside exclusively (exit 3 with "overlap on NAME"
// if it exists: another owner is inside), adds one to the decimal counter in DIR/NAME.count,
// removes DIR/NAME.inside and releases the lock. Any other error: message on stderr, exit 1.
// At the end it prints "ok ITERATIONS".
//
// RLOCK_WORKER_KIND picks the lock kind: reentrant (the default), fenced, fair, write (the
// write half of a read-write lock), non-reentrant or non-reentrant-fair. With fenced, each
// section also appends its fencing token as a line to DIR/NAME.tokens, so the file lists the
// tokens in the order the lock was held. With leader, each iteration is one leadership of the
// election NAME (Client.Lead), whose section appends "TERM go" to DIR/NAME.terms.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	rlock "github.com/rlock/rlock/bindings/go"
)

func main() {
	if len(os.Args) < 5 {
		fmt.Fprintln(os.Stderr, "usage: rlock-contend URL DIR ITERATIONS NAME [NAME...]")
		os.Exit(2)
	}
	iterations, err := strconv.Atoi(os.Args[3])
	if err != nil || iterations < 0 {
		fmt.Fprintf(os.Stderr, "ITERATIONS must be a non-negative integer, got %q\n", os.Args[3])
		os.Exit(2)
	}
	overlap, err := run(os.Args[1], os.Args[2], iterations, os.Args[4:])
	if overlap != "" {
		fmt.Fprintf(os.Stderr, "overlap on %s\n", overlap)
		os.Exit(3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("ok %d\n", iterations)
}

// run returns the name of a lock found with another owner inside, or an error.
func run(url, dir string, iterations int, names []string) (string, error) {
	client, err := rlock.NewClient(url)
	if err != nil {
		return "", err
	}
	defer client.Close()
	kind := os.Getenv("RLOCK_WORKER_KIND")
	if kind == "leader" {
		return lead(client, dir, iterations, names)
	}
	locks := make(map[string]*rlock.Lock)
	for _, name := range names {
		if locks[name] == nil {
			if locks[name], err = newLock(client, kind, name); err != nil {
				return "", err
			}
		}
	}
	ctx := context.Background()
	for i := 0; i < iterations; i++ {
		name := names[i%len(names)]
		if err := locks[name].Lock(ctx); err != nil {
			return "", err
		}
		overlap, err := critical(dir, name)
		if err == nil && kind == "fenced" {
			err = appendToken(dir, name, locks[name])
		}
		if overlap {
			return name, nil // the deferred Close releases the lock
		}
		if err != nil {
			locks[name].Unlock()
			return "", err
		}
		if err := locks[name].Unlock(); err != nil {
			return "", err
		}
	}
	return "", nil
}

func newLock(client *rlock.Client, kind, name string) (*rlock.Lock, error) {
	switch kind {
	case "", "reentrant":
		return client.Lock(name)
	case "fenced":
		return client.FencedLock(name)
	case "fair":
		return client.FairLock(name)
	case "write":
		rw, err := client.ReadWriteLock(name)
		if err != nil {
			return nil, err
		}
		return rw.WriteLock(), nil
	case "non-reentrant":
		return client.NonReentrantLock(name)
	case "non-reentrant-fair":
		return client.NonReentrantFairLock(name)
	}
	return nil, fmt.Errorf("RLOCK_WORKER_KIND must be reentrant, fenced, fair, write, "+
		"non-reentrant or non-reentrant-fair, not %q", kind)
}

// appendToken records the fencing token of the hold, in lock order.
func appendToken(dir, name string, lock *rlock.Lock) error {
	token, err := lock.Token()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, name+".tokens"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, token); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// critical is the work done under the lock; it reports true if another owner was inside.
func critical(dir, name string) (bool, error) {
	inside := filepath.Join(dir, name+".inside")
	marker, err := os.OpenFile(inside, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	marker.Close()
	counter := filepath.Join(dir, name+".count")
	data, err := os.ReadFile(counter)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	count := 0
	if text := strings.TrimSpace(string(data)); text != "" {
		if count, err = strconv.Atoi(text); err != nil {
			return false, fmt.Errorf("%s: %w", counter, err)
		}
	}
	if err := os.WriteFile(counter, []byte(strconv.Itoa(count+1)), 0o644); err != nil {
		return false, err
	}
	return false, os.Remove(inside)
}

// lead runs each iteration as one leadership of the election NAME.
func lead(client *rlock.Client, dir string, iterations int, names []string) (string, error) {
	for i := 0; i < iterations; i++ {
		name := names[i%len(names)]
		overlap := false
		err := client.Lead(context.Background(), name, func(ctx context.Context, term int64) error {
			inside := filepath.Join(dir, name+".inside")
			marker, err := os.OpenFile(inside, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if errors.Is(err, fs.ErrExist) {
				overlap = true
				return nil
			}
			if err != nil {
				return err
			}
			marker.Close()
			if err := bump(filepath.Join(dir, name+".count")); err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err // leadership ended: record nothing
			}
			f, err := os.OpenFile(filepath.Join(dir, name+".terms"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(f, "%d go\n", term); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			return os.Remove(inside)
		})
		if overlap {
			return name, nil
		}
		if err != nil {
			return "", err
		}
	}
	return "", nil
}

// bump adds one to the decimal counter in the file.
func bump(counter string) error {
	data, err := os.ReadFile(counter)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	count := 0
	if text := strings.TrimSpace(string(data)); text != "" {
		if count, err = strconv.Atoi(text); err != nil {
			return fmt.Errorf("%s: %w", counter, err)
		}
	}
	return os.WriteFile(counter, []byte(strconv.Itoa(count+1)), 0o644)
}
