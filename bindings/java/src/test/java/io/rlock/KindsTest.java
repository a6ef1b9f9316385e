package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Fair, spin, read-write, multi-lock and RedLock. */
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
