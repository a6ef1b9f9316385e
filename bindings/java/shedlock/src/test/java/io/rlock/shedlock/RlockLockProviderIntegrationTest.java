package io.rlock.shedlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rlock.RedisLock;
import io.rlock.RedisLockClient;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.test.support.AbstractExtensibleLockProviderIntegrationTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's own provider suite (shedlock-test-support), unchanged, on RlockLockProvider. */
class RlockLockProviderIntegrationTest extends AbstractExtensibleLockProviderIntegrationTest {
  private static final String PREFIX = "shedlock-suite:";
  private static RedisLockClient client;

  @BeforeAll
  static void connect() {
    client = RedisLockClient.create(TestRedis.url());
  }

  @AfterAll
  static void close() {
    client.close();
  }

  private final RlockLockProvider provider = new RlockLockProvider(client, PREFIX);

  @Override
  protected ExtensibleLockProvider getLockProvider() {
    return provider;
  }

  private static boolean isLocked(String name) {
    RedisLock lock = client.getLock(PREFIX + name);
    try {
      return lock.isLocked(); // asks Redis
    } finally {
      lock.close();
    }
  }

  @Override
  protected void assertLocked(String name) {
    assertTrue(isLocked(name), name + " should be locked");
  }

  @Override
  protected void assertUnlocked(String name) {
    assertFalse(isLocked(name), name + " should not be locked");
  }
}
