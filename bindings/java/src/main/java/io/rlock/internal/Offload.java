package io.rlock.internal;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A few daemon threads for the short calls the C library has no asynchronous form of (giving
 * semaphore permits back): the *Async methods run them here, and a virtual thread parks on
 * them instead of holding its carrier for the round trip. Threads end after 30 s idle.
 */
final class Offload {
  private static final int THREADS = 4;
  private static final AtomicInteger COUNT = new AtomicInteger();
  private static final ThreadPoolExecutor EXECUTOR = executor();

  private Offload() {}

  private static ThreadPoolExecutor executor() {
    ThreadPoolExecutor executor = new ThreadPoolExecutor(THREADS, THREADS, 30, TimeUnit.SECONDS,
        new LinkedBlockingQueue<>(), task -> {
          Thread thread = new Thread(task, "rlock-offload-" + COUNT.incrementAndGet());
          thread.setDaemon(true);
          return thread;
        });
    executor.allowCoreThreadTimeOut(true);
    return executor;
  }

  static void run(Runnable task) {
    EXECUTOR.execute(task);
  }

  /** The call on an offload thread; its exception fails the future. */
  static <T> CompletableFuture<T> supply(Supplier<T> call) {
    return CompletableFuture.supplyAsync(call, EXECUTOR);
  }

  /**
   * Runs a short blocking call: directly on a platform thread, on an offload thread (the caller
   * parked) on a virtual one.
   */
  static <T> T call(Supplier<T> call) {
    if (!VirtualThreads.current()) {
      return call.get();
    }
    return PendingWait.join(supply(call));
  }
}
