package io.rlock;

import io.rlock.internal.NativeLock;
import io.rlock.internal.NativeMulti;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Predicate;

/**
 * Several locks taken as one: a multi-lock (RedissonMultiLock) holds only when every member
 * is held; a RedLock when a majority of members, each on its own Redis server, granted it. Each
 * attempt asks every member at once and never waits while holding some, so threads locking the
 * same members in different orders cannot deadlock; an attempt that falls short gives back
 * what it got. Owners are threads, as for {@link RedisLock}, and the {@code *Async} methods and
 * virtual threads behave as there.
 */
public final class RedisMultiLock implements Lock {
  private final List<RedisLock> members; // keeps the members' clients in use
  private final NativeMulti nativeMulti;
  private final boolean redlock;

  RedisMultiLock(RedisLock[] locks, boolean redlock) {
    Objects.requireNonNull(locks, "locks");
    if (locks.length == 0) {
      throw new IllegalArgumentException(
          (redlock ? "a RedLock" : "a multi-lock") + " needs at least one lock");
    }
    NativeLock[] natives = new NativeLock[locks.length];
    for (int i = 0; i < locks.length; i++) {
      natives[i] = Objects.requireNonNull(locks[i], "locks[" + i + "]").nativeLock;
    }
    this.members = Collections.unmodifiableList(Arrays.asList(locks.clone()));
    this.nativeMulti = new NativeMulti(natives, redlock);
    this.redlock = redlock;
  }

  public List<RedisLock> getLocks() {
    return members;
  }

  @Override
  public void lock() {
    nativeMulti.acquire(NativeLock.WAIT_FOREVER, NativeLock.LEASE_DEFAULT,
        RedisLock.threadOwner());
  }

  public void lock(long leaseTime, TimeUnit unit) {
    nativeMulti.acquire(NativeLock.WAIT_FOREVER, Durations.leaseMs(leaseTime, unit),
        RedisLock.threadOwner());
  }

  @Override
  public void lockInterruptibly() throws InterruptedException {
    nativeMulti.acquireInterruptibly(NativeLock.WAIT_FOREVER, NativeLock.LEASE_DEFAULT,
        RedisLock.threadOwner());
  }

  /**
   * Tries once: true when the group was acquired. False too when a member is a write lock whose
   * read lock the calling thread holds, as {@link RedisLock#tryLock()} answers (a member
   * non-reentrant lock the thread already holds still throws).
   */
  @Override
  public boolean tryLock() {
    long owner = RedisLock.threadOwner();
    Predicate<RuntimeException> refusedAsFalse = refusedAsFalse(owner);
    try {
      return nativeMulti.acquire(0, NativeLock.LEASE_DEFAULT, owner);
    } catch (RuntimeException e) {
      if (refusedAsFalse.test(e)) {
        return false;
      }
      throw e;
    }
  }

  /** As {@link #tryLock()}, waiting at most {@code time} (0 or less: one try). */
  @Override
  public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
    return tryLockFor(Durations.tryWaitMs(time, unit), NativeLock.LEASE_DEFAULT);
  }

  /** As {@link #tryLock(long, TimeUnit)}, held for {@code leaseTime} (0 or less: watchdog). */
  public boolean tryLock(long waitTime, long leaseTime, TimeUnit unit)
      throws InterruptedException {
    return tryLockFor(Durations.tryWaitMs(waitTime, unit), Durations.leaseMs(leaseTime, unit));
  }

  private boolean tryLockFor(long waitMs, long leaseMs) throws InterruptedException {
    long owner = RedisLock.threadOwner();
    Predicate<RuntimeException> refusedAsFalse = refusedAsFalse(owner);
    try {
      return nativeMulti.acquireInterruptibly(waitMs, leaseMs, owner);
    } catch (RuntimeException e) {
      if (refusedAsFalse.test(e)) {
        return false;
      }
      throw e;
    }
  }

  /**
   * The refusal a try answers with false: a reader asking for a member's write lock. A group
   * reports every member's RLOCK_EDEADLK alike, so one from a member non-reentrant lock that
   * the owner holds already (checked before the try; local, no I/O) is left to throw.
   */
  private Predicate<RuntimeException> refusedAsFalse(long owner) {
    for (RedisLock member : members) {
      if (member.nativeLock.neverReenters() && member.nativeLock.isHeld(owner)) {
        return failure -> false;
      }
    }
    return RedisLock::readerAsksForTheWriteLock;
  }

  /** Releases every member held by the calling thread. */
  @Override
  public void unlock() {
    nativeMulti.release(RedisLock.threadOwner());
  }

  /** Starts {@link #lock()}: the future completes when the calling thread holds the group. */
  public CompletableFuture<Void> lockAsync() {
    return lockAsync(RedisLock.threadOwner());
  }

  public CompletableFuture<Void> lockAsync(long threadId) {
    return nativeMulti.lockAsync(NativeLock.LEASE_DEFAULT, threadId);
  }

  public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit) {
    return lockAsync(leaseTime, unit, RedisLock.threadOwner());
  }

  public CompletableFuture<Void> lockAsync(long leaseTime, TimeUnit unit, long threadId) {
    return nativeMulti.lockAsync(Durations.leaseMs(leaseTime, unit), threadId);
  }

  public CompletableFuture<Boolean> tryLockAsync() {
    return tryLockAsync(RedisLock.threadOwner());
  }

  /** As {@link #tryLock()}, for {@code threadId}: false too for a reader of a write member. */
  public CompletableFuture<Boolean> tryLockAsync(long threadId) {
    return nativeMulti.tryAcquireAsync(0, NativeLock.LEASE_DEFAULT, threadId,
        refusedAsFalse(threadId));
  }

  public CompletableFuture<Boolean> tryLockAsync(long waitTime, TimeUnit unit) {
    long owner = RedisLock.threadOwner();
    return nativeMulti.tryAcquireAsync(Durations.tryWaitMs(waitTime, unit),
        NativeLock.LEASE_DEFAULT, owner, refusedAsFalse(owner));
  }

  public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit) {
    return tryLockAsync(waitTime, leaseTime, unit, RedisLock.threadOwner());
  }

  public CompletableFuture<Boolean> tryLockAsync(long waitTime, long leaseTime, TimeUnit unit,
      long threadId) {
    return nativeMulti.tryAcquireAsync(Durations.tryWaitMs(waitTime, unit),
        Durations.leaseMs(leaseTime, unit), threadId, refusedAsFalse(threadId));
  }

  /** Starts releasing every member held by the calling thread. */
  public CompletableFuture<Void> unlockAsync() {
    return unlockAsync(RedisLock.threadOwner());
  }

  public CompletableFuture<Void> unlockAsync(long threadId) {
    return nativeMulti.releaseAsync(threadId);
  }

  /** Whether the calling thread holds the group (local view). */
  public boolean isHeldByCurrentThread() {
    return nativeMulti.isHeld(RedisLock.threadOwner());
  }

  /** Whether the thread with this id holds the group through this client (local view). */
  public boolean isHeldByThread(long threadId) {
    return nativeMulti.isHeld(threadId);
  }

  @Override
  public Condition newCondition() {
    throw new UnsupportedOperationException("RedisMultiLock does not support conditions");
  }

  /**
   * Locks as {@link #lock()} and returns a {@link Held} whose {@code close()} unlocks, for
   * try-with-resources: {@code try (Held held = group.locked()) { ... }}.
   */
  public Held locked() {
    lock();
    return new Held(this);
  }

  /**
   * Frees the group's native handle (no network call, no unlock); the member locks stay
   * usable. Not AutoCloseable, as {@link RedisLock}: use {@link #locked()} to unlock at the end
   * of a try-with-resources block.
   */
  public void close() {
    nativeMulti.close();
  }

  @Override
  public String toString() {
    return (redlock ? "RedisRedLock" : "RedisMultiLock") + members;
  }
}
