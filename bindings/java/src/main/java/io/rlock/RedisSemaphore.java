package io.rlock;

import io.rlock.internal.NativeSemaphore;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A counting semaphore on Redis (Redisson RSemaphore shape and layout: Redisson processes share
 * it), made by {@link RedisLockClient#getSemaphore(String)}.
 *
 * <p>Permits are anonymous, but the client counts what it took: {@link #release(int)} gives
 * back only permits this client took and has not given back, and throws
 * {@link LockNotHeldException} (nothing changes) for more; use {@link #addPermits(int)} to
 * create permits. A semaphore that does not exist has no permits: acquire waits for it to be
 * set, a single try fails. Permit counts per call are 0 (done at once, no round trip, as in
 * Redisson) to {@link Integer#MAX_VALUE}; a negative count throws
 * {@link IllegalArgumentException} without touching Redis.
 *
 * <p>Waits cost no thread: waiters are woken by Redis pub/sub. A blocking wait parks the
 * calling thread (a virtual thread frees its carrier); {@link Thread#interrupt()} ends it
 * promptly, leaving nothing taken. The {@code *Async} methods return at once; ending their
 * future before the grant cancels the wait, and permits granted in that race are given back.
 * Futures complete on a library thread: stages attached without an executor must not block.
 */
public class RedisSemaphore implements AutoCloseable {
  private final RedisLockClient client; // keeps the client from being cleaned while in use
  private final String name;
  final NativeSemaphore nativeSemaphore;

  RedisSemaphore(RedisLockClient client, String name, NativeSemaphore nativeSemaphore) {
    this.client = client;
    this.name = name;
    this.nativeSemaphore = nativeSemaphore;
  }

  public String getName() {
    return name;
  }

  public RedisLockClient getClient() {
    return client;
  }

  /** Sets the permits (0 or more) of a semaphore that does not exist yet: true when set. */
  public boolean trySetPermits(int permits) {
    return nativeSemaphore.trySetPermits(permits, 0);
  }

  /** As {@link #trySetPermits(int)}; the semaphore expires after {@code timeToLive}. */
  public boolean trySetPermits(int permits, Duration timeToLive) {
    return nativeSemaphore.trySetPermits(permits, Durations.positiveMs(timeToLive, "timeToLive"));
  }

  /**
   * Adds permits (a negative number takes them away; the count may go below 0). A missing
   * semaphore counts as 0. Returns the new number of available permits.
   */
  public int addPermits(int permits) {
    return (int) nativeSemaphore.addPermits(permits);
  }

  /** Waits as long as it takes for one permit. */
  public void acquire() throws InterruptedException {
    acquire(1);
  }

  /** Waits as long as it takes for {@code permits} permits, taken at once. */
  public void acquire(int permits) throws InterruptedException {
    nativeSemaphore.acquire(permits, NativeSemaphore.WAIT_FOREVER);
  }

  /** Tries once for one permit: true when taken. */
  public boolean tryAcquire() {
    return tryAcquire(1);
  }

  /** Tries once for {@code permits} permits: true when taken. */
  public boolean tryAcquire(int permits) {
    try {
      return nativeSemaphore.acquire(permits, 0);
    } catch (InterruptedException e) {
      throw new AssertionError("a single try does not wait", e);
    }
  }

  /** Waits at most {@code waitTime} (0: tries once) for one permit: false when it ran out. */
  public boolean tryAcquire(Duration waitTime) throws InterruptedException {
    return tryAcquire(1, waitTime);
  }

  public boolean tryAcquire(int permits, Duration waitTime) throws InterruptedException {
    return nativeSemaphore.acquire(permits, Durations.waitMs(waitTime, "waitTime"));
  }

  public boolean tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
    return tryAcquire(1, waitTime, unit);
  }

  public boolean tryAcquire(int permits, long waitTime, TimeUnit unit)
      throws InterruptedException {
    return nativeSemaphore.acquire(permits, Durations.waitMs(waitTime, unit, "waitTime"));
  }

  /** Gives back one permit this client took (waking waiters). */
  public void release() {
    release(1);
  }

  /**
   * Gives back permits this client took: {@link LockNotHeldException} for more than it holds,
   * {@link LockLostException} when the semaphore was deleted or expired meanwhile (nothing
   * changes in either case).
   */
  public void release(int permits) {
    nativeSemaphore.release(permits);
  }

  /**
   * As {@link #release(int)}, but only to a semaphore that still exists (Redisson's
   * releaseIfExists): true when the permits were given back; false when the semaphore does not
   * exist (nothing is created, and the permits no longer count as this client's) or
   * {@code permits} is 0. {@link LockNotHeldException} for more than this client holds, as
   * release; {@link IllegalArgumentException} for a negative count.
   */
  public boolean releaseIfExists(int permits) {
    checkNotNegative(permits);
    return nativeSemaphore.releaseIfExists(permits);
  }

  /**
   * Starts {@link #releaseIfExists(int)}; a negative count throws at once (as Redisson's), other
   * failures fail the future.
   */
  public CompletableFuture<Boolean> releaseIfExistsAsync(int permits) {
    checkNotNegative(permits);
    return nativeSemaphore.releaseIfExistsAsync(permits);
  }

  private void checkNotNegative(int permits) {
    if (permits < 0) {
      throw new IllegalArgumentException(
          "releasing permits of the semaphore '" + name + "': permits must not be negative, got "
              + permits);
    }
  }

  /** Available permits now (may be below 0 after addPermits with a negative number). */
  public int availablePermits() {
    return (int) nativeSemaphore.available()[0];
  }

  /**
   * Takes every available permit: how many (may be below 0; the count is 0 after). Drained
   * permits are not counted as held by this client: give them back with
   * {@link #addPermits(int)}, not {@link #release(int)}.
   */
  public int drainPermits() {
    return (int) nativeSemaphore.drain();
  }

  /** Permits this client took and has not given back (local view). */
  public int heldPermits() {
    return (int) nativeSemaphore.held();
  }

  /** Whether the semaphore exists (was set and not deleted or expired). */
  public boolean isExists() {
    return nativeSemaphore.available()[2] == 1;
  }

  /** Deletes the semaphore: true when it existed. */
  public boolean delete() {
    return nativeSemaphore.delete();
  }

  /** Starts {@link #acquire()}. */
  public CompletableFuture<Void> acquireAsync() {
    return acquireAsync(1);
  }

  /** Starts {@link #acquire(int)}: completes when the permits are taken. */
  public CompletableFuture<Void> acquireAsync(int permits) {
    return nativeSemaphore.acquireForeverAsync(permits);
  }

  public CompletableFuture<Boolean> tryAcquireAsync() {
    return tryAcquireAsync(1);
  }

  public CompletableFuture<Boolean> tryAcquireAsync(int permits) {
    return nativeSemaphore.acquireAsync(permits, 0);
  }

  public CompletableFuture<Boolean> tryAcquireAsync(Duration waitTime) {
    return tryAcquireAsync(1, waitTime);
  }

  /** Starts {@link #tryAcquire(int, Duration)}: true when taken, false when the time ran out. */
  public CompletableFuture<Boolean> tryAcquireAsync(int permits, Duration waitTime) {
    return nativeSemaphore.acquireAsync(permits, Durations.waitMs(waitTime, "waitTime"));
  }

  public CompletableFuture<Boolean> tryAcquireAsync(long waitTime, TimeUnit unit) {
    return tryAcquireAsync(1, waitTime, unit);
  }

  public CompletableFuture<Boolean> tryAcquireAsync(int permits, long waitTime, TimeUnit unit) {
    return nativeSemaphore.acquireAsync(permits, Durations.waitMs(waitTime, unit, "waitTime"));
  }

  public CompletableFuture<Void> releaseAsync() {
    return releaseAsync(1);
  }

  /** Starts {@link #release(int)}; the future fails as release would throw. */
  public CompletableFuture<Void> releaseAsync(int permits) {
    return nativeSemaphore.releaseAsync(permits);
  }

  /**
   * Frees the native handle without any network call (permits taken stay taken) and wakes
   * waits through this object ({@link RedisLockClosedException}). Idempotent.
   */
  @Override
  public void close() {
    nativeSemaphore.close();
  }

  @Override
  public String toString() {
    return "RedisSemaphore[" + name + "]";
  }

  /**
   * Adds a listener of this semaphore's key (Redisson's {@code addListener}): an {@link
   * ExpiredObjectListener} is told when the key expires, a {@link DeletedObjectListener} when it
   * is deleted (delete). Works from Redis keyspace notifications, so the server's {@code
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
}
