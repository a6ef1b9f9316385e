package io.rlock.interop;

import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.redisson.api.RedissonClient;

/** What every interop test class shares: a Redisson client (30 s watchdog) and a thread pool. */
abstract class InteropTest {
  static RedissonClient redisson;
  static ExecutorService pool;

  @BeforeAll
  static void start() {
    redisson = Env.redisson(30_000);
    pool = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void stop() {
    pool.shutdownNow();
    redisson.shutdown();
  }

  /** A lock name no other test uses. */
  static String unique(String what) {
    return "interop:" + what + ":" + UUID.randomUUID();
  }
}
