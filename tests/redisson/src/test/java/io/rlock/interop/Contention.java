package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import org.redisson.api.RedissonClient;

/**
 * Redisson threads and rlock worker processes (the cross-language contract of
 * tests/python/test_crosslang.py) take turns on the same lock names; every turn is a
 * read-modify-write of a counter file, so an overlap or a lost update shows.
 */
final class Contention {
  /** A worker process: its command and its number of critical sections. */
  record Worker(List<String> command, int iterations) {}

  private final RedissonClient redisson;
  private final ExecutorService pool;
  private final Path dir;
  private final String[] names;
  /** The worker kind (RLOCK_WORKER_KIND), and the Redisson lock of the same kind by name. */
  private final String kind;
  private final Function<String, Lock> redissonLock;
  /** For fenced locks: locks the Redisson lock and returns its token; else null. */
  private final ToLongFunction<Lock> fencedLock;
  /** How many are waiting for the lock of this name (Env.waiters, fairWaiters...). */
  private final ToLongFunction<String> waiting;

  Contention(RedissonClient redisson, ExecutorService pool, Path dir, String[] names, String kind,
      Function<String, Lock> redissonLock, ToLongFunction<Lock> fencedLock,
      ToLongFunction<String> waiting) {
    this.redisson = redisson;
    this.pool = pool;
    this.dir = dir;
    this.names = names;
    this.kind = kind;
    this.redissonLock = redissonLock;
    this.fencedLock = fencedLock;
    this.waiting = waiting;
  }

  /** Runs everyone to the end, checks the counters, and returns the number of sections. */
  int run(List<Worker> workers, int threads, int threadIterations) throws Exception {
    List<Lock> gates = new ArrayList<>();
    for (String name : names) {
      Lock gate = redissonLock.apply(name);
      gate.lock(); // held until every worker process waits, so all of them contend
      gates.add(gate);
    }
    List<Process> started = new ArrayList<>();
    try {
      for (Worker w : workers) {
        List<String> argv = new ArrayList<>(w.command());
        argv.addAll(List.of(Env.URL, dir.toString(), Integer.toString(w.iterations())));
        argv.addAll(Arrays.asList(names));
        ProcessBuilder builder = new ProcessBuilder(argv).redirectErrorStream(true);
        builder.environment().put("RLOCK_WORKER_KIND", kind);
        started.add(builder.start());
      }
      awaitWorkersWaiting(started);
      List<Future<?>> redissonThreads = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        redissonThreads.add(pool.submit(() -> {
          for (int i = 0; i < threadIterations; i++) {
            turn(names[i % names.length]);
          }
          return null;
        }));
      }
      for (Lock gate : gates) {
        gate.unlock();
      }
      for (Future<?> f : redissonThreads) {
        f.get(120, TimeUnit.SECONDS);
      }
      for (int i = 0; i < started.size(); i++) {
        Process p = started.get(i);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "an rlock worker did not finish");
        String out = output(p);
        assertEquals(0, p.exitValue(), out);
        assertEquals("ok " + workers.get(i).iterations(), out.trim());
      }
    } finally {
      for (Process p : started) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
      }
    }
    return check(workers, threads, threadIterations);
  }

  /** Every worker starts with names[0]. */
  private void awaitWorkersWaiting(List<Process> started) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (waiting.applyAsLong(names[0]) < started.size()) {
      for (Process p : started) {
        assertTrue(p.isAlive(), () -> "an rlock worker exited early: " + output(p));
      }
      assertTrue(System.nanoTime() < deadline, "the rlock workers never waited for the lock");
      Thread.sleep(20);
    }
  }

  private void turn(String name) throws IOException {
    Lock lock = redissonLock.apply(name);
    long token = 0;
    if (fencedLock != null) {
      token = fencedLock.applyAsLong(lock);
    } else {
      lock.lock();
    }
    try {
      section(name);
      if (fencedLock != null) {
        Files.writeString(dir.resolve(name + ".tokens"), token + "\n", StandardCharsets.UTF_8,
            StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      }
    } finally {
      lock.unlock();
    }
  }

  /** One critical section of the contract, as the workers do it. */
  private void section(String name) throws IOException {
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

  private int check(List<Worker> workers, int threads, int threadIterations) throws IOException {
    Map<String, Integer> expected = new HashMap<>();
    List<Integer> runs = new ArrayList<>();
    workers.forEach(w -> runs.add(w.iterations()));
    for (int t = 0; t < threads; t++) {
      runs.add(threadIterations);
    }
    int total = 0;
    for (int n : runs) {
      for (int i = 0; i < n; i++) {
        expected.merge(names[i % names.length], 1, Integer::sum);
      }
      total += n;
    }
    for (String name : names) {
      long counted = Long.parseLong(Files.readString(dir.resolve(name + ".count")).trim());
      assertEquals((long) expected.get(name), counted, "updates of " + name);
      assertFalse(redisson.getKeys().countExists(name) > 0, name + " left locked");
      if (fencedLock != null) {
        checkTokens(name, expected.get(name));
      }
    }
    return total;
  }

  /** The tokens, in the order the lock was held, come from one strictly increasing sequence. */
  private void checkTokens(String name, int sections) throws IOException {
    List<String> lines = Files.readAllLines(dir.resolve(name + ".tokens"));
    assertEquals(sections, lines.size(), "one token per section of " + name);
    long previous = 0;
    for (String line : lines) {
      long token = Long.parseLong(line.trim());
      assertTrue(token > previous, "token " + token + " after " + previous + " on " + name);
      previous = token;
    }
  }

  static String output(Process p) {
    try {
      return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "(output unreadable: " + e + ")";
    }
  }
}
