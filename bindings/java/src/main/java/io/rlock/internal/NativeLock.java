package io.rlock.internal;

import java.lang.ref.Cleaner;

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
  /** rlock.h RLOCK_WAIT_FOREVER. */
  public static final long WAIT_FOREVER = -1;
  /** rlock.h RLOCK_LEASE_WATCHDOG. */
  public static final long LEASE_WATCHDOG = -1;
  /** The lock's default lease (the watchdog). */
  public static final long LEASE_DEFAULT = 0;

  private final Handle handle;
  private final Cleaner.Cleanable cleanable;

  NativeLock(long ptr, String name, Handle client) {
    handle = new Handle(ptr, "the lock '" + name + "'", RlockNative::cancel,
        RlockNative::lockFree, client);
    cleanable = Handle.CLEANER.register(this, handle);
  }

  Handle handle() {
    return handle;
  }

  /** Waits without being interruptible: true acquired, false when waitMs ran out. */
  public boolean acquire(long waitMs, long leaseMs, long threadId) {
    return Acquire.uninterruptibly(this, handle, RlockNative::acquire, waitMs, leaseMs, threadId);
  }

  /** As acquire, but Thread.interrupt() ends the wait promptly, leaving nothing held. */
  public boolean acquireInterruptibly(long waitMs, long leaseMs, long threadId)
      throws InterruptedException {
    return Acquire.interruptibly(this, handle, RlockNative::acquire, "the lock", waitMs, leaseMs,
        threadId);
  }

  public void release(long threadId) {
    handle.execute(this, lock -> RlockNative.releaseFor(lock, threadId));
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
