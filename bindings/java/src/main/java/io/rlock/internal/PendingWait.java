package io.rlock.internal;

import java.lang.ref.Reference;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * One asynchronous semaphore acquire or latch await: its future, its cancel token and its hold
 * on the handle (entered from the start until the completion, so the pointer stays valid and
 * close() wakes it).
 *
 * <p>However the future ends before the grant arrives (cancel, a user's complete, orTimeout),
 * the native wait is cancelled; permits granted in that race are given back (off the completion
 * thread, which must not block), so a future that did not deliver them leaves nothing taken.
 */
final class PendingWait<T> extends NativeCompletion {
  /** Starts the native call (throws when it did not start). */
  interface Start {
    void start(long ptr, long cancelToken, NativeCompletion completion);
  }

  /** What a grant completes the future with: from the C value and, for ids, their bytes. */
  interface Grant<T> {
    T value(long value, byte[] ids);
  }

  /** Gives back a grant nobody received, through the still valid pointer. */
  interface GiveBack<T> {
    void giveBack(long ptr, T granted);
  }

  private final CompletableFuture<T> future = new CompletableFuture<>();
  private final Object owner; // reachable until done: no Cleaner frees the handle meanwhile
  private final Handle handle;
  private final Grant<T> grant;
  private final T timedOut;
  private final GiveBack<T> giveBack;
  private long ptr;
  private long cancelToken; // guarded by this; 0 once the wait ended
  private boolean cancelRequested; // guarded by this

  private PendingWait(Object owner, Handle handle, Grant<T> grant, T timedOut,
      GiveBack<T> giveBack) {
    this.owner = owner;
    this.handle = handle;
    this.grant = grant;
    this.timedOut = timedOut;
    this.giveBack = giveBack;
  }

  /**
   * Starts a wait whose future completes with grant's value, with timedOut when waitMs ran
   * out, or exceptionally (a call that could not start fails its future). giveBack may be null
   * when a grant holds nothing (a latch).
   */
  static <T> CompletableFuture<T> start(Object owner, Handle handle, long waitMs, Start start,
      Grant<T> grant, T timedOut, GiveBack<T> giveBack) {
    PendingWait<T> pending = new PendingWait<>(owner, handle, grant, timedOut, giveBack);
    try {
      pending.ptr = handle.enter();
    } catch (RuntimeException e) {
      pending.future.completeExceptionally(e);
      return pending.future;
    }
    try {
      synchronized (pending) {
        // A single try ends at once: nothing to cancel.
        pending.cancelToken = waitMs == 0 ? 0 : RlockNative.cancelTokenNew();
      }
      pending.starting();
      start.start(pending.ptr, pending.cancelToken, pending);
    } catch (RuntimeException | Error e) {
      pending.notStarted();
      pending.endWait();
      handle.exit();
      pending.future.completeExceptionally(e);
      return pending.future;
    }
    pending.future.whenComplete((value, error) -> pending.cancelWait());
    return pending.future;
  }

  private synchronized void cancelWait() {
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
    boolean exitNow = true;
    try {
      boolean cancelled = endWait();
      if (status == ErrorCode.OK) {
        exitNow = granted(value, message);
      } else if (status == ErrorCode.ETIMEDOUT) {
        future.complete(timedOut);
      } else if (status == ErrorCode.ECANCELED) {
        // Our token (the future ended first), or close() of the handle woke the wait.
        future.completeExceptionally(cancelled
            ? new CancellationException("the wait was cancelled")
            : handle.closedError());
      } else {
        future.completeExceptionally(Errors.fromCode(status, message));
      }
    } finally {
      if (exitNow) {
        handle.exit();
        Reference.reachabilityFence(owner);
      }
    }
  }

  /** False when a give-back was handed off: it exits the handle when done. */
  private boolean granted(long value, byte[] ids) {
    T granted;
    try {
      granted = grant.value(value, ids);
    } catch (RuntimeException e) {
      future.completeExceptionally(e);
      return true; // nothing readable to give back: the permits end by their lease
    }
    if (future.complete(granted) || giveBack == null) {
      return true;
    }
    try {
      Offload.run(() -> {
        try {
          giveBack.giveBack(ptr, granted);
        } catch (RuntimeException e) {
          // Best effort: a plain permit stays counted as held; an expirable one expires.
        } finally {
          handle.exit();
          Reference.reachabilityFence(owner);
        }
      });
      return false;
    } catch (RuntimeException e) {
      return true; // the executor refused it: nothing more can be done here
    }
  }

  /**
   * Waits for a future started by this class: its value, or its failure as thrown by the
   * blocking call. An interrupt cancels the wait and throws InterruptedException; if the grant
   * won that race, the value is returned with the interrupt status kept. Parks a virtual thread.
   */
  static <T> T await(CompletableFuture<T> future, String what) throws InterruptedException {
    try {
      return future.get();
    } catch (ExecutionException e) {
      throw rethrow(e.getCause());
    } catch (InterruptedException e) {
      if (future.cancel(false)) {
        throw new InterruptedException("interrupted while waiting for " + what);
      }
      T value = join(future); // it ended first: the outcome stands
      Thread.currentThread().interrupt();
      return value;
    }
  }

  /** The future's value, waiting without being interruptible (the interrupt status is kept). */
  static <T> T join(CompletableFuture<T> future) {
    try {
      return future.join();
    } catch (CompletionException e) {
      throw rethrow(e.getCause());
    }
  }

  /** The exception a blocking call throws for its future's failure. */
  static RuntimeException rethrow(Throwable cause) {
    if (cause instanceof RuntimeException) {
      return (RuntimeException) cause;
    }
    if (cause instanceof Error) {
      throw (Error) cause;
    }
    return new CompletionException(cause);
  }
}
