package io.rlock.spring.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rlock.RedisLock;
import io.rlock.RedisLockClient;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.integration.support.locks.DistributedLock;

/** The LockRegistry contract, on a real Redis and two clients (two "processes"). */
class RlockLockRegistryTest {
  private static RedisLockClient clientA;
  private static RedisLockClient clientB;
  private static ExecutorService other;

  @BeforeAll
  static void start() {
    clientA = RedisLockClient.create(TestRedis.url());
    clientB = RedisLockClient.create(TestRedis.url());
    other = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void stop() {
    other.shutdownNow();
    clientA.close();
    clientB.close();
  }

  /** Runs on another thread and waits for it. */
  private static <T> T elsewhere(java.util.concurrent.Callable<T> task) throws Exception {
    return other.submit(task).get(10, TimeUnit.SECONDS);
  }

  @Test
  void obtainGivesOneLockPerKeyAndRejectsNonStringKeys() {
    RlockLockRegistry registry = new RlockLockRegistry(clientA, TestRedis.uniqueKey("obtain"));
    assertSame(registry.obtain("a"), registry.obtain("a"));
    assertNotSame(registry.obtain("a"), registry.obtain("b"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> registry.obtain(42));
    assertTrue(e.getMessage().contains("String"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new RlockLockRegistry(clientA, ""));
    assertThrows(IllegalArgumentException.class,
        () -> new RlockLockRegistry(clientA, "k", Duration.ZERO));
  }

  @Test
  void reentrantForTheHolderExclusiveForOtherThreads() throws Exception {
    RlockLockRegistry registry = new RlockLockRegistry(clientA, TestRedis.uniqueKey("reentry"));
    Lock lock = registry.obtain("k");
    lock.lock();
    assertTrue(lock.tryLock(), "the holder re-enters");
    assertFalse(elsewhere(() -> registry.obtain("k").tryLock()), "another thread is excluded");
    lock.unlock();
    assertFalse(elsewhere(() -> registry.obtain("k").tryLock()), "still held once");
    lock.unlock();
    assertTrue(elsewhere(() -> {
      Lock l = registry.obtain("k");
      boolean got = l.tryLock(1, TimeUnit.SECONDS);
      l.unlock();
      return got;
    }), "free after the last unlock");
  }

  @Test
  void excludesAcrossRegistriesOnTwoClients() throws Exception {
    String key = TestRedis.uniqueKey("across");
    RlockLockRegistry a = new RlockLockRegistry(clientA, key);
    RlockLockRegistry b = new RlockLockRegistry(clientB, key);
    DistributedLock lockA = a.obtain("shared");
    DistributedLock lockB = b.obtain("shared");
    assertTrue(lockA.tryLock(1, TimeUnit.SECONDS));
    // Even the same thread: the other client is another owner.
    assertFalse(lockB.tryLock());
    assertFalse(lockB.tryLock(Duration.ofMillis(200), Duration.ofSeconds(5)));
    CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(() -> {
      try {
        boolean got = lockB.tryLock(10, TimeUnit.SECONDS);
        lockB.unlock();
        return got;
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    }, other);
    Thread.sleep(200);
    assertFalse(waiter.isDone(), "B waits while A holds");
    lockA.unlock();
    assertTrue(waiter.get(10, TimeUnit.SECONDS), "B gets it once A unlocks");
  }

  @Test
  void unlockByANonHolderThrowsIllegalState() throws Exception {
    RlockLockRegistry registry = new RlockLockRegistry(clientA, TestRedis.uniqueKey("nonowner"));
    Lock lock = registry.obtain("k");
    IllegalStateException notLocked = assertThrows(IllegalStateException.class, lock::unlock);
    assertTrue(notLocked.getMessage().contains("do not own"), notLocked.getMessage());
    lock.lock();
    try {
      Exception fromOther = elsewhere(() -> {
        try {
          registry.obtain("k").unlock();
          return null;
        } catch (IllegalStateException e) {
          return e;
        }
      });
      assertInstanceOf(IllegalStateException.class, fromOther);
      assertFalse(elsewhere(() -> registry.obtain("k").tryLock()), "left held by its owner");
    } finally {
      lock.unlock();
    }
  }

  @Test
  void unlockAfterTheLeaseEndedThrowsConcurrentModification() throws Exception {
    RlockLockRegistry registry =
        new RlockLockRegistry(clientA, TestRedis.uniqueKey("expired"), Duration.ofMillis(300));
    Lock lock = registry.obtain("k");
    lock.lock();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    RedisLock raw = clientB.getLock(registry.getRegistryKey() + ":k");
    while (raw.isLocked() && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertFalse(raw.isLocked(), "the lease ended");
    assertThrows(ConcurrentModificationException.class, lock::unlock);
  }

  @Test
  void expireUnusedOlderThanDropsOnlyUnheldLocks() throws Exception {
    RlockLockRegistry registry = new RlockLockRegistry(clientA, TestRedis.uniqueKey("expire"));
    Lock held = registry.obtain("held");
    Lock idle = registry.obtain("idle");
    held.lock();
    idle.lock();
    idle.unlock();
    Thread.sleep(20);
    registry.expireUnusedOlderThan(0);
    assertSame(held, registry.obtain("held"), "a held lock stays");
    Lock fresh = registry.obtain("idle");
    assertNotSame(idle, fresh, "the unheld lock was dropped");
    registry.expireUnusedOlderThan(60_000);
    assertSame(fresh, registry.obtain("idle"), "a recent lock stays");
    // The dropped object still excludes with its replacement: ownership is on Redis.
    assertTrue(idle.tryLock());
    assertFalse(elsewhere(() -> registry.obtain("idle").tryLock()));
    assertTrue(fresh.tryLock(), "same thread, same client: re-entry");
    fresh.unlock();
    idle.unlock();
    held.unlock();
    registry.expireUnusedOlderThan(0);
    assertNotSame(held, registry.obtain("held"), "dropped once unlocked");
  }

  @Test
  void renewLockExtendsTheLease() throws Exception {
    RlockLockRegistry registry =
        new RlockLockRegistry(clientA, TestRedis.uniqueKey("renew"), Duration.ofSeconds(2));
    RedisLock raw = clientB.getLock(registry.getRegistryKey() + ":k");
    Lock lock = registry.obtain("k");
    lock.lock();
    try {
      long first = raw.remainTimeToLive();
      assertTrue(first > 0 && first <= 2000, "expireAfter is the lease: " + first);
      registry.renewLock("k", Duration.ofSeconds(30));
      assertTrue(raw.remainTimeToLive() > 20_000, "renewLock(key, ttl) sets the lease");
      Thread.sleep(100);
      registry.renewLock("k");
      long renewed = raw.remainTimeToLive();
      assertTrue(renewed > 1000 && renewed <= 2000, "renewLock(key) resets to expireAfter: " + renewed);
      Exception fromOther = elsewhere(() -> {
        try {
          registry.renewLock("k");
          return null;
        } catch (IllegalStateException e) {
          return e;
        }
      });
      assertInstanceOf(IllegalStateException.class, fromOther, "only the holder renews");
    } finally {
      lock.unlock();
    }
    assertThrows(IllegalStateException.class, () -> registry.renewLock("k"));
  }

  @Test
  void watchdogRegistryKeepsTheLockAndRenewChecksTheHold() throws Exception {
    RlockLockRegistry registry = new RlockLockRegistry(clientA, TestRedis.uniqueKey("watchdog"));
    RedisLock raw = clientB.getLock(registry.getRegistryKey() + ":k");
    DistributedLock lock = registry.obtain("k");
    lock.lock();
    try {
      assertTrue(raw.remainTimeToLive() > 0, "the watchdog's lease is set");
      registry.renewLock("k");
      raw.forceUnlock();
      IllegalStateException lost =
          assertThrows(IllegalStateException.class, () -> registry.renewLock("k"));
      assertTrue(lost.getMessage().contains("lost") || lost.getMessage().contains("hold"),
          lost.getMessage());
    } finally {
      assertThrows(ConcurrentModificationException.class, lock::unlock);
    }
    // lock(ttl) overrides the watchdog with a fixed lease.
    lock.lock(Duration.ofSeconds(3));
    long ttl = raw.remainTimeToLive();
    lock.unlock();
    assertTrue(ttl > 0 && ttl <= 3000, "lock(ttl) sets the lease: " + ttl);
  }

  @Test
  void executeLockedRunsUnderTheLockAndTimesOut() throws Exception {
    String key = TestRedis.uniqueKey("execute");
    RlockLockRegistry a = new RlockLockRegistry(clientA, key);
    RlockLockRegistry b = new RlockLockRegistry(clientB, key);
    AtomicInteger inside = new AtomicInteger();
    AtomicInteger maxInside = new AtomicInteger();
    Runnable worker = () -> {
      for (int i = 0; i < 5; i++) {
        try {
          (i % 2 == 0 ? a : b).executeLocked("job", () -> {
            maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
            Thread.sleep(5);
            inside.decrementAndGet();
          });
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
      }
    };
    CompletableFuture<?>[] runs = new CompletableFuture<?>[4];
    for (int i = 0; i < runs.length; i++) {
      runs[i] = CompletableFuture.runAsync(worker, other);
    }
    CompletableFuture.allOf(runs).get(30, TimeUnit.SECONDS);
    assertEquals(1, maxInside.get(), "one at a time");
    assertEquals("done", a.executeLocked("job", () -> "done"));

    Lock held = a.obtain("job");
    held.lock();
    try {
      assertThrows(TimeoutException.class,
          () -> b.executeLocked("job", Duration.ofMillis(200), () -> { }));
    } finally {
      held.unlock();
    }
  }
}
