package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rlock.internal.CompletionCounts;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The RLockAsync shape: futures, owners, cancellation, and exactly-once completions. */
@Timeout(120)
class AsyncTest extends ClientTestBase {
  private static final long ALICE = 7_000_001L; // owner ids no Java thread of this JVM has
  private static final long BOB = 7_000_002L;

  static <T> T await(CompletableFuture<T> future) throws Exception {
    return future.get(30, TimeUnit.SECONDS);
  }

  static Throwable failure(CompletableFuture<?> future) throws Exception {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> future.get(30, TimeUnit.SECONDS));
    return e.getCause();
  }

  /** Polls an outcome that follows asynchronously; fails after 20 s. */
  static void eventually(String what, BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("never: " + what);
      }
      Thread.sleep(10);
    }
  }

  @Test
  void lockAndUnlockAsyncOwnedByTheCallingThread() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("async"));
    assertNull(await(lock.lockAsync()));
    assertTrue(lock.isHeldByCurrentThread(), "the caller owns what lockAsync() got");
    assertTrue(await(lock.tryLockAsync()), "reentrant");
    assertEquals(2, lock.getHoldCount());
    assertFalse(other(() -> await(lock.tryLockAsync())), "another thread is another owner");
    assertNull(await(lock.unlockAsync()));
    assertNull(await(lock.unlockAsync()));
    assertFalse(lock.isLocked());
    assertInstanceOf(LockNotHeldException.class, failure(lock.unlockAsync()));
  }

  @Test
  void threadIdOverloadsNameTheOwner() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("async-owner"));
    assertNull(await(lock.lockAsync(ALICE)));
    assertTrue(lock.isHeldByThread(ALICE));
    assertFalse(lock.isHeldByCurrentThread());
    assertFalse(await(lock.tryLockAsync(BOB)));
    assertFalse(await(lock.tryLockAsync(100, 5_000, TimeUnit.MILLISECONDS, BOB)));
    assertFalse(await(lock.tryLockAsync(100, TimeUnit.MILLISECONDS)), "the caller waits too");
    assertInstanceOf(LockNotHeldException.class, failure(lock.unlockAsync(BOB)));
    assertNull(await(lock.unlockAsync(ALICE)));
    assertNull(await(lock.lockAsync(2_000, TimeUnit.MILLISECONDS, BOB)));
    long ttl = lock.remainTimeToLive();
    assertTrue(ttl > 0 && ttl <= 2_000, "lease ttl " + ttl);
    assertNull(await(lock.unlockAsync(BOB)));
    assertTrue(await(lock.tryLockAsync(0, 3_000, TimeUnit.MILLISECONDS)));
    ttl = lock.remainTimeToLive();
    assertTrue(ttl > 0 && ttl <= 3_000, "lease ttl " + ttl);
    lock.unlock();
    assertNull(await(lock.lockAsync(-1, TimeUnit.SECONDS)), "-1: the watchdog");
    lock.unlock();
    assertFalse(lock.isLocked());
    assertTrue(await(lock.tryLockAsync(-1, TimeUnit.SECONDS)), "a negative wait tries once");
    lock.unlock();
  }

  @Test
  void aWaiterIsGrantedWhenTheHolderUnlocks() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("async-wait"));
    lock.lock();
    CompletableFuture<Boolean> waiting = lock.tryLockAsync(60, -1, TimeUnit.SECONDS, ALICE);
    CompletableFuture<Void> forever = lock.lockAsync(BOB);
    Thread.sleep(200);
    assertFalse(waiting.isDone() || forever.isDone(), "they wait while it is held");
    lock.unlock();
    CompletableFuture.anyOf(waiting, forever).get(30, TimeUnit.SECONDS);
    if (waiting.isDone()) {
      assertTrue(waiting.get());
      assertNull(await(lock.unlockAsync(ALICE)));
      assertNull(await(forever));
    } else {
      assertNull(await(forever));
      assertNull(await(lock.unlockAsync(BOB)));
      assertTrue(await(waiting));
    }
    assertTrue(lock.isHeldByThread(ALICE) != lock.isHeldByThread(BOB));
    lock.forceUnlock();
  }

  @Test
  void fencedAsyncReturnsTheToken() throws Exception {
    RedisFencedLock lock = client.getFencedLock(TestRedis.uniqueName("async-fenced"));
    Long first = await(lock.lockAndGetTokenAsync());
    assertNotNull(first);
    assertEquals(first, lock.getToken());
    assertNull(onOtherThread(() -> await(lock.tryLockAndGetTokenAsync())));
    assertNull(onOtherThread(() -> await(lock.tryLockAndGetTokenAsync(50, TimeUnit.MILLISECONDS))));
    lock.unlock();
    Long second = await(lock.tryLockAndGetTokenAsync(1, 5, TimeUnit.SECONDS));
    assertTrue(second > first, first + " then " + second);
    lock.unlock();
    Long third = await(lock.lockAndGetTokenAsync(5, TimeUnit.SECONDS));
    assertTrue(third > second);
    lock.unlock();
    assertTrue(await(lock.tryLockAndGetTokenAsync()) > third);
    lock.unlock();
  }

  @Test
  void fairAndReadWriteHalvesHaveTheAsyncShape() throws Exception {
    RedisLock fair = client.getFairLock(TestRedis.uniqueName("async-fair"));
    assertNull(await(fair.lockAsync(ALICE)));
    assertFalse(await(fair.tryLockAsync(100, -1, TimeUnit.MILLISECONDS, BOB)));
    assertNull(await(fair.unlockAsync(ALICE)));
    assertTrue(await(fair.tryLockAsync(BOB)));
    assertNull(await(fair.unlockAsync(BOB)));

    RedisReadWriteLock rw = client.getReadWriteLock(TestRedis.uniqueName("async-rw"));
    assertTrue(await(rw.readLock().tryLockAsync(ALICE)));
    assertTrue(await(rw.readLock().tryLockAsync(BOB)), "readers share");
    CompletableFuture<Void> writer = rw.writeLock().lockAsync(BOB + 1);
    assertFalse(await(rw.writeLock().tryLockAsync(50, -1, TimeUnit.MILLISECONDS, BOB + 2)));
    assertNull(await(rw.readLock().unlockAsync(ALICE)));
    assertNull(await(rw.readLock().unlockAsync(BOB)));
    assertNull(await(writer), "the writer gets it once the readers left");
    assertFalse(await(rw.readLock().tryLockAsync(ALICE)));
    assertNull(await(rw.writeLock().unlockAsync(BOB + 1)));
  }

  @Test
  void multiAndRedLockHaveTheAsyncShape() throws Exception {
    RedisLock a = client.getLock(TestRedis.uniqueName("async-multi-a"));
    RedisLock b = client.getLock(TestRedis.uniqueName("async-multi-b"));
    for (RedisMultiLock group : List.of(client.getMultiLock(a, b), client.getRedLock(a, b))) {
      assertNull(await(group.lockAsync()));
      assertTrue(group.isHeldByCurrentThread());
      assertFalse(await(group.tryLockAsync(ALICE)));
      assertFalse(await(group.tryLockAsync(50, -1, TimeUnit.MILLISECONDS, ALICE)));
      assertNull(await(group.unlockAsync()));
      assertNull(await(group.lockAsync(5, TimeUnit.SECONDS, ALICE)));
      assertTrue(a.isHeldByThread(ALICE) && b.isHeldByThread(ALICE));
      assertFalse(await(group.tryLockAsync(50, TimeUnit.MILLISECONDS)));
      assertNull(await(group.unlockAsync(ALICE)));
      assertTrue(await(group.tryLockAsync()));
      assertNull(await(group.unlockAsync()));
      assertTrue(await(group.tryLockAsync(1, 5, TimeUnit.SECONDS)));
      assertNull(await(group.unlockAsync()));
      assertNull(await(group.lockAsync(BOB)));
      assertInstanceOf(LockNotHeldException.class, failure(group.unlockAsync(ALICE)));
      assertNull(await(group.unlockAsync(BOB)));
      assertFalse(a.isLocked() || b.isLocked());
    }
  }

  @Test
  void cancellingTheFutureCancelsTheWaitAndLeavesNothing() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("async-cancel"));
    RedisLock other = client.getLock(TestRedis.uniqueName("async-cancel-b"));
    RedisMultiLock group = client.getMultiLock(lock, other);
    lock.lock();
    List<CompletableFuture<?>> waiters = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      waiters.add(lock.lockAsync(ALICE + i));
      waiters.add(lock.tryLockAsync(1, -1, TimeUnit.HOURS, BOB + i));
      waiters.add(group.lockAsync(ALICE + 100 + i));
    }
    waiters.add(lock.lockAsync(BOB + 100).orTimeout(200, TimeUnit.MILLISECONDS));
    Thread.sleep(200);
    for (CompletableFuture<?> waiter : waiters) {
      waiter.cancel(true);
    }
    for (CompletableFuture<?> waiter : waiters) {
      assertTrue(waiter.isCompletedExceptionally());
    }
    lock.unlock();
    eventually("every cancelled wait ended", () -> CompletionCounts.outstanding() == 0);
    // A grant that raced a cancel is given back without a completion of ours: polled.
    eventually("no cancelled waiter holds the lock", () -> !lock.isLocked());
    eventually("no cancelled group holds a member", () -> !other.isLocked());
    assertTrue(lock.tryLock(), "nothing queued is left in the way");
    lock.unlock();
    assertEquals(0, CompletionCounts.repeated());
  }

  @Test
  void aGrantRacingTheCancelIsReleased() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("async-race"));
    for (int i = 0; i < 100; i++) {
      long owner = ALICE + i; // one owner per round: a thread does one acquire at a time
      CompletableFuture<Void> future = lock.lockAsync(owner);
      if (i % 2 == 1) {
        Thread.yield();
      }
      if (!future.cancel(true)) {
        // The grant came first: ours to release.
        assertNull(future.getNow(null), "granted");
        assertTrue(lock.isHeldByThread(owner), "round " + i);
        assertNull(await(lock.unlockAsync(owner)));
      }
      eventually("the lock is free after round " + i, () -> !lock.isLocked());
    }
    eventually("every completion ran", () -> CompletionCounts.outstanding() == 0);
    eventually("a raced grant is given back", () -> !lock.isLocked());
    assertEquals(0, CompletionCounts.repeated());
  }

  @Test
  void closingTheLockOrClientEndsEveryWaitExactlyOnce() throws Exception {
    String name = TestRedis.uniqueName("async-close");
    RedisLock holder = client.getLock(name);
    holder.lock();
    RedisLockClient second = RedisLockClient.create(TestRedis.url());
    try {
      RedisLock lock = second.getLock(name);
      RedisLock viaClient = second.getLock(name);
      List<CompletableFuture<?>> closedByLock = new ArrayList<>();
      List<CompletableFuture<?>> closedByClient = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        closedByLock.add(lock.lockAsync(ALICE + i));
        closedByLock.add(lock.tryLockAsync(1, -1, TimeUnit.HOURS, BOB + i));
        closedByClient.add(viaClient.lockAsync(ALICE + 100 + i));
      }
      // Cancels racing the close: either may end a future, each exactly once.
      for (int i = 0; i < closedByLock.size(); i += 3) {
        CompletableFuture<?> racer = closedByLock.get(i);
        pool.submit(() -> racer.cancel(true));
      }
      lock.close();
      for (CompletableFuture<?> f : closedByLock) {
        Throwable why = assertThrows(Exception.class, () -> f.get(30, TimeUnit.SECONDS));
        assertTrue(why instanceof CancellationException
            || why.getCause() instanceof RedisLockClosedException, why.toString());
      }
      assertInstanceOf(RedisLockClosedException.class, failure(lock.lockAsync()),
          "a closed lock starts nothing");
      assertInstanceOf(RedisLockClosedException.class, failure(lock.unlockAsync()));
      second.close();
      for (CompletableFuture<?> f : closedByClient) {
        assertInstanceOf(RedisLockClosedException.class, failure(f));
      }
    } finally {
      second.close();
    }
    holder.unlock();
    eventually("every completion ran", () -> CompletionCounts.outstanding() == 0);
    assertEquals(0, CompletionCounts.repeated());
    assertFalse(holder.isLocked(), "no closed waiter holds the lock");
  }

  @Test
  void blockingCallsRefuseToRunInsideACompletion() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("async-stage"));
    lock.lock();
    CompletableFuture<Void> stage = lock.lockAsync(ALICE).thenRun(lock::lock);
    Thread.sleep(100);
    lock.unlock(); // the grant now completes on a library thread, which runs the stage
    CompletionException e = assertThrows(CompletionException.class, stage::join);
    assertInstanceOf(IllegalStateException.class, e.getCause());
    assertNull(await(lock.unlockAsync(ALICE)));
    assertNull(await(lock.lockAsync(ALICE).thenRunAsync(() -> { }, pool)), "run elsewhere");
    assertNull(await(lock.unlockAsync(ALICE)));
  }

  @Test
  void extendAsyncSetsTheLeaseOfTheHold() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("async-extend"));
    assertNull(await(lock.lockAsync(1, TimeUnit.SECONDS, ALICE)));
    assertNull(await(lock.nativeLock.extendAsync(60_000, ALICE)));
    assertTrue(lock.remainTimeToLive() > 1_000, "extended");
    assertInstanceOf(LockNotHeldException.class,
        failure(lock.nativeLock.extendAsync(60_000, BOB)));
    assertNull(await(lock.unlockAsync(ALICE)));
  }

  @Test
  void aTimedOutWaitCompletesFalse() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("async-timeout"));
    lock.lock();
    try {
      CompletableFuture<Boolean> waiter = lock.tryLockAsync(300, -1, TimeUnit.MILLISECONDS, ALICE);
      assertThrows(TimeoutException.class, () -> waiter.get(100, TimeUnit.MILLISECONDS));
      assertFalse(await(waiter));
    } finally {
      lock.unlock();
    }
  }
}
