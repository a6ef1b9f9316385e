package io.rlock.internal;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.LongAdder;

/**
 * The Java side of one started asynchronous C call. The JNI layer holds it by a global reference
 * and calls {@link #done} once, on a library thread (attached to the JVM as a daemon), with no
 * library lock held; futures completed there run their dependent stages on that thread.
 */
abstract class NativeCompletion {
  private static final LongAdder STARTED = new LongAdder();
  private static final LongAdder FINISHED = new LongAdder();
  private static final LongAdder REPEATED = new LongAdder();
  private static final ThreadLocal<Boolean> RUNNING = new ThreadLocal<>();
  private static final AtomicIntegerFieldUpdater<NativeCompletion> CALLS =
      AtomicIntegerFieldUpdater.newUpdater(NativeCompletion.class, "calls");

  private volatile int calls;

  /** Before the C call starts. */
  final void starting() {
    STARTED.increment();
  }

  /** The C call did not start: done will not come. */
  final void notStarted() {
    FINISHED.increment();
  }

  /**
   * Called by the JNI layer with the C status, the value (a token or a validity) and the
   * message of a failing status (UTF-8; null when there was no memory for it). Never throws.
   */
  final void done(int status, long value, byte[] message) {
    if (CALLS.getAndIncrement(this) != 0) {
      REPEATED.increment(); // a broken exactly-once contract; the tests look for it
      return;
    }
    RUNNING.set(Boolean.TRUE);
    try {
      complete(status, value, message);
    } catch (Throwable t) {
      Thread current = Thread.currentThread();
      current.getUncaughtExceptionHandler().uncaughtException(current, t);
    } finally {
      RUNNING.remove();
      FINISHED.increment();
    }
  }

  abstract void complete(int status, long value, byte[] message);

  /**
   * Blocking calls wait for a completion, which may need the very library thread a completion
   * runs on: refused there rather than risking a thread waiting for itself.
   */
  static void refuseInsideCompletion(String action, String what) {
    if (RUNNING.get() != null) {
      throw new IllegalStateException(action + " " + what + " blocks, and this thread is running an rlock"
          + " completion (a dependent stage of an rlock future): use the *Async methods, or"
          + " run the stage elsewhere (thenRunAsync and the like)");
    }
  }

  /** Started calls whose completion has not finished yet. */
  static long outstanding() {
    return STARTED.sum() - FINISHED.sum();
  }

  /** Completions called more than once (always 0 unless the C library broke its contract). */
  static long repeated() {
    return REPEATED.sum();
  }
}
