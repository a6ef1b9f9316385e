package io.rlock;

import io.rlock.internal.LockState;
import io.rlock.internal.LostHandler;
import io.rlock.internal.NativeLock;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A named lock on Redis (Redisson RLock shape), made by a {@link RedisLockClient}.
 *
 * <p>The owner is the calling Java thread ({@link Thread#getId()}), as in Redisson: the thread
 * that locked must unlock, and it may lock again (each lock needs one unlock), like
 * {@link java.util.concurrent.locks.ReentrantLock}; the non-reentrant kinds throw
 * {@link LockAlreadyHeldException} instead. One RedisLock may be shared by threads;
 * each contends as its own owner. Without a lease, a hold is renewed by the client's watchdog
 * until unlocked. A lock made with {@link LockOwner#object()} is owned by the object instead
 * (unlock from any thread), and one made with {@link LockOwner#id(String)} by a caller-given id
 * shared across processes.
 *
 * <p>The {@code *Async} methods (Redisson's RLockAsync shape) start the call and return a
 * {@link CompletableFuture} at once; no thread waits meanwhile. The owner is the calling thread
 * unless a {@code threadId} is given. Futures complete on a library thread: stages attached
 * without an executor run there and must not block (blocking rlock calls refuse to run there).
 * Ending a lock or tryLock future before the grant ({@code cancel}, {@code orTimeout},
 * {@code complete}) cancels the wait, and a grant that raced it is released. On a virtual
 * thread the blocking methods wait on such a future, so the thread parks and frees its carrier.
 *
 * <p>For try-with-resources, {@code try (Held held = lock.locked()) { ... }} locks and unlocks.
 * A RedisLock itself is not AutoCloseable: {@link #close()} frees the native handle without a
 * network call, so a hold left expires by its lease (its watchdog renewal stops); unreachable
 * locks are freed the same way by a Cleaner. Close it, or let it go, after unlocking.
 */
public class RedisLock implements Lock {
  private final RedisLockClient client; // keeps the client from being cleaned while in use
  private final String name;
  private final String kind;
  final NativeLock nativeLock;
  private final long ownerNumber; // LockOwner.newNumber(): 0 for the calling thread
  private static final int MODE_READ = 1; // rlock_lock_mode
  private static final int MODE_WRITE = 2;
  private final List<LockLostListener> listeners = new CopyOnWriteArrayList<>();
  private boolean handlerSet; // guarded by listeners

  RedisLock(RedisLockClient client, String name, NativeLock nativeLock, String kind,
      long ownerNumber) {
    this.client = client;
    this.name = name;
    this.nativeLock = nativeLock;
    this.kind = kind;
    this.ownerNumber = ownerNumber;
  }

  static long threadOwner() {
    return Thread.currentThread().getId();
  }

  /** The owner a call from here acts as: this object's number, or the calling thread. */
  long currentOwner() {
    return ownerNumber != 0 ? ownerNumber : threadOwner();
  }

  public String getName() {
    return name;
  }

  /** The client this lock was made by. */
  public RedisLockClient getClient() {
    return client;
  }

  /** Waits until acquired, ignoring interrupts (the interrupt status is kept). */
  @Override
  public void lock() {
    nativeLock.acquire(NativeLock.WAIT_FOREVER, NativeLock.LEASE_DEFAULT, currentOwner());
  }

  /** As {@link #lock()}, held for {@code leaseTime} (-1: renewed by the watchdog). */
  public void lock(long leaseTime, TimeUnit unit) {
    nativeLock.acquire(NativeLock.WAIT_FOREVER, Durations.leaseMs(leaseTime, unit),
        currentOwner());
  }

  /** Waits until acquired; {@link Thread#interrupt()} ends the wait promptly, leaving nothing held. */
  @Override
  public void lockInterruptibly() throws InterruptedException {
    nativeLock.acquireInterruptibly(NativeLock.WAIT_FOREVER, NativeLock.LEASE_DEFAULT,
        currentOwner());
  }

  /** As {@link #lockInterruptibly()}, held for {@code leaseTime} (-1: the watchdog). */
  public void lockInterruptibly(long leaseTime, TimeUnit unit) throws InterruptedException {
    nativeLock.acquireInterruptibly(NativeLock.WAIT_FOREVER, Durations.leaseMs(leaseTime, unit),
        currentOwner());
  }

  /**
   * Tries once: true when acquired. False too for a reader of a read-write lock asking for its
   * write lock, which it cannot get while it reads (as in Redisson); {@link #lock()} throws
   * {@link RedisLockDeadlockException} there instead of waiting for ever. The holder of a
   * non-reentrant lock gets {@link LockAlreadyHeldException} from both, as in Redisson.
   */
  @Override
  public boolean tryLock() {
    try {
      return nativeLock.acquire(0, NativeLock.LEASE_DEFAULT, currentOwner());
    } catch (RedisLockDeadlockException readerAsksForTheWriteLock) {
      return false;
    }
  }

  /**
   * Waits at most {@code time} (0 or less: tries once, as in Redisson): true when acquired,
   * false when the time ran out (at once for a reader asking for the write lock, see
   * {@link #tryLock()}). Interruptible like {@link #lockInterruptibly()}.
   */
  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    return tryLock(time, -1, unit);
  }

  /**
   * As {@link #tryLock(long, TimeUnit)}, held for {@code leaseTime} (0 or less: renewed by the
   * watchdog, as in Redisson 4.7).
   */
  public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit)
      throws InterruptedException {
    try {
      return nativeLock.acquireInterruptibly(Durations.tryWaitMs(waitTime, unit),
          Durations.leaseMs(leaseTime, unit), currentOwner());
    } catch (RedisLockDeadlockException readerAsksForTheWriteLock) {
      return false;
    }
  }

  /**
   * Locks as {@link #lock()} and returns a {@link Held} whose {@code close()} unlocks, for
   * try-with-resources: {@code try (Held held = lock.locked()) { ... }}.
   */
  public Held locked() {
    lock();
    return new Held(this);
  }

  /** As {@link #locked()}, held for {@code leaseTime} (0 or less: the watchdog). */
  public Held locked(long leaseTime, TimeUnit unit) {
    lock(leaseTime, unit);
    return new Held(this);
  }

  /**
   * Releases one hold of the calling thread; at the last one the lock is free and waiters are
   * woken. Throws {@link LockNotHeldException} (an IllegalMonitorStateException) when the
   * calling thread does not hold it, leaving the lock untouched, and {@link LockLostException}
   * when it held it but the lock expired or was taken meanwhile.
   */
  @Override
  public void unlock() {
    nativeLock.release(currentOwner());
  }

  /** Starts {@link #lock()}: the future completes when the calling thread holds the lock. */
  public CompletableFuture<Void> lockAsync() {
    return lockAsync(currentOwner());
  }

  /** Starts acquiring for the owner {@code threadId}, waiting as long as it takes. */
  public CompletableFuture<Void> lockAsync(long threadId) {
    return nativeLock.lockAsync(NativeLock.LEASE_DEFAULT, threadId);
  }

  /** Starts {@link #lock(long, TimeUnit)}. */
  public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
    return lockAsync(leaseTime, unit, currentOwner());
  }

  /** Starts acquiring for {@code threadId}, held for {@code leaseTime} (-1: the watchdog). */
  public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
    return nativeLock.lockAsync(Durations.leaseMs(leaseTime, unit), threadId);
  }

  /**
   * Starts {@link #tryLock()}: true when acquired; false too, at once, for a reader asking for
   * its write lock, as {@link #tryLock()} answers.
   */
  public CompletableFuture<Boolean> tryLockAsync() {
    return tryLockAsync(currentOwner());
  }

  /** Tries once for the owner {@code threadId}. */
  public CompletableFuture<Boolean> tryLockAsync(long threadId) {
    return nativeLock.tryAcquireAsync(0, NativeLock.LEASE_DEFAULT, threadId,
        RedisLock::readerAsksForTheWriteLock);
  }

  /**
   * Starts {@link #tryLock(long, TimeUnit)}: true when acquired, false when the time ran out
   * (at once for a reader asking for its write lock).
   */
  public CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
    return nativeLock.tryAcquireAsync(Durations.tryWaitMs(waitTime, unit),
        NativeLock.LEASE_DEFAULT, currentOwner(), RedisLock::readerAsksForTheWriteLock);
  }

  /** Starts {@link #tryLock(long, long, TimeUnit)}. */
  public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
    return tryLockAsync(waitTime, leaseTime, unit, currentOwner());
  }

  /** As {@link #tryLockAsync(long, long, TimeUnit)}, for the owner {@code threadId}. */
  public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit,
      long threadId) {
    return nativeLock.tryAcquireAsync(Durations.tryWaitMs(waitTime, unit),
        Durations.leaseMs(leaseTime, unit), threadId, RedisLock::readerAsksForTheWriteLock);
  }

  /**
   * The refusal a try answers with false: a reader asking for the write lock it cannot get while
   * it reads. (The holder of a non-reentrant lock gets {@link LockAlreadyHeldException}, which
   * is no RedisLockDeadlockException, from every acquire.)
   */
  static boolean readerAsksForTheWriteLock(RuntimeException failure) {
    return failure instanceof RedisLockDeadlockException;
  }

  /**
   * Starts {@link #unlock()} for the calling thread; the future fails as unlock() would throw.
   */
  public CompletableFuture<Void> unlockAsync() {
    return unlockAsync(currentOwner());
  }

  /**
   * Sets the remaining lease of this owner's hold to {@code leaseTime} (not in Redisson's
   * RLock). On a hold without a lease (the watchdog's) it lasts until the watchdog's next
   * renewal. Throws {@link LockNotHeldException} (or {@link LockLostException}) when this owner
   * does not hold the lock.
   */
  public void extendLease(long leaseTime, TimeUnit unit) {
    nativeLock.extend(positiveMs(leaseTime, unit, "leaseTime"), currentOwner());
  }

  /**
   * Adds {@code time} to the remaining lease of this owner's hold (redis-py's extend), in one
   * round trip; a read lock's to this owner's own read lease. A hold without a lease (the
   * watchdog's), or a key without expiry on Redis, has none to add to: IllegalArgumentException,
   * nothing changed.
   */
  public void addLease(long time, TimeUnit unit) {
    nativeLock.extendBy(positiveMs(time, unit, "time"), currentOwner());
  }

  private static long positiveMs(long time, TimeUnit unit, String what) {
    Objects.requireNonNull(unit, "unit");
    long ms = unit.toMillis(time);
    if (ms <= 0) {
      throw new IllegalArgumentException(what + " must be at least 1 ms, got " + time + " " + unit);
    }
    return ms;
  }

  /** Starts releasing one hold of the owner {@code threadId}. */
  public CompletableFuture<Void> unlockAsync(long threadId) {
    return nativeLock.releaseAsync(threadId);
  }

  /** Not supported: a distributed lock has no condition variables. */
  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException("RedisLock does not support conditions");
  }

  /**
   * Whether the lock is held (asks Redis). For the halves of a read-write lock, as in
   * Redisson: the write lock is locked while a writer holds it; the read lock while readers
   * hold it, or while the writer also holds a read lock.
   */
  public boolean isLocked() {
    LockState state = nativeLock.query(currentOwner());
    switch (kind) {
      case "RedisReadLock":
        return state.mode == MODE_READ || (state.mode == MODE_WRITE && state.ownerCount > 1);
      case "RedisWriteLock":
        return state.mode == MODE_WRITE;
      default:
        return state.locked;
    }
  }

  /**
   * Who holds the lock now (its first owner, for a shared read lock) and since when; empty
   * when it is free. Asks Redis (three round trips).
   */
  public Optional<LockHolder> getHolder() {
    Object[] raw = client.lockHolder(name);
    return raw == null ? Optional.empty() : Optional.of(new LockHolder(raw));
  }

  /**
   * Whether the calling thread holds the lock (local view, no network call; false once the
   * watchdog found the hold lost).
   */
  public boolean isHeldByCurrentThread() {
    return nativeLock.isHeld(currentOwner());
  }

  /** Whether the thread with this id holds the lock through this client (local view). */
  public boolean isHeldByThread(long threadId) {
    return nativeLock.isHeld(threadId);
  }

  /** How many times the calling thread holds the lock (asks Redis; 0 when it does not). */
  public int getHoldCount() {
    return (int) nativeLock.query(currentOwner()).holdCount;
  }

  /**
   * The remaining time to live of the lock in milliseconds (asks Redis): -2 when it is not
   * locked, -1 when it is locked without expiry.
   */
  public long remainTimeToLive() {
    return nativeLock.query(currentOwner()).ttlMs;
  }

  /**
   * Deletes the lock whoever holds it and wakes a waiter; true when it was locked. The holder
   * finds out at its next renewal (lost listeners) or unlock ({@link LockLostException}).
   */
  public boolean forceUnlock() {
    return nativeLock.forceUnlock();
  }

  /**
   * Adds a listener of this lock's key (Redisson's {@code addListener}): an {@link
   * ExpiredObjectListener} is told when the key expires, a {@link DeletedObjectListener} when it
   * is deleted (an unlock that frees it, a force unlock). Works from Redis keyspace notifications, so the server's {@code
   * notify-keyspace-events} must include {@code E} and {@code x} (expired) or {@code g}
   * (deleted): a {@link RedisLockServerException} names what is missing when the server
   * shows it; not on a Redis Cluster. Listeners run on the client's event thread. Returns the
   * id for {@link #removeListener}.
   */
  public int addListener(ObjectListener listener) {
    return client.addObjectListener(name, listener);
  }

  /** Removes a listener {@link #addListener} added to this object; another id does nothing. */
  public void removeListener(int listenerId) {
    client.removeObjectListener(name, listenerId);
  }

  /**
   * Calls {@code listener} when a hold acquired through this object is found lost (on the
   * client's watchdog thread; see {@link LockLostListener}).
   */
  public void addLostListener(LockLostListener listener) {
    Objects.requireNonNull(listener, "listener");
    synchronized (listeners) {
      if (!handlerSet) {
        nativeLock.setLostHandler(new Dispatcher(this, listeners));
        handlerSet = true;
      }
      listeners.add(listener);
    }
  }

  public void removeLostListener(LockLostListener listener) {
    listeners.remove(listener);
  }

  /**
   * Frees the native handle now, without any network call (a hold left expires by its
   * lease), and wakes threads waiting through this object ({@link RedisLockClosedException}).
   * Idempotent. Not an unlock: a RedisLock is not AutoCloseable, so that try-with-resources
   * cannot end a critical section with the lock still held; use {@link #locked()} for that.
   */
  public void close() {
    nativeLock.close();
  }

  @Override
  public String toString() {
    return kind + "[" + name + "]";
  }

  /** Reaches the lock weakly: the JNI layer holds this for as long as the handle lives. */
  private static final class Dispatcher implements LostHandler {
    private final WeakReference<RedisLock> lock;
    private final List<LockLostListener> listeners;

    Dispatcher(RedisLock lock, List<LockLostListener> listeners) {
      this.lock = new WeakReference<>(lock);
      this.listeners = listeners;
    }

    @Override
    public void lost(long threadId, int reason) {
      RedisLock target = lock.get();
      if (target == null) {
        return;
      }
      LostReason why = LostReason.of(reason);
      for (LockLostListener listener : listeners) {
        try {
          listener.lockLost(target, threadId, why);
        } catch (Throwable t) {
          Thread current = Thread.currentThread();
          current.getUncaughtExceptionHandler().uncaughtException(current, t);
        }
      }
    }
  }
}
