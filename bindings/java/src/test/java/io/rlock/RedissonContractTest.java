package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Where a Redisson (4.7) user's habits meet RedisLock: negative waits, leases of 0 or less,
 * try-with-resources, a reader asking for the write lock, and isLocked on read-write halves.
 */
@Timeout(60)
class RedissonContractTest extends ClientTestBase {
  private long pttl(String name) throws Exception {
    try (RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
      return (Long) raw.command("PTTL", name);
    }
  }

  private static String text(Object reply) {
    return new String((byte[]) reply, StandardCharsets.UTF_8);
  }

  /** Holds `lock` on another thread until the returned latch is counted down. */
  private CountDownLatch holdElsewhere(RedisLock lock) throws Exception {
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch done = new CountDownLatch(1);
    pool.submit(() -> {
      lock.lock();
      held.countDown();
      done.await();
      lock.unlock();
      return null;
    });
    assertTrue(held.await(10, TimeUnit.SECONDS));
    return done;
  }

  @Test
  void aNegativeWaitTriesOnce() throws Exception {
    String name = TestRedis.uniqueName("negwait");
    RedisLock lock = client.getLock(name);
    CountDownLatch release = holdElsewhere(lock);
    long start = System.nanoTime();
    assertFalse(lock.tryLock(-1, TimeUnit.SECONDS));
    assertFalse(lock.tryLock(-5, 10, TimeUnit.SECONDS));
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(1), "tried once, no wait");
    release.countDown();
    assertTrue(lock.tryLock(5, TimeUnit.SECONDS)); // the holder let go
    lock.unlock();
    assertTrue(lock.tryLock(-1, TimeUnit.SECONDS), "a free lock is taken by the one try");
    lock.unlock();
    assertFalse(lock.isLocked());
  }

  /** Takes `lock` with `take`, reads the key's PTTL, unlocks and returns the PTTL. */
  private long leaseOf(RedisLock lock, String name, Callable<Boolean> take) throws Exception {
    assertTrue(take.call(), "taken");
    try {
      return pttl(name);
    } finally {
      lock.unlock();
    }
  }

  @Test
  void aLeaseOfZeroOrLessMeansTheWatchdog() throws Exception {
    String name = TestRedis.uniqueName("lease0");
    RedisLock lock = client.getLock(name);
    long watchdog = leaseOf(lock, name, () -> {
      lock.lock(0, TimeUnit.SECONDS);
      return true;
    });
    assertTrue(watchdog > 20_000 && watchdog <= 30_000, "the watchdog's 30 s lease: " + watchdog);
    long negative = leaseOf(lock, name, () -> lock.tryLock(1, -5, TimeUnit.SECONDS));
    assertTrue(negative > 20_000, "a negative lease is the watchdog too: " + negative);
    long positive = leaseOf(lock, name, () -> lock.tryLock(1, 2, TimeUnit.SECONDS));
    assertTrue(positive > 0 && positive <= 2_000, "a positive lease is that lease: " + positive);
    assertFalse(lock.isLocked());
  }

  @Test
  void tryWithResourcesUnlocks() throws Exception {
    String name = TestRedis.uniqueName("twr");
    RedisLock lock = client.getLock(name);
    try (Held held = lock.locked()) {
      assertTrue(held.lock() == lock && lock.isHeldByCurrentThread());
      assertFalse(other(lock::tryLock));
    }
    assertFalse(lock.isLocked(), "Held.close() unlocked");
    try (Held held = lock.locked(5, TimeUnit.SECONDS)) {
      assertTrue(held.lock() == lock && pttl(name) <= 5_000);
    }
    assertFalse(lock.isLocked());
    RedisMultiLock group = client.getMultiLock(lock, client.getLock(name + ":b"));
    try (Held held = group.locked()) {
      assertTrue(held.lock() == group && lock.isLocked());
    }
    assertFalse(lock.isLocked() || client.getLock(name + ":b").isLocked());
    // RedisLock, RedisMultiLock and RedisReadWriteLock are not AutoCloseable (close() frees
    // the handle and does not unlock), so try-with-resources on them does not compile.
    assertFalse(AutoCloseable.class.isAssignableFrom(RedisLock.class));
    assertFalse(AutoCloseable.class.isAssignableFrom(RedisMultiLock.class));
    assertFalse(AutoCloseable.class.isAssignableFrom(RedisReadWriteLock.class));
  }

  @Test
  void aReaderAskingForTheWriteLockGetsFalseFromTryLock() throws Exception {
    RedisReadWriteLock rw = client.getReadWriteLock(TestRedis.uniqueName("rw-try"));
    RedisLock read = rw.readLock();
    RedisLock write = rw.writeLock();
    read.lock();
    long start = System.nanoTime();
    assertFalse(write.tryLock());
    assertFalse(write.tryLock(5, TimeUnit.SECONDS), "false at once: it would wait for itself");
    assertFalse(write.tryLock(5, 10, TimeUnit.SECONDS));
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(2));
    assertThrows(RedisLockDeadlockException.class, write::lock, "lock() would never return");
    read.unlock();
    assertTrue(write.tryLock());
    write.unlock();
  }

  @Test
  void aReaderAskingForTheWriteLockGetsFalseFromTryLockAsync() throws Exception {
    RedisReadWriteLock rw = client.getReadWriteLock(TestRedis.uniqueName("rw-try-async"));
    RedisLock read = rw.readLock();
    RedisLock write = rw.writeLock();
    read.lock();
    long me = Thread.currentThread().getId();
    long start = System.nanoTime();
    assertFalse(write.tryLockAsync().get(10, TimeUnit.SECONDS));
    assertFalse(write.tryLockAsync(me).get(10, TimeUnit.SECONDS));
    assertFalse(write.tryLockAsync(5, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS),
        "false at once: it would wait for itself");
    assertFalse(write.tryLockAsync(5, -1, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
    assertFalse(write.tryLockAsync(5, 10, TimeUnit.SECONDS, me).get(10, TimeUnit.SECONDS));
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(2));
    ExecutionException async = assertThrows(ExecutionException.class,
        () -> write.lockAsync().get(10, TimeUnit.SECONDS));
    assertInstanceOf(RedisLockDeadlockException.class, async.getCause(),
        "lockAsync() would never complete");
    assertFalse(write.isLocked(), "nothing taken");
    read.unlock();
    assertTrue(write.tryLockAsync(1, 10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
    write.unlock();
  }

  @Test
  void aMultiLockWithAWriteLockItsThreadReadsGetsFalseFromTryLock() throws Exception {
    String name = TestRedis.uniqueName("multi-rw-try");
    RedisReadWriteLock rw = client.getReadWriteLock(name);
    RedisLock plain = client.getLock(name + ":plain");
    RedisMultiLock group = client.getMultiLock(plain, rw.writeLock());
    rw.readLock().lock();
    long start = System.nanoTime();
    assertFalse(group.tryLock(), "as the write lock's own tryLock");
    assertFalse(group.tryLock(5, TimeUnit.SECONDS), "false at once: it would wait for itself");
    assertFalse(group.tryLock(5, 10, TimeUnit.SECONDS));
    assertFalse(group.tryLockAsync().get(10, TimeUnit.SECONDS));
    assertFalse(group.tryLockAsync(5, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
    assertFalse(group.tryLockAsync(5, 10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS));
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(3));
    assertFalse(plain.isLocked(), "a refused try gave back the member it got");
    assertThrows(RedisLockDeadlockException.class, group::lock, "lock() would never return");
    ExecutionException async = assertThrows(ExecutionException.class,
        () -> group.lockAsync().get(10, TimeUnit.SECONDS));
    assertInstanceOf(RedisLockDeadlockException.class, async.getCause());
    assertFalse(plain.isLocked());
    rw.readLock().unlock();
    assertTrue(group.tryLock());
    group.unlock();

    // A member non-reentrant lock its thread holds keeps failing, as that lock's tryLock does.
    RedisLock once = client.getNonReentrantLock(name + ":once");
    RedisMultiLock again = client.getMultiLock(plain, once);
    once.lock();
    assertThrows(RedisLockDeadlockException.class, again::tryLock);
    ExecutionException refused = assertThrows(ExecutionException.class,
        () -> again.tryLockAsync().get(10, TimeUnit.SECONDS));
    assertInstanceOf(RedisLockDeadlockException.class, refused.getCause());
    once.unlock();
    assertFalse(plain.isLocked());
  }

  @Test
  void aMultiLockTellsWhichThreadHoldsIt() throws Exception {
    String name = TestRedis.uniqueName("multi-by-thread");
    RedisMultiLock group = client.getMultiLock(client.getLock(name), client.getLock(name + ":b"));
    long me = Thread.currentThread().getId();
    assertFalse(group.isHeldByThread(me));
    group.lock();
    assertTrue(group.isHeldByThread(me) && group.isHeldByCurrentThread());
    long other = onOtherThread(() -> Thread.currentThread().getId());
    assertFalse(group.isHeldByThread(other));
    group.unlock();
    assertFalse(group.isHeldByThread(me));
  }

  /**
   * Redisson's fair-lock drift case: a holder that never unlocks (a 2 s lease) and 8 waiters,
   * each of which, once it has the lock, also never unlocks (a 500 ms lease). Each lease's end
   * must hand the lock to the next waiter, so all 8 get it well within their 10 s waits (the
   * leases add up to 6 s).
   */
  @Test
  void eightFairWaitersEachTakeTheLockWhenTheLeaseBeforeThemEnds() throws Exception {
    String name = TestRedis.uniqueName("fair-drift");
    RedisLock holder = client.getFairLock(name);
    assertTrue(holder.tryLock(0, 2000, TimeUnit.MILLISECONDS));
    List<Future<Boolean>> waiters = new java.util.ArrayList<>();
    for (int i = 0; i < 8; i++) {
      final int index = i;
      // Submitted while the first lease runs: no pool thread is reused (it would re-enter).
      waiters.add(pool.submit(
          () -> client.getFairLock(name).tryLock(10_000, 500, TimeUnit.MILLISECONDS)));
      // Queued one after the other: wait until this one has its place.
      try (RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
        for (int tries = 0; tries < 250; tries++) {
          if ((Long) raw.command("LLEN", "redisson_lock_queue:{" + name + "}") > index) {
            break;
          }
          Thread.sleep(20);
        }
      }
    }
    int got = 0;
    for (Future<Boolean> waiter : waiters) {
      if (waiter.get(30, TimeUnit.SECONDS)) {
        got++;
      }
    }
    assertEquals(8, got, "every waiter took the lock when the lease before it ended");
  }

  @Test
  void theFairLockWaitTimeoutIsASetting() throws Exception {
    String name = TestRedis.uniqueName("fair-wait");
    try (RedisLockClient quick = RedisLockClient.builder().url(TestRedis.url())
        .fairLockWaitTimeout(Duration.ofSeconds(2)).build()) {
      RedisLock holder = quick.getFairLock(name);
      holder.lock(); // the watchdog: a 30 s lease
      Future<?> waiter = pool.submit(() -> {
        RedisLock lock = quick.getFairLock(name);
        lock.lock(); // an unbounded wait: its place lasts the setting past the holder's lease
        lock.unlock();
        return null;
      });
      long deadlineIn = -1;
      try (RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
        for (int i = 0; i < 200 && deadlineIn < 0; i++) {
          List<?> entries = (List<?>) raw.command("ZRANGE", "redisson_lock_timeout:{" + name + "}",
              "0", "-1", "WITHSCORES");
          if (entries.size() == 2) {
            List<?> time = (List<?>) raw.command("TIME");
            long nowMs = Long.parseLong(text(time.get(0))) * 1000
                + Long.parseLong(text(time.get(1))) / 1000;
            deadlineIn = (long) Double.parseDouble(text(entries.get(1))) - nowMs;
          } else {
            Thread.sleep(20);
          }
        }
      }
      holder.unlock();
      waiter.get(10, TimeUnit.SECONDS);
      // The holder's 30 s lease plus 2 s; the default (5 min) would put it near 330 s.
      assertTrue(deadlineIn > 25_000 && deadlineIn <= 32_500, "queue deadline in " + deadlineIn);
    }
  }

  @Test
  void readWriteHalvesReportTheirOwnMode() throws Exception {
    RedisReadWriteLock rw = client.getReadWriteLock(TestRedis.uniqueName("rw-mode"));
    RedisLock read = rw.readLock();
    RedisLock write = rw.writeLock();
    assertFalse(read.isLocked() || write.isLocked());
    write.lock();
    assertTrue(write.isLocked());
    assertFalse(read.isLocked(), "only the write lock is held");
    read.lock(); // the writer reads too
    assertTrue(read.isLocked() && write.isLocked());
    write.unlock(); // downgraded: a reader now
    assertTrue(read.isLocked());
    assertFalse(write.isLocked());
    Future<Boolean> otherReader = pool.submit(() -> {
      boolean got = read.tryLock();
      if (got) {
        read.unlock();
      }
      return got;
    });
    assertTrue(otherReader.get(10, TimeUnit.SECONDS));
    read.unlock();
    assertFalse(read.isLocked() || write.isLocked());
  }
}
