package io.rlock.internal;

import java.lang.ref.Reference;
import java.util.concurrent.CompletableFuture;

/** One asynchronous release (or extend): its future and its hold on the handle. */
final class PendingRelease extends NativeCompletion {
  private final CompletableFuture<Void> future = new CompletableFuture<>();
  private final Object owner;
  private final Handle handle;

  private PendingRelease(Object owner, Handle handle) {
    this.owner = owner;
    this.handle = handle;
  }

  /** The native starter of a release or extend. */
  interface Start {
    void start(long ptr, NativeCompletion completion);
  }

  /** Starts the call; a call that could not start fails the future. */
  static CompletableFuture<Void> start(Object owner, Handle handle, Start start) {
    PendingRelease pending = new PendingRelease(owner, handle);
    long ptr;
    try {
      ptr = handle.enter();
    } catch (RuntimeException e) {
      pending.future.completeExceptionally(e);
      return pending.future;
    }
    try {
      pending.starting();
      start.start(ptr, pending);
    } catch (RuntimeException | Error e) {
      pending.notStarted();
      handle.exit();
      pending.future.completeExceptionally(e);
      return pending.future;
    }
    return pending.future;
  }

  @Override
  void complete(int status, long value, byte[] message) {
    try {
      if (status == ErrorCode.OK) {
        future.complete(null);
      } else {
        future.completeExceptionally(Errors.fromCode(status, message));
      }
    } finally {
      handle.exit();
      Reference.reachabilityFence(owner);
    }
  }
}
