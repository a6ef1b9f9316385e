package io.rlock;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** A fresh client and thread pool per test, and helpers that run work on other threads. */
abstract class ClientTestBase {
  RedisLockClient client;
  final ExecutorService pool = Executors.newCachedThreadPool();

  @BeforeEach
  void connect() {
    client = RedisLockClient.create(TestRedis.url());
  }

  @AfterEach
  void close() {
    pool.shutdownNow();
    client.close();
  }

  /** Runs fn on another thread and returns its result (a thread is another owner). */
  boolean other(Callable<Boolean> fn) throws Exception {
    return onOtherThread(fn);
  }

  <T> T onOtherThread(Callable<T> fn) throws Exception {
    return pool.submit(fn).get(30, TimeUnit.SECONDS);
  }

  /**
   * Threads increment a counter under the lock with get-then-set; returns the total, short of
   * threads * rounds when two were inside at once (a lost update).
   */
  long contend(Lock lock, int threads, int rounds) throws Exception {
    AtomicLong counter = new AtomicLong();
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      done.add(pool.submit(() -> {
        start.await();
        for (int i = 0; i < rounds; i++) {
          lock.lock();
          try {
            long seen = counter.get();
            Thread.yield();
            counter.set(seen + 1);
          } finally {
            lock.unlock();
          }
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : done) {
      f.get(50, TimeUnit.SECONDS);
    }
    return counter.get();
  }
}
