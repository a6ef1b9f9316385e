package io.rlock;

import io.rlock.internal.CompletionCounts;
import java.io.File;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs in a child JVM of Java 21 or newer (VirtualThreadTest starts it; the jar targets Java
 * 11, so virtual threads are reached through a MethodHandle): waiters on virtual threads must
 * park, not hold their carriers. Prints "key value" lines for the test to check, then "end".
 *
 * <p>Usage: VirtualThreadWorker URL NAME-PREFIX WAITERS THREAD-BUDGET
 */
public final class VirtualThreadWorker {
  private static final MethodHandle START_VIRTUAL = startVirtual();
  private static final long LIMIT_S = 60; // a hang is a failure, not a measurement
  private static int threadBudget;

  private VirtualThreadWorker() {}

  public static void main(String[] args) throws Throwable {
    String url = args[0];
    String prefix = args[1];
    int waiters = Integer.parseInt(args[2]);
    threadBudget = Integer.parseInt(args[3]);
    try (RedisLockClient client = RedisLockClient.create(url)) {
      drain(client, prefix + ":drain", waiters);
      interrupts(client, prefix + ":interrupt");
      group(client, prefix + ":group");
    }
    System.out.println("end");
  }

  private static MethodHandle startVirtual() {
    try {
      return MethodHandles.publicLookup().findStatic(Thread.class, "startVirtualThread",
          MethodType.methodType(Thread.class, Runnable.class));
    } catch (NoSuchMethodException | IllegalAccessException e) {
      throw new IllegalStateException("needs Java 21 or newer", e);
    }
  }

  static Thread startVirtual(Runnable task) {
    try {
      return (Thread) START_VIRTUAL.invokeExact(task);
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  static int osThreads() {
    String[] tasks = new File("/proc/self/task").list();
    return tasks == null ? -1 : tasks.length;
  }

  static void report(String key, Object value) {
    System.out.println(key + " " + value);
  }

  static void await(CountDownLatch latch, String what) throws InterruptedException {
    if (!latch.await(LIMIT_S, TimeUnit.SECONDS)) {
      throw new AssertionError("timed out: " + what);
    }
  }

  /**
   * A virtual-thread holder, then `waiters` virtual threads blocked in lock(); an unrelated
   * virtual thread must still run, the holder must unlock, and every waiter must get its turn.
   */
  static void drain(RedisLockClient client, String name, int waiters) throws Exception {
    RedisLock lock = client.getLock(name);
    warmUp(lock);
    int threadsBefore = osThreads();
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    CountDownLatch drained = new CountDownLatch(waiters);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    int[] counter = {0}; // changed only under the lock: a lost update means no exclusion
    AtomicInteger inside = new AtomicInteger();
    Thread holder = startVirtual(() -> {
      lock.lock();
      held.countDown();
      try {
        letGo.await();
      } catch (InterruptedException e) {
        failure.compareAndSet(null, e);
      }
      lock.unlock();
    });
    await(held, "the holder locked");
    for (int i = 0; i < waiters; i++) {
      startVirtual(() -> {
        try {
          lock.lock();
          try {
            if (inside.incrementAndGet() != 1) {
              throw new AssertionError("two owners inside at once");
            }
            int seen = counter[0];
            Thread.yield();
            counter[0] = seen + 1;
            inside.decrementAndGet();
          } finally {
            lock.unlock();
          }
        } catch (Throwable t) {
          failure.compareAndSet(null, t);
        } finally {
          drained.countDown();
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
    report("waiting", CompletionCounts.outstanding());
    report("threads_added", osThreads() - threadsBefore);
    CountDownLatch unrelated = new CountDownLatch(1);
    long start = System.nanoTime();
    startVirtual(unrelated::countDown);
    await(unrelated, "an unrelated virtual thread ran");
    report("unrelated_ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    long drainStart = System.nanoTime();
    letGo.countDown();
    holder.join(TimeUnit.SECONDS.toMillis(LIMIT_S));
    report("holder_unlocked", !holder.isAlive());
    await(drained, "the waiters drained");
    report("drain_ms", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - drainStart));
    if (failure.get() != null) {
      throw new AssertionError("a virtual thread failed", failure.get());
    }
    report("drained", counter[0]);
    report("locked_after", lock.isLocked());
    settle();
    // Library threads that end are detached from the JVM, so the count comes back down.
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (osThreads() - threadsBefore > threadBudget && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    report("threads_after", osThreads() - threadsBefore);
  }

  /** Carriers and the library's threads are made once, before counting. */
  private static void warmUp(RedisLock lock) throws Exception {
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < 2 * Runtime.getRuntime().availableProcessors(); i++) {
      threads.add(startVirtual(() -> {
        lock.lock();
        lock.unlock();
      }));
    }
    for (Thread thread : threads) {
      thread.join(TimeUnit.SECONDS.toMillis(LIMIT_S));
    }
    settle();
  }

  /** Waits until no completion runs (one finishes just after the future it completes). */
  static void settle() throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(LIMIT_S);
    while (CompletionCounts.outstanding() != 0) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("completions never finished: " + CompletionCounts.outstanding());
      }
      Thread.sleep(5);
    }
  }

  /** Interrupts and time-outs keep their meaning on virtual threads. */
  static void interrupts(RedisLockClient client, String name) throws Exception {
    RedisLock lock = client.getLock(name);
    lock.lock();
    CompletableFuture<Object> interruptible = new CompletableFuture<>();
    CompletableFuture<Object> timed = new CompletableFuture<>();
    CompletableFuture<Boolean> flagKept = new CompletableFuture<>();
    CountDownLatch started = new CountDownLatch(3);
    Thread a = startVirtual(() -> {
      started.countDown();
      try {
        lock.lockInterruptibly();
        interruptible.complete("acquired a held lock");
      } catch (Throwable t) {
        interruptible.complete(t);
      }
    });
    startVirtual(() -> {
      started.countDown();
      try {
        timed.complete(lock.tryLock(300, TimeUnit.MILLISECONDS));
      } catch (Throwable t) {
        timed.complete(t);
      }
    });
    Thread c = startVirtual(() -> {
      started.countDown();
      lock.lock();
      boolean kept = Thread.currentThread().isInterrupted();
      lock.unlock();  // before telling: the check that nothing is held comes right after
      flagKept.complete(kept);
    });
    await(started, "the waiters started");
    Thread.sleep(300);
    a.interrupt();
    c.interrupt();
    Object outcome = interruptible.get(LIMIT_S, TimeUnit.SECONDS);
    report("interrupted", outcome instanceof InterruptedException);
    report("timed_out", Objects.equals(timed.get(LIMIT_S, TimeUnit.SECONDS), Boolean.FALSE));
    Thread.sleep(100);
    report("lock_ignores_interrupt", !flagKept.isDone());
    lock.unlock();
    report("interrupt_flag_kept", flagKept.get(LIMIT_S, TimeUnit.SECONDS));
    CompletableFuture<Boolean> free = new CompletableFuture<>();
    startVirtual(() -> free.complete(!lock.isLocked()));
    report("nothing_held", free.get(LIMIT_S, TimeUnit.SECONDS));
  }

  /** A multi-lock waited for on virtual threads. */
  static void group(RedisLockClient client, String name) throws Exception {
    RedisLock a = client.getLock(name + ":a");
    RedisLock b = client.getLock(name + ":b");
    RedisMultiLock group = client.getMultiLock(a, b);
    AtomicInteger done = new AtomicInteger();
    CountDownLatch finished = new CountDownLatch(20);
    b.lock();
    for (int i = 0; i < 20; i++) {
      startVirtual(() -> {
        group.lock();
        done.incrementAndGet();
        group.unlock();
        finished.countDown();
      });
    }
    Thread.sleep(200);
    b.unlock();
    await(finished, "the group waiters");
    report("group_drained", done.get());
  }
}
