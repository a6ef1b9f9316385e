package io.rlock.internal;

import java.lang.ref.Reference;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * One asynchronous acquire: its future, its cancel token, and its hold on the handle (entered
 * from the start until the completion, so the pointer stays valid and close() wakes it).
 *
 * <p>However the future ends before the grant arrives (cancel, a user's complete, orTimeout),
 * the native wait is cancelled; a grant that raced it is given back, so a future that did not
 * deliver a grant leaves nothing held.
 */
final class PendingAcquire<T> extends NativeCompletion {
  /** What a grant completes the future with, read on the completion thread. */
  interface Grant<T> {
    T value(long ptr, long threadId);
  }

  /** For an acquire that waits as long as it takes: the future completes with null. */
  static final Grant<Void> NOTHING = (ptr, threadId) -> null;

  private final CompletableFuture<T> future = new CompletableFuture<>();
  private final Object owner; // reachable until done: no Cleaner frees the handle meanwhile
  private final Handle handle;
  private final AsyncTarget target;
  private final long threadId;
  private final Grant<T> grant;
  private final T timedOut;
  private Predicate<RuntimeException> failureAsTimedOut; // set before the start; null: none
  private long ptr;
  private long cancelToken; // guarded by this; 0 once the acquire ended
  private boolean cancelRequested; // guarded by this

  private PendingAcquire(Object owner, Handle handle, AsyncTarget target, long threadId,
      Grant<T> grant, T timedOut) {
    this.owner = owner;
    this.handle = handle;
    this.target = target;
    this.threadId = threadId;
    this.grant = grant;
    this.timedOut = timedOut;
  }

  /**
   * Starts an acquire whose future completes with grant's value, with timedOut when waitMs ran
   * out, or exceptionally (a closed handle too: a call that could not start fails its future).
   */
  static <T> PendingAcquire<T> start(Object owner, Handle handle, AsyncTarget target,
      long waitMs, long leaseMs, long threadId, Grant<T> grant, T timedOut) {
    return start(owner, handle, target, waitMs, leaseMs, threadId, grant, timedOut, null);
  }

  /**
   * As start, but a failure that failureAsTimedOut accepts (null: none) completes the future
   * with timedOut instead: a refusal a try answers as not acquired.
   */
  static <T> PendingAcquire<T> start(Object owner, Handle handle, AsyncTarget target,
      long waitMs, long leaseMs, long threadId, Grant<T> grant, T timedOut,
      Predicate<RuntimeException> failureAsTimedOut) {
    PendingAcquire<T> pending =
        new PendingAcquire<>(owner, handle, target, threadId, grant, timedOut);
    pending.failureAsTimedOut = failureAsTimedOut;
    try {
      pending.ptr = handle.enter();
    } catch (RuntimeException e) {
      pending.future.completeExceptionally(e);
      return pending;
    }
    try {
      synchronized (pending) {
        // A single try ends at once: nothing to cancel.
        pending.cancelToken = waitMs == 0 ? 0 : RlockNative.cancelTokenNew();
      }
      pending.starting();
      target.startAcquire(pending.ptr, waitMs, leaseMs, threadId, pending.cancelToken, pending);
    } catch (RuntimeException | Error e) {
      pending.notStarted();
      pending.endWait();
      handle.exit();
      pending.future.completeExceptionally(e);
      return pending;
    }
    pending.future.whenComplete((value, error) -> pending.cancelWait());
    return pending;
  }

  CompletableFuture<T> future() {
    return future;
  }

  /** Cancels the native wait (if still on); the completion follows. */
  synchronized void cancelWait() {
    if (cancelToken != 0 && !cancelRequested) {
      cancelRequested = true;
      RlockNative.cancelTokenCancel(cancelToken);
    }
  }

  private synchronized boolean endWait() {
    if (cancelToken != 0) {
      RlockNative.cancelTokenFree(cancelToken);
      cancelToken = 0;
    }
    return cancelRequested;
  }

  @Override
  void complete(int status, long value, byte[] message) {
    try {
      boolean cancelled = endWait();
      if (status == ErrorCode.OK) {
        granted();
      } else if (status == ErrorCode.ETIMEDOUT) {
        future.complete(timedOut);
      } else if (status == ErrorCode.ECANCELED) {
        // Our token (the future ended first), or close() of the handle woke the wait.
        future.completeExceptionally(cancelled
            ? new CancellationException("the wait was cancelled")
            : handle.closedError());
      } else {
        RuntimeException failure = target.acquireFailure(Errors.fromCode(status, message));
        if (failureAsTimedOut != null && failureAsTimedOut.test(failure)) {
          future.complete(timedOut);
        } else {
          future.completeExceptionally(failure);
        }
      }
    } finally {
      handle.exit();
      Reference.reachabilityFence(owner);
    }
  }

  /** The pointer is valid until exit(): a grant nobody took is given back through it. */
  private void granted() {
    boolean delivered = false;
    try {
      delivered = future.complete(grant.value(ptr, threadId));
    } catch (RuntimeException e) {
      future.completeExceptionally(e);
    } finally {
      if (!delivered) {
        target.releaseQuietly(ptr, threadId);
      }
    }
  }
}
