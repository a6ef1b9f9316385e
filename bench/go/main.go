// Command bench runs the Go contenders of the rlock benchmark (bench/peers.sh run): rlock-go,
// the Go binding, and redsync (github.com/go-redsync/redsync/v4 over go-redis v9). It prints
// one JSON line per scenario on stdout, as every contender program does.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	rlock "github.com/rlock/rlock/bindings/go"
)

// uncontendedNames is how many distinct names the uncontended scenario cycles through.
const uncontendedNames = 1024

// locker is one owner of one lock name: lock waits by the library's default behaviour and
// reports false when the library gave up (a failed acquire, which holds nothing).
type locker interface {
	lock() (bool, error)
	unlock() error
}

type contender interface {
	newLocker(name string) (locker, error)
	close()
}

type options struct {
	contender, url, scenario string
	seconds                  float64
	threads, names           int
	waiters, locks           int // many-waiters
}

type result struct {
	Scenario  string         `json:"scenario"`
	Contender string         `json:"contender"`
	Metric    string         `json:"metric"`
	Value     float64        `json:"value"`
	Unit      string         `json:"unit"`
	Extra     map[string]any `json:"extra"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseArgs() (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.contender, "contender", "", "rlock-go or redsync")
	fs.StringVar(&o.url, "url", "", "redis://127.0.0.1:PORT")
	fs.StringVar(&o.scenario, "scenario", "", "uncontended, throughput or many-waiters")
	fs.Float64Var(&o.seconds, "seconds", 10, "measured duration")
	fs.IntVar(&o.threads, "threads", 16, "goroutines (throughput)")
	fs.IntVar(&o.names, "names", 256, "lock names (throughput)")
	fs.IntVar(&o.waiters, "waiters", 1000, "waiting goroutines (many-waiters)")
	fs.IntVar(&o.locks, "locks", 1, "held locks the waiters spread over (many-waiters)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.contender != "rlock-go" && o.contender != "redsync":
		return o, fmt.Errorf("--contender must be rlock-go or redsync, got %q", o.contender)
	case o.url == "":
		return o, errors.New("--url is required")
	case o.scenario != "uncontended" && o.scenario != "throughput" && o.scenario != "many-waiters":
		return o, fmt.Errorf("--scenario must be uncontended, throughput or many-waiters, got %q", o.scenario)
	case !(o.seconds > 0):
		return o, fmt.Errorf("--seconds must be positive, got %v", o.seconds)
	case o.threads < 1:
		return o, fmt.Errorf("--threads must be at least 1, got %d", o.threads)
	case o.names < 1:
		return o, fmt.Errorf("--names must be at least 1, got %d", o.names)
	case o.locks < 1 || o.waiters < o.locks:
		return o, fmt.Errorf("--locks must be 1 to --waiters (%d), got %d", o.waiters, o.locks)
	}
	return o, nil
}

func run() error {
	o, err := parseArgs()
	if err != nil {
		return err
	}
	redisOpts, err := redis.ParseURL(o.url)
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	admin := redis.NewClient(redisOpts)
	defer admin.Close()
	ctx := context.Background()
	pattern := fmt.Sprintf("*bench:*:%s:*", o.contender)
	// A run that died earlier may have left holds that would stall this one.
	if err := deleteKeys(ctx, admin, pattern); err != nil {
		return err
	}

	var c contender
	if o.contender == "rlock-go" {
		c, err = newRlock(o.url)
	} else {
		c = newRedsync(redisOpts)
	}
	if err != nil {
		return err
	}

	if o.scenario == "many-waiters" {
		return runManyWaiters(ctx, admin, c, o, pattern)
	}
	var res result
	var names []string
	if o.scenario == "uncontended" {
		names = lockNames("u", o.contender, uncontendedNames)
		res, err = uncontended(c, names, o.seconds)
	} else {
		names = lockNames("t", o.contender, o.names)
		res, err = throughput(c, names, o.threads, o.seconds)
	}
	if err != nil {
		c.close()
		return err
	}
	// Both libraries store a lock under its own name, so a key that still exists is a hold
	// that was never released. Checked before close, which releases what rlock still holds.
	left, err := admin.Exists(ctx, names...).Result()
	c.close()
	if err != nil {
		return fmt.Errorf("checking for leftover locks: %w", err)
	}
	if err := deleteKeys(ctx, admin, pattern); err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("%d lock(s) still locked after the run", left)
	}
	res.Contender = o.contender
	line, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	return nil
}

// runManyWaiters runs the many-waiters scenario, checks that nothing is left locked and
// prints its lines.
func runManyWaiters(ctx context.Context, admin *redis.Client, c contender, o options, pattern string) error {
	var wc waitContender
	switch c := c.(type) {
	case *rlockContender:
		wc = rlockWait{c}
	case *redsyncContender:
		wc = redsyncWait{c}
	}
	results, names, err := manyWaiters(ctx, admin, wc, o)
	var left int64
	if err == nil {
		left, err = admin.Exists(ctx, names...).Result()
	}
	c.close()
	if derr := deleteKeys(ctx, admin, pattern); err == nil {
		err = derr
	}
	if err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("%d lock(s) still locked after the run", left)
	}
	for _, r := range results {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		fmt.Println(string(line))
	}
	return nil
}

func lockNames(scenario, contender string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench:%s:%s:%d", scenario, contender, i)
	}
	return names
}

func deleteKeys(ctx context.Context, admin *redis.Client, pattern string) error {
	iter := admin.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		if err := admin.Del(ctx, iter.Val()).Err(); err != nil {
			return fmt.Errorf("deleting %s: %w", iter.Val(), err)
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("scanning %s: %w", pattern, err)
	}
	return nil
}

func makeLockers(c contender, names []string) ([]locker, error) {
	ls := make([]locker, len(names))
	for i, name := range names {
		l, err := c.newLocker(name)
		if err != nil {
			return nil, err
		}
		ls[i] = l
	}
	return ls, nil
}

// pair takes and gives back one lock and reports whether it did. An acquire the library gave
// up on holds nothing: it is counted and tried again, so a long wait is not a lost pair.
func pair(l locker, failed *int64, stop *atomic.Bool) (bool, error) {
	for {
		ok, err := l.lock()
		if err != nil {
			return false, err
		}
		if ok {
			return true, l.unlock()
		}
		*failed++
		if stop.Load() {
			return false, nil
		}
	}
}

func uncontended(c contender, names []string, seconds float64) (result, error) {
	ls, err := makeLockers(c, names)
	if err != nil {
		return result{}, err
	}
	var failed int64
	var never atomic.Bool
	i := 0
	loop := func(d time.Duration) (int, time.Duration, error) {
		start := time.Now()
		deadline := start.Add(d)
		n := 0
		for time.Now().Before(deadline) {
			if _, err := pair(ls[i%len(ls)], &failed, &never); err != nil {
				return n, 0, err
			}
			i++
			n++
		}
		return n, time.Since(start), nil
	}
	measure := time.Duration(seconds * float64(time.Second))
	if _, _, err := loop(max(measure/10, 200*time.Millisecond)); err != nil {
		return result{}, err
	}
	failed = 0
	pairs, elapsed, err := loop(measure)
	if err != nil {
		return result{}, err
	}
	return result{
		Scenario: "uncontended", Metric: "pairs_per_s", Unit: "pairs/s",
		Value: float64(pairs) / elapsed.Seconds(),
		Extra: map[string]any{"pairs": pairs, "seconds": elapsed.Seconds(), "failed_acquires": failed},
	}, nil
}

func throughput(c contender, names []string, threads int, seconds float64) (result, error) {
	perWorker := make([][]locker, threads)
	for w := range perWorker {
		ls, err := makeLockers(c, names)
		if err != nil {
			return result{}, err
		}
		perWorker[w] = ls
	}
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		pairs    = make([]int64, threads)
		failed   = make([]int64, threads)
	)
	begin := make(chan struct{})
	for w := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ls := perWorker[w]
			var n, f int64
			<-begin
			for !stop.Load() {
				done, err := pair(ls[rand.IntN(len(ls))], &f, &stop)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					break
				}
				if done {
					n++
				}
			}
			pairs[w], failed[w] = n, f
		}()
	}
	start := time.Now()
	close(begin)
	timer := time.AfterFunc(time.Duration(seconds*float64(time.Second)), func() { stop.Store(true) })
	wg.Wait()
	timer.Stop()
	elapsed := time.Since(start)
	if firstErr != nil {
		return result{}, firstErr
	}
	var total, totalFailed int64
	for w := range threads {
		total += pairs[w]
		totalFailed += failed[w]
	}
	return result{
		Scenario: "throughput", Metric: "pairs_per_s", Unit: "pairs/s",
		Value: float64(total) / elapsed.Seconds(),
		Extra: map[string]any{
			"threads": threads, "names": len(names), "pairs": total,
			"seconds": elapsed.Seconds(), "failed_acquires": totalFailed,
		},
	}, nil
}

// rlock-go: one Client; a *Lock value is an owner (sync.Mutex semantics), so every goroutine
// gets its own value per name.
type rlockContender struct{ client *rlock.Client }

type rlockLocker struct{ l *rlock.Lock }

func newRlock(url string) (*rlockContender, error) {
	client, err := rlock.NewClient(url)
	if err != nil {
		return nil, err
	}
	return &rlockContender{client}, nil
}

func (c *rlockContender) newLocker(name string) (locker, error) {
	l, err := c.client.Lock(name)
	if err != nil {
		return nil, err
	}
	return rlockLocker{l}, nil
}

func (c *rlockContender) close() { c.client.Close() }

func (l rlockLocker) lock() (bool, error) {
	if err := l.l.Lock(context.Background()); err != nil {
		return false, err
	}
	return true, nil
}

func (l rlockLocker) unlock() error { return l.l.Unlock() }

// redsync: one Redsync over one go-redis pool; a Mutex keeps the value of its last acquire,
// so it too is per goroutine per name. Default expiry and retries (32 tries, 50-250 ms
// apart); when they run out under contention, pair counts a failed acquire and calls Lock
// again.
type redsyncContender struct {
	client *redis.Client
	rs     *redsync.Redsync
}

type redsyncLocker struct{ m *redsync.Mutex }

func newRedsync(opts *redis.Options) *redsyncContender {
	client := redis.NewClient(opts)
	return &redsyncContender{client, redsync.New(goredis.NewPool(client))}
}

func (c *redsyncContender) newLocker(name string) (locker, error) {
	return redsyncLocker{c.rs.NewMutex(name)}, nil
}

func (c *redsyncContender) close() { c.client.Close() }

func (l redsyncLocker) lock() (bool, error) {
	err := l.m.Lock()
	var taken *redsync.ErrTaken
	if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
		return false, nil
	}
	return err == nil, err
}

func (l redsyncLocker) unlock() error {
	ok, err := l.m.Unlock()
	if err == nil && !ok {
		err = fmt.Errorf("redsync: %s was no longer held at unlock", l.m.Name())
	}
	return err
}
