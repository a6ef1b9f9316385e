package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.redisson.api.RedissonClient;

/**
 * The wake-up rounds of the interop tests, on one server or a cluster: one side holds, the
 * other side's waiter is seen waiting, the holder unlocks, and the time until the waiter has
 * the lock is measured on the wall clock both processes share.
 */
final class WakeUps {
  private WakeUps() {}

  /** How many wait for the lock of that kind and name, as Redis shows it. */
  interface Waiting {
    long count(String kind, String name);
  }

  /** Redisson holds and unlocks; the rlock peer (polling rarely) waits. Unlock-to-acquire ms. */
  static List<Long> rlockWaiterWakes(RedissonClient redisson, Peer peer, Waiting waiting,
      String kind, String prefix, int rounds) throws Exception {
    List<Long> latencies = new ArrayList<>();
    for (int round = 0; round < rounds; round++) {
      String name = prefix + ":" + kind + "-to-rlock:" + UUID.randomUUID();
      Lock lock = Env.redissonLock(redisson, kind, name);
      lock.lock();
      peer.send("lock " + kind + " " + name);
      awaitWaiting(waiting, kind, name);
      long unlocked = System.currentTimeMillis();
      lock.unlock();
      String[] answer = peer.answer().split(" ");
      assertEquals("locked", answer[0], String.join(" ", answer));
      latencies.add(Long.parseLong(answer[1]) - unlocked);
      assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("unlocked"));
    }
    return latencies;
  }

  /** The rlock peer holds and unlocks; a Redisson thread waits. Unlock-to-acquire ms. */
  static List<Long> redissonWaiterWakes(RedissonClient redisson, Peer peer, Waiting waiting,
      ExecutorService pool, String kind, String prefix, int rounds) throws Exception {
    List<Long> latencies = new ArrayList<>();
    for (int round = 0; round < rounds; round++) {
      String name = prefix + ":" + kind + "-to-redisson:" + UUID.randomUUID();
      assertTrue(peer.ask("lock " + kind + " " + name).startsWith("locked"));
      Future<Long> acquired = pool.submit(() -> {
        Lock lock = Env.redissonLock(redisson, kind, name);
        assertTrue(lock.tryLock(20, TimeUnit.SECONDS), "the Redisson waiter timed out");
        long at = System.currentTimeMillis();
        lock.unlock();
        return at;
      });
      awaitWaiting(waiting, kind, name);
      if (kind.equals("write")) {
        letRedissonWaiterPark();
      }
      String[] answer = peer.ask("unlock " + kind + " " + name).split(" ");
      assertEquals("unlocked", answer[0], String.join(" ", answer));
      latencies.add(acquired.get(30, TimeUnit.SECONDS) - Long.parseLong(answer[1]));
    }
    return latencies;
  }

  static void awaitWaiting(Waiting waiting, String kind, String name)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (waiting.count(kind, name) < 1) {
      assertTrue(System.nanoTime() < deadline, "nobody started waiting for " + name);
      Thread.sleep(5);
    }
  }

  /**
   * A write unlock publishes "1" (every waiter may go), and Redisson answers it by releasing
   * as many permits as threads already parked on the lock's semaphore: a Redisson thread that
   * has subscribed but is still making its second attempt misses it and sleeps until the
   * holder's lease ends, whoever unlocked (Redisson's own race; a "0" message leaves a permit).
   * Waiting for the subscription is not enough to measure the message, so give it time to park.
   */
  static void letRedissonWaiterPark() throws InterruptedException {
    Thread.sleep(200);
  }

  /** Prints the median and maximum; fails only on a wait that polling would explain. */
  static void report(String what, List<Long> latencies) {
    List<Long> sorted = new ArrayList<>(latencies);
    sorted.sort(null);
    System.out.println(what + ": median " + sorted.get(sorted.size() / 2) + " ms, max "
        + sorted.get(sorted.size() - 1) + " ms over " + sorted.size());
    for (long ms : latencies) {
      assertTrue(ms < 2000, "woken by the unlock message, not by polling: " + latencies);
    }
  }
}
