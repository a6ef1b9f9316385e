package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * addListener with ExpiredObjectListener and DeletedObjectListener (Redisson's object listeners),
 * from the server's keyspace notifications: a lease running out, an unlock, a semaphore's
 * delete; removeListener; a server that does not publish them is named in the error.
 */
class ObjectListenerTest extends ClientTestBase {
  private RawRedis raw;
  private String before;

  @BeforeEach
  void notifications() throws Exception {
    raw = new RawRedis(TestRedis.tcpUrl());
    @SuppressWarnings("unchecked")
    List<Object> reply = (List<Object>) raw.command("CONFIG", "GET", "notify-keyspace-events");
    before = new String((byte[]) reply.get(1), java.nio.charset.StandardCharsets.UTF_8);
    raw.command("CONFIG", "SET", "notify-keyspace-events", "Egx");
  }

  @AfterEach
  void restore() throws Exception {
    raw.command("CONFIG", "SET", "notify-keyspace-events", before);
    raw.close();
  }

  @Test
  void expiredAndDeletedKeysReachTheirListeners() throws Exception {
    String name = TestRedis.uniqueName("listener");
    BlockingQueue<String> told = new LinkedBlockingQueue<>();
    RedisLock lock = client.getLock(name);
    int expired = lock.addListener((ExpiredObjectListener) n -> told.add("expired " + n));
    int deleted = lock.addListener((DeletedObjectListener) n -> told.add("deleted " + n));
    RedisLock other = client.getLock(name + ":other");
    other.addListener((DeletedObjectListener) n -> told.add("other deleted " + n));

    assertTrue(lock.tryLock(0, 150, TimeUnit.MILLISECONDS));
    String first = null;
    for (int i = 0; i < 50 && first == null; i++) {
      // Redis expires a key when it is read or when its expiry scan reaches it; on the server
      // the tests share, the scan alone may take longer than this wait. The read makes the
      // expiry, and its event, happen now.
      raw.command("EXISTS", name);
      first = told.poll(100, TimeUnit.MILLISECONDS);
    }
    assertEquals("expired " + name, first, "the lease ran out");
    assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));
    lock.unlock();
    assertEquals("deleted " + name, told.poll(5, TimeUnit.SECONDS), "the unlock deleted the key");

    lock.removeListener(deleted);
    lock.removeListener(expired);
    lock.removeListener(12345); // unknown: nothing
    assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));
    lock.unlock();
    assertTrue(other.tryLock(0, 30, TimeUnit.SECONDS));
    other.unlock(); // told after the lock's delete above, had that been told
    assertEquals("other deleted " + name + ":other", told.poll(5, TimeUnit.SECONDS));
    assertEquals(null, told.poll(200, TimeUnit.MILLISECONDS), "removed listeners are not told");
  }

  /**
   * A listener adds and removes listeners from the event thread while another thread keeps
   * adding and removing them: no call waits for another for ever (the native handler is set
   * with no lock held), and the listeners added on the event thread are told.
   */
  @Test
  @org.junit.jupiter.api.Timeout(60)
  void listenersMayAddAndRemoveListenersFromTheEventThread() throws Exception {
    String name = TestRedis.uniqueName("listener-churn");
    RedisLock lock = client.getLock(name);
    BlockingQueue<String> told = new LinkedBlockingQueue<>();
    java.util.concurrent.atomic.AtomicInteger self = new java.util.concurrent.atomic.AtomicInteger();
    self.set(lock.addListener((DeletedObjectListener) n -> {
      lock.removeListener(self.get()); // itself, on the event thread
      lock.addListener((DeletedObjectListener) m -> told.add("second " + m));
      told.add("first " + n);
    }));
    java.util.concurrent.Future<?> churn = pool.submit(() -> {
      for (int i = 0; i < 100; i++) {
        lock.removeListener(lock.addListener((ExpiredObjectListener) n -> { }));
      }
      return null;
    });
    for (int round = 0; round < 20 && told.size() < 2; round++) {
      assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));
      lock.unlock();
      Thread.sleep(50);
    }
    churn.get(30, TimeUnit.SECONDS);
    assertEquals("first " + name, told.poll(5, TimeUnit.SECONDS));
    assertEquals("second " + name, told.poll(5, TimeUnit.SECONDS));
  }

  @Test
  void aSemaphoresDeleteIsTold() throws Exception {
    String name = TestRedis.uniqueName("listener-sem");
    BlockingQueue<String> told = new LinkedBlockingQueue<>();
    RedisSemaphore sem = client.getSemaphore(name);
    sem.addListener((DeletedObjectListener) told::add);
    assertTrue(sem.trySetPermits(1));
    assertTrue(sem.delete());
    assertEquals(name, told.poll(5, TimeUnit.SECONDS));
  }

  @Test
  void aServerThatDoesNotPublishThemIsNamed() throws Exception {
    raw.command("CONFIG", "SET", "notify-keyspace-events", "");
    RedisLock lock = client.getLock(TestRedis.uniqueName("listener-off"));
    RedisLockServerException e = assertThrows(RedisLockServerException.class,
        () -> lock.addListener((ExpiredObjectListener) n -> { }));
    assertTrue(e.getMessage().contains("notify-keyspace-events"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> lock.addListener(new ObjectListener() { }));
    assertThrows(NullPointerException.class, () -> lock.addListener(null));
  }
}
