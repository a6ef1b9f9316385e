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
    return Acquire.uninterruptibly(this, handle, RlockNative::multiAcquire, waitMs, leaseMs,
        threadId);
  }

  /** As acquire, but Thread.interrupt() ends the wait promptly, leaving nothing held. */
  public boolean acquireInterruptibly(long waitMs, long leaseMs, long threadId)
      throws InterruptedException {
    return Acquire.interruptibly(this, handle, RlockNative::multiAcquire, "the lock group",
        waitMs, leaseMs, threadId);
  }

  public void release(long threadId) {
    handle.execute(this, group -> RlockNative.multiReleaseFor(group, threadId));
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
