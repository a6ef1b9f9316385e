package io.rlock.shedlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rlock.RedisLockClient;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.Test;

/** What the ShedLock suite does not cover: layout, owners, lockAtLeastFor past the process. */
class RlockLockProviderTest {
  private static LockConfiguration config(String name, Duration atMost, Duration atLeast) {
    return new LockConfiguration(ClockProvider.now(), name, atMost, atLeast);
  }

  @Test
  void lockIsRedissonsHashUnderThePrefixWithLockAtMostForAsItsLease() throws Exception {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      RlockLockProvider provider = new RlockLockProvider(client);
      assertEquals("shedlock:layout", provider.lockName("layout"));
      SimpleLock lock = provider.lock(config("layout", Duration.ofSeconds(30), Duration.ZERO))
          .orElseThrow();
      assertEquals("+hash", TestRedis.command("TYPE", "shedlock:layout"));
      // One field, "<client uuid>:<owner number>" = 1, as Redisson writes it.
      String[] fields = TestRedis.command("HGETALL", "shedlock:layout").split("\n");
      assertEquals(3, fields.length, String.join(" | ", fields));
      assertTrue(fields[1].matches("[0-9a-f-]{36}:[0-9]+"), fields[1]);
      assertEquals("1", fields[2]);
      long pttl = Long.parseLong(TestRedis.command("PTTL", "shedlock:layout").substring(1));
      assertTrue(pttl > 0 && pttl <= 30_000, "lease " + pttl + " ms, not within lockAtMostFor");
      lock.unlock();
      assertEquals(":0", TestRedis.command("EXISTS", "shedlock:layout"));
    }
  }

  @Test
  void anotherThreadUnlocksAndExtends() throws Exception {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      RlockLockProvider provider = new RlockLockProvider(client, "own:");
      SimpleLock lock = provider.lock(config("threads", Duration.ofSeconds(30), Duration.ZERO))
          .orElseThrow();
      SimpleLock extended = CompletableFuture.supplyAsync(
          () -> lock.extend(Duration.ofSeconds(20), Duration.ZERO)).get().orElseThrow();
      assertFalse(provider.lock(config("threads", Duration.ofSeconds(30), Duration.ZERO))
          .isPresent(), "taken twice");
      CompletableFuture.runAsync(extended::unlock).get();
      assertEquals(":0", TestRedis.command("EXISTS", "own:threads"));
      Optional<SimpleLock> again =
          provider.lock(config("threads", Duration.ofSeconds(30), Duration.ZERO));
      assertTrue(again.isPresent(), "not free after an unlock from another thread");
      again.get().unlock();
    }
  }

  @Test
  void lockAtLeastForOutlivesTheClient() throws Exception {
    Duration atLeast = Duration.ofMillis(1500);
    long unlockedAt;
    try (RedisLockClient first = RedisLockClient.create(TestRedis.url())) {
      SimpleLock lock = new RlockLockProvider(first)
          .lock(config("outlives", Duration.ofSeconds(30), atLeast)).orElseThrow();
      lock.unlock();
      unlockedAt = System.nanoTime();
    } // closing the client must not release it
    try (RedisLockClient second = RedisLockClient.create(TestRedis.url())) {
      RlockLockProvider provider = new RlockLockProvider(second);
      assertFalse(provider.lock(config("outlives", Duration.ofSeconds(30), Duration.ZERO))
          .isPresent(), "free before lockAtLeastFor passed");
      long pttl = Long.parseLong(TestRedis.command("PTTL", "shedlock:outlives").substring(1));
      assertTrue(pttl > 0 && pttl <= atLeast.toMillis(), "lease " + pttl + " ms after unlock");
      // Free once lockAtLeastFor has passed: generous bound for a loaded machine.
      Optional<SimpleLock> later = Optional.empty();
      while (later.isEmpty() && System.nanoTime() - unlockedAt < 10_000_000_000L) {
        Thread.sleep(100);
        later = provider.lock(config("outlives", Duration.ofSeconds(30), Duration.ZERO));
      }
      assertTrue(later.isPresent(), "still held 10 s after lockAtLeastFor's 1.5 s");
      later.get().unlock();
    }
  }
}
