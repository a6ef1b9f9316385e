package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An unlock on one side wakes a waiter on the other at once, through the unlock message, for
 * every kind. The waiters are set up so that without the message they would sit for seconds:
 * the rlock peer polls only every 10 s, and Redisson waits for the 30 s lease.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class WakeUpInteropTest extends InteropTest {
  private static final int ROUNDS = 10;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write"})
  void rlockWaiterWakesWhenRedissonUnlocks(String kind) throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer(30.0, 10.0)) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique(kind + "-to-rlock");
        Lock lock = Env.redissonLock(redisson, kind, name);
        lock.lock();
        peer.send("lock " + kind + " " + name);
        awaitWaiting(kind, name);
        long unlocked = System.currentTimeMillis();
        lock.unlock();
        String[] answer = peer.answer().split(" ");
        assertEquals("locked", answer[0], String.join(" ", answer));
        latencies.add(Long.parseLong(answer[1]) - unlocked);
        assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("unlocked"));
      }
    }
    report(kind + ": Redisson unlock -> rlock waiter acquires", latencies);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write"})
  void redissonWaiterWakesWhenRlockUnlocks(String kind) throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer()) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique(kind + "-to-redisson");
        assertTrue(peer.ask("lock " + kind + " " + name).startsWith("locked"));
        Future<Long> acquired = pool.submit(() -> {
          Lock lock = Env.redissonLock(redisson, kind, name);
          assertTrue(lock.tryLock(20, TimeUnit.SECONDS), "the Redisson waiter timed out");
          long at = System.currentTimeMillis();
          lock.unlock();
          return at;
        });
        awaitWaiting(kind, name);
        String[] answer = peer.ask("unlock " + kind + " " + name).split(" ");
        assertEquals("unlocked", answer[0], String.join(" ", answer));
        latencies.add(acquired.get(30, TimeUnit.SECONDS) - Long.parseLong(answer[1]));
      }
    }
    report(kind + ": rlock unlock -> Redisson waiter acquires", latencies);
  }

  @Test
  void rlockReaderWakesWhenRedissonWriterUnlocks() throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer(30.0, 10.0)) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique("writer-to-rlock-reader");
        Lock writer = redisson.getReadWriteLock(name).writeLock();
        writer.lock();
        peer.send("lock read " + name);
        awaitWaiting("write", name); // readers and writers wait on the same channel
        long unlocked = System.currentTimeMillis();
        writer.unlock();
        String[] answer = peer.answer().split(" ");
        assertEquals("locked", answer[0], String.join(" ", answer));
        latencies.add(Long.parseLong(answer[1]) - unlocked);
        assertTrue(peer.ask("unlock read " + name).startsWith("unlocked"));
      }
    }
    report("read after write: Redisson writer unlocks -> rlock reader acquires", latencies);
  }

  @Test
  void redissonReaderWakesWhenRlockWriterUnlocks() throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer()) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique("writer-to-redisson-reader");
        assertTrue(peer.ask("lock write " + name).startsWith("locked"));
        Future<Long> acquired = pool.submit(() -> {
          Lock reader = redisson.getReadWriteLock(name).readLock();
          assertTrue(reader.tryLock(20, TimeUnit.SECONDS), "the Redisson reader timed out");
          long at = System.currentTimeMillis();
          reader.unlock();
          return at;
        });
        awaitWaiting("write", name);
        String[] answer = peer.ask("unlock write " + name).split(" ");
        assertEquals("unlocked", answer[0], String.join(" ", answer));
        latencies.add(acquired.get(30, TimeUnit.SECONDS) - Long.parseLong(answer[1]));
      }
    }
    report("read after write: rlock writer unlocks -> Redisson reader acquires", latencies);
  }

  private static void awaitWaiting(String kind, String name) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (Env.waiting(redisson, kind, name) < 1) {
      assertTrue(System.nanoTime() < deadline, "nobody started waiting for " + name);
      Thread.sleep(5);
    }
  }

  /** Prints the median and maximum; fails only on a wait that polling would explain. */
  private static void report(String what, List<Long> latencies) {
    List<Long> sorted = new ArrayList<>(latencies);
    sorted.sort(null);
    System.out.println(what + ": median " + sorted.get(sorted.size() / 2) + " ms, max "
        + sorted.get(sorted.size() - 1) + " ms over " + sorted.size());
    for (long ms : latencies) {
      assertTrue(ms < 2000, "woken by the unlock message, not by polling: " + latencies);
    }
  }
}
