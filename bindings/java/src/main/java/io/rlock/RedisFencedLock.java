package io.rlock;

import io.rlock.internal.NativeLock;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A reentrant lock whose every acquire takes a fencing token (Redisson RFencedLock): tokens
 * strictly increase across every holder, so a resource that accepts a write only with a token
 * at least the highest it has seen rejects a holder whose lock expired meanwhile
 * ({@link RedisLockClient#fencedWrite}).
 */
public final class RedisFencedLock extends RedisLock {
  RedisFencedLock(RedisLockClient client, String name, NativeLock nativeLock,
      long ownerNumber) {
    super(client, name, nativeLock, "RedisFencedLock", ownerNumber);
  }

  /** The token of the calling thread's hold (local view), or null when it holds none. */
  public Long getToken() {
    long token = nativeLock.token(currentOwner());
    return token > 0 ? token : null;
  }

  /** {@link #lock()}, then the token of this hold. */
  public Long lockAndGetToken() {
    lock();
    return getToken();
  }

  /** {@link #lock(long, TimeUnit)}, then the token of this hold. */
  public Long lockAndGetToken(long leaseTime, TimeUnit unit) {
    lock(leaseTime, unit);
    return getToken();
  }

  /** {@link #tryLock()}: the token when acquired, else null. */
  public Long tryLockAndGetToken() {
    return tryLock() ? getToken() : null;
  }

  /** {@link #tryLock(long, TimeUnit)}: the token when acquired, else null. */
  public Long tryLockAndGetToken(long waitTime, TimeUnit unit) throws InterruptedException {
    return tryLock(waitTime, unit) ? getToken() : null;
  }

  /** {@link #tryLock(long, long, TimeUnit)}: the token when acquired, else null. */
  public Long tryLockAndGetToken(long waitTime, long leaseTime, TimeUnit unit)
      throws InterruptedException {
    return tryLock(waitTime, leaseTime, unit) ? getToken() : null;
  }

  /** Starts {@link #lockAndGetToken()}: the future completes with the token of the hold. */
  public CompletableFuture<Long> lockAndGetTokenAsync() {
    return nativeLock.acquireTokenAsync(NativeLock.WAIT_FOREVER, NativeLock.LEASE_DEFAULT,
        currentOwner());
  }

  /** Starts {@link #lockAndGetToken(long, TimeUnit)}. */
  public CompletableFuture<Long> lockAndGetTokenAsync(long leaseTime, TimeUnit unit) {
    return nativeLock.acquireTokenAsync(NativeLock.WAIT_FOREVER,
        Durations.leaseMs(leaseTime, unit), currentOwner());
  }

  /** Starts {@link #tryLockAndGetToken()}: the token when acquired, else null. */
  public CompletableFuture<Long> tryLockAndGetTokenAsync() {
    return nativeLock.acquireTokenAsync(0, NativeLock.LEASE_DEFAULT, currentOwner());
  }

  /** Starts {@link #tryLockAndGetToken(long, TimeUnit)}. */
  public CompletableFuture<Long> tryLockAndGetTokenAsync(long waitTime, TimeUnit unit) {
    return nativeLock.acquireTokenAsync(Durations.tryWaitMs(waitTime, unit),
        NativeLock.LEASE_DEFAULT, currentOwner());
  }

  /** Starts {@link #tryLockAndGetToken(long, long, TimeUnit)}. */
  public CompletableFuture<Long> tryLockAndGetTokenAsync(long waitTime, long leaseTime,
      TimeUnit unit) {
    return nativeLock.acquireTokenAsync(Durations.tryWaitMs(waitTime, unit),
        Durations.leaseMs(leaseTime, unit), currentOwner());
  }
}
