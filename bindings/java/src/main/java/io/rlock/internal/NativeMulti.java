package io.rlock.internal;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;

/** An rlock_multi (multi-lock or RedLock). Internal: use io.rlock.RedisMultiLock. */
public final class NativeMulti implements AutoCloseable {
  private final Handle handle;
  private final Cleaner.Cleanable cleanable;

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
  }

  /** Waits without being interruptible: true acquired, false when waitMs ran out. */
  public boolean acquire(long waitMs, long leaseMs, long threadId) {
    long group = handle.enter();
    try {
      int rc = RlockNative.multiAcquire(group, waitMs, leaseMs, threadId, 0);
      return InterruptWatcher.outcome(rc, null, handle);
    } catch (InterruptedException e) {
      throw new AssertionError("an uninterruptible wait was interrupted", e);
    } finally {
      handle.exit();
      Reference.reachabilityFence(this);
    }
  }

  /** As acquire, but Thread.interrupt() ends the wait promptly, leaving nothing held. */
  public boolean acquireInterruptibly(long waitMs, long leaseMs, long threadId)
      throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before waiting for the lock group");
    }
    if (waitMs == 0) {
      return acquire(0, leaseMs, threadId);
    }
    long group = handle.enter();
    try (InterruptWatcher.Waiter waiter = InterruptWatcher.register()) {
      int rc = RlockNative.multiAcquire(group, waitMs, leaseMs, threadId, waiter.token());
      return InterruptWatcher.outcome(rc, waiter, handle);
    } finally {
      handle.exit();
      Reference.reachabilityFence(this);
    }
  }

  public void release(long threadId) {
    long group = handle.enter();
    try {
      RlockNative.multiRelease(group, threadId);
    } finally {
      handle.exit();
      Reference.reachabilityFence(this);
    }
  }

  public boolean isHeld(long threadId) {
    long group = handle.enter();
    try {
      return RlockNative.multiIsHeld(group, threadId);
    } finally {
      handle.exit();
      Reference.reachabilityFence(this);
    }
  }

  @Override
  public void close() {
    handle.close();
    cleanable.clean();
  }
}
