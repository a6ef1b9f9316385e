package io.rlock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** RedisSemaphore (RSemaphore shape): each call's effect on the Redis key, waits, async forms. */
@Timeout(120)
class SemaphoreTest extends ClientTestBase {
  private RawRedis raw;
  private RedisLockClient other;
  private String name;
  private RedisSemaphore sem;

  @BeforeEach
  void setUp() throws Exception {
    raw = new RawRedis(TestRedis.tcpUrl());
    other = RedisLockClient.create(TestRedis.url());
    name = TestRedis.uniqueName("sem");
    sem = client.getSemaphore(name);
  }

  @AfterEach
  void tearDown() throws Exception {
    other.close();
    raw.close();
  }

  /** The count as stored (null when the key is missing). */
  String stored() throws Exception {
    Object value = raw.command("GET", name);
    return value == null ? null : new String((byte[]) value, StandardCharsets.UTF_8);
  }

  static <T> T await(CompletableFuture<T> future) throws Exception {
    return future.get(30, TimeUnit.SECONDS);
  }

  static Throwable failure(CompletableFuture<?> future) {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> future.get(30, TimeUnit.SECONDS));
    return e.getCause();
  }

  @Test
  void eachCallChangesTheCountInRedis() throws Exception {
    assertFalse(sem.isExists());
    assertTrue(sem.trySetPermits(3));
    assertEquals("3", stored());
    assertEquals(-1L, raw.command("PTTL", name), "no expiry without a ttl");
    assertFalse(sem.trySetPermits(5), "it exists");
    assertEquals("3", stored());
    sem.acquire(2);
    assertEquals("1", stored());
    assertEquals(2, sem.heldPermits());
    assertEquals(1, sem.availablePermits());
    sem.release();
    assertEquals("2", stored());
    assertEquals(1, sem.heldPermits());
    assertEquals(5, sem.addPermits(3));
    assertEquals("5", stored());
    assertEquals(3, sem.addPermits(-2));
    assertEquals(3, sem.drainPermits());
    assertEquals("0", stored());
    // The C library does not count drained permits as held: addPermits gives them back.
    assertEquals(1, sem.heldPermits());
    assertThrows(LockNotHeldException.class, () -> sem.release(2));
    assertEquals("0", stored());
    sem.release();
    assertEquals(0, sem.heldPermits());
    assertEquals(4, sem.addPermits(3));
    assertEquals("4", stored());
    assertTrue(sem.delete());
    assertNull(stored());
    assertFalse(sem.delete());
  }

  @Test
  void trySetPermitsWithATimeToLive() throws Exception {
    assertTrue(sem.trySetPermits(2, Duration.ofSeconds(30)));
    long ttl = (Long) raw.command("PTTL", name);
    assertTrue(ttl > 25_000 && ttl <= 30_000, "ttl " + ttl);
    assertTrue(sem.tryAcquire());
    assertTrue((Long) raw.command("PTTL", name) > 0, "an acquire keeps the ttl");
    sem.release();
  }

  @Test
  void releasingWhatThisClientDidNotTakeIsRefusedAndChangesNothing() throws Exception {
    sem.trySetPermits(2);
    LockNotHeldException e = assertThrows(LockNotHeldException.class, () -> sem.release());
    assertEquals(-3, e.getCode(), e.getMessage()); // RLOCK_ENOTHELD
    assertEquals("2", stored());
    assertTrue(sem.tryAcquire());
    // Another client's handle holds nothing of this semaphore.
    RedisSemaphore theirs = other.getSemaphore(name);
    assertThrows(LockNotHeldException.class, () -> theirs.release());
    assertThrows(LockNotHeldException.class, () -> sem.release(2), "more than held");
    assertEquals("1", stored());
    sem.release();
    assertEquals("2", stored());
  }

  @Test
  void badInputThrowsAndLeavesRedisAlone() throws Exception {
    sem.trySetPermits(3);
    assertTrue(sem.tryAcquire(0), "0 permits: taken at once, as Redisson");
    sem.acquire(0);
    sem.release(0);
    assertThrows(IllegalArgumentException.class, () -> sem.tryAcquire(-1));
    assertFalse(sem.tryAcquire(1001), "no cap at 1000, as Redisson: just not that many");
    assertThrows(IllegalArgumentException.class, () -> sem.tryAcquire(1, -1, TimeUnit.SECONDS));
    assertThrows(IllegalArgumentException.class, () -> sem.tryAcquire(Duration.ofMillis(-1)));
    assertThrows(IllegalArgumentException.class, () -> sem.release(-2));
    assertThrows(IllegalArgumentException.class, () -> sem.trySetPermits(-1));
    assertThrows(IllegalArgumentException.class, () -> sem.trySetPermits(1, Duration.ZERO));
    assertTrue(sem.tryAcquireAsync(0).get(10, TimeUnit.SECONDS));
    assertInstanceOf(IllegalArgumentException.class, failure(sem.acquireAsync(-3)));
    sem.releaseAsync(0).get(10, TimeUnit.SECONDS);
    assertEquals("3", stored());
    assertEquals(0, sem.heldPermits());
    assertThrows(IllegalArgumentException.class, () -> client.getSemaphore(""));
    assertThrows(NullPointerException.class, () -> client.getSemaphore(null));
  }

  @Test
  void releaseIfExistsGivesBackOnlyToASemaphoreThatExists() throws Exception {
    sem.trySetPermits(3);
    sem.acquire(3);
    assertTrue(sem.releaseIfExists(1));
    assertEquals("1", stored());
    assertTrue(sem.releaseIfExistsAsync(1).get(30, TimeUnit.SECONDS));
    assertEquals("2", stored());
    assertFalse(sem.releaseIfExists(0), "0 permits: false, as Redisson");
    assertEquals(1, sem.heldPermits());
    assertThrows(IllegalArgumentException.class, () -> sem.releaseIfExists(-1));
    assertThrows(IllegalArgumentException.class, () -> sem.releaseIfExistsAsync(-1),
        "thrown at once, as Redisson's");
    assertThrows(LockNotHeldException.class, () -> sem.releaseIfExists(2));
    assertEquals("2", stored(), "refused calls change nothing");
    raw.command("DEL", name);
    assertFalse(sem.releaseIfExists(1));
    assertNull(stored(), "a missing semaphore is not created");
    assertEquals(0, sem.heldPermits(), "the permits went with the semaphore");
    sem.trySetPermits(1);
    sem.acquire();
    raw.command("DEL", name);
    assertFalse(sem.releaseIfExistsAsync(1).get(30, TimeUnit.SECONDS));
    assertNull(stored());
  }

  @Test
  void wrongKeyTypeIsAServerError() throws Exception {
    raw.command("HSET", name, "f", "v");
    assertThrows(RedisLockServerException.class, () -> sem.tryAcquire());
    assertThrows(RedisLockServerException.class, () -> sem.availablePermits());
    assertEquals("hash", raw.command("TYPE", name));
  }

  @Test
  void aMissingSemaphoreHasNoPermitsUntilSet() throws Exception {
    assertFalse(sem.tryAcquire());
    long start = System.nanoTime();
    assertFalse(sem.tryAcquire(Duration.ofMillis(200)));
    assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(190));
    assertNull(stored(), "trying creates nothing");
    Future<Boolean> waiter = pool.submit(() -> sem.tryAcquire(10, TimeUnit.SECONDS));
    Thread.sleep(200);
    assertTrue(other.getSemaphore(name).trySetPermits(1));
    assertTrue(waiter.get(10, TimeUnit.SECONDS), "setting the permits wakes the waiter");
    assertEquals("0", stored());
  }

  @Test
  void aReleaseByOneClientWakesAWaiterOfAnother() throws Exception {
    sem.trySetPermits(1);
    sem.acquire();
    RedisSemaphore theirs = other.getSemaphore(name);
    Future<Long> waited = pool.submit(() -> {
      long start = System.nanoTime();
      theirs.acquire();
      return System.nanoTime() - start;
    });
    Thread.sleep(300);
    assertFalse(waited.isDone());
    long released = System.nanoTime();
    sem.release();
    waited.get(10, TimeUnit.SECONDS);
    long wake = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - released);
    assertTrue(wake < 1000, "woken " + wake + " ms after the release");
    assertEquals(1, theirs.heldPermits());
    assertEquals("0", stored());
    theirs.release();
    assertEquals("1", stored());
  }

  @Test
  void permitsAreNeverOverTaken() throws Exception {
    sem.trySetPermits(3);
    int[] inside = {0};
    int[] most = {0};
    Object guard = new Object();
    java.util.List<Future<?>> done = new java.util.ArrayList<>();
    for (int t = 0; t < 8; t++) {
      RedisSemaphore mine = (t % 2 == 0 ? client : other).getSemaphore(name);
      done.add(pool.submit(() -> {
        for (int i = 0; i < 25; i++) {
          mine.acquire();
          synchronized (guard) {
            most[0] = Math.max(most[0], ++inside[0]);
          }
          Thread.sleep(1);
          synchronized (guard) {
            inside[0]--;
          }
          mine.release();
        }
        return null;
      }));
    }
    for (Future<?> f : done) {
      f.get(60, TimeUnit.SECONDS);
    }
    assertTrue(most[0] <= 3, most[0] + " inside at once");
    assertEquals("3", stored(), "no permit lost or made");
  }

  @Test
  void asyncForms() throws Exception {
    sem.trySetPermits(2);
    assertNull(await(sem.acquireAsync(2)));
    assertEquals("0", stored());
    assertFalse(await(sem.tryAcquireAsync()));
    assertFalse(await(sem.tryAcquireAsync(1, Duration.ofMillis(100))));
    CompletableFuture<Boolean> waiting = sem.tryAcquireAsync(1, 10, TimeUnit.SECONDS);
    Thread.sleep(100);
    assertFalse(waiting.isDone());
    assertNull(await(sem.releaseAsync()));
    assertTrue(await(waiting));
    assertEquals(2, sem.heldPermits());
    assertInstanceOf(LockNotHeldException.class, failure(sem.releaseAsync(3)));
    assertNull(await(sem.releaseAsync(2)));
    assertEquals("2", stored());
  }

  @Test
  void cancellingAWaitingFutureLeavesNothingTaken() throws Exception {
    sem.trySetPermits(0);
    CompletableFuture<Void> waiting = sem.acquireAsync();
    Thread.sleep(100);
    assertTrue(waiting.cancel(false));
    assertThrows(CancellationException.class, waiting::join);
    CompletableFuture<Boolean> timed = sem.tryAcquireAsync(1, Duration.ofSeconds(10));
    timed.complete(false);
    sem.addPermits(1);
    Thread.sleep(300);
    assertEquals("1", stored(), "no cancelled wait took the permit");
    assertEquals(0, sem.heldPermits());
  }

  /** A grant nobody received (the future was completed first) is given back. */
  @Test
  void aGrantThatLostTheRaceIsGivenBack() throws Exception {
    sem.trySetPermits(1);
    for (int i = 0; i < 20; i++) {
      CompletableFuture<Boolean> single = sem.tryAcquireAsync();
      if (!single.complete(false)) {
        assertTrue(single.join(), "the grant came first: it is ours");
        sem.release();
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      // The grant has been applied once its completion ran; the give-back follows it.
      while (io.rlock.internal.CompletionCounts.outstanding() != 0
          && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
      while ((!"1".equals(stored()) || sem.heldPermits() != 0) && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertEquals("1", stored(), "round " + i);
      assertEquals(0, sem.heldPermits(), "round " + i);
    }
  }

  @Test
  void anInterruptEndsAWaitAndTakesNothing() throws Exception {
    sem.trySetPermits(0);
    CompletableFuture<Throwable> outcome = new CompletableFuture<>();
    Thread waiter = new Thread(() -> {
      try {
        sem.acquire();
        outcome.complete(null);
      } catch (Throwable t) {
        outcome.complete(t);
      }
    });
    waiter.start();
    Thread.sleep(200);
    waiter.interrupt();
    assertInstanceOf(InterruptedException.class, outcome.get(10, TimeUnit.SECONDS));
    sem.addPermits(1);
    Thread.sleep(200);
    assertEquals("1", stored());
    assertEquals(0, sem.heldPermits());
  }

  @Test
  void closeWakesWaitersAndRefusesCalls() throws Exception {
    sem.trySetPermits(0);
    CompletableFuture<Void> waiting = sem.acquireAsync();
    Future<Object> blocked = pool.submit(() -> {
      try {
        sem.acquire();
        return "acquired";
      } catch (Throwable t) {
        return t;
      }
    });
    Thread.sleep(200);
    sem.close();
    assertInstanceOf(RedisLockClosedException.class, failure(waiting));
    assertInstanceOf(RedisLockClosedException.class, blocked.get(10, TimeUnit.SECONDS));
    assertThrows(RedisLockClosedException.class, () -> sem.availablePermits());
    assertArrayEquals("0".getBytes(StandardCharsets.UTF_8), (byte[]) raw.command("GET", name));
  }
}
