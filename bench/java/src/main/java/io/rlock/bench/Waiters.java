package io.rlock.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;

/**
 * The many-waiters scenario (bench/README.md): {@code waiters} virtual threads wait on
 * {@code locks} locks that the main (platform) thread holds. Virtual threads need Java 21; the
 * program is compiled for 17, so it reaches them by reflection, and bench/peers.sh runs this
 * scenario on the Temurin 25 JDK.
 */
final class Waiters {
  /** How long the unrelated virtual thread of the scheduling probe is waited for. */
  private static final long PROBE_LIMIT_MS = 5000;

  private Waiters() {}

  record Setup(String contender, int waiters, int locks, double seconds,
      Function<String, Lock> lockOf) {}

  /** A numeric field of /proc/self/status (Threads, VmRSS in KiB). */
  static long procStatus(String field) throws IOException {
    for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
      if (line.startsWith(field + ":")) {
        return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
      }
    }
    throw new IOException("no " + field + " in /proc/self/status");
  }

  private static ExecutorService virtualThreads() throws ReflectiveOperationException {
    try {
      return (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor")
          .invoke(null);
    } catch (NoSuchMethodException e) {
      throw new UnsupportedOperationException("many-waiters needs virtual threads (Java 21+)"
          + "; bench/peers.sh runs it on the Temurin 25 JDK", e);
    }
  }

  /**
   * What clients sent between two commandstats (as rlock-bench counts it), without the
   * harness's INFO; data commands count only when no script ran: a lock that waits with SET NX
   * sends them itself, a script's run inside it.
   */
  static final class Traffic {
    private static final Set<String> SCRIPTS =
        Set.of("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro");
    private static final Set<String> CLIENT_LEVEL = Set.of("subscribe", "unsubscribe",
        "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe", "ping", "hello", "auth",
        "select", "echo", "multi", "exec", "discard", "quit", "readonly", "reset", "script",
        "client", "command");
    long requests;
    long scripts;
    final Map<String, Long> byCommand = new TreeMap<>();

    Traffic(Map<String, Long> before, Map<String, Long> after) {
      Map<String, Long> data = new TreeMap<>();
      for (Map.Entry<String, Long> e : after.entrySet()) {
        long delta = e.getValue() - before.getOrDefault(e.getKey(), 0L);
        String base = e.getKey().split("\\|")[0];
        if (delta == 0 || base.equals("info") || base.equals("config")) {
          continue;
        }
        if (SCRIPTS.contains(base) || CLIENT_LEVEL.contains(base)) {
          requests += delta;
          scripts += SCRIPTS.contains(base) ? delta : 0;
          byCommand.merge(e.getKey(), delta, Long::sum);
        } else {
          data.merge(e.getKey(), delta, Long::sum);
        }
      }
      if (scripts == 0) {
        data.forEach((name, delta) -> {
          requests += delta;
          byCommand.merge(name, delta, Long::sum);
        });
      }
    }

    /** The requests less subscriptions and pings. */
    long attempts() {
      long n = requests;
      for (Map.Entry<String, Long> e : byCommand.entrySet()) {
        if (e.getKey().contains("subscribe") || e.getKey().equals("ping")) {
          n -= e.getValue();
        }
      }
      return n;
    }
  }

  /**
   * Until Redis has seen an attempt per waiter, or the attempts stay at an idle rate for two
   * seconds in a row (fewer than 2 per lock plus 1% of the waiters each second), at most a
   * minute; then 200 ms.
   */
  private static long settle(RedisAdmin admin, Map<String, Long> before, Setup s)
      throws IOException, InterruptedException {
    long idle = 2L * s.locks() + s.waiters() / 100;
    long giveUp = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
    long seen = 0;
    long secondAgo = 0;
    int quietSeconds = 0;
    long mark = System.nanoTime();
    while (System.nanoTime() - giveUp < 0) {
      seen = new Traffic(before, admin.commandCalls()).attempts();
      if (seen >= s.waiters()) {
        break;
      }
      if (System.nanoTime() - mark >= 1_000_000_000L) {
        quietSeconds = seen - secondAgo < idle ? quietSeconds + 1 : 0;
        if (quietSeconds == 2) {
          break;
        }
        secondAgo = seen;
        mark = System.nanoTime();
      }
      Thread.sleep(20);
    }
    Thread.sleep(200);
    return seen;
  }

  /** Milliseconds until a new, unrelated virtual thread runs (PROBE_LIMIT_MS if it did not). */
  private static double probeScheduling() throws ReflectiveOperationException, InterruptedException {
    CountDownLatch ran = new CountDownLatch(1);
    AtomicLong at = new AtomicLong();
    long start = System.nanoTime();
    Thread.class.getMethod("startVirtualThread", Runnable.class).invoke(null, (Runnable) () -> {
      at.set(System.nanoTime());
      ran.countDown();
    });
    if (!ran.await(PROBE_LIMIT_MS, TimeUnit.MILLISECONDS)) {
      return PROBE_LIMIT_MS;
    }
    return (at.get() - start) / 1e6;
  }

  /** The scenario's result lines. */
  static List<String> run(Setup s, RedisAdmin admin, List<String> names) throws Exception {
    Lock[] held = new Lock[s.locks()];
    for (int i = 0; i < s.locks(); i++) {
      held[i] = s.lockOf().apply(names.get(i));
      held[i].lock();
    }
    AtomicInteger acquired = new AtomicInteger();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch ended = new CountDownLatch(s.waiters());
    ExecutorService pool = virtualThreads();
    long threadsBefore = procStatus("Threads");
    long rssBefore = procStatus("VmRSS");
    Map<String, Long> start = admin.commandCalls();
    long t0 = System.nanoTime();
    for (int i = 0; i < s.waiters(); i++) {
      Lock lock = held[i % s.locks()];
      pool.execute(() -> {
        try {
          lock.lock();
          acquired.incrementAndGet();
          lock.unlock();
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        } finally {
          ended.countDown();
        }
      });
    }
    long firstAttempts = settle(admin, start, s);
    double settleS = (System.nanoTime() - t0) / 1e9;

    Map<String, Long> before = admin.commandCalls();
    long w0 = System.nanoTime();
    long threads = procStatus("Threads");
    double probeMs = probeScheduling();
    Multi.sleepNs((long) (s.seconds() * 1e9) - (System.nanoTime() - w0));
    threads = Math.max(threads, procStatus("Threads"));
    long rss = procStatus("VmRSS");
    Traffic t = new Traffic(before, admin.commandCalls());
    double window = (System.nanoTime() - w0) / 1e9;
    if (acquired.get() != 0) {
      throw new IllegalStateException("a waiter acquired while the locks were held");
    }

    long released = System.nanoTime();
    for (Lock l : held) {
      l.unlock();
    }
    if (!ended.await(2, TimeUnit.MINUTES)) {
      throw new IllegalStateException("the waiters did not drain within two minutes ("
          + acquired.get() + " of " + s.waiters() + " acquired)");
    }
    double drainMs = (System.nanoTime() - released) / 1e6;
    pool.shutdown();
    if (failure.get() != null) {
      throw new IllegalStateException("a waiter failed", failure.get());
    }
    if (acquired.get() != s.waiters()) {
      throw new IllegalStateException(acquired.get() + " of " + s.waiters() + " acquired");
    }
    StringBuilder byCommand = new StringBuilder("{");
    t.byCommand.forEach((name, calls) -> byCommand.append(byCommand.length() > 1 ? ", " : "")
        .append(String.format(Locale.ROOT, "\"%s\": %.3f", name, calls / window)));
    String extra = String.format(Locale.ROOT, "{\"waiters\": %d, \"locks\": %d,"
        + " \"virtual_threads\": true, \"java\": %d, \"threads_before\": %d,"
        + " \"threads_waiting\": %d, \"rss_before_kib\": %d, \"rss_waiting_kib\": %d,"
        + " \"first_attempts\": %d, \"settle_s\": %.3f, \"window_s\": %.3f, \"requests\": %d,"
        + " \"scripts_per_s\": %.3f, \"requests_per_s_by_command\": %s,"
        + " \"vthread_schedule_ms\": %.3f, \"vthread_probe_limit_ms\": %d}",
        s.waiters(), s.locks(), Runtime.version().feature(), threadsBefore, threads, rssBefore,
        rss, firstAttempts, settleS, window, t.requests, t.scripts / window, byCommand + "}",
        probeMs, PROBE_LIMIT_MS);
    return List.of(line(s, "threads_added", threads - threadsBefore, "threads", extra),
        line(s, "kib_per_waiter", (double) (rss - rssBefore) / s.waiters(), "KiB", extra),
        line(s, "requests_per_s", t.requests / window, "requests/s", extra),
        line(s, "drain_ms", drainMs, "ms", extra));
  }

  private static String line(Setup s, String metric, double value, String unit, String extra) {
    return String.format(Locale.ROOT,
        "{\"scenario\": \"many-waiters\", \"contender\": \"%s\", \"metric\": \"%s\","
            + " \"value\": %.3f, \"unit\": \"%s\", \"extra\": %s}",
        s.contender(), metric, value, unit, extra);
  }
}
