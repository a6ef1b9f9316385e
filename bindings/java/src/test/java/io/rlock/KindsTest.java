package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Fair, non-reentrant, spin, read-write, multi-lock and RedLock. */
@Timeout(60)
class KindsTest extends ClientTestBase {
  @Test
  void fairLockExcludesAndServesInOrder() throws Exception {
    RedisLock lock = client.getFairLock(TestRedis.uniqueName("fair"));
    assertEquals(90, contend(lock, 3, 30));
    lock.lock();
    List<Integer> order = new java.util.concurrent.CopyOnWriteArrayList<>();
    List<Future<?>> waiters = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      int index = i;
      waiters.add(pool.submit(() -> {
        lock.lock();
        order.add(index);
        lock.unlock();
        return null;
      }));
      Thread.sleep(300); // queue them in index order
    }
    lock.unlock();
    for (Future<?> f : waiters) {
      f.get(30, TimeUnit.SECONDS);
    }
    assertEquals(List.of(0, 1, 2), order);
  }

  @Test
  void nonReentrantLocksRefuseTheirHolderAsRedissonDoes() throws Exception {
    for (boolean fair : new boolean[] {false, true}) {
      String name = TestRedis.uniqueName(fair ? "nr-fair" : "nr");
      RedisLock lock = fair ? client.getNonReentrantFairLock(name)
          : client.getNonReentrantLock(name);
      assertEquals(60, contend(lock, 3, 20));
      lock.lock();
      // Redisson 4.7 throws IllegalMonitorStateException from lock() and every tryLock().
      LockAlreadyHeldException again = assertThrows(LockAlreadyHeldException.class, lock::lock);
      assertEquals(-21, again.getCode());
      assertTrue(again.getMessage().contains("not reentrant"), again.getMessage());
      assertThrows(IllegalMonitorStateException.class, lock::tryLock);
      assertThrows(IllegalMonitorStateException.class, () -> lock.tryLock(5, TimeUnit.SECONDS));
      assertThrows(IllegalMonitorStateException.class, lock::lockInterruptibly);
      ExecutionException async = assertThrows(ExecutionException.class,
          () -> lock.lockAsync().get(10, TimeUnit.SECONDS));
      assertInstanceOf(LockAlreadyHeldException.class, async.getCause());
      assertEquals(1, lock.getHoldCount(), "nothing changed: still held once");
      try (RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
        String field = client.getId() + ":" + Thread.currentThread().getId();
        assertEquals("1", new String((byte[]) raw.command("HGET", name, field),
            StandardCharsets.UTF_8), "Redisson's layout: <client id>:<thread id> = 1");
      }
      assertFalse(other(lock::tryLock), "another thread is another owner: it is excluded");
      Future<Boolean> waiter = pool.submit(() -> {
        boolean got = lock.tryLock(10, TimeUnit.SECONDS);
        if (got) {
          lock.unlock();
        }
        return got;
      });
      Thread.sleep(200);
      assertFalse(waiter.isDone());
      lock.unlock(); // one unlock frees it
      assertTrue(waiter.get(10, TimeUnit.SECONDS), "woken by the unlock");
      assertFalse(lock.isLocked());
      assertThrows(LockNotHeldException.class, lock::unlock);
    }
  }

  @Test
  void spinLockExcludes() throws Exception {
    RedisLock lock = client.getSpinLock(TestRedis.uniqueName("spin"));
    assertEquals(60, contend(lock, 3, 20));
    assertFalse(lock.isLocked());
  }

  @Test
  void readWriteLock() throws Exception {
    RedisReadWriteLock rw = client.getReadWriteLock(TestRedis.uniqueName("rw"));
    RedisLock read = rw.readLock();
    RedisLock write = rw.writeLock();
    read.lock();
    assertTrue(other(() -> {
      boolean got = read.tryLock();
      if (got) {
        read.unlock();
      }
      return got;
    }), "readers share");
    assertFalse(other(write::tryLock), "a writer waits for readers");
    assertFalse(write.tryLock(), "a reader cannot take the write lock (Redisson: false)");
    assertThrows(RedisLockDeadlockException.class, write::lock,
        "a reader asking for the write lock would wait for itself");
    read.unlock();

    write.lock();
    assertFalse(other(read::tryLock), "a writer excludes readers");
    assertTrue(read.tryLock(), "the writer may read (downgrade)");
    write.unlock();
    assertTrue(other(() -> {
      boolean got = read.tryLock();
      if (got) {
        read.unlock();
      }
      return got;
    }), "after the downgrade others may read");
    read.unlock();
    assertFalse(read.isLocked());
    assertEquals(40, contend(write, 2, 20));
  }

  @Test
  void multiLockTakesEveryMember() throws Exception {
    RedisLock a = client.getLock(TestRedis.uniqueName("multi-a"));
    RedisLock b = client.getLock(TestRedis.uniqueName("multi-b"));
    RedisMultiLock both = client.getMultiLock(a, b);
    try {
      both.lock();
      assertTrue(both.isHeldByCurrentThread());
      assertTrue(a.isLocked() && b.isLocked());
      assertFalse(other(b::tryLock));
      assertFalse(other(() -> both.tryLock(200, TimeUnit.MILLISECONDS)));
      both.unlock();
      assertFalse(a.isLocked() || b.isLocked());

      b.lock(); // one member busy: the group is not taken, and nothing is left held
      assertFalse(other(() -> both.tryLock(300, TimeUnit.MILLISECONDS)));
      assertEquals(1, b.getHoldCount());
      assertFalse(a.isLocked());
      b.unlock();

      RedisMultiLock reversed = client.getMultiLock(b, a);
      Future<Long> one = pool.submit(() -> contend(both, 1, 15));
      long other = contend(reversed, 1, 15);
      assertEquals(15, one.get(50, TimeUnit.SECONDS));
      assertEquals(15, other);
      reversed.close();
    } finally {
      both.close();
    }
  }

  @Test
  void redLockOnOneServerPerClient() throws Exception {
    List<RedisLockClient> clients = new ArrayList<>();
    try {
      RedisLock[] members = new RedisLock[3];
      for (int i = 0; i < 3; i++) {
        clients.add(RedisLockClient.create(TestRedis.url()));
        members[i] = clients.get(i).getLock(TestRedis.uniqueName("red" + i));
      }
      RedisMultiLock red = client.getRedLock(members);
      assertTrue(red.tryLock(5, TimeUnit.SECONDS));
      assertTrue(red.isHeldByCurrentThread());
      assertFalse(other(red::tryLock));
      red.unlock();
      assertFalse(members[0].isLocked());
    } finally {
      clients.forEach(RedisLockClient::close);
    }
  }
}
