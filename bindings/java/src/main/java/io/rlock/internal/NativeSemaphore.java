package io.rlock.internal;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * An rlock_semaphore, plain or permit-expirable. Internal: use io.rlock.RedisSemaphore and
 * io.rlock.RedisPermitExpirableSemaphore. Waits always go through the asynchronous C call (a
 * blocking caller parks on its future), so no wait holds a thread of the library's, and a
 * virtual thread's carrier is free meanwhile. Freeing (close, or the Cleaner) makes no network
 * call; the watchdog then stops renewing the handle's permits.
 */
public final class NativeSemaphore implements AutoCloseable {
  public static final int KIND_PLAIN = SemaphoreKind.SEMAPHORE_PLAIN;
  public static final int KIND_EXPIRABLE = SemaphoreKind.SEMAPHORE_EXPIRABLE;
  /** rlock.h RLOCK_WAIT_FOREVER. */
  public static final long WAIT_FOREVER = -1;
  /** rlock.h RLOCK_LEASE_WATCHDOG: renewed by this handle's watchdog while it lives. */
  public static final long LEASE_WATCHDOG = -1;
  /** rlock.h RLOCK_LEASE_NONE: a permit that never expires (Redisson's lease -1). */
  public static final long LEASE_NONE = -2;
  /** The semaphore's default lease. */
  public static final long LEASE_DEFAULT = 0;
  /** rlock.h RLOCK_PERMIT_ID_SIZE - 1: hex digits of a permit id. */
  static final int ID_LENGTH = 32;

  private final Handle handle;
  private final Cleaner.Cleanable cleanable;
  private final boolean expirable;
  private final String what;

  NativeSemaphore(long ptr, String name, int kind, Handle client) {
    what = "the semaphore '" + name + "'";
    handle = new Handle(ptr, what, RlockNative::semaphoreCancel,
        (p, aux) -> RlockNative.semaphoreFree(p), client);
    cleanable = Handle.CLEANER.register(this, handle);
    expirable = kind == KIND_EXPIRABLE;
  }

  /** Sets the permits of a semaphore that does not exist; true when set. ttlMs 0: no expiry. */
  public boolean trySetPermits(long permits, long ttlMs) {
    return handle.call(this, p -> RlockNative.semaphoreTrySetPermits(p, permits, ttlMs) == 1);
  }

  /** Adds (or, negative, takes away) permits: the new count, which may be below 0. */
  public long addPermits(long delta) {
    return handle.call(this, p -> RlockNative.semaphoreAddPermits(p, delta));
  }

  /** Plain: starts taking permits; true when taken, false when waitMs ran out. */
  public CompletableFuture<Boolean> acquireAsync(long permits, long waitMs) {
    return PendingWait.start(this, handle, waitMs,
        (ptr, token, completion) -> RlockNative.semaphoreAcquireAsync(ptr, permits, waitMs, 0, 0,
            token, completion),
        (value, ids) -> Boolean.TRUE, Boolean.FALSE,
        (ptr, granted) -> RlockNative.semaphoreRelease(ptr, permits));
  }

  /** Plain: starts taking permits, waiting as long as it takes (completes with null). */
  public CompletableFuture<Void> acquireForeverAsync(long permits) {
    return PendingWait.start(this, handle, WAIT_FOREVER,
        (ptr, token, completion) -> RlockNative.semaphoreAcquireAsync(ptr, permits, WAIT_FOREVER,
            0, 0, token, completion),
        (value, ids) -> null, null, (ptr, granted) -> RlockNative.semaphoreRelease(ptr, permits));
  }

  /** Plain: waits for permits; interruptible. */
  public boolean acquire(long permits, long waitMs) throws InterruptedException {
    NativeCompletion.refuseInsideCompletion("acquiring", what);
    if (waitMs == 0) {
      return PendingWait.join(acquireAsync(permits, 0));
    }
    return PendingWait.await(acquireAsync(permits, waitMs), what);
  }

  /**
   * Expirable: starts taking permits with leaseMs (LEASE_DEFAULT, LEASE_WATCHDOG, LEASE_NONE or
   * > 0): their ids when taken, an empty list when waitMs ran out.
   */
  public CompletableFuture<List<String>> acquireIdsAsync(long permits, long waitMs,
      long leaseMs) {
    return PendingWait.start(this, handle, waitMs,
        (ptr, token, completion) -> RlockNative.semaphoreAcquireAsync(ptr, permits, waitMs,
            leaseMs, 1, token, completion),
        (value, ids) -> ids(ids), new ArrayList<>(),
        (ptr, granted) -> RlockNative.permitRelease(ptr, idBytes(granted)));
  }

  /** Expirable: as acquireIdsAsync for one permit: its id, or null when waitMs ran out. */
  public CompletableFuture<String> acquireIdAsync(long waitMs, long leaseMs) {
    return PendingWait.start(this, handle, waitMs,
        (ptr, token, completion) -> RlockNative.semaphoreAcquireAsync(ptr, 1, waitMs, leaseMs, 1,
            token, completion),
        (value, ids) -> ids(ids).get(0), null,
        (ptr, granted) -> RlockNative.permitRelease(ptr,
            idBytes(Collections.singletonList(granted))));
  }

  /** Expirable: waits for permits; interruptible. Empty when waitMs ran out. */
  public List<String> acquireIds(long permits, long waitMs, long leaseMs)
      throws InterruptedException {
    NativeCompletion.refuseInsideCompletion("acquiring", what);
    return waitFor(acquireIdsAsync(permits, waitMs, leaseMs), waitMs);
  }

  /** Expirable: waits for one permit; interruptible. Null when waitMs ran out. */
  public String acquireId(long waitMs, long leaseMs) throws InterruptedException {
    NativeCompletion.refuseInsideCompletion("acquiring", what);
    return waitFor(acquireIdAsync(waitMs, leaseMs), waitMs);
  }

  private <T> T waitFor(CompletableFuture<T> future, long waitMs) throws InterruptedException {
    return waitMs == 0 ? PendingWait.join(future) : PendingWait.await(future, what);
  }

  /** Plain: gives back permits this client took (LockNotHeldException for more). */
  public void release(long permits) {
    Offload.call(() -> handle.call(this, p -> {
      RlockNative.semaphoreRelease(p, permits);
      return null;
    }));
  }

  public CompletableFuture<Void> releaseAsync(long permits) {
    return Offload.supply(() -> handle.call(this, p -> {
      RlockNative.semaphoreRelease(p, permits);
      return null;
    }));
  }

  /** Plain: as release, but true/false for a semaphore that exists or not (no exception). */
  public boolean releaseIfExists(long permits) {
    return Offload.call(() -> handle.call(this,
        p -> RlockNative.semaphoreReleaseIfExists(p, permits) == 1));
  }

  public CompletableFuture<Boolean> releaseIfExistsAsync(long permits) {
    return Offload.supply(() -> handle.call(this,
        p -> RlockNative.semaphoreReleaseIfExists(p, permits) == 1));
  }

  /** Expirable: sets the total of permits (available + held): the available count after it. */
  public long setPermits(long permits) {
    return handle.call(this, p -> RlockNative.semaphoreSetPermits(p, permits));
  }

  public CompletableFuture<Long> setPermitsAsync(long permits) {
    return Offload.supply(() -> handle.call(this,
        p -> RlockNative.semaphoreSetPermits(p, permits)));
  }

  /**
   * Expirable: the ms left on a held permit's lease, -1 for one without lease;
   * LockNotHeldException when it is not held.
   */
  public long leaseTime(String id) {
    byte[] bytes = idBytes(Collections.singletonList(id))[0];
    return handle.call(this, p -> RlockNative.permitLeaseTime(p, bytes));
  }

  public CompletableFuture<Long> leaseTimeAsync(String id) {
    byte[] bytes;
    try {
      bytes = idBytes(Collections.singletonList(id))[0];
    } catch (RuntimeException e) {
      CompletableFuture<Long> failed = new CompletableFuture<>();
      failed.completeExceptionally(e);
      return failed;
    }
    return Offload.supply(() -> handle.call(this, p -> RlockNative.permitLeaseTime(p, bytes)));
  }

  /** Expirable: gives back permits by id, all or none. */
  public void releaseIds(List<String> ids) {
    byte[][] bytes = idBytes(ids);
    Offload.call(() -> handle.call(this, p -> {
      RlockNative.permitRelease(p, bytes);
      return null;
    }));
  }

  public CompletableFuture<Void> releaseIdsAsync(List<String> ids) {
    byte[][] bytes;
    try {
      bytes = idBytes(ids);
    } catch (RuntimeException e) {
      CompletableFuture<Void> failed = new CompletableFuture<>();
      failed.completeExceptionally(e);
      return failed;
    }
    return Offload.supply(() -> handle.call(this, p -> {
      RlockNative.permitRelease(p, bytes);
      return null;
    }));
  }

  /** Expirable: a held permit's new lease (LEASE_WATCHDOG, LEASE_NONE or > 0). */
  public void updateLease(String id, long leaseMs) {
    byte[] bytes = idBytes(Collections.singletonList(id))[0];
    handle.execute(this, p -> RlockNative.permitUpdateLease(p, bytes, leaseMs));
  }

  /** {available (may be < 0), expirable permits held, 1 when the semaphore exists}. */
  public long[] available() {
    return handle.call(this, RlockNative::semaphoreAvailable);
  }

  /** Takes every available permit: how many (may be < 0). */
  public long drain() {
    return handle.call(this, RlockNative::semaphoreDrain);
  }

  /** Deletes the semaphore; true when it existed. */
  public boolean delete() {
    return handle.call(this, p -> RlockNative.semaphoreDelete(p) == 1);
  }

  /** Plain: permits held by this client (taken, not given back). */
  public long held() {
    return handle.call(this, RlockNative::semaphoreHeld);
  }

  public boolean isExpirable() {
    return expirable;
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  /** Wakes waits of this handle, then frees it; the watchdog stops renewing its permits. */
  @Override
  public void close() {
    handle.close();
    cleanable.clean();
  }

  /** The ids of a granted expirable acquire: 32 hex digits each, concatenated. */
  private static List<String> ids(byte[] concatenated) {
    if (concatenated == null || concatenated.length % ID_LENGTH != 0) {
      throw new IllegalStateException("the permits were taken but their ids could not be read");
    }
    List<String> ids = new ArrayList<>(concatenated.length / ID_LENGTH);
    for (int at = 0; at < concatenated.length; at += ID_LENGTH) {
      ids.add(new String(concatenated, at, ID_LENGTH, StandardCharsets.US_ASCII));
    }
    return ids; // a list of the caller's own, as Redisson's
  }

  /** The ids as UTF-8 (the C layer checks their length and the C library their digits). */
  private static byte[][] idBytes(List<String> ids) {
    if (ids == null) {
      throw new IllegalArgumentException("the permit ids must not be null");
    }
    byte[][] bytes = new byte[ids.size()][];
    for (int i = 0; i < bytes.length; i++) {
      String id = ids.get(i);
      if (id == null) {
        throw new IllegalArgumentException("a permit id must not be null");
      }
      bytes[i] = Utf8.exact(id, "permit id");
    }
    return bytes;
  }
}
