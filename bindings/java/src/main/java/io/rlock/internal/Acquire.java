package io.rlock.internal;

/** The one acquire path of locks and groups around their native acquire call. */
final class Acquire {
  private Acquire() {}

  /** The native acquire: an rlock.h return code. cancelToken 0 means not interruptible. */
  interface Call {
    int acquire(long ptr, long waitMs, long leaseMs, long threadId, long cancelToken);
  }

  /** Waits without being interruptible: true acquired, false when waitMs ran out. */
  static boolean uninterruptibly(Object owner, Handle handle, Call call, long waitMs,
      long leaseMs, long threadId) {
    try {
      return handle.call(owner,
          p -> outcome(call.acquire(p, waitMs, leaseMs, threadId, 0), null, handle));
    } catch (InterruptedException e) {
      throw new AssertionError("an uninterruptible wait was interrupted", e);
    }
  }

  /**
   * As uninterruptibly, but Thread.interrupt() ends the wait promptly, leaving nothing held.
   * what names the lock in the InterruptedException.
   */
  static boolean interruptibly(Object owner, Handle handle, Call call, String what, long waitMs,
      long leaseMs, long threadId) throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before waiting for " + what);
    }
    if (waitMs == 0) {
      // A single try ends at once: no token to watch.
      return uninterruptibly(owner, handle, call, 0, leaseMs, threadId);
    }
    return handle.call(owner, p -> {
      try (InterruptWatcher.Waiter waiter = InterruptWatcher.register()) {
        return outcome(call.acquire(p, waitMs, leaseMs, threadId, waiter.token()), waiter, handle);
      }
    });
  }

  /** The result of a native acquire: true acquired, false timed out, else an exception. */
  private static boolean outcome(int rc, InterruptWatcher.Waiter waiter, Handle handle)
      throws InterruptedException {
    if (rc == ErrorCode.OK) {
      return true;
    }
    if (rc == ErrorCode.ETIMEDOUT) {
      return false;
    }
    // RLOCK_ECANCELED: our token (an interrupt) or close() of the handle woke the wait.
    if (waiter != null && waiter.cancelled()) {
      Thread.interrupted();
      throw new InterruptedException("interrupted while waiting for the lock");
    }
    throw handle.closedError();
  }
}
