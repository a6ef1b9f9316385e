package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/** Redisson's RLock and rlock processes on the same names. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RLockInteropTest {
  private static RedissonClient redisson;
  private static ExecutorService pool;

  @BeforeAll
  static void start() {
    redisson = Env.redisson(30_000);
    pool = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void stop() {
    pool.shutdownNow();
    redisson.shutdown();
  }

  private static String unique(String what) {
    return "interop:rlock:" + what + ":" + UUID.randomUUID();
  }

  // ---- mutual exclusion --------------------------------------------------------------------

  /** One critical section of the cross-language contract, as the workers do it. */
  private static void section(Path dir, String name) throws IOException {
    Path inside = dir.resolve(name + ".inside");
    try {
      Files.createFile(inside);
    } catch (FileAlreadyExistsException e) {
      throw new AssertionError("overlap on " + name + ": a Redisson thread found someone inside");
    }
    Path count = dir.resolve(name + ".count");
    String text = Files.exists(count) ? Files.readString(count).trim() : "";
    long value = text.isEmpty() ? 0 : Long.parseLong(text);
    Files.writeString(count, (value + 1) + "\n", StandardCharsets.UTF_8);
    Files.delete(inside);
  }

  @Test
  void redissonThreadsAndRlockProcessesLoseNoUpdate(@TempDir Path dir) throws Exception {
    String[] names = {unique("a"), unique("b")};
    List<List<String>> commands = List.of(Env.pythonWorker(), Env.goWorker(), Env.cliWorker());
    int[] iterations = {400, 400, 40};
    int threads = 4;
    int threadIterations = 300;

    RLock[] gates = {redisson.getLock(names[0]), redisson.getLock(names[1])};
    for (RLock gate : gates) {
      gate.lock(); // held until every rlock process waits, so all of them contend
    }
    List<Process> started = new ArrayList<>();
    List<Future<?>> redissonThreads = new ArrayList<>();
    try {
      for (int i = 0; i < commands.size(); i++) {
        List<String> argv = new ArrayList<>(commands.get(i));
        argv.addAll(List.of(Env.URL, dir.toString(), Integer.toString(iterations[i])));
        argv.addAll(Arrays.asList(names));
        started.add(new ProcessBuilder(argv).redirectErrorStream(true).start());
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (Env.waiters(redisson, names[0]) < commands.size()) {
        for (Process p : started) {
          assertTrue(p.isAlive(), () -> "an rlock worker exited early: " + output(p));
        }
        assertTrue(System.nanoTime() < deadline, "the rlock workers never waited for the lock");
        Thread.sleep(20);
      }
      for (int t = 0; t < threads; t++) {
        redissonThreads.add(pool.submit(() -> {
          for (int i = 0; i < threadIterations; i++) {
            String name = names[i % names.length];
            RLock lock = redisson.getLock(name);
            lock.lock();
            try {
              section(dir, name);
            } finally {
              lock.unlock();
            }
          }
          return null;
        }));
      }
      for (RLock gate : gates) {
        gate.unlock();
      }
      for (Future<?> f : redissonThreads) {
        f.get(90, TimeUnit.SECONDS);
      }
      for (int i = 0; i < started.size(); i++) {
        Process p = started.get(i);
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), "an rlock worker did not finish");
        String out = output(p);
        assertEquals(0, p.exitValue(), out);
        assertEquals("ok " + iterations[i], out.trim());
      }
    } finally {
      for (Process p : started) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
    }

    Map<String, Integer> expected = new HashMap<>();
    int total = 0;
    for (int n : iterations) {
      for (int i = 0; i < n; i++) {
        expected.merge(names[i % names.length], 1, Integer::sum);
      }
      total += n;
    }
    for (int i = 0; i < threads * threadIterations; i++) {
      expected.merge(names[(i % threadIterations) % names.length], 1, Integer::sum);
    }
    total += threads * threadIterations;
    assertTrue(total >= 2000, "at least 2,000 critical sections");
    for (String name : names) {
      long counted = Long.parseLong(Files.readString(dir.resolve(name + ".count")).trim());
      assertEquals((long) expected.get(name), counted, "updates of " + name);
      assertFalse(redisson.getLock(name).isLocked(), name + " left locked");
    }
    System.out.printf("RLock: %d critical sections by %d Redisson threads and %d rlock processes,"
        + " none lost%n", total, threads, started.size());
  }

  private static String output(Process p) {
    try {
      return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "(output unreadable: " + e + ")";
    }
  }

  // ---- wake-ups ----------------------------------------------------------------------------

  /** Median and maximum of the latencies, for the log. */
  private static String summary(List<Long> latencies) {
    List<Long> sorted = new ArrayList<>(latencies);
    sorted.sort(null);
    return "median " + sorted.get(sorted.size() / 2) + " ms, max " + sorted.get(sorted.size() - 1)
        + " ms over " + sorted.size();
  }

  @Test
  void rlockWaiterWakesWhenRedissonUnlocks() throws Exception {
    List<Long> latencies = new ArrayList<>();
    // A 10 s poll cap: a waiter that missed the wake-up message would sit for seconds.
    try (Peer peer = new Peer(30.0, 10.0)) {
      for (int round = 0; round < 10; round++) {
        String name = unique("wake-rlock");
        RLock lock = redisson.getLock(name);
        lock.lock();
        peer.send("lock reentrant " + name);
        awaitWaiters(name, 1);
        long unlocked = System.currentTimeMillis();
        lock.unlock();
        String[] answer = peer.answer().split(" ");
        assertEquals("locked", answer[0], String.join(" ", answer));
        latencies.add(Long.parseLong(answer[1]) - unlocked);
        assertTrue(peer.ask("unlock reentrant " + name).startsWith("unlocked"));
      }
    }
    System.out.println("Redisson unlock -> rlock waiter acquires: " + summary(latencies));
    for (long ms : latencies) {
      assertTrue(ms < 2000, "woken by the unlock message, not by polling: " + latencies);
    }
  }

  @Test
  void redissonWaiterWakesWhenRlockUnlocks() throws Exception {
    List<Long> latencies = new ArrayList<>();
    try (Peer peer = new Peer()) {
      for (int round = 0; round < 10; round++) {
        String name = unique("wake-redisson");
        assertTrue(peer.ask("lock reentrant " + name).startsWith("locked"));
        // Without the unlock message Redisson would wait for the 30 s lease to run out.
        Future<Long> acquired = pool.submit(() -> {
          RLock lock = redisson.getLock(name);
          assertTrue(lock.tryLock(20, TimeUnit.SECONDS), "Redisson waiter timed out");
          long at = System.currentTimeMillis();
          lock.unlock();
          return at;
        });
        awaitWaiters(name, 1);
        String[] answer = peer.ask("unlock reentrant " + name).split(" ");
        assertEquals("unlocked", answer[0], String.join(" ", answer));
        latencies.add(acquired.get(30, TimeUnit.SECONDS) - Long.parseLong(answer[1]));
      }
    }
    System.out.println("rlock unlock -> Redisson waiter acquires: " + summary(latencies));
    for (long ms : latencies) {
      assertTrue(ms < 2000, "woken by the unlock message, not by the lease: " + latencies);
    }
  }

  private static void awaitWaiters(String name, long count) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (Env.waiters(redisson, name) < count) {
      assertTrue(System.nanoTime() < deadline, "nobody started waiting for " + name);
      Thread.sleep(5);
    }
  }

  // ---- leases ------------------------------------------------------------------------------

  private static final long LEASE_MS = 2000;
  private static final long PERIODS = 3;

  @Test
  void redissonWatchdogHoldIsNeverTakenOverByRlock() throws Exception {
    String name = unique("lease-redisson");
    RedissonClient shortLease = Env.redisson(LEASE_MS);
    try (Peer peer = new Peer()) {
      RLock lock = shortLease.getLock(name);
      lock.lock();
      long end = System.currentTimeMillis() + PERIODS * LEASE_MS + LEASE_MS / 2;
      int tries = 0;
      while (System.currentTimeMillis() < end) {
        assertEquals("false", peer.ask("try reentrant " + name), "rlock took a held lock");
        tries++;
        Thread.sleep(100);
      }
      assertTrue(lock.isHeldByCurrentThread());
      lock.unlock();
      assertEquals("true", peer.ask("try reentrant " + name), "free after the unlock");
      assertTrue(tries > 10);
    } finally {
      shortLease.shutdown();
    }
  }

  @Test
  void rlockWatchdogHoldIsNeverTakenOverByRedisson() throws Exception {
    String name = unique("lease-rlock");
    try (Peer peer = new Peer(LEASE_MS / 1000.0, null)) {
      assertTrue(peer.ask("lock reentrant " + name).startsWith("locked"));
      RLock lock = redisson.getLock(name);
      long end = System.currentTimeMillis() + PERIODS * LEASE_MS + LEASE_MS / 2;
      while (System.currentTimeMillis() < end) {
        assertFalse(lock.tryLock(), "Redisson took a held lock");
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= LEASE_MS, "the lease as rlock renews it: " + ttl);
        Thread.sleep(100);
      }
      assertTrue(peer.ask("unlock reentrant " + name).startsWith("unlocked"));
      assertTrue(lock.tryLock(), "free after the unlock");
      lock.unlock();
    }
  }

  // ---- status and force unlock -------------------------------------------------------------

  @Test
  void rlockSeesAndBreaksARedissonHold() throws Exception {
    String name = unique("status-redisson");
    try (Peer peer = new Peer()) {
      RLock lock = redisson.getLock(name);
      lock.lock();
      lock.lock();
      String[] state = peer.ask("state reentrant " + name).split(" ");
      assertEquals("true", state[0], "locked, as rlock sees it");
      assertEquals("0", state[1], "the peer's own hold count");
      long ttl = Long.parseLong(state[2]);
      assertTrue(ttl > 0 && ttl <= 30_000, "Redisson's watchdog lease: " + ttl);
      assertEquals("true", peer.ask("force reentrant " + name));
      assertFalse(lock.isLocked());
      assertFalse(lock.isHeldByCurrentThread());
      assertEquals("false", peer.ask("force reentrant " + name), "nothing left to delete");
    }
  }

  @Test
  void redissonSeesAndBreaksAnRlockHold() throws Exception {
    String name = unique("status-rlock");
    try (Peer peer = new Peer()) {
      assertTrue(peer.ask("lock reentrant " + name).startsWith("locked"));
      assertTrue(peer.ask("lock reentrant " + name).startsWith("locked"));
      RLock lock = redisson.getLock(name);
      assertTrue(lock.isLocked());
      assertFalse(lock.isHeldByCurrentThread());
      long ttl = lock.remainTimeToLive();
      assertTrue(ttl > 0 && ttl <= 30_000, "rlock's watchdog lease: " + ttl);
      assertEquals("true 2 " , peer.ask("state reentrant " + name).replaceAll("[0-9]+$", ""));
      assertTrue(lock.forceUnlock());
      assertEquals("false 0 -2", peer.ask("state reentrant " + name));
      assertTrue(peer.ask("unlock reentrant " + name).startsWith("error LockLostError"),
          "the holder learns its lock was broken");
    }
  }
}
