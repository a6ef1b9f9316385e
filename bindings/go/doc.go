// Package rlock provides distributed locks on Redis that keep Redisson's on-Redis layout, so
// Go programs contend for the same locks as rlock's C, Python and Java users and as JVMs using
// Redisson. It wraps the rlock C library through cgo.
//
// A released module carries the static librlock.a (hiredis and OpenSSL inside) for linux/amd64
// and linux/arm64, which the default build links: go get and go build need only Go and
// gcc/g++, and the program needs no librlock at run time; libstdc++ and libc stay shared.
// -tags rlock_static links an installed librlock.a instead (#cgo pkg-config: rlock-static),
// -tags rlock_shared an installed or built librlock.so (#cgo pkg-config: rlock).
//
//	client, err := rlock.NewClient("redis://127.0.0.1:6379") // "" = $RLOCK_URL or that default
//	if err != nil {
//		return err
//	}
//	defer client.Close()
//
//	lock, err := client.Lock("nightly-report")
//	if err != nil {
//		return err
//	}
//	defer lock.Close()
//	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
//	defer cancel()
//	if err := lock.Lock(ctx); err != nil {
//		return err // errors.Is(err, rlock.ErrNotObtained) && errors.Is(err, context.DeadlineExceeded)
//	}
//	defer lock.Unlock()
//	// ... the critical section ...
//
// # Ownership
//
// On Redis a lock is held by an owner, "<client id>:<thread id>". Goroutines move between OS
// threads, so this package never uses the OS thread id: every *Lock value (and every
// *MultiLock) has its own owner id, taken from a process-wide counter that starts at 1<<41 and
// passed explicitly to every C call. The value is the owner, the way a sync.Mutex is held by
// whoever locked it:
//
//   - Goroutines sharing one value exclude each other: a second Lock on a value that is already
//     locked waits (honouring its context and wait time) instead of re-entering.
//   - Unlock may be called from any goroutine. Unlock of a value that holds nothing returns
//     ErrNotHeld without any network call.
//   - Two values on the same name, even from one client, are two owners and contend like two
//     processes.
//   - The read half of a ReadWriteLock is shared, like sync.RWMutex.RLock: each Lock through it
//     adds a hold and each Unlock removes one. The halves are separate owners, so taking both
//     from one goroutine waits for itself, as with sync.RWMutex.
//
// # Waiting and contexts
//
// Lock(ctx) waits until acquired. The context's deadline becomes the wait time, and its
// cancellation wakes the waiter at once (through a cancel token of the C library) and leaves
// nothing locked. When the context ends first the error satisfies errors.Is(err, ctx.Err()),
// and also ErrNotObtained for a deadline or ErrCanceled for a cancellation. TryLock(ctx, wait,
// lease) waits at most wait (0 = try once) and returns false with a nil error when wait passes.
//
// A waiting goroutine holds no OS thread: it is parked on a channel that the C library's
// asynchronous completion fills, so any number of goroutines may wait. A grant that races the
// context's cancellation is released before the context's error is returned.
//
// # Leases and lost locks
//
// Without WithLease (or TryLock's lease) a lock is held until Unlock: the client's watchdog
// renews a lease of WithWatchdogLease (default 30s) every third of it, so a crashed process
// frees its locks within that time. A hold can still be lost (its key deleted, expired, or
// Redis unreachable past the lease); OnLost reports it, Held turns false, Lost true, and the
// next Unlock returns ErrLockLost: the critical section may not have been exclusive. Use a
// FencedLock's Token where that matters.
//
// # Errors
//
// Every error is an *Error carrying the C library's Code and a message naming the problem
// (errors.As), and matches sentinels such as ErrNotObtained, ErrNotHeld, ErrNotOwner,
// ErrLockLost, ErrClosed, ErrConnection, ErrAuth and ErrInvalidArgument (errors.Is), through
// one table of codes. Bad input (empty or too long names, negative durations, nil locks, use
// after Close) gives ErrInvalidArgument or ErrClosed, never a panic.
//
// # Lifetime
//
// Client.Close releases what the client's locks still hold (best effort: anything it fails to
// release expires by its lease), wakes their waiters with ErrClosed
// and disconnects. Lock.Close frees a value without releasing: a hold it has expires by its
// lease. A value dropped without Close is freed by a finalizer that, likewise, never releases
// over the network. All Close methods are idempotent and safe while other goroutines use the
// value. NewClient fails with ErrVersion if the loaded C library is older (or of another major
// version) than the headers this package was compiled against.
//
// # Statistics and events
//
// Client.Stats returns the client's counters (acquires by outcome, releases, lost holds,
// renewals, reconnects...), gauges (holds, waiters) and histograms (acquire wait, hold time,
// handoff, command round trip), kept by the C library at the cost of a few atomic additions per
// call (WithStats(false) or the URL option stats=off turns them off). The module
// github.com/rlock/rlock/bindings/go/otel exports them as OpenTelemetry metrics.
// Client.SetEventHandler gets each acquire, release, loss, failed renewal, failover and
// redirect, with the lock's name, in order. Lock names appear in events, never in Stats.
package rlock
