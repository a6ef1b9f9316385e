package io.rlock;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** extendLease sets the remaining lease, addLease adds to it and refuses a watchdog hold. */
@Timeout(60)
class ExtendTest extends ClientTestBase {
  private static long pttl(String name) throws Exception {
    try (RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
      return (Long) raw.command("PTTL", name);
    }
  }

  @Test
  void addLeaseAddsAndExtendLeaseSets() throws Exception {
    String name = TestRedis.uniqueName("extend");
    RedisLock lock = client.getLock(name);
    assertThrows(LockNotHeldException.class, () -> lock.addLease(1, TimeUnit.SECONDS));
    lock.lock(5, TimeUnit.SECONDS);
    lock.addLease(10, TimeUnit.SECONDS);
    long added = pttl(name);
    assertTrue(added > 13_000 && added <= 15_000, "5 s + 10 s: " + added);
    lock.extendLease(2, TimeUnit.SECONDS);
    long set = pttl(name);
    assertTrue(set > 0 && set <= 2_000, "set to 2 s: " + set);
    assertThrows(IllegalArgumentException.class, () -> lock.addLease(0, TimeUnit.SECONDS));
    lock.unlock();

    lock.lock(); // the watchdog
    assertThrows(IllegalArgumentException.class, () -> lock.addLease(1, TimeUnit.SECONDS));
    lock.extendLease(60, TimeUnit.SECONDS);
    assertTrue(pttl(name) > 30_000, "a watchdog hold takes a set lease");
    lock.unlock();
  }
}
