package io.rlock;

import io.rlock.internal.NativeSemaphore;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

/**
 * A semaphore whose permits have ids and leases (Redisson RPermitExpirableSemaphore shape and
 * layout: Redisson processes share it), made by
 * {@link RedisLockClient#getPermitExpirableSemaphore(String)}.
 *
 * <p>Each acquire returns permit ids (32 lower-case hex digits). A permit whose lease runs out
 * goes back to the semaphore, so a holder that dies frees its permits. Leases:
 * <ul>
 *   <li>the methods without one use the semaphore's default, the watchdog: the permit has a
 *       short lease that the client renews while it lives, as a lock's (an rlock extension;
 *       Redisson has no watchdog for permits), also after this object is closed or collected,
 *       until the permit is released; closing the client gives it back;
 *   <li>a positive lease: the permit expires after it unless renewed by
 *       {@link #updateLeaseTime(String, Duration)};
 *   <li>{@code -1} in the {@code (long, TimeUnit)} forms: the permit never expires (Redisson's
 *       meaning).
 * </ul>
 *
 * <p>Waits cost no thread and are interruptible; see {@link RedisSemaphore} for how blocking
 * and {@code *Async} calls wait. A permit count per call is 1 to 1000.
 */
public class RedisPermitExpirableSemaphore implements AutoCloseable {
  private final RedisLockClient client; // keeps the client from being cleaned while in use
  private final String name;
  final NativeSemaphore nativeSemaphore;

  RedisPermitExpirableSemaphore(RedisLockClient client, String name,
      NativeSemaphore nativeSemaphore) {
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

  /** Adds permits (negative: takes them away); returns the new number available. */
  public int addPermits(int permits) {
    return (int) nativeSemaphore.addPermits(permits);
  }

  /**
   * Sets the total of permits, available plus held (Redisson's setPermits): expired permits go
   * back first, then the available count becomes {@code permits} minus the permits held, so it
   * is below 0 while more are held than the new total. A semaphore that does not exist is made
   * with {@code permits} available. {@link IllegalArgumentException} for a negative count.
   */
  public void setPermits(int permits) {
    nativeSemaphore.setPermits(permits);
  }

  /** Starts {@link #setPermits(int)}; the future fails as setPermits would throw. */
  public CompletableFuture<Void> setPermitsAsync(int permits) {
    return nativeSemaphore.setPermitsAsync(permits).thenApply(available -> null);
  }

  /**
   * The time left on a held permit's lease, in milliseconds; -1 for a permit without lease
   * (Redisson's getLeaseTime). {@link IllegalArgumentException}, as Redisson's, when the permit
   * is not held (never taken, released, or its lease ran out) or the id cannot be a permit's
   * (not 32 hex digits). Expired permits go back to the semaphore first.
   */
  public long getLeaseTime(String permitId) {
    try {
      return nativeSemaphore.leaseTime(permitId);
    } catch (LockNotHeldException e) {
      throw notHeld(permitId, e);
    }
  }

  /** Starts {@link #getLeaseTime(String)}; the future fails as getLeaseTime would throw. */
  public CompletableFuture<Long> getLeaseTimeAsync(String permitId) {
    return nativeSemaphore.leaseTimeAsync(permitId).handle((left, error) -> {
      if (error == null) {
        return left;
      }
      Throwable cause = cause(error);
      if (cause instanceof LockNotHeldException) {
        throw new CompletionException(notHeld(permitId, cause));
      }
      throw error instanceof CompletionException
          ? (CompletionException) error
          : new CompletionException(error);
    });
  }

  private IllegalArgumentException notHeld(String permitId, Throwable cause) {
    return new IllegalArgumentException("the permit " + permitId + " of the semaphore '" + name
        + "' is not held (never taken, released, or its lease ran out)", cause);
  }

  private static Throwable cause(Throwable error) {
    return error instanceof CompletionException && error.getCause() != null
        ? error.getCause()
        : error;
  }

  /** Waits as long as it takes for one permit, with the default lease: its id. */
  public String acquire() throws InterruptedException {
    return nativeSemaphore.acquireId(NativeSemaphore.WAIT_FOREVER, NativeSemaphore.LEASE_DEFAULT);
  }

  /** Waits for one permit held for {@code leaseTime} (positive). */
  public String acquire(Duration leaseTime) throws InterruptedException {
    return nativeSemaphore.acquireId(NativeSemaphore.WAIT_FOREVER, lease(leaseTime));
  }

  /** Waits for one permit held for {@code leaseTime} (-1: never expires). */
  public String acquire(long leaseTime, TimeUnit unit) throws InterruptedException {
    return nativeSemaphore.acquireId(NativeSemaphore.WAIT_FOREVER,
        Durations.permitLeaseMs(leaseTime, unit));
  }

  /** Waits for {@code permits} permits, taken at once, with the default lease. */
  public List<String> acquire(int permits) throws InterruptedException {
    return nativeSemaphore.acquireIds(permits, NativeSemaphore.WAIT_FOREVER,
        NativeSemaphore.LEASE_DEFAULT);
  }

  public List<String> acquire(int permits, long leaseTime, TimeUnit unit)
      throws InterruptedException {
    return nativeSemaphore.acquireIds(permits, NativeSemaphore.WAIT_FOREVER,
        Durations.permitLeaseMs(leaseTime, unit));
  }

  /** Tries once for one permit with the default lease: its id, or null. */
  public String tryAcquire() {
    try {
      return nativeSemaphore.acquireId(0, NativeSemaphore.LEASE_DEFAULT);
    } catch (InterruptedException e) {
      throw new AssertionError("a single try does not wait", e);
    }
  }

  /** Tries once for {@code permits} permits: their ids, or an empty list. */
  public List<String> tryAcquire(int permits) {
    try {
      return nativeSemaphore.acquireIds(permits, 0, NativeSemaphore.LEASE_DEFAULT);
    } catch (InterruptedException e) {
      throw new AssertionError("a single try does not wait", e);
    }
  }

  /** Waits at most {@code waitTime} for one permit with the default lease: its id, or null. */
  public String tryAcquire(Duration waitTime) throws InterruptedException {
    return nativeSemaphore.acquireId(Durations.waitMs(waitTime, "waitTime"),
        NativeSemaphore.LEASE_DEFAULT);
  }

  /** Waits at most {@code waitTime} for one permit held for {@code leaseTime}: id or null. */
  public String tryAcquire(Duration waitTime, Duration leaseTime) throws InterruptedException {
    return nativeSemaphore.acquireId(Durations.waitMs(waitTime, "waitTime"), lease(leaseTime));
  }

  public String tryAcquire(long waitTime, TimeUnit unit) throws InterruptedException {
    return nativeSemaphore.acquireId(Durations.waitMs(waitTime, unit, "waitTime"),
        NativeSemaphore.LEASE_DEFAULT);
  }

  /** As {@link #tryAcquire(Duration, Duration)}; leaseTime -1: never expires. */
  public String tryAcquire(long waitTime, long leaseTime, TimeUnit unit)
      throws InterruptedException {
    return nativeSemaphore.acquireId(Durations.waitMs(waitTime, unit, "waitTime"),
        Durations.permitLeaseMs(leaseTime, unit));
  }

  public List<String> tryAcquire(int permits, long waitTime, long leaseTime, TimeUnit unit)
      throws InterruptedException {
    return nativeSemaphore.acquireIds(permits, Durations.waitMs(waitTime, unit, "waitTime"),
        Durations.permitLeaseMs(leaseTime, unit));
  }

  /**
   * Gives back a permit: {@link LockNotHeldException} when it is not held (never taken,
   * released, or reclaimed after its lease ran out), {@link LockLostException} when its lease
   * ran out (it goes back to the semaphore anyway). A malformed id is an
   * {@link IllegalArgumentException}.
   */
  public void release(String permitId) {
    nativeSemaphore.releaseIds(Collections.singletonList(permitId));
  }

  /** Gives back permits, all or none, as {@link #release(String)}. */
  public void release(List<String> permitIds) {
    nativeSemaphore.releaseIds(permitIds);
  }

  /**
   * As {@link #release(String)}: false instead of a not-held exception, and for an id that
   * cannot be a permit's (not 32 hex digits), as Redisson answers.
   */
  public boolean tryRelease(String permitId) {
    try {
      release(permitId);
      return true;
    } catch (LockNotHeldException | IllegalArgumentException notAPermitHeld) {
      return false;
    }
  }

  /**
   * As {@link #release(List)}, all or none: how many were released (the list's size, or 0,
   * also when an id cannot be a permit's).
   */
  public int tryRelease(List<String> permitIds) {
    try {
      release(permitIds);
      return permitIds.size();
    } catch (LockNotHeldException | IllegalArgumentException notAllPermitsHeld) {
      return 0;
    }
  }

  /** Gives a held permit a new lease from now: false when it is not held. */
  public boolean updateLeaseTime(String permitId, Duration leaseTime) {
    return updateLease(permitId, lease(leaseTime));
  }

  /** As {@link #updateLeaseTime(String, Duration)}; leaseTime -1: never expires. */
  public boolean updateLeaseTime(String permitId, long leaseTime, TimeUnit unit) {
    return updateLease(permitId, Durations.permitLeaseMs(leaseTime, unit));
  }

  /** Hands a held permit to the client's watchdog (renewed while it lives): false when not held. */
  public boolean renewByWatchdog(String permitId) {
    return updateLease(permitId, NativeSemaphore.LEASE_WATCHDOG);
  }

  private boolean updateLease(String permitId, long leaseMs) {
    try {
      nativeSemaphore.updateLease(permitId, leaseMs);
      return true;
    } catch (LockNotHeldException e) {
      return false;
    }
  }

  /** Available permits now, after expired permits went back. */
  public int availablePermits() {
    return (int) nativeSemaphore.available()[0];
  }

  /** Permits held now (by anyone), after expired permits went back. */
  public int acquiredPermits() {
    return (int) nativeSemaphore.available()[1];
  }

  /** All permits: available plus held. */
  public int getPermits() {
    long[] counts = nativeSemaphore.available();
    return (int) (counts[0] + counts[1]);
  }

  public boolean isExists() {
    return nativeSemaphore.available()[2] == 1;
  }

  /** Deletes the semaphore and its permits' ids: true when it existed. */
  public boolean delete() {
    return nativeSemaphore.delete();
  }

  /** Starts {@link #acquire()}: completes with the id (never null). */
  public CompletableFuture<String> acquireAsync() {
    return nativeSemaphore.acquireIdAsync(NativeSemaphore.WAIT_FOREVER,
        NativeSemaphore.LEASE_DEFAULT);
  }

  public CompletableFuture<String> acquireAsync(Duration leaseTime) {
    return nativeSemaphore.acquireIdAsync(NativeSemaphore.WAIT_FOREVER, lease(leaseTime));
  }

  public CompletableFuture<String> acquireAsync(long leaseTime, TimeUnit unit) {
    return nativeSemaphore.acquireIdAsync(NativeSemaphore.WAIT_FOREVER,
        Durations.permitLeaseMs(leaseTime, unit));
  }

  public CompletableFuture<List<String>> acquireAsync(int permits) {
    return nativeSemaphore.acquireIdsAsync(permits, NativeSemaphore.WAIT_FOREVER,
        NativeSemaphore.LEASE_DEFAULT);
  }

  /** Starts {@link #tryAcquire()}: the id, or null. */
  public CompletableFuture<String> tryAcquireAsync() {
    return nativeSemaphore.acquireIdAsync(0, NativeSemaphore.LEASE_DEFAULT);
  }

  public CompletableFuture<String> tryAcquireAsync(Duration waitTime, Duration leaseTime) {
    return nativeSemaphore.acquireIdAsync(Durations.waitMs(waitTime, "waitTime"),
        lease(leaseTime));
  }

  public CompletableFuture<String> tryAcquireAsync(long waitTime, TimeUnit unit) {
    return nativeSemaphore.acquireIdAsync(Durations.waitMs(waitTime, unit, "waitTime"),
        NativeSemaphore.LEASE_DEFAULT);
  }

  public CompletableFuture<String> tryAcquireAsync(long waitTime, long leaseTime, TimeUnit unit) {
    return nativeSemaphore.acquireIdAsync(Durations.waitMs(waitTime, unit, "waitTime"),
        Durations.permitLeaseMs(leaseTime, unit));
  }

  public CompletableFuture<List<String>> tryAcquireAsync(int permits, long waitTime,
      long leaseTime, TimeUnit unit) {
    return nativeSemaphore.acquireIdsAsync(permits, Durations.waitMs(waitTime, unit, "waitTime"),
        Durations.permitLeaseMs(leaseTime, unit));
  }

  /** Starts {@link #release(String)}; the future fails as release would throw. */
  public CompletableFuture<Void> releaseAsync(String permitId) {
    return nativeSemaphore.releaseIdsAsync(Collections.singletonList(permitId));
  }

  public CompletableFuture<Void> releaseAsync(List<String> permitIds) {
    return nativeSemaphore.releaseIdsAsync(permitIds);
  }

  /** Starts {@link #tryRelease(String)}. */
  public CompletableFuture<Boolean> tryReleaseAsync(String permitId) {
    CompletableFuture<Void> release;
    try {
      release = releaseAsync(permitId);
    } catch (IllegalArgumentException notAPermit) { // as tryRelease: an id no permit can have
      return CompletableFuture.completedFuture(false);
    }
    return release.handle((done, error) -> {
      if (error == null) {
        return true;
      }
      Throwable cause = error instanceof CompletionException
          && error.getCause() != null ? error.getCause() : error;
      if (cause instanceof LockNotHeldException || cause instanceof IllegalArgumentException) {
        return false;
      }
      throw error instanceof CompletionException
          ? (CompletionException) error
          : new CompletionException(error);
    });
  }

  /**
   * Starts {@link #tryRelease(List)}: completes with how many were released (the list's size,
   * or 0 when one is not held or an id cannot be a permit's); other failures fail the future.
   */
  public CompletableFuture<Integer> tryReleaseAsync(List<String> permitIds) {
    return releaseAsync(permitIds).handle((done, error) -> {
      if (error == null) {
        return permitIds.size();
      }
      Throwable cause = cause(error);
      if (cause instanceof LockNotHeldException || cause instanceof IllegalArgumentException) {
        return 0;
      }
      throw error instanceof CompletionException
          ? (CompletionException) error
          : new CompletionException(error);
    });
  }

  /**
   * Frees the native handle without any network call: permits taken through it stay held (the
   * client's watchdog goes on renewing its own). Wakes waits through this object.
   */
  @Override
  public void close() {
    nativeSemaphore.close();
  }

  @Override
  public String toString() {
    return "RedisPermitExpirableSemaphore[" + name + "]";
  }

  private static long lease(Duration leaseTime) {
    return Durations.positiveMs(leaseTime, "leaseTime");
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
