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
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write", "non-reentrant",
      "non-reentrant-fair"})
  void rlockWaiterWakesWhenRedissonUnlocks(String kind) throws Exception {
    try (Peer peer = new Peer(30.0, 10.0)) {
      WakeUps.report(kind + ": Redisson unlock -> rlock waiter acquires",
          WakeUps.rlockWaiterWakes(redisson, peer, WakeUpInteropTest::waiting, kind, "interop",
              ROUNDS));
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write", "non-reentrant",
      "non-reentrant-fair"})
  void redissonWaiterWakesWhenRlockUnlocks(String kind) throws Exception {
    try (Peer peer = new Peer()) {
      WakeUps.report(kind + ": rlock unlock -> Redisson waiter acquires",
          WakeUps.redissonWaiterWakes(redisson, peer, WakeUpInteropTest::waiting, pool, kind,
              "interop", ROUNDS));
    }
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
        WakeUps.letRedissonWaiterPark();
        String[] answer = peer.ask("unlock write " + name).split(" ");
        assertEquals("unlocked", answer[0], String.join(" ", answer));
        latencies.add(acquired.get(30, TimeUnit.SECONDS) - Long.parseLong(answer[1]));
      }
    }
    report("read after write: rlock writer unlocks -> Redisson reader acquires", latencies);
  }

  private static long waiting(String kind, String name) {
    return Env.waiting(redisson, kind, name);
  }

  private static void awaitWaiting(String kind, String name) throws InterruptedException {
    WakeUps.awaitWaiting(WakeUpInteropTest::waiting, kind, name);
  }

  private static void report(String what, List<Long> latencies) {
    WakeUps.report(what, latencies);
  }
}
