package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * RedisPermitExpirableSemaphore (RPermitExpirableSemaphore shape): ids and leases as Redis
 * stores them ("{N}:timeout", raw 16-byte members, deadline scores), expiry, the watchdog.
 */
@Timeout(120)
class PermitExpirableSemaphoreTest extends ClientTestBase {
  private static final long NEVER = 922337203685477L;
  private RawRedis raw;
  private RedisLockClient other;
  private String name;
  private String deadlines;
  private RedisPermitExpirableSemaphore sem;

  @BeforeEach
  void setUp() throws Exception {
    raw = new RawRedis(TestRedis.tcpUrl());
    other = RedisLockClient.create(TestRedis.url());
    name = TestRedis.uniqueName("xsem");
    deadlines = "{" + name + "}:timeout";
    sem = client.getPermitExpirableSemaphore(name);
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

  /** The id's deadline score, or null when it is not in the set. */
  Long score(String id) throws Exception {
    Object value = raw.command("ZSCORE", deadlines, raw(id));
    return value == null ? null : Long.parseLong(new String((byte[]) value, StandardCharsets.UTF_8));
  }

  static byte[] raw(String hex) {
    byte[] bytes = new byte[hex.length() / 2];
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
    }
    return bytes;
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
  void acquireAndReleaseById() throws Exception {
    assertTrue(sem.trySetPermits(2));
    String id = sem.acquire(Duration.ofSeconds(30));
    assertTrue(id.matches("[0-9a-f]{32}"), id);
    assertEquals("1", stored());
    long left = score(id) - System.currentTimeMillis();
    assertTrue(left > 25_000 && left <= 31_000, "deadline in " + left + " ms");
    assertEquals(1, sem.availablePermits());
    assertEquals(1, sem.acquiredPermits());
    assertEquals(2, sem.getPermits());
    sem.release(id);
    assertNull(score(id));
    assertEquals("2", stored());
    LockNotHeldException again = assertThrows(LockNotHeldException.class, () -> sem.release(id));
    assertEquals(-3, again.getCode());
    assertFalse(sem.tryRelease(id));
    assertEquals("2", stored());
  }

  @Test
  void severalPermitsAtOnceAndAllOrNoneRelease() throws Exception {
    sem.trySetPermits(3);
    List<String> ids = sem.acquire(2);
    assertEquals(2, ids.size());
    assertNotEquals(ids.get(0), ids.get(1));
    assertEquals("1", stored());
    assertEquals(2L, raw.command("ZCARD", deadlines));
    String unknown = "0123456789abcdef0123456789abcdef";
    assertThrows(LockNotHeldException.class,
        () -> sem.release(Arrays.asList(ids.get(0), unknown)));
    assertEquals(0, sem.tryRelease(Arrays.asList(ids.get(1), unknown)));
    assertEquals("1", stored(), "all or none");
    assertEquals(2L, raw.command("ZCARD", deadlines));
    assertEquals(2, sem.tryRelease(ids));
    assertEquals("3", stored());
    List<String> got = sem.tryAcquire(2);
    assertTrue(got.size() == 2);
    got.add("the caller's own list, as Redisson's"); // not unmodifiable
    List<String> none = sem.tryAcquire(2);
    assertTrue(none.isEmpty(), "only one left");
    none.add("also the caller's own");
  }

  @Test
  void badIdsAndCountsThrowAndLeaveRedisAlone() throws Exception {
    sem.trySetPermits(2);
    String id = sem.acquire();
    String beforeCount = stored();
    Long beforeScore = score(id);
    assertThrows(IllegalArgumentException.class, () -> sem.release("zz"));
    assertThrows(IllegalArgumentException.class, () -> sem.release("g123456789abcdef0123456789abcdef"));
    assertThrows(IllegalArgumentException.class, () -> sem.release((String) null));
    assertThrows(IllegalArgumentException.class, () -> sem.release(Arrays.asList()));
    assertThrows(IllegalArgumentException.class, () -> sem.updateLeaseTime("xyz", Duration.ofSeconds(1)));
    assertThrows(IllegalArgumentException.class, () -> sem.tryAcquire(0));
    assertThrows(IllegalArgumentException.class, () -> sem.acquire(1001));
    assertThrows(IllegalArgumentException.class, () -> sem.acquire(0, TimeUnit.SECONDS));
    assertThrows(IllegalArgumentException.class, () -> sem.acquire(Duration.ZERO));
    assertThrows(IllegalArgumentException.class, () -> sem.trySetPermits(-1));
    assertInstanceOf(IllegalArgumentException.class, failure(sem.releaseAsync("nothex")));
    assertFalse(sem.updateLeaseTime("0123456789abcdef0123456789abcdef", Duration.ofSeconds(5)));
    assertFalse(sem.tryRelease("zz"), "tryRelease of an id no permit can have: false (Redisson)");
    assertEquals(0, sem.tryRelease(Arrays.asList(id, "zz")), "all or none");
    assertEquals(beforeCount, stored());
    assertEquals(beforeScore, score(id));
    // Upper case is the same id.
    sem.release(id.toUpperCase());
    assertEquals("2", stored());
  }

  @Test
  void anExpiredPermitComesBackToAWaiterWithinItsLease() throws Exception {
    sem.trySetPermits(1);
    String id = sem.acquire(300, TimeUnit.MILLISECONDS);
    RedisPermitExpirableSemaphore theirs = other.getPermitExpirableSemaphore(name);
    long start = System.nanoTime();
    String taken = theirs.tryAcquire(Duration.ofSeconds(10), Duration.ofSeconds(30));
    long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    assertNotNull(taken);
    assertTrue(waited < 300 + 500, "the expired permit came back after " + waited + " ms");
    assertNull(score(id), "the expired permit was reclaimed");
    LockNotHeldException e = assertThrows(LockNotHeldException.class, () -> sem.release(id));
    assertTrue(e.getCode() == -3 || e.getCode() == -11, "code " + e.getCode());
    assertFalse(sem.updateLeaseTime(id, Duration.ofSeconds(1)), "an expired permit stays gone");
    theirs.release(taken);
    assertEquals("1", stored());
  }

  @Test
  void leasesAreUpdatedAndNoLeaseMeansNever() throws Exception {
    sem.trySetPermits(2);
    String id = sem.acquire(Duration.ofSeconds(5));
    assertTrue(sem.updateLeaseTime(id, Duration.ofSeconds(60)));
    assertTrue(score(id) - System.currentTimeMillis() > 55_000);
    assertTrue(sem.updateLeaseTime(id, -1, TimeUnit.SECONDS));
    assertEquals(NEVER, score(id));
    String forever = sem.acquire(-1, TimeUnit.MILLISECONDS);
    assertEquals(NEVER, score(forever));
    sem.release(Arrays.asList(id, forever));
    assertEquals("2", stored());
  }

  @Test
  void theWatchdogRenewsPermitsWhileTheClientLives() throws Exception {
    RedisLockClient quick = RedisLockClient.builder().url(TestRedis.url())
        .watchdogLease(Duration.ofMillis(900)).build();
    try {
      RedisPermitExpirableSemaphore mine = quick.getPermitExpirableSemaphore(name);
      mine.trySetPermits(1);
      String id = mine.acquire();
      long first = score(id);
      assertTrue(first - System.currentTimeMillis() <= 900, "a watchdog lease");
      Thread.sleep(2000);
      assertTrue(score(id) > first, "renewed");
      assertTrue(score(id) > System.currentTimeMillis());
      assertEquals(0, sem.availablePermits(), "still held after twice its lease");
      mine.close(); // renewal is the client's: it goes on
      Thread.sleep(2000);
      assertEquals(0, sem.availablePermits(), "a closed object's permit expired");
      quick.close(); // gives it back
      String taken = sem.tryAcquire(Duration.ofMillis(500), Duration.ofSeconds(30));
      assertNotNull(taken, "the permit did not come back when its client closed");
      sem.release(taken);
    } finally {
      quick.close();
    }
  }

  @Test
  void asyncForms() throws Exception {
    sem.trySetPermits(1);
    String id = await(sem.acquireAsync(Duration.ofSeconds(30)));
    assertNotNull(score(id));
    assertNull(await(sem.tryAcquireAsync()));
    assertNull(await(sem.tryAcquireAsync(100, 1000, TimeUnit.MILLISECONDS)));
    CompletableFuture<String> waiting = other.getPermitExpirableSemaphore(name)
        .tryAcquireAsync(Duration.ofSeconds(10), Duration.ofSeconds(30));
    Thread.sleep(100);
    assertFalse(waiting.isDone());
    assertNull(await(sem.releaseAsync(id)));
    String theirs = await(waiting);
    assertNotNull(score(theirs));
    assertFalse(await(sem.tryReleaseAsync(id)));
    assertFalse(await(sem.tryReleaseAsync("zz")), "a malformed id: false, as tryRelease");
    assertInstanceOf(LockNotHeldException.class, failure(sem.releaseAsync(id)));
    assertTrue(await(sem.tryReleaseAsync(theirs)), "any client may release an id");
    assertEquals("1", stored());
    List<String> two = await(sem.acquireAsync(1));
    assertEquals(1, two.size());
    sem.release(two);
  }

  @Test
  void setPermitsSetsTheTotalWithTheHeldPermitsCounted() throws Exception {
    sem.setPermits(3);
    assertEquals("3", stored(), "a missing semaphore is made with the total");
    List<String> ids = sem.acquire(2, 60, TimeUnit.SECONDS);
    assertEquals("1", stored());
    sem.setPermits(5);
    assertEquals("3", stored(), "5 in all, 2 held");
    assertEquals(5, sem.getPermits());
    sem.setPermits(1);
    assertEquals("-1", stored(), "1 in all while 2 are held");
    assertEquals(-1, sem.availablePermits());
    assertEquals(2, sem.acquiredPermits());
    assertNull(await(sem.setPermitsAsync(1)), "the same total changes nothing");
    assertEquals("-1", stored());
    sem.release(ids);
    assertEquals("1", stored(), "the total is reached as the permits come back");
    assertNull(await(sem.setPermitsAsync(4)));
    assertEquals("4", stored());
    assertThrows(IllegalArgumentException.class, () -> sem.setPermits(-1));
    assertInstanceOf(IllegalArgumentException.class, failure(sem.setPermitsAsync(-2)));
    assertEquals("4", stored(), "refused counts change nothing");
  }

  @Test
  void getLeaseTimeAnswersAsRedissonDoes() throws Exception {
    sem.trySetPermits(3);
    String leased = sem.acquire(60, TimeUnit.SECONDS);
    long left = sem.getLeaseTime(leased);
    assertTrue(left > 50_000 && left <= 60_000, "left " + left);
    String forever = sem.acquire(-1, TimeUnit.SECONDS);
    assertEquals(-1, sem.getLeaseTime(forever), "no lease: -1, as Redisson");
    assertEquals(-1L, await(sem.getLeaseTimeAsync(forever)));
    left = await(sem.getLeaseTimeAsync(leased.toUpperCase()));
    assertTrue(left > 50_000 && left <= 60_000, "left " + left);
    String watched = sem.acquire();
    left = sem.getLeaseTime(watched);
    assertTrue(left > 0 && left <= 30_000, "the watchdog's lease: " + left);

    sem.release(leased);
    IllegalArgumentException released =
        assertThrows(IllegalArgumentException.class, () -> sem.getLeaseTime(leased));
    assertTrue(released.getMessage().contains("is not held"), released.getMessage());
    assertInstanceOf(IllegalArgumentException.class, failure(sem.getLeaseTimeAsync(leased)));
    assertThrows(IllegalArgumentException.class,
        () -> sem.getLeaseTime("0123456789abcdef0123456789abcdef"));
    // Malformed ids are not a permit's: the same exception (as tryRelease answers false).
    for (String bad : Arrays.asList("zz", "g123456789abcdef0123456789abcdef", null)) {
      assertThrows(IllegalArgumentException.class, () -> sem.getLeaseTime(bad), bad);
      assertInstanceOf(IllegalArgumentException.class, failure(sem.getLeaseTimeAsync(bad)));
    }
    // An expired permit is not held, and goes back as Redisson's getLeaseTime gives it back.
    String brief = sem.acquire(100, TimeUnit.MILLISECONDS);
    String before = stored();
    Thread.sleep(250);
    assertThrows(IllegalArgumentException.class, () -> sem.getLeaseTime(brief));
    assertEquals(Long.parseLong(before) + 1, Long.parseLong(stored()));
    sem.release(Arrays.asList(forever, watched));
  }

  @Test
  void tryReleaseAsyncOfAListIsAllOrNone() throws Exception {
    sem.trySetPermits(3);
    List<String> ids = sem.acquire(2);
    String unknown = "0123456789abcdef0123456789abcdef";
    assertEquals(0, await(sem.tryReleaseAsync(Arrays.asList(ids.get(0), unknown))));
    assertEquals(0, await(sem.tryReleaseAsync(Arrays.asList(ids.get(0), "zz"))));
    assertEquals(0, await(sem.tryReleaseAsync(Arrays.<String>asList())));
    assertEquals(0, await(sem.tryReleaseAsync((List<String>) null)));
    assertEquals("1", stored(), "all or none");
    assertEquals(2, await(sem.tryReleaseAsync(ids)));
    assertEquals("3", stored());
    assertEquals(0, await(sem.tryReleaseAsync(ids)), "released already");
    sem.close();
    assertInstanceOf(RedisLockClosedException.class,
        failure(sem.tryReleaseAsync(Arrays.asList(unknown))), "other failures fail the future");
  }

  @Test
  void aCancelledWaitTakesNothing() throws Exception {
    sem.trySetPermits(0);
    CompletableFuture<String> waiting = sem.acquireAsync();
    Thread.sleep(100);
    assertTrue(waiting.cancel(false));
    sem.addPermits(1);
    Thread.sleep(300);
    assertEquals("1", stored());
    assertEquals(0L, raw.command("ZCARD", deadlines));
    Future<Object> interrupted = pool.submit(() -> {
      sem.addPermits(-1);
      Thread.currentThread().interrupt();
      try {
        return sem.acquire();
      } catch (InterruptedException e) {
        return e;
      }
    });
    assertInstanceOf(InterruptedException.class, interrupted.get(10, TimeUnit.SECONDS));
  }

  /** A permit granted to a future that was completed first is given back by id. */
  @Test
  void aGrantThatLostTheRaceIsGivenBack() throws Exception {
    sem.trySetPermits(1);
    for (int i = 0; i < 20; i++) {
      CompletableFuture<String> single = sem.tryAcquireAsync();
      if (!single.complete(null) && single.join() != null) {
        sem.release(single.join());
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      // The grant has been applied once its completion ran; the give-back follows it.
      while (io.rlock.internal.CompletionCounts.outstanding() != 0
          && System.nanoTime() < deadline) {
        Thread.sleep(1);
      }
      while ((!"1".equals(stored()) || !Long.valueOf(0).equals(raw.command("ZCARD", deadlines)))
          && System.nanoTime() < deadline) {
        Thread.sleep(5);
      }
      assertEquals("1", stored(), "round " + i);
      assertEquals(0L, raw.command("ZCARD", deadlines), "round " + i);
    }
  }

  @Test
  void deleteRemovesBothKeys() throws Exception {
    sem.trySetPermits(2);
    sem.acquire(Duration.ofSeconds(30));
    assertTrue(sem.isExists());
    assertTrue(sem.delete());
    assertEquals(0L, raw.command("EXISTS", name, deadlines));
    assertFalse(sem.isExists());
  }
}
