package io.rlock.internal;

import java.lang.ref.Cleaner;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * An rlock_lock. Internal: use io.rlock.RedisLock. Every call names its owner thread id
 * explicitly. Freeing (close, or the Cleaner) makes no network call.
 */
public final class NativeLock implements AutoCloseable {
  public static final int KIND_REENTRANT = LockKind.LOCK_REENTRANT;
  public static final int KIND_FENCED = LockKind.LOCK_FENCED;
  public static final int KIND_SPIN = LockKind.LOCK_SPIN;
  public static final int KIND_FAIR = LockKind.LOCK_FAIR;
  public static final int KIND_READ = LockKind.LOCK_READ;
  public static final int KIND_WRITE = LockKind.LOCK_WRITE;
  public static final int KIND_NON_REENTRANT = LockKind.LOCK_NON_REENTRANT;
  public static final int KIND_NON_REENTRANT_FAIR = LockKind.LOCK_NON_REENTRANT_FAIR;
  /** rlock.h RLOCK_WAIT_FOREVER. */
  public static final long WAIT_FOREVER = -1;
  /** rlock.h RLOCK_LEASE_WATCHDOG. */
  public static final long LEASE_WATCHDOG = -1;
  /** The lock's default lease (the watchdog). */
  public static final long LEASE_DEFAULT = 0;

  private static final PendingAcquire.Grant<Long> TOKEN = (ptr, threadId) -> {
    long token = RlockNative.lockToken(ptr, threadId);
    return token > 0 ? token : null;
  };

  private final Handle handle;
  private final Cleaner.Cleanable cleanable;
  private final AsyncTarget async;
  private final Acquire.Target target;

  /** neverReenters: a caller-given owner id, which the library never lets re-enter. */
  NativeLock(long ptr, String name, Handle client, int kind, boolean neverReenters) {
    handle = new Handle(ptr, "the lock '" + name + "'", RlockNative::cancel,
        RlockNative::lockFree, client);
    cleanable = Handle.CLEANER.register(this, handle);
    async = neverReenters || kind == KIND_NON_REENTRANT || kind == KIND_NON_REENTRANT_FAIR
        ? AsyncTarget.NON_REENTRANT_LOCK
        : AsyncTarget.LOCK;
    target = new Acquire.Target(this, handle, RlockNative::acquire, async, "the lock");
  }

  Handle handle() {
    return handle;
  }

  /** Waits without being interruptible: true acquired, false when waitMs ran out. */
  public boolean acquire(long waitMs, long leaseMs, long threadId) {
    return Acquire.uninterruptibly(target, waitMs, leaseMs, threadId);
  }

  /** As acquire, but Thread.interrupt() ends the wait promptly, leaving nothing held. */
  public boolean acquireInterruptibly(long waitMs, long leaseMs, long threadId)
      throws InterruptedException {
    return Acquire.interruptibly(target, waitMs, leaseMs, threadId);
  }

  /** Sets the remaining lease of the owner's hold (rlock_extend_for). */
  public void extend(long leaseMs, long threadId) {
    NativeCompletion.refuseInsideCompletion("extending", target.what);
    target.handle.call(target.owner, lock -> {
      RlockNative.extendFor(lock, threadId, leaseMs);
      return null;
    });
  }

  /** Adds to the remaining lease of the owner's hold (rlock_extend_by_for). */
  public void extendBy(long addMs, long threadId) {
    NativeCompletion.refuseInsideCompletion("extending", target.what);
    target.handle.call(target.owner, lock -> {
      RlockNative.extendByFor(lock, threadId, addMs);
      return null;
    });
  }

  public void release(long threadId) {
    Acquire.release(target, threadId, lock -> {
      RlockNative.releaseFor(lock, threadId);
      return null;
    });
  }

  /**
   * Starts an acquire without waiting: the future completes true when granted, false when
   * waitMs ran out, or exceptionally. Ending the future first cancels the wait, and a grant
   * that raced it is released.
   */
  public CompletableFuture<Boolean> acquireAsync(long waitMs, long leaseMs, long threadId) {
    return Acquire.async(target, waitMs, leaseMs, threadId);
  }

  /**
   * As acquireAsync, but a failure refusedAsFalse accepts completes the future with false (a
   * try's answer to a refusal, such as a reader's RedisLockDeadlockException).
   */
  public CompletableFuture<Boolean> tryAcquireAsync(long waitMs, long leaseMs, long threadId,
      Predicate<RuntimeException> refusedAsFalse) {
    return Acquire.tryAsync(target, waitMs, leaseMs, threadId, refusedAsFalse);
  }

  /** Its holder acquiring again is refused (a non-reentrant kind, or a caller-given id). */
  public boolean neverReenters() {
    return async == AsyncTarget.NON_REENTRANT_LOCK;
  }

  /** As acquireAsync, waiting forever: the future completes (null) when granted. */
  public CompletableFuture<Void> lockAsync(long leaseMs, long threadId) {
    return PendingAcquire.start(this, handle, async, WAIT_FOREVER, leaseMs, threadId,
        PendingAcquire.NOTHING, null).future();
  }

  /** As acquireAsync, completing with the fencing token of the hold, or null on a time-out. */
  public CompletableFuture<Long> acquireTokenAsync(long waitMs, long leaseMs, long threadId) {
    return PendingAcquire.start(this, handle, async, waitMs, leaseMs, threadId, TOKEN,
        null).future();
  }

  /** Starts releasing one hold of the owner; the future fails as release() would throw. */
  public CompletableFuture<Void> releaseAsync(long threadId) {
    return Acquire.releaseAsync(target, threadId);
  }

  /** Starts setting the lease of the owner's hold to leaseMs (rlock_extend_for). */
  public CompletableFuture<Void> extendAsync(long leaseMs, long threadId) {
    return PendingRelease.start(this, handle,
        (ptr, completion) -> RlockNative.extendAsync(ptr, threadId, leaseMs, completion));
  }

  /** Local view: the owner holds it through this client and it was not found lost. */
  public boolean isHeld(long threadId) {
    return handle.call(this, lock -> RlockNative.isHeldFor(lock, threadId));
  }

  /** The fencing token of the owner's hold (local view), 0 when it holds none. */
  public long token(long threadId) {
    return handle.call(this, lock -> RlockNative.lockToken(lock, threadId));
  }

  /** Deletes the lock whoever holds it; true when it was locked. */
  public boolean forceUnlock() {
    return handle.call(this, lock -> RlockNative.forceUnlock(lock) == 1);
  }

  /** Server view for the owner. */
  public LockState query(long threadId) {
    return handle.call(this, lock -> RlockNative.query(lock, threadId));
  }

  /**
   * Sets the handler of lost holds of this handle, once. The JNI layer keeps it (a global
   * reference) until the handle is freed, so it must not reach the object that owns this lock
   * strongly, or that object would never become unreachable.
   */
  public void setLostHandler(LostHandler handler) {
    handle.execute(this, lock -> {
      if (handle.aux() != 0) {
        throw new IllegalStateException("the lost handler is already set");
      }
      long payload = RlockNative.lostPayloadNew(handler);
      handle.setAux(payload); // freed with the handle from now on
      RlockNative.lostCallbackSet(lock, payload);
    });
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  /** Wakes waiters of this handle, then frees it; a hold left expires by its lease. */
  @Override
  public void close() {
    handle.close();
    cleanable.clean();
  }
}
