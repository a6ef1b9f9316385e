package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.NameMapper;

/**
 * rlock's client option key_prefix against Redisson's NameMapper doing the same: an rlock peer
 * with key_prefix=P and Redisson mapping every name N to P + N meet on one lock for N (each
 * excludes the other, an unlock on either side wakes the other's waiter through the channel of
 * the mapped name, for the reentrant and fair kinds), a Redisson client without the mapper sees
 * the lock under P + N, and a semaphore's permits set by Redisson are the peer's.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class KeyPrefixInteropTest extends InteropTest {
  private static final String PREFIX = unique("prefix") + ":";
  private static RedissonClient mapped;

  @BeforeAll
  static void startMapped() {
    Config config = new Config();
    config.setNameMapper(new NameMapper() {
      @Override
      public String map(String name) {
        return PREFIX + name;
      }

      @Override
      public String unmap(String name) {
        return name.startsWith(PREFIX) ? name.substring(PREFIX.length()) : name;
      }
    });
    config.useSingleServer().setAddress(Env.URL);
    mapped = Redisson.create(config);
  }

  @AfterAll
  static void stopMapped() {
    mapped.shutdown();
  }

  /** A peer with the prefix, polling only every 10 s: a quick wake-up is the unlock message. */
  private static Peer prefixedPeer() throws Exception {
    String url = Env.URL + "?key_prefix=" + URLEncoder.encode(PREFIX, StandardCharsets.UTF_8);
    return new Peer(url, 30.0, 10.0);
  }

  @Test
  void bothSidesMeetOnTheMappedName() throws Exception {
    for (String kind : new String[] {"reentrant", "fair"}) {
      String name = "shared-" + kind;
      RLock redissonLock = kind.equals("fair") ? mapped.getFairLock(name) : mapped.getLock(name);
      try (Peer peer = prefixedPeer()) {
        assertTrue(peer.ask("lock " + kind + " " + name).startsWith("locked"), kind);
        assertTrue(redissonLock.isLocked(), kind + ": the mapped Redisson sees the peer's hold");
        assertFalse(redissonLock.tryLock(), kind + ": Redisson took the peer's lock");
        assertTrue(redisson.getLock(PREFIX + name).isLocked(),
            kind + ": the key is the prefix + name");
        assertFalse(redisson.getLock(name).isLocked(), kind + ": the bare name stays free");

        // The peer's unlock wakes a waiting Redisson thread.
        var waiting = pool.submit(() -> {
          long start = System.nanoTime();
          boolean got = redissonLock.tryLock(20, 30, TimeUnit.SECONDS);
          long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
          if (got) {
            redissonLock.unlock();
          }
          return got ? waitedMs : -1L;
        });
        long deadline = System.currentTimeMillis() + 10_000;
        while (waiters(kind, name) < 1 && System.currentTimeMillis() < deadline) {
          Thread.sleep(20);
        }
        assertTrue(waiters(kind, name) >= 1, kind + ": Redisson never waited");
        assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("unlocked"));
        long waited = waiting.get(30, TimeUnit.SECONDS);
        assertTrue(waited >= 0, kind + ": Redisson never got the lock");

        // Redisson's unlock wakes the peer (which polls only every 10 s).
        assertTrue(redissonLock.tryLock(0, 30, TimeUnit.SECONDS));
        peer.send("lock " + kind + " " + name + " 20");
        deadline = System.currentTimeMillis() + 10_000;
        while (waiters(kind, name) < 1 && System.currentTimeMillis() < deadline) {
          Thread.sleep(20);
        }
        assertTrue(waiters(kind, name) >= 1, kind + ": the peer never waited");
        long unlockedAt = System.currentTimeMillis();
        redissonLock.unlock();
        String answer = peer.answer();
        assertTrue(answer.startsWith("locked"), kind + ": " + answer);
        long lockedAt = Long.parseLong(answer.split(" ")[1]);
        assertTrue(lockedAt - unlockedAt < 2_000,
            kind + ": woken by the mapped channel, not a poll: " + (lockedAt - unlockedAt));
        assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("unlocked"));
      }
    }
  }

  private static long waiters(String kind, String name) {
    return kind.equals("fair") ? Env.fairWaiters(redisson, PREFIX + name)
                               : Env.waiters(redisson, PREFIX + name);
  }

  @Test
  void semaphorePermitsAreSharedUnderTheMappedName() throws Exception {
    RSemaphore semaphore = mapped.getSemaphore("permits");
    assertTrue(semaphore.trySetPermits(3));
    try (Peer peer = prefixedPeer()) {
      assertEquals("3", peer.ask("sem_available permits"));
      assertTrue(peer.ask("sem_acquire permits 2 0").startsWith("ok"));
      assertEquals(1, semaphore.availablePermits());
      assertEquals(1, redisson.getSemaphore(PREFIX + "permits").availablePermits());
      assertTrue(peer.ask("sem_release permits 2").startsWith("released"));
      assertEquals(3, semaphore.availablePermits());
    } finally {
      semaphore.delete();
    }
  }
}
