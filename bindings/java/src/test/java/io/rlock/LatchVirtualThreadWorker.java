package io.rlock;

import io.rlock.internal.CompletionCounts;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs in a child JVM of Java 21 or newer (LatchVirtualThreadTest starts it): virtual threads
 * awaiting one latch and contending for a semaphore must park, not hold their carriers. Prints
 * "key value" lines, then "end".
 *
 * <p>Usage: LatchVirtualThreadWorker URL NAME-PREFIX WAITERS
 */
public final class LatchVirtualThreadWorker {
  private static final long LIMIT_S = 60;

  private LatchVirtualThreadWorker() {}

  public static void main(String[] args) throws Throwable {
    String url = args[0];
    String prefix = args[1];
    int waiters = Integer.parseInt(args[2]);
    try (RedisLockClient client = RedisLockClient.create(url)) {
      latch(client, prefix + ":latch", waiters);
      semaphore(client, prefix + ":sem", 50);
      leaders(client, prefix + ":leader", 20);
    }
    System.out.println("end");
  }

  static void latch(RedisLockClient client, String name, int waiters) throws Exception {
    RedisCountDownLatch latch = client.getCountDownLatch(name);
    latch.trySetCount(1);
    int threadsBefore = VirtualThreadWorker.osThreads();
    CountDownLatch opened = new CountDownLatch(waiters);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    AtomicInteger open = new AtomicInteger();
    for (int i = 0; i < waiters; i++) {
      VirtualThreadWorker.startVirtual(() -> {
        try {
          if (latch.await(LIMIT_S, TimeUnit.SECONDS)) {
            open.incrementAndGet();
          }
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        } finally {
          opened.countDown();
        }
      });
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LIMIT_S);
    while (CompletionCounts.outstanding() < waiters) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("the waiters never all waited: "
            + CompletionCounts.outstanding());
      }
      Thread.sleep(5);
    }
    VirtualThreadWorker.report("latch_waiting", CompletionCounts.outstanding());
    VirtualThreadWorker.report("latch_threads_added",
        VirtualThreadWorker.osThreads() - threadsBefore);
    CountDownLatch unrelated = new CountDownLatch(1);
    VirtualThreadWorker.startVirtual(unrelated::countDown);
    VirtualThreadWorker.report("latch_unrelated_ran", unrelated.await(LIMIT_S, TimeUnit.SECONDS));
    long start = System.nanoTime();
    // Counted down from a virtual thread too.
    VirtualThreadWorker.startVirtual(latch::countDown);
    VirtualThreadWorker.await(opened, "the latch waiters");
    VirtualThreadWorker.report("latch_release_ms",
        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    if (failure.get() != null) {
      throw new AssertionError("a latch waiter failed", failure.get());
    }
    VirtualThreadWorker.report("latch_opened", open.get());
    VirtualThreadWorker.settle();
  }

  /** Virtual threads take and give back 2 permits of a semaphore: never more than 2 inside. */
  static void semaphore(RedisLockClient client, String name, int threads) throws Exception {
    RedisSemaphore sem = client.getSemaphore(name);
    sem.trySetPermits(2);
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    AtomicInteger done = new AtomicInteger();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch finished = new CountDownLatch(threads);
    for (int i = 0; i < threads; i++) {
      VirtualThreadWorker.startVirtual(() -> {
        try {
          sem.acquire();
          most.accumulateAndGet(inside.incrementAndGet(), Math::max);
          Thread.sleep(2);
          inside.decrementAndGet();
          sem.release();
          done.incrementAndGet();
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        } finally {
          finished.countDown();
        }
      });
    }
    VirtualThreadWorker.await(finished, "the semaphore threads");
    if (failure.get() != null) {
      throw new AssertionError("a semaphore thread failed", failure.get());
    }
    VirtualThreadWorker.report("sem_done", done.get());
    VirtualThreadWorker.report("sem_most_inside", most.get());
    VirtualThreadWorker.report("sem_available_after", sem.availablePermits());
    VirtualThreadWorker.settle();
  }

  /**
   * LeaderSelectors, each leading once: their takeLeadership bodies run on virtual threads, one
   * at a time, with terms that grow.
   */
  static void leaders(RedisLockClient client, String name, int candidates) throws Exception {
    java.lang.reflect.Method isVirtual = Thread.class.getMethod("isVirtual");
    CountDownLatch led = new CountDownLatch(candidates);
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    AtomicInteger onVirtual = new AtomicInteger();
    AtomicInteger termsDown = new AtomicInteger();
    java.util.concurrent.atomic.AtomicLong lastTerm = new java.util.concurrent.atomic.AtomicLong();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    java.util.List<LeaderSelector> selectors = new java.util.ArrayList<>();
    for (int i = 0; i < candidates; i++) {
      LeaderSelector selector = client.leaderSelector(name, context -> {
        try {
          most.accumulateAndGet(inside.incrementAndGet(), Math::max);
          if ((Boolean) isVirtual.invoke(Thread.currentThread())) {
            onVirtual.incrementAndGet();
          }
          if (lastTerm.getAndSet(context.term()) >= context.term()) {
            termsDown.incrementAndGet();
          }
          Thread.sleep(2);
          inside.decrementAndGet();
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        } finally {
          led.countDown();
        }
      });
      selectors.add(selector);
      selector.start();
    }
    VirtualThreadWorker.await(led, "the leaders");
    for (LeaderSelector selector : selectors) {
      selector.close();
    }
    if (failure.get() != null) {
      throw new AssertionError("a leader failed", failure.get());
    }
    VirtualThreadWorker.report("leaders_led", candidates);
    VirtualThreadWorker.report("leaders_most_inside", most.get());
    VirtualThreadWorker.report("leaders_on_virtual", onVirtual.get());
    VirtualThreadWorker.report("leaders_terms_down", termsDown.get());
    VirtualThreadWorker.settle();
  }
}
