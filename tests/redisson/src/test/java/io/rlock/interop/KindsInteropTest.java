package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.function.ToLongFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.redisson.api.RFencedLock;
import org.redisson.api.RLock;
import org.redisson.api.RMap;
import org.redisson.api.RReadWriteLock;
import org.redisson.client.codec.StringCodec;

/**
 * Redisson's RLock, RFencedLock, RFairLock, RReadWriteLock and non-reentrant locks against rlock
 * processes.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class KindsInteropTest extends InteropTest {

  // ---- mutual exclusion, per kind: rlock processes next to Redisson threads ---------------

  private static int contend(Path dir, String kind, ToLongFunction<Lock> fencedLock)
      throws Exception {
    String[] names = {unique(kind + "-a"), unique(kind + "-b")};
    Contention contention = new Contention(redisson, pool, dir, names, kind,
        name -> Env.redissonLock(redisson, kind, name), fencedLock,
        name -> Env.waiting(redisson, kind, name));
    int total = contention.run(List.of(new Contention.Worker(Env.pythonWorker(), 500),
        new Contention.Worker(Env.goWorker(), 500)), 4, 260);
    assertTrue(total >= 2000, "at least 2,000 critical sections: " + total);
    System.out.printf("%s: %d critical sections by 4 Redisson threads and Python and Go "
        + "processes, none lost%n", kind, total);
    return total;
  }

  @Test
  void reentrantLockExcludesWithTheCliToo(@TempDir Path dir) throws Exception {
    String[] names = {unique("reentrant-a"), unique("reentrant-b")};
    Contention contention = new Contention(redisson, pool, dir, names, "reentrant",
        redisson::getLock, null, name -> Env.waiters(redisson, name));
    List<Contention.Worker> workers = List.of(new Contention.Worker(Env.pythonWorker(), 400),
        new Contention.Worker(Env.goWorker(), 400), new Contention.Worker(Env.cliWorker(), 40));
    int total = contention.run(workers, 4, 300);
    assertTrue(total >= 2000, "at least 2,000 critical sections: " + total);
    System.out.printf("reentrant: %d critical sections by 4 Redisson threads and Python, Go and"
        + " CLI processes, none lost%n", total);
  }

  @Test
  void fencedLockExcludesAndTokensIncreaseInLockOrder(@TempDir Path dir) throws Exception {
    contend(dir, "fenced", lock -> ((RFencedLock) lock).lockAndGetToken());
  }

  @Test
  void fairLockExcludes(@TempDir Path dir) throws Exception {
    contend(dir, "fair", null);
  }

  @Test
  void writeLockExcludes(@TempDir Path dir) throws Exception {
    contend(dir, "write", null);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"non-reentrant", "non-reentrant-fair"})
  void nonReentrantLockExcludes(String kind, @TempDir Path dir) throws Exception {
    contend(dir, kind, null);
  }

  // ---- fencing tokens ----------------------------------------------------------------------

  @Test
  void tokensFromBothSidesComeFromOneSequence() throws Exception {
    String name = unique("tokens");
    RFencedLock lock = redisson.getFencedLock(name);
    long previous = 0;
    try (Peer peer = new Peer()) {
      for (int round = 0; round < 5; round++) {
        long fromRedisson = lock.lockAndGetToken();
        lock.unlock();
        assertTrue(fromRedisson > previous, fromRedisson + " after " + previous);
        String[] answer = peer.ask("lock fenced " + name).split(" ");
        assertEquals("locked", answer[0], String.join(" ", answer));
        long fromRlock = Long.parseLong(answer[2]);
        assertEquals(fromRedisson + 1, fromRlock, "the next token of the same counter");
        assertTrue(peer.ask("unlock fenced " + name).startsWith("unlocked"));
        previous = fromRlock;
      }
    }
  }

  // ---- fair lock order ---------------------------------------------------------------------

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"fair", "non-reentrant-fair"})
  void fairLockServesMixedWaitersInArrivalOrder(String kind) throws Exception {
    String name = unique(kind + "-order");
    RLock holder = Env.redissonLock(redisson, kind, name);
    holder.lock();
    List<String> order = Collections.synchronizedList(new ArrayList<>());
    List<Future<?>> waiters = new ArrayList<>();
    try (Peer first = new Peer(); Peer second = new Peer()) {
      String[] arrivals = {"redisson-1", "rlock-1", "redisson-2", "rlock-2", "redisson-3"};
      Peer[] peers = {first, second};
      int peerIndex = 0;
      for (int i = 0; i < arrivals.length; i++) {
        String who = arrivals[i];
        if (who.startsWith("redisson")) {
          waiters.add(pool.submit(() -> {
            RLock lock = Env.redissonLock(redisson, kind, name);
            lock.lock();
            order.add(who);
            Thread.sleep(30);
            lock.unlock();
            return null;
          }));
        } else {
          Peer peer = peers[peerIndex++];
          waiters.add(pool.submit(() -> {
            String answer = peer.ask("lock " + kind + " " + name);
            assertTrue(answer.startsWith("locked"), answer);
            order.add(who);
            Thread.sleep(30);
            assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("unlocked"));
            return null;
          }));
        }
        awaitQueue(name, i + 1);
      }
      if (kind.equals("non-reentrant-fair")) {
        // The holder asking again is refused, and takes no place in the queue.
        assertThrows(IllegalMonitorStateException.class, holder::lock);
        assertEquals(arrivals.length, Env.fairWaiters(redisson, name));
      }
      holder.unlock();
      for (Future<?> w : waiters) {
        w.get(60, TimeUnit.SECONDS);
      }
    }
    assertEquals(List.of("redisson-1", "rlock-1", "redisson-2", "rlock-2", "redisson-3"), order);
  }

  private static void awaitQueue(String name, long length) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (Env.fairWaiters(redisson, name) < length) {
      assertTrue(System.nanoTime() < deadline, "waiter " + length + " never queued");
      Thread.sleep(5);
    }
  }

  // ---- non-reentrant locks ------------------------------------------------------------------

  /**
   * The holder asking again is refused on either side (Redisson: IllegalMonitorStateException,
   * rlock: DeadlockError) and its one hold stays as it was; the other side, another owner, is
   * only excluded.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"non-reentrant", "non-reentrant-fair"})
  void holdersAskingAgainAreRefusedOnBothSides(String kind) throws Exception {
    String name = unique(kind + "-again");
    RLock lock = Env.redissonLock(redisson, kind, name);
    RMap<String, String> hash = redisson.getMap(name, StringCodec.INSTANCE);
    try (Peer peer = new Peer()) {
      assertTrue(peer.ask("lock " + kind + " " + name).startsWith("locked"));
      for (String again : new String[] {"lock " + kind + " " + name + " 5",
          "try " + kind + " " + name}) {
        String answer = peer.ask(again);
        assertTrue(answer.startsWith("error DeadlockError") && answer.contains("not reentrant"),
            again + ": " + answer);
      }
      assertEquals(List.of("1"), new ArrayList<>(hash.readAllValues()), "one hold of rlock's");
      assertTrue(peer.ask("state " + kind + " " + name).startsWith("true 1 "));
      assertFalse(lock.tryLock(), "Redisson, another owner, is excluded, not refused");
      assertFalse(lock.tryLock(300, TimeUnit.MILLISECONDS));
      assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("unlocked"));
      assertFalse(lock.isLocked(), "one unlock frees it");

      lock.lock();
      assertThrows(IllegalMonitorStateException.class, lock::lock);
      assertThrows(IllegalMonitorStateException.class, lock::tryLock);
      assertEquals(Map.of(redisson.getId() + ":" + Thread.currentThread().getId(), "1"),
          hash.readAllMap(), "Redisson's one hold");
      assertEquals("false", peer.ask("try " + kind + " " + name), "rlock is only excluded");
      assertEquals("timeout", peer.ask("lock " + kind + " " + name + " 0.3"));
      assertTrue(peer.ask("state " + kind + " " + name).startsWith("true 0 "));
      lock.unlock();
      assertFalse(lock.isLocked(), "one unlock frees it");
      assertEquals(0, Env.fairWaiters(redisson, name), "no queue entry left behind");
    }
  }

  // ---- read-write ----------------------------------------------------------------------------

  @Test
  void readersShareAndWritersExcludeAcrossBoth() throws Exception {
    String name = unique("rw");
    RReadWriteLock rw = redisson.getReadWriteLock(name);
    try (Peer peer = new Peer()) {
      rw.readLock().lock();
      assertEquals("true", peer.ask("try read " + name), "an rlock reader shares with Redisson's");
      assertEquals("false", peer.ask("try write " + name), "an rlock writer waits for it");
      rw.readLock().unlock();

      assertTrue(peer.ask("lock read " + name).startsWith("locked"));
      assertTrue(rw.readLock().tryLock(), "a Redisson reader shares with rlock's");
      rw.readLock().unlock();
      assertFalse(rw.writeLock().tryLock(), "a Redisson writer waits for it");
      assertTrue(peer.ask("unlock read " + name).startsWith("unlocked"));

      rw.writeLock().lock();
      assertEquals("false", peer.ask("try read " + name), "Redisson's writer excludes readers");
      assertEquals("false", peer.ask("try write " + name), "and writers");
      rw.writeLock().unlock();

      assertTrue(peer.ask("lock write " + name).startsWith("locked"));
      assertFalse(rw.readLock().tryLock(), "rlock's writer excludes Redisson readers");
      assertFalse(rw.writeLock().tryLock(), "and writers");
      assertTrue(peer.ask("unlock write " + name).startsWith("unlocked"));
      assertTrue(rw.writeLock().tryLock(), "free once both are done");
      rw.writeLock().unlock();
    }
  }
}
