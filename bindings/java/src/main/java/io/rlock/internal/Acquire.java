package io.rlock.internal;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Predicate;

/**
 * The one acquire and release path of locks and groups. An uninterruptible wait on a platform
 * thread makes the blocking native call; a virtual thread, and every interruptible wait, starts
 * the asynchronous one and waits on its future (a virtual thread leaves its carrier to others).
 */
final class Acquire {
  private Acquire() {}

  /** The native blocking acquire: an rlock.h return code. cancelToken 0: not interruptible. */
  interface Call {
    int acquire(long ptr, long waitMs, long leaseMs, long threadId, long cancelToken);
  }

  /** Where an acquire goes: the handle, its owner object, and its blocking and async calls. */
  static final class Target {
    final Object owner;
    final Handle handle;
    final Call call;
    final AsyncTarget async;
    final String what;

    Target(Object owner, Handle handle, Call call, AsyncTarget async, String what) {
      this.owner = owner;
      this.handle = handle;
      this.call = call;
      this.async = async;
      this.what = what;
    }
  }

  private static final PendingAcquire.Grant<Boolean> GRANTED = (ptr, threadId) -> Boolean.TRUE;

  /** Starts an acquire: the future completes true when granted, false when waitMs ran out. */
  static CompletableFuture<Boolean> async(Target target, long waitMs, long leaseMs,
      long threadId) {
    return PendingAcquire.start(target.owner, target.handle, target.async, waitMs, leaseMs,
        threadId, GRANTED, Boolean.FALSE).future();
  }

  /** As async, but a failure refusedAsFalse accepts completes the future with false. */
  static CompletableFuture<Boolean> tryAsync(Target target, long waitMs, long leaseMs,
      long threadId, Predicate<RuntimeException> refusedAsFalse) {
    return PendingAcquire.start(target.owner, target.handle, target.async, waitMs, leaseMs,
        threadId, GRANTED, Boolean.FALSE, refusedAsFalse).future();
  }

  /** Waits without being interruptible: true acquired, false when waitMs ran out. */
  static boolean uninterruptibly(Target target, long waitMs, long leaseMs, long threadId) {
    NativeCompletion.refuseInsideCompletion("acquiring", target.what);
    if (VirtualThreads.current()) {
      return join(async(target, waitMs, leaseMs, threadId));
    }
    try {
      return target.handle.call(target.owner, p -> outcome(
          target.call.acquire(p, waitMs, leaseMs, threadId, 0), target.handle));
    } catch (RuntimeException e) {
      throw target.async.acquireFailure(e);
    }
  }

  /**
   * As uninterruptibly, but Thread.interrupt() ends the wait promptly, leaving nothing held.
   */
  static boolean interruptibly(Target target, long waitMs, long leaseMs, long threadId)
      throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException("interrupted before waiting for " + target.what);
    }
    if (waitMs == 0) {
      // A single try ends at once: no token to watch.
      return uninterruptibly(target, 0, leaseMs, threadId);
    }
    NativeCompletion.refuseInsideCompletion("acquiring", target.what);
    // Every thread, virtual or not, waits on the asynchronous acquire's future: an interrupt
    // ends Future.get at once (Redisson's rule), where a blocking native wait would notice it
    // only at the interrupt watcher's next poll and could take the lock meanwhile.
    return parkInterruptibly(target, waitMs, leaseMs, threadId);
  }

  /** Releases one hold of the owner, parking a virtual thread while it runs. */
  static void release(Target target, long threadId, Handle.Call<Void, RuntimeException> call) {
    NativeCompletion.refuseInsideCompletion("releasing", target.what);
    if (VirtualThreads.current()) {
      join(releaseAsync(target, threadId));
      return;
    }
    target.handle.call(target.owner, call);
  }

  static CompletableFuture<Void> releaseAsync(Target target, long threadId) {
    return PendingRelease.start(target.owner, target.handle,
        (ptr, completion) -> target.async.startRelease(ptr, threadId, completion));
  }

  /** Waits on the async acquire: an interrupt cancels the wait, and a raced grant is released. */
  private static boolean parkInterruptibly(Target target, long waitMs, long leaseMs,
      long threadId) throws InterruptedException {
    PendingAcquire<Boolean> pending = PendingAcquire.start(target.owner, target.handle,
        target.async, waitMs, leaseMs, threadId, GRANTED, Boolean.FALSE);
    try {
      boolean granted = pending.future().get();
      // An interrupt that came while waiting may lose the race with the grant: Future.get then
      // returns the value with the interrupt status set. The interrupt came first: give the
      // hold back and end as interrupted.
      if (Thread.interrupted()) {
        if (granted) {
          settle(releaseAsync(target, threadId));
        }
        Thread.interrupted(); // an interrupt during the settling is this one too
        throw new InterruptedException("interrupted while waiting for " + target.what);
      }
      return granted;
    } catch (ExecutionException e) {
      throw rethrow(e.getCause());
    } catch (InterruptedException e) {
      pending.cancelWait();
      if (Boolean.TRUE.equals(settle(pending.future()))) {
        settle(releaseAsync(target, threadId));
      }
      Thread.interrupted(); // an interrupt during the settling is this one too
      throw new InterruptedException("interrupted while waiting for " + target.what);
    }
  }

  /** The future's value, waiting without being interruptible (the interrupt status is kept). */
  private static <T> T join(CompletableFuture<T> future) {
    try {
      return future.join();
    } catch (CompletionException e) {
      throw rethrow(e.getCause());
    }
  }

  /** The future's value once it ends, or null when it failed; ignores interrupts. */
  private static <T> T settle(CompletableFuture<T> future) {
    try {
      return future.join();
    } catch (CompletionException | CancellationException e) {
      return null;
    }
  }

  /** The exception a blocking call throws for its future's failure. */
  private static RuntimeException rethrow(Throwable cause) {
    if (cause instanceof RuntimeException) {
      return (RuntimeException) cause;
    }
    if (cause instanceof Error) {
      throw (Error) cause;
    }
    return new CompletionException(cause);
  }

  /** The result of a native acquire: true acquired, false timed out, else an exception. */
  private static boolean outcome(int rc, Handle handle) {
    if (rc == ErrorCode.OK) {
      return true;
    }
    if (rc == ErrorCode.ETIMEDOUT) {
      return false;
    }
    throw handle.closedError(); // RLOCK_ECANCELED: close() of the handle woke the wait
  }
}
