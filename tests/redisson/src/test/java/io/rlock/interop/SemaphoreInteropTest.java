package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;

/**
 * Redisson's RSemaphore, RPermitExpirableSemaphore and RCountDownLatch shared with an rlock
 * peer: permits counted across both sides, permit ids one side can read the other's lease of,
 * expired permits reclaimed by the other side's acquire, and releases and count-downs on one
 * side waking the other side's waiters through the message. The rlock waiters poll only every
 * 10 s and the Redisson waiters not at all (no lease runs out while they wait), so only the
 * message explains a wake-up under 2 s.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SemaphoreInteropTest extends InteropTest {
  private static final int ROUNDS = 10;
  /** Latch rounds: each opens the latch for WAITERS waiters at once. */
  private static final int LATCH_ROUNDS = 5;
  private static final int WAITERS = 3;
  /** The short lease of a permit the other side reclaims after it runs out. */
  private static final long LEASE_MS = 500;

  // ---- RSemaphore ----------------------------------------------------------------------------

  @Test
  void permitsAreCountedAcrossBothSides() throws Exception {
    try (Peer peer = new Peer()) {
      String name = unique("sem-count");
      RSemaphore semaphore = redisson.getSemaphore(name);
      assertTrue(semaphore.trySetPermits(3));
      assertEquals("false", peer.ask("sem_set " + name + " 5"), "rlock must see it exists");
      assertTrue(semaphore.tryAcquire(2));
      assertTimedOut(peer.ask("sem_acquire " + name + " 2 0"), "2 of the 1 left");
      assertOk(peer.ask("sem_acquire " + name + " 1 0"));
      assertEquals(0, semaphore.availablePermits());
      assertFalse(semaphore.tryAcquire(1), "Redisson must see the permit rlock took");
      assertReleased(peer.ask("sem_release " + name + " 1"));
      assertEquals(1, semaphore.availablePermits(), "rlock's release, seen by Redisson");
      semaphore.release(2);
      assertEquals("3", peer.ask("sem_available " + name));
      assertEquals("5", peer.ask("sem_add " + name + " 2"));
      assertEquals(5, semaphore.availablePermits());
      assertTrue(semaphore.delete());
    }
  }

  @Test
  void permitsSetByRlockAreSeenByRedisson() throws Exception {
    try (Peer peer = new Peer()) {
      String name = unique("sem-set-by-rlock");
      RSemaphore semaphore = redisson.getSemaphore(name);
      assertEquals("true", peer.ask("sem_set " + name + " 3"));
      assertFalse(semaphore.trySetPermits(5), "Redisson must see it exists");
      assertEquals(3, semaphore.availablePermits());
      assertOk(peer.ask("sem_acquire " + name + " 2 0"));
      assertFalse(semaphore.tryAcquire(2), "only 1 left after rlock took 2");
      assertTrue(semaphore.tryAcquire(1));
      assertTimedOut(peer.ask("sem_acquire " + name + " 1 0"), "none left");
      semaphore.release(1);
      assertReleased(peer.ask("sem_release " + name + " 2"));
      assertEquals(3, semaphore.availablePermits());
      assertTrue(semaphore.delete());
    }
  }

  @Test
  void rlockWaiterWakesWhenRedissonReleases() throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer(30.0, 10.0)) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique("sem-to-rlock");
        RSemaphore semaphore = redisson.getSemaphore(name);
        assertTrue(semaphore.trySetPermits(1));
        assertTrue(semaphore.tryAcquire(1));
        peer.send("sem_acquire " + name + " 1 20000");
        awaitSubscribers(semaphoreChannel(name), 1);
        long released = System.currentTimeMillis();
        semaphore.release(1);
        latencies.add(okTime(peer.answer()) - released);
        assertEquals(0, semaphore.availablePermits(), "the rlock waiter took the permit");
        assertReleased(peer.ask("sem_release " + name + " 1"));
        assertEquals(1, semaphore.availablePermits());
        semaphore.delete();
      }
    }
    report("semaphore: Redisson release -> rlock waiter acquires", latencies);
  }

  @Test
  void redissonWaiterWakesWhenRlockReleases() throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer()) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique("sem-to-redisson");
        assertEquals("1", peer.ask("sem_add " + name + " 1"));
        assertOk(peer.ask("sem_acquire " + name + " 1 0"));
        Future<Long> acquired = pool.submit(() -> {
          RSemaphore semaphore = redisson.getSemaphore(name);
          assertTrue(semaphore.tryAcquire(1, Duration.ofSeconds(20)),
              "the Redisson waiter timed out");
          long at = System.currentTimeMillis();
          semaphore.release(1);
          return at;
        });
        awaitSubscribers(semaphoreChannel(name), 1);
        long released = releasedTime(peer.ask("sem_release " + name + " 1"));
        latencies.add(acquired.get(30, TimeUnit.SECONDS) - released);
        assertEquals("1", peer.ask("sem_available " + name));
        redisson.getSemaphore(name).delete();
      }
    }
    report("semaphore: rlock release -> Redisson waiter acquires", latencies);
  }

  // ---- RPermitExpirableSemaphore -------------------------------------------------------------

  @Test
  void expirablePermitsAndIdsAreSharedAcrossBothSides() throws Exception {
    try (Peer peer = new Peer()) {
      String name = unique("psem-count");
      RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
      assertTrue(semaphore.trySetPermits(3));
      List<String> redissonIds = semaphore.tryAcquire(2);
      assertEquals(2, redissonIds.size());
      String rlockId = permitId(peer.ask("psem_acquire " + name + " 0 -1"));
      assertTimedOut(peer.ask("psem_acquire " + name + " 0 -1"), "Redisson holds 2 of 3");
      assertEquals(0, semaphore.availablePermits());
      assertEquals(3, semaphore.acquiredPermits());
      assertEquals(3, semaphore.getPermits());
      assertEquals("0", peer.ask("sem_available " + name));
      // Redisson reads the rlock permit's id and lease: no lease is Redisson's -1.
      assertEquals(-1, semaphore.getLeaseTime(rlockId));
      assertReleased(peer.ask("psem_release " + name + " " + rlockId));
      assertEquals(1, semaphore.availablePermits(), "rlock's release, seen by Redisson");
      assertEquals(2, semaphore.acquiredPermits());
      assertFalse(semaphore.tryRelease(rlockId), "the released id must be gone");

      String leased = permitId(peer.ask("psem_acquire " + name + " 0 60000"));
      long left = semaphore.getLeaseTime(leased);
      assertTrue(left > 50_000 && left <= 60_000, "lease left of a 60 s rlock permit: " + left);
      assertReleased(peer.ask("psem_release " + name + " " + leased));

      semaphore.release(redissonIds);
      assertEquals("3", peer.ask("sem_available " + name));
      // The watchdog's lease (rlock's default 30 s) is a real deadline Redisson can read.
      String watched = permitId(peer.ask("psem_acquire " + name + " 0 0"));
      left = semaphore.getLeaseTime(watched);
      assertTrue(left > 0 && left <= 30_000, "lease left of a watchdog permit: " + left);
      assertEquals(2, semaphore.availablePermits());
      assertReleased(peer.ask("psem_release " + name + " " + watched));
      assertEquals(3, semaphore.availablePermits());
      assertTrue(semaphore.delete());
    }
  }

  @Test
  void permitTotalsSetByEitherSideAreSeenByTheOther() throws Exception {
    try (Peer peer = new Peer()) {
      String name = unique("psem-set-permits");
      RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
      assertEquals("3", peer.ask("psem_set_permits " + name + " 3"), "made with the total");
      assertFalse(semaphore.trySetPermits(7), "Redisson must see it exists");
      assertEquals(3, semaphore.getPermits());
      String redissonId = semaphore.tryAcquire(0, 60_000, TimeUnit.MILLISECONDS);
      assertNotNull(redissonId);
      // rlock counts Redisson's held permit in the total, as Redisson's setPermits does.
      assertEquals("4", peer.ask("psem_set_permits " + name + " 5"));
      assertEquals(5, semaphore.getPermits());
      assertEquals(4, semaphore.availablePermits());
      assertEquals("-1", peer.ask("psem_set_permits " + name + " 0"), "1 held, 0 in all");
      assertEquals(-1, semaphore.availablePermits());
      // Redisson's setPermits counts rlock's held permit the same way.
      semaphore.release(redissonId);
      semaphore.setPermits(1);
      String rlockId = permitId(peer.ask("psem_acquire " + name + " 0 60000"));
      semaphore.setPermits(3);
      assertEquals("2", peer.ask("sem_available " + name), "3 in all, 1 held by rlock");
      semaphore.setPermits(3);
      assertEquals("2", peer.ask("sem_available " + name), "the same total changes nothing");
      // The lease of one side's permit, read by the other.
      long left = Long.parseLong(peer.ask("psem_lease_time " + name + " " + rlockId));
      assertTrue(left > 50_000 && left <= 60_000, "rlock's view of its own lease: " + left);
      String leased = semaphore.tryAcquire(0, 60_000, TimeUnit.MILLISECONDS);
      left = Long.parseLong(peer.ask("psem_lease_time " + name + " " + leased));
      assertTrue(left > 50_000 && left <= 60_000, "rlock reads Redisson's 60 s lease: " + left);
      semaphore.release(leased);
      assertEquals("not-held", peer.ask("psem_lease_time " + name + " " + leased));
      assertReleased(peer.ask("psem_release " + name + " " + rlockId));
      String forever = semaphore.tryAcquire(0, -1, TimeUnit.MILLISECONDS);
      assertEquals("none", peer.ask("psem_lease_time " + name + " " + forever),
          "Redisson's permit without lease");
      semaphore.release(forever);
      assertEquals(3, semaphore.getPermits());
      assertTrue(semaphore.delete());
    }
  }

  @Test
  void releaseIfExistsOfEitherSideNeverCreatesTheSemaphore() throws Exception {
    try (Peer peer = new Peer()) {
      String name = unique("sem-release-if-exists");
      RSemaphore semaphore = redisson.getSemaphore(name);
      assertTrue(semaphore.trySetPermits(2));
      assertOk(peer.ask("sem_acquire " + name + " 2 0"));
      assertEquals("true", peer.ask("sem_release_if_exists " + name + " 1"));
      assertEquals(1, semaphore.availablePermits(), "rlock's release, seen by Redisson");
      assertTrue(semaphore.delete());
      assertEquals("false", peer.ask("sem_release_if_exists " + name + " 1"));
      assertFalse(semaphore.isExists(), "rlock must not create it");
      assertFalse(semaphore.releaseIfExists(1), "Redisson's own answer on the same name");
      assertFalse(semaphore.isExists());
    }
  }

  @Test
  void expiredRlockPermitIsReclaimedByRedissonAcquire() throws Exception {
    try (Peer peer = new Peer()) {
      String name = unique("psem-rlock-expires");
      RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
      assertTrue(semaphore.trySetPermits(1));
      String[] answer = peer.ask("psem_acquire " + name + " 0 " + LEASE_MS).split(" ");
      String rlockId = permitId(String.join(" ", answer));
      long rlockAcquired = Long.parseLong(answer[2]);
      assertNull(semaphore.tryAcquire(), "the rlock permit is held until its lease ends");
      // Redisson waits for the lease deadline it reads from the script's answer.
      String id = semaphore.tryAcquire(10_000, -1, TimeUnit.MILLISECONDS);
      long after = System.currentTimeMillis() - rlockAcquired;
      assertNotNull(id, "Redisson never reclaimed the expired rlock permit");
      System.out.println("expirable: rlock permit (lease " + LEASE_MS + " ms) reclaimed by a "
          + "Redisson acquire " + after + " ms after rlock took it");
      // rlock's TIME comes after its deadline was set, so allow a few ms of that.
      assertTrue(after >= LEASE_MS - 20, "taken before the lease ran out: " + after);
      assertTrue(after < LEASE_MS + 2000, "reclaimed late: " + after);
      assertTrue(peer.ask("psem_release " + name + " " + rlockId).startsWith("error"),
          "rlock must learn its expired permit is gone");
      assertEquals("0", peer.ask("sem_available " + name), "Redisson holds the only permit");
      semaphore.release(id);
      assertEquals("1", peer.ask("sem_available " + name));
      assertTrue(semaphore.delete());
    }
  }

  @Test
  void expiredRedissonPermitIsReclaimedByRlockAcquire() throws Exception {
    // The rlock waiter polls every 10 s: only the lease deadline explains an earlier retry.
    try (Peer peer = new Peer(30.0, 10.0)) {
      String name = unique("psem-redisson-expires");
      RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
      assertTrue(semaphore.trySetPermits(1));
      long before = System.currentTimeMillis();
      String redissonId = semaphore.tryAcquire(0, LEASE_MS, TimeUnit.MILLISECONDS);
      assertNotNull(redissonId);
      assertTimedOut(peer.ask("psem_acquire " + name + " 0 -1"), "held until its lease ends");
      String[] answer = peer.ask("psem_acquire " + name + " 10000 -1").split(" ");
      String rlockId = permitId(String.join(" ", answer));
      long after = Long.parseLong(answer[2]) - before;
      System.out.println("expirable: Redisson permit (lease " + LEASE_MS + " ms) reclaimed by an "
          + "rlock acquire " + after + " ms after Redisson took it");
      assertTrue(after >= LEASE_MS, "taken before the lease ran out: " + after);
      assertTrue(after < LEASE_MS + 2000, "reclaimed late: " + after);
      assertFalse(semaphore.tryRelease(redissonId), "Redisson's expired id must be gone");
      assertEquals(0, semaphore.availablePermits(), "rlock holds the only permit");
      assertEquals(-1, semaphore.getLeaseTime(rlockId));
      assertReleased(peer.ask("psem_release " + name + " " + rlockId));
      assertEquals(1, semaphore.availablePermits());
      assertTrue(semaphore.delete());
    }
  }

  @Test
  void rlockPermitWaiterWakesWhenRedissonReleases() throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer(30.0, 10.0)) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique("psem-to-rlock");
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
        assertTrue(semaphore.trySetPermits(1));
        String redissonId = semaphore.tryAcquire(); // no lease: no deadline to retry at
        assertNotNull(redissonId);
        peer.send("psem_acquire " + name + " 20000 -1");
        awaitSubscribers(semaphoreChannel(name), 1);
        long released = System.currentTimeMillis();
        semaphore.release(redissonId);
        String[] answer = peer.answer().split(" ");
        String rlockId = permitId(String.join(" ", answer));
        latencies.add(Long.parseLong(answer[2]) - released);
        assertEquals(0, semaphore.availablePermits());
        assertReleased(peer.ask("psem_release " + name + " " + rlockId));
        assertEquals(1, semaphore.availablePermits());
        semaphore.delete();
      }
    }
    report("expirable: Redisson release -> rlock waiter acquires", latencies);
  }

  @Test
  void redissonPermitWaiterWakesWhenRlockReleases() throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer()) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique("psem-to-redisson");
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
        assertTrue(semaphore.trySetPermits(1));
        String rlockId = permitId(peer.ask("psem_acquire " + name + " 0 -1")); // no lease
        Future<Long> acquired = pool.submit(() -> {
          String id = semaphore.tryAcquire(20_000, -1, TimeUnit.MILLISECONDS);
          assertNotNull(id, "the Redisson waiter timed out");
          long at = System.currentTimeMillis();
          semaphore.release(id);
          return at;
        });
        awaitSubscribers(semaphoreChannel(name), 1);
        long released = releasedTime(peer.ask("psem_release " + name + " " + rlockId));
        latencies.add(acquired.get(30, TimeUnit.SECONDS) - released);
        assertEquals("1", peer.ask("sem_available " + name));
        semaphore.delete();
      }
    }
    report("expirable: rlock release -> Redisson waiter acquires", latencies);
  }

  // ---- RCountDownLatch -----------------------------------------------------------------------

  @Test
  void latchSetOnOneSideIsCountedAndDeletedOnTheOther() throws Exception {
    try (Peer peer = new Peer()) {
      String byRlock = unique("latch-set-by-rlock");
      RCountDownLatch latch = redisson.getCountDownLatch(byRlock);
      assertEquals("true", peer.ask("latch_set " + byRlock + " 2"));
      assertEquals(2, latch.getCount());
      assertFalse(latch.trySetCount(5), "Redisson must see it exists");
      latch.countDown();
      assertEquals("1", peer.ask("latch_count " + byRlock));
      assertEquals(0, countedLeft(peer.ask("latch_count_down " + byRlock)));
      assertEquals(0, latch.getCount());
      assertTrue(latch.await(0, TimeUnit.MILLISECONDS), "Redisson must see it open");

      String byRedisson = unique("latch-set-by-redisson");
      latch = redisson.getCountDownLatch(byRedisson);
      assertTrue(latch.trySetCount(3));
      assertEquals("3", peer.ask("latch_count " + byRedisson));
      assertEquals("false", peer.ask("latch_set " + byRedisson + " 1"), "rlock must see it exists");
      assertEquals(2, countedLeft(peer.ask("latch_count_down " + byRedisson)));
      assertEquals(2, latch.getCount());
      assertTrue(latch.delete());
      assertEquals("0", peer.ask("latch_count " + byRedisson), "deleted by Redisson: open");
      assertOk(peer.ask("latch_await " + byRedisson + " 0"));
      assertEquals("true", peer.ask("latch_set " + byRedisson + " 4"));
      assertEquals(4, latch.getCount());
      assertEquals("true", peer.ask("latch_delete " + byRedisson));
      assertEquals(0, latch.getCount(), "deleted by rlock: open");
      assertFalse(latch.isExists());
      assertTrue(latch.await(0, TimeUnit.MILLISECONDS));
      assertEquals("false", peer.ask("latch_delete " + byRedisson));
    }
  }

  @Test
  void rlockWaitersOpenWhenRedissonCountsDown() throws Exception {
    List<Long> latencies = new ArrayList<>();
    List<Peer> peers = new ArrayList<>();
    try {
      for (int i = 0; i < WAITERS; i++) {
        peers.add(new Peer(30.0, 10.0));
      }
      for (int round = 0; round < LATCH_ROUNDS; round++) {
        String name = unique("latch-to-rlock");
        RCountDownLatch latch = redisson.getCountDownLatch(name);
        assertTrue(latch.trySetCount(2));
        for (Peer peer : peers) {
          peer.send("latch_await " + name + " 20000");
        }
        awaitSubscribers(latchChannel(name), WAITERS); // one connection per peer
        latch.countDown(); // 1 left: nobody may go yet
        long opened = System.currentTimeMillis();
        latch.countDown();
        for (Peer peer : peers) {
          long at = okTime(peer.answer());
          assertTrue(at >= opened, "an rlock waiter went before the count reached 0");
          latencies.add(at - opened);
        }
      }
    } finally {
      for (Peer peer : peers) {
        peer.close();
      }
    }
    report("latch: Redisson count-down to 0 -> " + WAITERS + " rlock waiters return",
        latencies);
  }

  @Test
  void redissonWaitersOpenWhenRlockCountsDown() throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer()) {
      for (int round = 0; round < LATCH_ROUNDS; round++) {
        String name = unique("latch-to-redisson");
        assertEquals("true", peer.ask("latch_set " + name + " 2"));
        CountDownLatch started = new CountDownLatch(WAITERS);
        List<Future<Long>> opened = new ArrayList<>();
        for (int i = 0; i < WAITERS; i++) {
          opened.add(pool.submit(() -> {
            RCountDownLatch latch = redisson.getCountDownLatch(name);
            started.countDown();
            assertTrue(latch.await(20, TimeUnit.SECONDS), "the Redisson waiter timed out");
            return System.currentTimeMillis();
          }));
        }
        assertTrue(started.await(20, TimeUnit.SECONDS));
        awaitSubscribers(latchChannel(name), 1); // Redisson's threads share one subscription
        WakeUps.letRedissonWaiterPark();
        assertEquals(1, countedLeft(peer.ask("latch_count_down " + name)));
        long sent = System.currentTimeMillis();
        String[] answer = peer.ask("latch_count_down " + name).split(" ");
        assertEquals(0, countedLeft(String.join(" ", answer)));
        long countedDown = Long.parseLong(answer[2]);
        for (Future<Long> waiter : opened) {
          long at = waiter.get(30, TimeUnit.SECONDS);
          assertTrue(at >= sent, "a Redisson waiter went before the count reached 0");
          latencies.add(at - countedDown);
        }
      }
    }
    report("latch: rlock count-down to 0 -> " + WAITERS + " Redisson waiters return",
        latencies);
  }

  // ---- helpers -------------------------------------------------------------------------------

  /** Prints every figure, then the median and maximum; each must be under 2 s. */
  private static void report(String what, List<Long> latencies) {
    System.out.println(what + ", each (ms): " + latencies);
    WakeUps.report(what, latencies);
  }

  /** The channel both kinds of semaphore publish releases on (names here have no braces). */
  private static String semaphoreChannel(String name) {
    return "redisson_sc:{" + name + "}";
  }

  private static String latchChannel(String name) {
    return "redisson_countdownlatch__channel__{" + name + "}";
  }

  /** Waits until that many connections listen on the channel: the waiters are in place. */
  private static void awaitSubscribers(String channel, long count) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (Env.subscribers(redisson, channel) < count) {
      assertTrue(System.nanoTime() < deadline, "fewer than " + count + " waiting on " + channel);
      Thread.sleep(5);
    }
  }

  private static void assertOk(String answer) {
    assertEquals("ok", answer.split(" ")[0], answer);
  }

  private static void assertTimedOut(String answer, String why) {
    assertEquals("timeout", answer.split(" ")[0], why + ": " + answer);
  }

  private static void assertReleased(String answer) {
    assertEquals("released", answer.split(" ")[0], answer);
  }

  /** TIME of "ok WAITED_MS TIME". */
  private static long okTime(String answer) {
    String[] words = answer.split(" ");
    assertEquals("ok", words[0], answer);
    return Long.parseLong(words[2]);
  }

  /** TIME of "released TIME". */
  private static long releasedTime(String answer) {
    assertReleased(answer);
    return Long.parseLong(answer.split(" ")[1]);
  }

  /** ID of "ID WAITED_MS TIME": 32 lowercase hex digits, as Redisson shows its own. */
  private static String permitId(String answer) {
    String id = answer.split(" ")[0];
    assertTrue(id.matches("[0-9a-f]{32}"), "not a permit id: " + answer);
    return id;
  }

  /** LEFT of "counted LEFT TIME". */
  private static long countedLeft(String answer) {
    String[] words = answer.split(" ");
    assertEquals("counted", words[0], answer);
    return Long.parseLong(words[1]);
  }
}
