// Command rlock-fault-worker is the fault-injection suite's worker on the Go binding
// (tests/faults): the `loop` mode of the C worker, writing the same history lines, so the
// suite's checkers judge the Go binding too.
//
//	rlock-fault-worker loop --url U [--names A,B] [--kind reentrant|fenced] [--threads N]
//	    [--cycles N] [--duration-ms D] [--hold-us N] [--wait-ms W] [--lease-ms L]
//	    [--watchdog-lease-ms W] [--command-timeout-ms T] [--poll-cap-ms P] [--log F]
//	    [--counter-dir D] [--seed N]
//
// Each of --threads goroutines owns its own *rlock.Lock per name (in Go the value is the
// owner) and loops: acquire a random name, add one to DIR/NAME (read, sleep, write), release.
// History lines, one write(2) each, stamped with CLOCK_MONOTONIC:
//
//	acq OWNER NAME X T_CALL T_RET RC TOKEN / wrote OWNER NAME / leave OWNER NAME X T /
//	rel OWNER NAME X T_CALL T_RET RC
//
// OWNER is PID.GOROUTINE_INDEX. SIGTERM ends every loop after its cycle in hand. The last
// stdout line is "done cycles=N acquired=N errors=N" and "RC=COUNT" pairs.
//
// --kind semaphore or permits (a permit-expirable semaphore; also spelled expirable-semaphore)
// takes one permit of the semaphore NAME instead of a
// lock, one of --permits (default 3) that the first worker sets (TrySetPermits; a semaphore
// that exists is left as it is). The lines are the same with mode S instead of X and token 0;
// as up to --permits owners are inside at once, --counter-dir is not used. Lines are stamped
// with CLOCK_MONOTONIC, as every fault worker's, unless --clock realtime says otherwise. For
// permits, --lease-ms -1 (the default) means the watchdog.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	rlock "github.com/rlock/rlock/bindings/go"
)

// stampClock is the clock of the history lines: CLOCK_MONOTONIC (1), the clock every worker of
// the suite stamps lock lines with, or CLOCK_REALTIME (0) for the semaphore kinds.
var stampClock uintptr = 1

func monoNS() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, stampClock, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(errno)
	}
	return ts.Nano()
}

type history struct{ f *os.File }

func (h history) line(format string, args ...any) {
	if h.f != nil {
		h.f.Write([]byte(fmt.Sprintf(format, args...) + "\n")) // O_APPEND: one write per line
	}
}

func code(err error) int {
	if err == nil {
		return 0
	}
	var e *rlock.Error
	if errors.As(err, &e) {
		return int(e.Code)
	}
	return int(rlock.CodeError)
}

func bumpCounter(path string, holdUS int, rng *rand.Rand) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	value, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if holdUS > 0 {
		time.Sleep(time.Duration(rng.Intn(holdUS+1)) * time.Microsecond) // deliberately not atomic
	}
	return os.WriteFile(path, []byte(fmt.Sprintf("%020d\n", value+1)), 0o644)
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "loop" {
		fmt.Fprintln(os.Stderr, "usage: rlock-fault-worker loop --url U [options]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("loop", flag.ExitOnError)
	url := fs.String("url", "", "lock server")
	names := fs.String("names", "fault", "lock names, comma-separated")
	kind := fs.String("kind", "reentrant", "reentrant, fenced, semaphore or permits")
	permits := fs.Int64("permits", 3, "semaphore kinds: the permits the semaphore is set to")
	clock := fs.String("clock", "monotonic", "monotonic or realtime")
	threads := fs.Int("threads", 1, "goroutines")
	cycles := fs.Int64("cycles", 1<<62, "cycles per goroutine")
	durationMS := fs.Int64("duration-ms", 0, "stop after this long (0: no limit)")
	holdUS := fs.Int("hold-us", 2000, "section length bound")
	waitMS := fs.Int64("wait-ms", 5000, "acquire wait")
	leaseMS := fs.Int64("lease-ms", -1, "-1 = watchdog")
	watchdogMS := fs.Int64("watchdog-lease-ms", 30000, "watchdog lease")
	timeoutMS := fs.Int64("command-timeout-ms", 3000, "command timeout")
	pollMS := fs.Int64("poll-cap-ms", 1000, "poll cap")
	logPath := fs.String("log", "", "history log")
	counterDir := fs.String("counter-dir", "", "lost-update counters")
	seed := fs.Int64("seed", 0, "seed")
	fs.Parse(os.Args[2:])
	if *kind == "permits" {
		*kind = "expirable-semaphore"
	}
	semaphoreKind := *kind == "semaphore" || *kind == "expirable-semaphore"
	switch {
	case *kind != "reentrant" && *kind != "fenced" && !semaphoreKind:
		fmt.Fprintf(os.Stderr, "unknown --kind %q\n", *kind)
		os.Exit(2)
	case *clock == "realtime":
		stampClock = 0
	case *clock != "monotonic":
		fmt.Fprintf(os.Stderr, "unknown --clock %q\n", *clock)
		os.Exit(2)
	}

	var hist history
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		hist.f = f
	}
	client, err := rlock.NewClient(*url, rlock.WithCommandTimeout(time.Duration(*timeoutMS)*time.Millisecond),
		rlock.WithWatchdogLease(time.Duration(*watchdogMS)*time.Millisecond),
		rlock.WithPollCap(time.Duration(*pollMS)*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	nameList := strings.Split(*names, ",")
	if semaphoreKind {
		os.Exit(semaphoreLoop(client, nameList, *kind == "expirable-semaphore", *permits,
			*threads, *cycles, *durationMS, *holdUS, *waitMS, *leaseMS, *seed, hist))
	}
	if *counterDir != "" {
		for _, n := range nameList {
			f, err := os.OpenFile(filepath.Join(*counterDir, n), os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				f.Close()
			}
		}
	}
	var stop atomic.Bool
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() { <-term; stop.Store(true) }()
	var deadline int64 = 1<<63 - 1
	if *durationMS > 0 {
		deadline = monoNS() + *durationMS*1e6
	}
	var lease time.Duration
	if *leaseMS > 0 {
		lease = time.Duration(*leaseMS) * time.Millisecond
	}
	var total, acquired, failed atomic.Int64
	var mu sync.Mutex
	codes := map[int]int64{}
	var wg sync.WaitGroup
	for g := 0; g < *threads; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			owner := fmt.Sprintf("%d.%d", os.Getpid(), g)
			rng := rand.New(rand.NewSource(*seed*7919 + int64(os.Getpid())*131 + int64(g)))
			locks := map[string]*rlock.Lock{}
			for _, n := range nameList {
				var l *rlock.Lock
				var err error
				if *kind == "fenced" {
					l, err = client.FencedLock(n)
				} else {
					l, err = client.Lock(n)
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				locks[n] = l
			}
			for c := int64(0); c < *cycles && !stop.Load() && monoNS() < deadline; c++ {
				name := nameList[rng.Intn(len(nameList))]
				l := locks[name]
				total.Add(1)
				start := monoNS()
				ok, err := l.TryLock(context.Background(), time.Duration(*waitMS)*time.Millisecond, lease)
				end := monoNS()
				rc := code(err)
				if err == nil && !ok {
					rc = int(rlock.CodeTimedOut)
				}
				var token int64
				if rc == 0 && *kind == "fenced" {
					token, _ = l.Token()
				}
				hist.line("acq %s %s X %d %d %d %d", owner, name, start, end, rc, token)
				if rc != 0 {
					mu.Lock()
					codes[rc]++
					mu.Unlock()
					if rc != int(rlock.CodeTimedOut) {
						failed.Add(1)
						time.Sleep(5 * time.Millisecond) // a failing server must not make a busy loop
					}
					continue
				}
				acquired.Add(1)
				if *counterDir != "" {
					if err := bumpCounter(filepath.Join(*counterDir, name), *holdUS, rng); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					hist.line("wrote %s %s", owner, name)
				}
				start = monoNS()
				hist.line("leave %s %s X %d", owner, name, start)
				rc = code(l.Unlock())
				hist.line("rel %s %s X %d %d %d", owner, name, start, monoNS(), rc)
				if rc != 0 {
					mu.Lock()
					codes[rc]++
					mu.Unlock()
					failed.Add(1)
				}
			}
			for _, l := range locks {
				l.Close()
			}
		}(g)
	}
	wg.Wait()
	client.Close()
	summary := fmt.Sprintf("done cycles=%d acquired=%d errors=%d", total.Load(), acquired.Load(), failed.Load())
	for rc, n := range codes {
		summary += fmt.Sprintf(" %d=%d", rc, n)
	}
	fmt.Println(summary)
}

// semaphoreLoop is the loop of the semaphore kinds: each goroutine takes one permit of a
// random name (waiting up to waitMS), stays inside up to holdUS, and gives it back. It
// returns the exit status after printing the summary line.
func semaphoreLoop(client *rlock.Client, names []string, expirable bool, permits int64,
	threads int, cycles, durationMS int64, holdUS int, waitMS, leaseMS, seed int64, hist history) int {
	type permitTaker struct {
		acquire func(ctx context.Context) (release func() error, err error)
		close   func() error
	}
	lease := rlock.WatchdogLease
	if leaseMS > 0 {
		lease = time.Duration(leaseMS) * time.Millisecond
	}
	open := func(name string) (permitTaker, error) {
		if expirable {
			s, err := client.ExpirableSemaphore(name)
			if err != nil {
				return permitTaker{}, err
			}
			if _, err := s.TrySetPermits(permits); err != nil {
				return permitTaker{}, err
			}
			return permitTaker{
				acquire: func(ctx context.Context) (func() error, error) {
					p, err := s.Acquire(ctx, lease)
					if err != nil {
						return nil, err
					}
					return p.Release, nil
				},
				close: s.Close,
			}, nil
		}
		s, err := client.Semaphore(name)
		if err != nil {
			return permitTaker{}, err
		}
		if _, err := s.TrySetPermits(permits, 0); err != nil {
			return permitTaker{}, err
		}
		return permitTaker{
			acquire: func(ctx context.Context) (func() error, error) {
				if err := s.Acquire(ctx, 1); err != nil {
					return nil, err
				}
				return func() error { return s.Release(1) }, nil
			},
			close: s.Close,
		}, nil
	}

	var stop atomic.Bool
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() { <-term; stop.Store(true) }()
	var deadline int64 = 1<<63 - 1
	if durationMS > 0 {
		deadline = monoNS() + durationMS*1e6
	}
	var total, acquired, failed atomic.Int64
	var mu sync.Mutex
	codes := map[int]int64{}
	count := func(rc int) {
		mu.Lock()
		codes[rc]++
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for g := 0; g < threads; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			owner := fmt.Sprintf("%d.%d", os.Getpid(), g)
			rng := rand.New(rand.NewSource(seed*7919 + int64(os.Getpid())*131 + int64(g)))
			takers := map[string]permitTaker{}
			for _, n := range names {
				taker, err := open(n)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				takers[n] = taker
			}
			for c := int64(0); c < cycles && !stop.Load() && monoNS() < deadline; c++ {
				name := names[rng.Intn(len(names))]
				total.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(waitMS)*time.Millisecond)
				start := monoNS()
				release, err := takers[name].acquire(ctx)
				end := monoNS()
				cancel()
				rc := code(err)
				hist.line("acq %s %s S %d %d %d 0", owner, name, start, end, rc)
				if rc != 0 {
					count(rc)
					if rc != int(rlock.CodeTimedOut) {
						failed.Add(1)
						time.Sleep(5 * time.Millisecond) // a failing server must not make a busy loop
					}
					continue
				}
				acquired.Add(1)
				if holdUS > 0 {
					time.Sleep(time.Duration(rng.Intn(holdUS+1)) * time.Microsecond)
				}
				start = monoNS()
				hist.line("leave %s %s S %d", owner, name, start)
				rc = code(release())
				hist.line("rel %s %s S %d %d %d", owner, name, start, monoNS(), rc)
				if rc != 0 {
					count(rc)
					failed.Add(1)
				}
			}
			for _, taker := range takers {
				taker.close()
			}
		}(g)
	}
	wg.Wait()
	client.Close()
	summary := fmt.Sprintf("done cycles=%d acquired=%d errors=%d", total.Load(), acquired.Load(), failed.Load())
	for rc, n := range codes {
		summary += fmt.Sprintf(" %d=%d", rc, n)
	}
	fmt.Println(summary)
	return 0
}
