package io.rlock.internal;

import java.lang.ref.Cleaner;
import java.util.concurrent.CompletableFuture;

/**
 * An rlock_latch. Internal: use io.rlock.RedisCountDownLatch. Awaits go through the
 * asynchronous C call (a blocking caller parks on its future). Freeing makes no network call.
 */
public final class NativeLatch implements AutoCloseable {
  /** rlock.h RLOCK_WAIT_FOREVER. */
  public static final long WAIT_FOREVER = -1;

  private final Handle handle;
  private final Cleaner.Cleanable cleanable;
  private final String what;

  NativeLatch(long ptr, String name, Handle client) {
    what = "the latch '" + name + "'";
    handle = new Handle(ptr, what, RlockNative::latchCancel,
        (p, aux) -> RlockNative.latchFree(p), client);
    cleanable = Handle.CLEANER.register(this, handle);
  }

  /** Sets the count of a latch that does not exist (is open); true when set. */
  public boolean trySetCount(long count) {
    return handle.call(this, p -> RlockNative.latchTrySetCount(p, count) == 1);
  }

  /** Counts down by one: the count left. */
  public long countDown() {
    return handle.call(this, RlockNative::latchCountDown);
  }

  public long count() {
    return handle.call(this, RlockNative::latchCount);
  }

  /** Deletes the latch (it is open then); true when it existed. */
  public boolean delete() {
    return handle.call(this, p -> RlockNative.latchDelete(p) == 1);
  }

  /** Starts waiting for the count to reach 0: true when it did, false when waitMs ran out. */
  public CompletableFuture<Boolean> awaitAsync(long waitMs) {
    return PendingWait.start(this, handle, waitMs,
        (ptr, token, completion) -> RlockNative.latchAwaitAsync(ptr, waitMs, token, completion),
        (value, ids) -> Boolean.TRUE, Boolean.FALSE, null);
  }

  /** Starts waiting as long as it takes (completes with null). */
  public CompletableFuture<Void> awaitForeverAsync() {
    return PendingWait.start(this, handle, WAIT_FOREVER,
        (ptr, token, completion) -> RlockNative.latchAwaitAsync(ptr, WAIT_FOREVER, token,
            completion),
        (value, ids) -> null, null, null);
  }

  /** Waits for the count to reach 0; interruptible. */
  public boolean await(long waitMs) throws InterruptedException {
    NativeCompletion.refuseInsideCompletion("awaiting", what);
    return PendingWait.await(awaitAsync(waitMs), what);
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  @Override
  public void close() {
    handle.close();
    cleanable.clean();
  }
}
