package io.rlock.internal;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/** An rlock_multi (multi-lock or RedLock). Internal: use io.rlock.RedisMultiLock. */
public final class NativeMulti implements AutoCloseable {
  private final Handle handle;
  private final Cleaner.Cleanable cleanable;
  private final Acquire.Target target;

  public NativeMulti(NativeLock[] members, boolean redlock) {
    Handle[] memberHandles = new Handle[members.length];
    long[] pointers = new long[members.length];
    int entered = 0;
    try {
      for (; entered < members.length; entered++) {
        memberHandles[entered] = members[entered].handle();
        pointers[entered] = memberHandles[entered].enter();
      }
      long ptr = RlockNative.multiNew(pointers, redlock ? 1 : 0);
      for (Handle member : memberHandles) {
        member.retain();
      }
      handle = new Handle(ptr, redlock ? "the RedLock" : "the multi-lock", RlockNative::multiCancel,
          (p, aux) -> RlockNative.multiFree(p), memberHandles);
    } finally {
      for (int i = 0; i < entered; i++) {
        memberHandles[i].exit();
      }
      Reference.reachabilityFence(members);
    }
    cleanable = Handle.CLEANER.register(this, handle);
    target = new Acquire.Target(this, handle, RlockNative::multiAcquire, AsyncTarget.GROUP,
        "the lock group");
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

  public void release(long threadId) {
    Acquire.release(target, threadId, group -> {
      RlockNative.multiReleaseFor(group, threadId);
      return null;
    });
  }

  /** As NativeLock.tryAcquireAsync, for the group. */
  public CompletableFuture<Boolean> tryAcquireAsync(long waitMs, long leaseMs, long threadId,
      Predicate<RuntimeException> refusedAsFalse) {
    return Acquire.tryAsync(target, waitMs, leaseMs, threadId, refusedAsFalse);
  }

  /** As NativeLock.acquireAsync, for the group. */
  public CompletableFuture<Boolean> acquireAsync(long waitMs, long leaseMs, long threadId) {
    return Acquire.async(target, waitMs, leaseMs, threadId);
  }

  /** As NativeLock.lockAsync, for the group. */
  public CompletableFuture<Void> lockAsync(long leaseMs, long threadId) {
    return PendingAcquire.start(this, handle, AsyncTarget.GROUP, NativeLock.WAIT_FOREVER, leaseMs,
        threadId, PendingAcquire.NOTHING, null).future();
  }

  public CompletableFuture<Void> releaseAsync(long threadId) {
    return Acquire.releaseAsync(target, threadId);
  }

  public boolean isHeld(long threadId) {
    return handle.call(this, group -> RlockNative.multiIsHeldFor(group, threadId));
  }

  @Override
  public void close() {
    handle.close();
    cleanable.clean();
  }
}
