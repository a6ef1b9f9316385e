package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The builder's keyPrefix (Redisson's NameMapper as a prefix): keys live under prefix + name, a
 * client without it meets the same lock under that spelling, names in events come back without
 * it, and bad prefixes are refused.
 */
class KeyPrefixTest extends ClientTestBase {

  private static RedisLockClient prefixed(String prefix) {
    return RedisLockClient.builder().url(TestRedis.url()).keyPrefix(prefix).build();
  }

  @Test
  void locksAndSemaphoresLiveUnderThePrefix() throws Exception {
    String name = "java-kp-" + System.nanoTime();
    try (RedisLockClient svc = prefixed("svc:"); RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
      RedisLock lock = svc.getLock(name);
      lock.lock();
      try {
        assertEquals(1L, raw.command("EXISTS", "svc:" + name));
        assertEquals(0L, raw.command("EXISTS", name));
        assertEquals(name, lock.getName(), "the name as given");
        assertFalse(other(() -> client.getLock("svc:" + name).tryLock()),
            "a client without the prefix meets the same lock");
      } finally {
        lock.unlock();
      }
      RedisSemaphore sem = svc.getSemaphore(name + ":sem");
      assertTrue(sem.trySetPermits(2));
      assertEquals("2", new String((byte[]) raw.command("GET", "svc:" + name + ":sem"),
          java.nio.charset.StandardCharsets.UTF_8));
      sem.delete();
    }
  }

  @Test
  void eventsNameTheLockWithoutThePrefix() throws Exception {
    String name = "java-kp-events-" + System.nanoTime();
    try (RedisLockClient svc = prefixed("svc:")) {
      List<String> names = new CopyOnWriteArrayList<>();
      CountDownLatch seen = new CountDownLatch(1);
      svc.setEventListener(e -> {
        names.add(e.getName());
        seen.countDown();
      });
      RedisLock lock = svc.getLock(name);
      lock.lock();
      lock.unlock();
      assertTrue(seen.await(5, TimeUnit.SECONDS));
      svc.setEventListener(null);
      assertTrue(names.contains(name), names.toString());
      assertFalse(names.contains("svc:" + name), names.toString());
    }
  }

  @Test
  void badPrefixesAreRefused() {
    RedisLockClient.Builder builder = RedisLockClient.builder().url(TestRedis.url());
    assertThrows(NullPointerException.class, () -> builder.keyPrefix(null));
    assertThrows(IllegalArgumentException.class, () -> builder.keyPrefix(""));
    IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
        () -> RedisLockClient.builder().url(TestRedis.url()).keyPrefix("p".repeat(1025)).build());
    assertTrue(tooLong.getMessage().contains("key_prefix is 1025 bytes"), tooLong.getMessage());
    IllegalArgumentException differ = assertThrows(IllegalArgumentException.class,
        () -> RedisLockClient.builder().url(TestRedis.tcpUrl() + "?key_prefix=a%3A").keyPrefix("b:")
            .build());
    assertTrue(differ.getMessage().contains("different values"), differ.getMessage());
  }
}
