// Command rlock-bounds-probe is the bounds probe of the fault suite (tests/faults/test_h_bounds.py)
// on the Go binding. It speaks the lines of the C probe (tests/faults/bounds_probe.c):
//
//	rlock-bounds-probe --url U --prefix P [--cases A,B,...]
//
// For each case it prepares, prints "READY CASE", waits for "GO" on stdin, times the call and
// prints "RESULT CASE ELAPSED_MS OUTCOME" (OUTCOME "ok" or the status name without "RLOCK_");
// then on "CLEAN" it releases the case's lock if it holds it ("CLEANED CASE OUTCOME", "none"
// when it held nothing) and waits for "NEXT" before it prepares the next case. "DONE" at the
// end.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	rlock "github.com/rlock/rlock/bindings/go"
)

const (
	commandTimeout = time.Second
	lease          = 3 * time.Second
)

var stdin = bufio.NewScanner(os.Stdin)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bounds probe: "+format+"\n", args...)
	os.Exit(2)
}

// outcome is "ok", "ETIMEDOUT" for an acquire that ran out of time, else the code's name.
func outcome(acquired bool, err error) string {
	var e *rlock.Error
	switch {
	case errors.As(err, &e):
		return strings.TrimPrefix(e.Code.String(), "RLOCK_")
	case err != nil:
		return "ERROR"
	case !acquired:
		return "ETIMEDOUT"
	}
	return "ok"
}

func expectLine(word string) {
	if !stdin.Scan() || strings.TrimSpace(stdin.Text()) != word {
		fail("expected %s, got %q", word, stdin.Text())
	}
}

// call makes the timed call of one case.
func call(name string, l *rlock.Lock) (bool, error) {
	ctx := context.Background()
	switch name {
	case "try_once_free":
		return l.TryLock(ctx, 0, lease)
	case "wait_free":
		return l.TryLock(ctx, 500*time.Millisecond, lease)
	case "wait_held":
		return l.TryLock(ctx, 1500*time.Millisecond, lease)
	case "release":
		return true, l.Unlock()
	case "extend":
		return true, l.Extend(lease)
	case "query":
		_, err := l.State(ctx)
		return true, err
	}
	fail("unknown case %q", name)
	return false, nil
}

func runCase(client *rlock.Client, prefix, name string) {
	l, err := client.Lock(prefix+":"+name, rlock.WithLease(lease))
	if err != nil {
		fail("%v", err)
	}
	defer l.Close()
	if name == "release" || name == "extend" || name == "query" {
		if ok, err := l.TryLock(context.Background(), 5*time.Second, lease); !ok {
			fail("the preparing acquire of %s: %s", name, outcome(ok, err))
		}
	}
	fmt.Printf("READY %s\n", name)
	expectLine("GO")
	start := time.Now()
	ok, err := call(name, l)
	elapsed := time.Since(start)
	fmt.Printf("RESULT %s %.1f %s\n", name, float64(elapsed.Microseconds())/1000, outcome(ok, err))
	expectLine("CLEAN")
	cleaned := "none"
	if l.Held() {
		cleaned = outcome(true, l.Unlock())
	}
	fmt.Printf("CLEANED %s %s\n", name, cleaned)
	expectLine("NEXT")
}

func main() {
	url := flag.String("url", "", "lock server")
	prefix := flag.String("prefix", "", "prefix of the lock names")
	cases := flag.String("cases", "try_once_free,wait_free,wait_held,release,extend,query", "cases in order")
	flag.Parse()
	if *url == "" || *prefix == "" {
		fail("usage: rlock-bounds-probe --url U --prefix P [--cases A,B,...]")
	}
	client, err := rlock.NewClient(*url, rlock.WithCommandTimeout(commandTimeout), rlock.WithWatchdogLease(lease))
	if err != nil {
		fail("%v", err)
	}
	for _, name := range strings.Split(*cases, ",") {
		runCase(client, *prefix, name)
	}
	client.Close()
	fmt.Println("DONE")
}
