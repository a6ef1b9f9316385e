package io.rlock.bench;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The semaphore and latch scenarios (bench/README.md) for Redisson's RSemaphore and
 * RCountDownLatch, measured as rlock-bench measures rlock-c's: the same names, shapes, rounds
 * and figures.
 */
final class Primitives {
  private static final int PERMITS = 4;
  private static final int LATCH_WAITERS = 100;

  private Primitives() {}

  private static RedissonClient redisson(String url) {
    Config config = new Config();
    config.useSingleServer().setAddress(url);
    return Redisson.create(config);
  }

  /** A growable list of longs, so that the measured loop boxes nothing. */
  private static final class Samples {
    long[] values = new long[1 << 16];
    int size;

    void add(long v) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = v;
    }
  }

  /** The q-quantile (nearest rank) of sorted values. */
  static double quantile(double[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.min(sorted.length, Math.max(rank, 1)) - 1];
  }

  private static double[] sortedMicros(List<Samples> all) {
    int n = all.stream().mapToInt(s -> s.size).sum();
    double[] us = new double[n];
    int i = 0;
    for (Samples s : all) {
      for (int k = 0; k < s.size; k++) {
        us[i++] = s.values[k] / 1e3;
      }
    }
    Arrays.sort(us);
    return us;
  }

  private static String line(String scenario, String contender, String metric, double value,
      String unit, String extra) {
    return String.format(Locale.ROOT, "{\"scenario\": \"%s\", \"contender\": \"%s\", \"metric\":"
        + " \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"extra\": %s}", scenario, contender,
        metric, value, unit, extra);
  }

  private static String perPair(Map<String, Long> calls, double n) {
    StringBuilder b = new StringBuilder("{");
    for (Map.Entry<String, Long> e : calls.entrySet()) {
      b.append(b.length() > 1 ? ", " : "").append('"').append(e.getKey()).append("\": ")
          .append(String.format(Locale.ROOT, "%.4f", e.getValue() / n));
    }
    return b.append('}').toString();
  }

  private static final int WARMING = 0;
  private static final int MEASURED = 1;
  private static final int STOPPING = 2;

  /**
   * threads threads of one client loop acquire() and release() of one permit of a semaphore of
   * 4 permits; the same figures as rlock-bench's semaphore scenario.
   */
  static List<String> semaphore(String contender, String url, double seconds, int threads,
      RedisAdmin admin) throws Exception {
    String name = "bench:s:" + contender + ":0";
    RedissonClient client = redisson(url);
    try {
      RSemaphore sem = client.getSemaphore(name);
      if (!sem.trySetPermits(PERMITS)) {
        throw new IllegalStateException("the semaphore " + name + " already existed");
      }
      AtomicInteger phase = new AtomicInteger(WARMING);
      AtomicInteger inside = new AtomicInteger();
      AtomicInteger mostInside = new AtomicInteger();
      List<Samples> pairs = new ArrayList<>();
      List<Samples> acquires = new ArrayList<>();
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        Samples pairUs = new Samples();
        Samples acquireUs = new Samples();
        pairs.add(pairUs);
        acquires.add(acquireUs);
        done.add(pool.submit(() -> {
          try {
            semaphoreLoop(sem, phase, inside, mostInside, pairUs, acquireUs);
          } catch (Throwable e) {
            phase.set(STOPPING);
            throw e;
          }
          return null;
        }));
      }
      long warmUp = (long) (Math.max(seconds / 10, 0.2) * 1000);
      Thread.sleep(warmUp);
      Map<String, Long> before = admin.commandCalls();
      phase.compareAndSet(WARMING, MEASURED);
      long t0 = System.nanoTime();
      Thread.sleep((long) (seconds * 1000));
      phase.compareAndSet(MEASURED, STOPPING);
      long t1 = System.nanoTime();
      Map<String, Long> after = admin.commandCalls();
      phase.set(STOPPING);
      try {
        for (Future<?> f : done) {
          f.get();
        }
      } finally {
        pool.shutdown();
      }
      if (mostInside.get() > PERMITS) {
        throw new IllegalStateException(mostInside.get() + " holders at once on a semaphore of "
            + PERMITS);
      }
      int available = sem.availablePermits();
      if (available != PERMITS) {
        throw new IllegalStateException("after the run the semaphore has " + available
            + " permits available, expected " + PERMITS);
      }
      sem.delete();
      if (admin.exists(List.of(name)) != 0) {
        throw new IllegalStateException("the semaphore " + name + " is left after the run");
      }
      return semaphoreLines(contender, threads, sortedMicros(pairs), sortedMicros(acquires),
          (t1 - t0) / 1e9, new Waiters.Traffic(before, after));
    } finally {
      client.shutdown();
    }
  }

  /** One thread of the semaphore scenario, until the phase is STOPPING. */
  private static void semaphoreLoop(RSemaphore sem, AtomicInteger phase, AtomicInteger inside,
      AtomicInteger mostInside, Samples pairUs, Samples acquireUs) throws InterruptedException {
    for (int p; (p = phase.get()) != STOPPING; ) {
      long t0 = System.nanoTime();
      sem.acquire();
      long t1 = System.nanoTime();
      // More holders at once than permits would make the figures meaningless: checked.
      int now = inside.incrementAndGet();
      if (now > PERMITS) {
        mostInside.set(now);
      }
      inside.decrementAndGet();
      sem.release();
      if (p == MEASURED) {
        pairUs.add(System.nanoTime() - t0);
        acquireUs.add(t1 - t0);
      }
    }
  }

  private static List<String> semaphoreLines(String contender, int threads, double[] pairUs,
      double[] acquireUs, double elapsed, Waiters.Traffic tr) {
    if (pairUs.length == 0) {
      throw new IllegalStateException("no pair in the measured window");
    }
    double n = pairUs.length;
    String extra = String.format(Locale.ROOT, "{\"threads\": %d, \"permits\": %d, \"pairs\": %d,"
        + " \"seconds\": %.4f, \"acquire_p50_us\": %.1f, \"acquire_p99_us\": %.1f,"
        + " \"scripts_per_pair\": %.4f, \"requests_per_pair_by_command\": %s}", threads,
        PERMITS, pairUs.length, elapsed, quantile(acquireUs, 0.50), quantile(acquireUs, 0.99),
        tr.scripts / n, perPair(tr.byCommand, n));
    String s = "semaphore";
    return List.of(
        line(s, contender, "pairs_per_s", n / elapsed, "pairs/s", extra),
        line(s, contender, "pair_p50_us", quantile(pairUs, 0.50), "us", extra),
        line(s, contender, "pair_p99_us", quantile(pairUs, 0.99), "us", extra),
        line(s, contender, "requests_per_pair", tr.requests / n, "requests", extra));
  }

  /**
   * Every command Redis ran between two commandstats (scripts and the commands inside them
   * alike), but the harness's own INFO, CONFIG and PUBSUB.
   */
  private static Map<String, Long> commandsRan(Map<String, Long> before,
      Map<String, Long> after) {
    Map<String, Long> ran = new java.util.TreeMap<>();
    for (Map.Entry<String, Long> e : after.entrySet()) {
      long delta = e.getValue() - before.getOrDefault(e.getKey(), 0L);
      String base = e.getKey().split("\\|")[0];
      if (delta != 0 && !base.equals("info") && !base.equals("config")
          && !base.equals("pubsub")) {
        ran.put(e.getKey(), delta);
      }
    }
    return ran;
  }

  /** Rounds of the latch scenario: at least 20, five a second of --seconds beyond that. */
  static int latchRounds(double seconds) {
    return Math.max(20, (int) (seconds * 5));
  }

  /**
   * Rounds of: a latch of count 1, 100 threads blocked in await(), one countDown(); each
   * waiter's latency is await returning minus countDown called.
   */
  static List<String> latch(String contender, String url, double seconds, RedisAdmin admin)
      throws Exception {
    String name = "bench:l:" + contender + ":0";
    String channel = "redisson_countdownlatch__channel__{" + name + "}";
    int rounds = latchRounds(seconds);
    double[] last = new double[rounds];
    double[] median = new double[rounds];
    double[] countDownCall = new double[rounds];
    Map<String, Long> ran;
    RedissonClient client = redisson(url);
    ExecutorService pool = Executors.newFixedThreadPool(LATCH_WAITERS);
    try {
      RCountDownLatch latch = client.getCountDownLatch(name);
      Map<String, Long> before = admin.commandCalls();
      for (int r = 0; r < rounds; r++) {
        if (!latch.trySetCount(1)) {
          throw new IllegalStateException("the latch was still closed at the start of a round");
        }
        long[] releasedAt = new long[LATCH_WAITERS];
        AtomicInteger entered = new AtomicInteger();
        CountDownLatch released = new CountDownLatch(LATCH_WAITERS);
        AtomicReference<Throwable> error = new AtomicReference<>();
        for (int i = 0; i < LATCH_WAITERS; i++) {
          int index = i;
          pool.execute(() -> {
            try {
              entered.incrementAndGet();
              latch.await();
              releasedAt[index] = System.nanoTime();
            } catch (Throwable e) {
              error.compareAndSet(null, e);
            } finally {
              released.countDown();
            }
          });
        }
        settle(admin, channel, entered, released);
        long t0 = System.nanoTime();
        latch.countDown();
        countDownCall[r] = (System.nanoTime() - t0) / 1e3;
        if (!released.await(10, TimeUnit.SECONDS)) {
          throw new IllegalStateException((LATCH_WAITERS - released.getCount()) + " of "
              + LATCH_WAITERS + " latch waiters released within 10 s");
        }
        if (error.get() != null) {
          throw new IllegalStateException("a latch waiter failed: " + error.get());
        }
        double[] us = new double[LATCH_WAITERS];
        for (int i = 0; i < LATCH_WAITERS; i++) {
          us[i] = (releasedAt[i] - t0) / 1e3;
        }
        Arrays.sort(us);
        last[r] = us[us.length - 1];
        median[r] = quantile(us, 0.50);
      }
      ran = commandsRan(before, admin.commandCalls());
      if (admin.exists(List.of(name)) != 0) {
        throw new IllegalStateException("the latch " + name + " is left after the run");
      }
    } finally {
      pool.shutdownNow();
      client.shutdown();
    }
    Arrays.sort(last);
    Arrays.sort(median);
    Arrays.sort(countDownCall);
    String extra = String.format(Locale.ROOT, "{\"waiters\": %d, \"rounds\": %d,"
        + " \"last_max_us\": %.1f, \"count_down_call_p50_us\": %.1f,"
        + " \"commands_per_round_by_command\": %s, \"async\": false}",
        LATCH_WAITERS, rounds, last[rounds - 1], quantile(countDownCall, 0.50),
        perPair(ran, rounds));
    String s = "latch";
    return List.of(
        line(s, contender, "last_p50_us", quantile(last, 0.50), "us", extra),
        line(s, contender, "last_p99_us", quantile(last, 0.99), "us", extra),
        line(s, contender, "median_p50_us", quantile(median, 0.50), "us", extra),
        line(s, contender, "median_p99_us", quantile(median, 0.99), "us", extra));
  }

  /**
   * Until every waiter has entered await and the client is subscribed to the latch's channel,
   * then 100 ms for each await's first check; none may have been released by then.
   */
  private static void settle(RedisAdmin admin, String channel, AtomicInteger entered,
      CountDownLatch released) throws IOException, InterruptedException {
    long giveUp = System.nanoTime() + 10_000_000_000L;
    while (entered.get() < LATCH_WAITERS || admin.subscribers(channel) < 1) {
      if (System.nanoTime() - giveUp > 0) {
        throw new IllegalStateException("the latch waiters did not subscribe within 10 s");
      }
      Thread.sleep(1);
    }
    Thread.sleep(100);
    if (released.getCount() != LATCH_WAITERS) {
      throw new IllegalStateException("a latch waiter was released before the count-down");
    }
  }
}
