package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Exception mapping, bad input, and closing under waiters. */
@Timeout(60)
class ErrorsTest {
  private static int closedPort() throws Exception {
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return socket.getLocalPort(); // closed again when returned: nobody listens there
    }
  }

  @Test
  void connectionRefusedIsAConnectionException() throws Exception {
    String url = "redis://127.0.0.1:" + closedPort();
    RedisLockConnectionException e = assertThrows(RedisLockConnectionException.class,
        () -> RedisLockClient.builder().url(url).connectTimeout(Duration.ofSeconds(1)).build());
    assertEquals(-5, e.getCode());
    assertTrue(e.getMessage().contains("127.0.0.1"), e.getMessage());
  }

  @Test
  void h12WrongPasswordIsAnAuthException() {
    String url = TestRedis.tcpUrl().replace("redis://", "redis://nobody:wrong@");
    RedisLockAuthException e =
        assertThrows(RedisLockAuthException.class, () -> RedisLockClient.create(url));
    assertEquals(-13, e.getCode());
    assertInstanceOf(RedisLockConnectionException.class, e);
  }

  @Test
  void h11BadUrlsAreIllegalArguments() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RedisLockClient.create("http://example.invalid"));
    assertTrue(e.getMessage().toLowerCase().contains("url"), e.getMessage());
    // TLS is built in: rediss:// is a URL like any other (nobody listens on port 1).
    RedisLockConnectionException tls = assertThrows(RedisLockConnectionException.class,
        () -> RedisLockClient.create("rediss://127.0.0.1:1"));
    assertEquals(-5, tls.getCode());
  }

  @Test
  void replicaSyncWithoutAReplicaIsNotSyncedAndHoldsNothing() {
    // The URL option reaches the library unchanged; the server has no replica to confirm.
    String url = TestRedis.tcpUrl() + "?sync_replicas=1&sync_timeout_ms=50";
    try (RedisLockClient client = RedisLockClient.create(url)) {
      RedisLock lock = client.getLock(TestRedis.uniqueName("sync"));
      RedisLockNotSyncedException e =
          assertThrows(RedisLockNotSyncedException.class, () -> lock.tryLock());
      assertEquals(-23, e.getCode());
      assertTrue(e.getMessage().contains("replicas confirmed"), e.getMessage());
      assertFalse(lock.isHeldByCurrentThread());
      assertFalse(lock.isLocked());
    }
  }

  @Test
  void wrongTypeKeyIsAServerError() {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      String key = TestRedis.uniqueName("wrongtype");
      assertTrue(client.fencedWrite(key, "a string, not a lock hash", 1));
      RedisLockServerException e =
          assertThrows(RedisLockServerException.class, () -> client.getLock(key).tryLock());
      assertEquals(-16, e.getCode());
    }
  }

  @Test
  void h1EmptyNameIsAnIllegalArgument() {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      IllegalArgumentException empty =
          assertThrows(IllegalArgumentException.class, () -> client.getLock(""));
      assertTrue(empty.getMessage().contains("empty"), empty.getMessage());
    }
  }

  @Test
  void h2TooLongNameIsAnIllegalArgument() {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
          () -> client.getLock("x".repeat(70_000)));
      assertTrue(tooLong.getMessage().contains("name"), tooLong.getMessage());
      assertThrows(IllegalArgumentException.class, () -> client.getLock("y".repeat(1 << 20)));
    }
  }

  @Test
  void h3h4NulAndBracesInNamesAreKept() throws Exception {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      String base = TestRedis.uniqueName("names");
      for (String name : new String[] {base + "\u0000nul", base + "a}b{c", "{" + base + "}:x"}) {
        RedisLock lock = client.getLock(name);
        assertTrue(lock.tryLock(), name);
        assertTrue(client.getLock(name).isLocked(), "another handle sees " + name);
        assertFalse(client.getLock(base).isLocked(), "the name was cut short: " + name);
        lock.unlock();
        assertFalse(client.getLock(name).isLocked());
      }
    }
  }

  @Test
  void h5h6h7BadDurationsThrowAndLeaveNothing() throws Exception {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      RedisLock lock = client.getLock(TestRedis.uniqueName("bad"));
      // A negative wait and a lease of 0 or less are Redisson's try-once and watchdog
      // (RedissonContractTest); what is beyond the library's range is refused.
      assertThrows(IllegalArgumentException.class,
          () -> lock.lock(Long.MAX_VALUE / 2, TimeUnit.MILLISECONDS));
      assertThrows(IllegalArgumentException.class,
          () -> RedisLockClient.builder().watchdogLease(Duration.ofSeconds(-1)));
      assertTrue(lock.tryLock(), "nothing was left locked by the bad calls");
      lock.unlock();
      assertTrue(lock.tryLock(Long.MAX_VALUE, TimeUnit.DAYS), "a huge wait means forever");
      lock.unlock();
    }
  }

  @Test
  void h9NullArgumentsThrowAndLeaveNothing() throws Exception {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      assertThrows(NullPointerException.class, () -> client.getLock(null));
      RedisLock lock = client.getLock(TestRedis.uniqueName("null"));
      assertThrows(NullPointerException.class, () -> lock.tryLock(1, null));
      assertThrows(IllegalArgumentException.class, () -> client.getMultiLock());
      assertThrows(NullPointerException.class, () -> client.getMultiLock(lock, null));
      assertThrows(IllegalArgumentException.class,
          () -> RedisLockClient.builder().poolSize(0));
      assertTrue(lock.tryLock(), "nothing was left locked by the bad calls");
      lock.unlock();
    }
  }

  /** Calls lock.lock() on a new thread and gives it 300 ms to block; completes with its throw. */
  private static CompletableFuture<Throwable> lockOnNewThread(RedisLock lock)
      throws InterruptedException {
    CompletableFuture<Throwable> outcome = new CompletableFuture<>();
    new Thread(() -> {
      try {
        lock.lock();
        outcome.complete(new AssertionError("acquired a held lock"));
      } catch (Throwable t) {
        outcome.complete(t);
      }
    }).start();
    Thread.sleep(300);
    return outcome;
  }

  @Test
  void h19ClosingTheClientWakesWaiters() throws Exception {
    RedisLockClient holder = RedisLockClient.create(TestRedis.url());
    RedisLockClient waiterClient = RedisLockClient.create(TestRedis.url());
    String name = TestRedis.uniqueName("close-wakes");
    try {
      holder.getLock(name).lock();
      RedisLock lock = waiterClient.getLock(name);
      CompletableFuture<Throwable> outcome = lockOnNewThread(lock);
      waiterClient.close();
      RedisLockClosedException e =
          assertInstanceOf(RedisLockClosedException.class, outcome.get(5, TimeUnit.SECONDS));
      assertEquals(-20, e.getCode());
    } finally {
      holder.close();
      waiterClient.close();
    }
  }

  @Test
  void closingTheLockWakesItsWaiters() throws Exception {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url())) {
      String name = TestRedis.uniqueName("close-lock");
      RedisLock held = client.getLock(name);
      held.lock();
      RedisLock lock = client.getLock(name);
      CompletableFuture<Throwable> outcome = lockOnNewThread(lock);
      lock.close();
      assertInstanceOf(RedisLockClosedException.class, outcome.get(5, TimeUnit.SECONDS));
      held.unlock();
      assertTrue(!held.isLocked());
    }
  }
}
