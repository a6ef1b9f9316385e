package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * For every kind: a hold kept alive by one side's watchdog is never taken by the other, and
 * each side sees the other's hold (locked, TTL) and can force-unlock it.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LeaseAndStatusInteropTest extends InteropTest {

  // ---- leases ------------------------------------------------------------------------------

  private static final long LEASE_MS = 2000;
  private static final long PERIODS = 3;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write", "non-reentrant",
      "non-reentrant-fair"})
  void redissonWatchdogHoldIsNeverTakenOverByRlock(String kind) throws Exception {
    String name = unique(kind + "-lease-redisson");
    RedissonClient shortLease = Env.redisson(LEASE_MS);
    try (Peer peer = new Peer()) {
      RLock lock = Env.redissonLock(shortLease, kind, name);
      lock.lock();
      long end = System.currentTimeMillis() + PERIODS * LEASE_MS + LEASE_MS / 2;
      int tries = 0;
      while (System.currentTimeMillis() < end) {
        assertEquals("false", peer.ask("try " + kind + " " + name), "rlock took a held lock");
        tries++;
        Thread.sleep(100);
      }
      assertTrue(lock.isHeldByCurrentThread());
      lock.unlock();
      assertEquals("true", peer.ask("try " + kind + " " + name), "free after the unlock");
      assertTrue(tries > 10);
    } finally {
      shortLease.shutdown();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write", "non-reentrant",
      "non-reentrant-fair"})
  void rlockWatchdogHoldIsNeverTakenOverByRedisson(String kind) throws Exception {
    String name = unique(kind + "-lease-rlock");
    try (Peer peer = new Peer(LEASE_MS / 1000.0, null)) {
      assertTrue(peer.ask("lock " + kind + " " + name).startsWith("locked"));
      RLock lock = Env.redissonLock(redisson, kind, name);
      long end = System.currentTimeMillis() + PERIODS * LEASE_MS + LEASE_MS / 2;
      while (System.currentTimeMillis() < end) {
        assertFalse(lock.tryLock(), "Redisson took a held lock");
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= LEASE_MS, "the lease as rlock renews it: " + ttl);
        Thread.sleep(100);
      }
      assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("unlocked"));
      assertTrue(lock.tryLock(), "free after the unlock");
      lock.unlock();
    }
  }

  // ---- status and force unlock -------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write", "non-reentrant",
      "non-reentrant-fair"})
  void rlockSeesAndBreaksARedissonHold(String kind) throws Exception {
    String name = unique(kind + "-status-redisson");
    try (Peer peer = new Peer()) {
      RLock lock = Env.redissonLock(redisson, kind, name);
      lock.lock();
      if (reentrant(kind)) {
        lock.lock();
      }
      String[] state = peer.ask("state " + kind + " " + name).split(" ");
      assertEquals("true", state[0], "locked, as rlock sees it");
      assertEquals("0", state[1], "the peer's own hold count");
      long ttl = Long.parseLong(state[2]);
      long redissonTtl = lock.remainTimeToLive();
      // Redisson's write lock adds a lease per re-entry, so the TTL may exceed one lease.
      assertTrue(ttl > 0 && Math.abs(ttl - redissonTtl) < 1000,
          "the TTL rlock sees, " + ttl + " ms, is Redisson's: " + redissonTtl + " ms");
      assertEquals("true", peer.ask("force " + kind + " " + name));
      assertFalse(lock.isLocked());
      assertFalse(lock.isHeldByCurrentThread());
      assertEquals("false", peer.ask("force " + kind + " " + name), "nothing left to delete");
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write", "non-reentrant",
      "non-reentrant-fair"})
  void redissonSeesAndBreaksAnRlockHold(String kind) throws Exception {
    String name = unique(kind + "-status-rlock");
    try (Peer peer = new Peer()) {
      int holds = reentrant(kind) ? 2 : 1;
      for (int i = 0; i < holds; i++) {
        assertTrue(peer.ask("lock " + kind + " " + name).startsWith("locked"));
      }
      RLock lock = Env.redissonLock(redisson, kind, name);
      assertTrue(lock.isLocked());
      assertFalse(lock.isHeldByCurrentThread());
      long ttl = lock.remainTimeToLive();
      assertTrue(ttl > 0 && ttl <= 30_000, "rlock's watchdog lease: " + ttl);
      String[] state = peer.ask("state " + kind + " " + name).split(" ");
      assertEquals(List.of("true", String.valueOf(holds)), List.of(state[0], state[1]),
          "as rlock sees it");
      assertTrue(lock.forceUnlock());
      assertEquals("false 0 -2", peer.ask("state " + kind + " " + name));
      assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("error LockLostError"),
          "the holder learns its lock was broken");
    }
  }

  /** Whether a holder of this kind may lock again (the status tests take two holds then). */
  private static boolean reentrant(String kind) {
    return !kind.startsWith("non-reentrant");
  }
}
