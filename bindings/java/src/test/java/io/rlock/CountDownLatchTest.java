package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** RedisCountDownLatch (RCountDownLatch shape): the count key, awaits across clients, async. */
@Timeout(120)
class CountDownLatchTest extends ClientTestBase {
  private RawRedis raw;
  private RedisLockClient other;
  private String name;
  private RedisCountDownLatch latch;

  @BeforeEach
  void setUp() throws Exception {
    raw = new RawRedis(TestRedis.tcpUrl());
    other = RedisLockClient.create(TestRedis.url());
    name = TestRedis.uniqueName("latch");
    latch = client.getCountDownLatch(name);
  }

  @AfterEach
  void tearDown() throws Exception {
    other.close();
    raw.close();
  }

  String stored() throws Exception {
    Object value = raw.command("GET", name);
    return value == null ? null : new String((byte[]) value, StandardCharsets.UTF_8);
  }

  @Test
  void countsDownToOpen() throws Exception {
    assertEquals(0, latch.getCount(), "a missing latch is open");
    assertTrue(latch.await(Duration.ZERO));
    assertTrue(latch.trySetCount(2));
    assertEquals("2", stored());
    assertFalse(latch.trySetCount(5));
    assertEquals("2", stored());
    latch.countDown();
    assertEquals("1", stored());
    assertEquals(1, latch.getCount());
    latch.countDown();
    assertNull(stored(), "at zero the key is gone");
    latch.countDown();
    assertEquals(0, latch.getCount(), "open stays open");
    assertNull(stored());
  }

  @Test
  void waitersOfAnotherClientWakeAtZero() throws Exception {
    latch.trySetCount(1);
    RedisCountDownLatch theirs = other.getCountDownLatch(name);
    List<Future<Boolean>> waiters = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      waiters.add(pool.submit(() -> theirs.await(10, TimeUnit.SECONDS)));
    }
    Thread.sleep(300);
    for (Future<Boolean> w : waiters) {
      assertFalse(w.isDone());
    }
    long start = System.nanoTime();
    latch.countDown();
    for (Future<Boolean> w : waiters) {
      assertTrue(w.get(10, TimeUnit.SECONDS));
    }
    long woken = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertTrue(woken < 1000, "woken after " + woken + " ms");
  }

  @Test
  void timedAwaitGivesUp() throws Exception {
    latch.trySetCount(1);
    long start = System.nanoTime();
    assertFalse(latch.await(200, TimeUnit.MILLISECONDS));
    assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(190));
    assertFalse(latch.await(Duration.ofMillis(50)));
    assertEquals("1", stored());
  }

  @Test
  void badCountsThrowAndLeaveRedisAlone() throws Exception {
    assertThrows(IllegalArgumentException.class, () -> latch.trySetCount(0));
    assertThrows(IllegalArgumentException.class, () -> latch.trySetCount(-1));
    assertThrows(IllegalArgumentException.class, () -> latch.trySetCount(1_000_000_000_000_000L));
    assertThrows(IllegalArgumentException.class, () -> latch.await(-1, TimeUnit.SECONDS));
    assertNull(stored());
    raw.command("HSET", name, "f", "v");
    assertThrows(RedisLockServerException.class, () -> latch.getCount());
    assertThrows(RedisLockServerException.class, () -> latch.countDown());
    assertEquals("hash", raw.command("TYPE", name));
  }

  @Test
  void asyncForms() throws Exception {
    latch.trySetCount(2);
    CompletableFuture<Void> forever = latch.awaitAsync();
    CompletableFuture<Boolean> timed = other.getCountDownLatch(name)
        .awaitAsync(Duration.ofSeconds(10));
    assertFalse(latch.awaitAsync(100, TimeUnit.MILLISECONDS).get(10, TimeUnit.SECONDS));
    CompletableFuture<Void> cancelled = latch.awaitAsync();
    assertTrue(cancelled.cancel(false));
    assertThrows(CancellationException.class, cancelled::join);
    latch.countDown();
    Thread.sleep(100);
    assertFalse(forever.isDone());
    latch.countDown();
    assertNull(forever.get(10, TimeUnit.SECONDS));
    assertTrue(timed.get(10, TimeUnit.SECONDS));
  }

  @Test
  void deleteOpensAndCloseWakesAwaits() throws Exception {
    latch.trySetCount(3);
    CompletableFuture<Void> waiting = latch.awaitAsync();
    Future<Object> blocked = pool.submit(() -> {
      try {
        latch.await();
        return "open";
      } catch (Throwable t) {
        return t;
      }
    });
    Thread.sleep(200);
    latch.close();
    assertInstanceOf(RedisLockClosedException.class,
        assertThrows(java.util.concurrent.ExecutionException.class,
            () -> waiting.get(10, TimeUnit.SECONDS)).getCause());
    assertInstanceOf(RedisLockClosedException.class, blocked.get(10, TimeUnit.SECONDS));
    RedisCountDownLatch again = client.getCountDownLatch(name);
    assertTrue(again.delete());
    assertEquals(0, again.getCount());
    assertFalse(again.delete());
  }
}
