package io.rlock.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * The multi-process scenarios of bench/README.md for the Java contenders: handoff (two
 * processes ping-pong one lock) and herd / herd-fair (processes x threads on one lock).
 *
 * <p>The parent JVM starts its children as new JVMs of the same program with the hidden
 * --child and --shared flags; each child makes its own client. They share a mapped file for
 * turns and records. System.nanoTime is not promised to be comparable across JVMs, so the
 * parent measures each child's clock offset through the shared file before starting (the
 * exchange with the smallest round trip wins) and converts the children's times to its own.
 */
final class Multi {
  // Shared slots.
  private static final int READY = 0;
  private static final int GO = 1;
  private static final int STOP = 2;
  private static final int COUNTER = 3; // handoff: holds taken; herd: records taken
  private static final int CAL_REQUEST = 4;
  private static final int CAL_ACK = 5;
  private static final int CAL_TIME = 6;
  private static final int BASE = 16;

  private static final int CALIBRATION_ROUNDS = 200;
  private static final long HOLD_NS = 1_000_000;
  private static final long SETTLE_NS = 1_000_000_000;

  private Multi() {}

  /** What the parent passes to its children and how to make a contender in them. */
  record Setup(String contender, String url, String scenario, double seconds, int processes,
      int threads, Function<String, Bench.Contender> factory) {}

  static double warmUp(double seconds) {
    return Math.max(seconds / 10, 0.2);
  }

  static String lockName(Setup s) {
    String tag = switch (s.scenario()) {
      case "handoff" -> "h";
      case "herd" -> "hd";
      default -> "hf";
    };
    return "bench:" + tag + ":" + s.contender() + ":0";
  }

  static long handoffCapacity(double seconds) {
    return (long) ((seconds + warmUp(seconds) + 2) * 1e9 / HOLD_NS) + 16;
  }

  static long herdCapacity(double seconds) {
    return (long) ((seconds + warmUp(seconds) + 5) * 50_000);
  }

  // ---- parent ----

  /** Runs the scenario; returns its result lines. */
  static List<String> run(Setup s, RedisAdmin admin) throws Exception {
    boolean handoff = s.scenario().equals("handoff");
    int processes = handoff ? 2 : s.processes();
    long slots = BASE + (handoff ? 4 * handoffCapacity(s.seconds())
        : 4 * herdCapacity(s.seconds()));
    Path dir = Files.isDirectory(Paths.get("/dev/shm")) ? Paths.get("/dev/shm")
        : Paths.get(System.getProperty("java.io.tmpdir"));
    Path file = dir.resolve("rlock-bench-" + ProcessHandle.current().pid() + "-"
        + System.nanoTime());
    List<Process> children = new ArrayList<>();
    try (SharedLongs shared = new SharedLongs(file, slots, true)) {
      for (int i = 0; i < processes; i++) {
        children.add(startChild(s, i, file));
      }
      int want = handoff ? processes : processes * s.threads();
      waitFor(() -> shared.get(READY) >= want, children, "the children's clients", 180);
      // The JVMs started together on few cores: let their start-up work (class loading, JIT)
      // finish before checking clocks and measuring.
      sleepNs(SETTLE_NS);
      long[] offsets = new long[processes];
      long[] errors = new long[processes];
      long worstError = 0;
      for (int i = 0; i < processes; i++) {
        long[] cal = calibrate(shared, i, children);
        offsets[i] = cal[0];
        errors[i] = cal[1];
        worstError = Math.max(worstError, cal[1]);
      }
      shared.set(GO, 1);
      sleepNs((long) (warmUp(s.seconds()) * 1e9));
      Map<String, Long> before = handoff ? null : admin.commandCalls();
      long from = System.nanoTime();
      sleepNs((long) (s.seconds() * 1e9));
      Map<String, Long> after = handoff ? null : admin.commandCalls();
      long to = System.nanoTime();
      shared.set(STOP, 1);
      for (Process p : children) {
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
          throw new IllegalStateException("a child process did not stop");
        }
        if (p.exitValue() != 0) {
          throw new IllegalStateException("a child process failed (its message is above)");
        }
      }
      List<String> keys = new ArrayList<>(List.of(lockName(s)));
      if (s.scenario().equals("herd-fair")) {
        keys.add("redisson_lock_queue:{" + lockName(s) + "}");
        keys.add("redisson_lock_timeout:{" + lockName(s) + "}");
      }
      long left = admin.exists(keys);
      if (left > 0) {
        throw new IllegalStateException(left + " lock key(s) still present after the run");
      }
      String calibration = String.format(Locale.ROOT,
          "\"clock_offset_us_max\": %.3f, \"clock_calibration_error_us\": %.3f",
          Arrays.stream(offsets).map(Math::abs).max().orElse(0) / 1e3, worstError / 1e3);
      return handoff ? handoffResult(s, shared, offsets, errors, from, to, calibration)
          : herdResult(s, shared, offsets, errors, from, to, before, after, calibration);
    } finally {
      for (Process p : children) {
        p.destroyForcibly();
      }
      Files.deleteIfExists(file);
    }
  }

  private static Process startChild(Setup s, int index, Path file) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
    cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), Bench.class.getName(),
        "--contender", s.contender(), "--url", s.url(), "--scenario", s.scenario(),
        "--seconds", Double.toString(s.seconds()), "--processes", Integer.toString(s.processes()),
        "--threads", Integer.toString(s.threads()), "--child", Integer.toString(index),
        "--shared", file.toString()));
    return new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }

  private interface Condition {
    boolean holds();
  }

  private static void waitFor(Condition c, List<Process> children, String what, int seconds) {
    long giveUp = System.nanoTime() + seconds * 1_000_000_000L;
    while (!c.holds()) {
      for (Process p : children) {
        if (!p.isAlive()) {
          throw new IllegalStateException("a child process exited before " + what);
        }
      }
      if (System.nanoTime() > giveUp) {
        throw new IllegalStateException("timed out waiting for " + what);
      }
      LockSupport.parkNanos(1_000_000);
    }
  }

  /** Returns {child clock minus parent clock, half the round trip of the best exchange}. */
  private static long[] calibrate(SharedLongs shared, int child, List<Process> children) {
    long bestRound = Long.MAX_VALUE;
    long offset = 0;
    for (int round = 0; round < CALIBRATION_ROUNDS; round++) {
      long request = ((long) (child + 1) << 32) | round;
      long giveUp = System.nanoTime() + 10_000_000_000L;
      long t0 = System.nanoTime();
      shared.set(CAL_REQUEST, request);
      while (shared.get(CAL_ACK) != request) {
        Thread.onSpinWait();
        if (System.nanoTime() > giveUp) {
          throw new IllegalStateException("child " + child + " did not answer the clock check");
        }
      }
      long t1 = System.nanoTime();
      long theirs = shared.get(CAL_TIME);
      if (t1 - t0 < bestRound) {
        bestRound = t1 - t0;
        offset = theirs - (t0 + (t1 - t0) / 2);
      }
    }
    return new long[] {offset, bestRound / 2};
  }

  private static List<String> handoffResult(Setup s, SharedLongs shared, long[] offsets,
      long[] errors, long from, long to, String calibration) {
    long capacity = handoffCapacity(s.seconds());
    long holds = Math.min(shared.get(COUNTER), capacity);
    List<Double> us = new ArrayList<>();
    long late = 0;
    for (long k = 0; k + 1 < holds; k++) {
      long releaseCalled = shared.get(BASE + 2 * capacity + k) - offsets[(int) (k % 2)];
      long released = shared.get(BASE + 3 * capacity + k) - offsets[(int) (k % 2)];
      long called = shared.get(BASE + k + 1) - offsets[(int) ((k + 1) % 2)];
      long acquired = shared.get(BASE + capacity + k + 1) - offsets[(int) ((k + 1) % 2)];
      // Times of two processes are only as comparable as their clock checks were precise.
      if (acquired < releaseCalled - errors[0] - errors[1]) {
        throw new IllegalStateException("holds " + k + " and " + (k + 1)
            + " overlapped: two owners at once");
      }
      if (released < from || acquired > to) {
        continue;
      }
      us.add((acquired - released) / 1e3);
      if (releaseCalled - called < HOLD_NS / 2) {
        late++;
      }
    }
    if (us.size() < 2) {
      throw new IllegalStateException("too few handoffs measured");
    }
    double[] sorted = us.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    String extra = String.format(Locale.ROOT,
        "{\"handoffs\": %d, \"seconds\": %.3f, \"hold_ms\": 1, \"mean_us\": %.3f,"
            + " \"late_receivers\": %d, %s}",
        sorted.length, (to - from) / 1e9, Arrays.stream(sorted).average().orElse(0), late,
        calibration);
    return List.of(line(s, "handoff_p50_us", quantile(sorted, 0.5), "us", extra),
        line(s, "handoff_p99_us", quantile(sorted, 0.99), "us", extra),
        line(s, "handoff_max_us", sorted[sorted.length - 1], "us", extra));
  }

  private static List<String> herdResult(Setup s, SharedLongs shared, long[] offsets,
      long[] errors, long from, long to, Map<String, Long> before, Map<String, Long> after,
      String calibration) {
    long capacity = herdCapacity(s.seconds());
    int count = (int) Math.min(shared.get(COUNTER), capacity);
    long[][] holds = new long[count][];
    for (int i = 0; i < count; i++) {
      long at = BASE + 4L * i;
      int who = (int) shared.get(at + 3);
      long offset = offsets[who / s.threads()];
      holds[i] = new long[] {shared.get(at) - offset, shared.get(at + 1) - offset,
          shared.get(at + 2) - offset, who};
    }
    Arrays.sort(holds, (a, b) -> Long.compare(a[0], b[0]));
    List<Double> gaps = new ArrayList<>();
    long sameThread = 0;
    long sameProcess = 0;
    for (int i = 0; i + 1 < count; i++) {
      long[] prev = holds[i];
      long[] next = holds[i + 1];
      long tolerance = errors[(int) prev[3] / s.threads()] + errors[(int) next[3] / s.threads()];
      if (next[0] < prev[1] - tolerance) {
        throw new IllegalStateException("two owners at once: one acquired "
            + (prev[1] - next[0]) / 1000 + " us before the previous holder asked to release");
      }
      if (next[0] < from || next[0] > to) {
        continue;
      }
      gaps.add((next[0] - prev[2]) / 1e3);
      sameThread += next[3] == prev[3] ? 1 : 0;
      sameProcess += next[3] / s.threads() == prev[3] / s.threads() ? 1 : 0;
    }
    if (gaps.isEmpty()) {
      throw new IllegalStateException("no handoff in the measured window");
    }
    double[] sorted = gaps.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    double n = sorted.length;
    Traffic t = new Traffic(before, after);
    StringBuilder byCommand = new StringBuilder("{");
    for (Map.Entry<String, Long> e : t.byCommand.entrySet()) {
      byCommand.append(byCommand.length() > 1 ? ", " : "").append('"').append(e.getKey())
          .append("\": ").append(String.format(Locale.ROOT, "%.4f", e.getValue() / n));
    }
    byCommand.append('}');
    double seconds = (to - from) / 1e9;
    String extra = String.format(Locale.ROOT,
        "{\"processes\": %d, \"threads_per_process\": %d, \"handoffs\": %d, \"seconds\": %.3f,"
            + " \"requests\": %d, \"scripts_per_handoff\": %.4f,"
            + " \"inner_commands_per_handoff\": %.4f, \"requests_per_handoff_by_command\": %s,"
            + " \"handoff_p50_us\": %.3f, \"handoff_max_us\": %.3f, \"same_thread_share\": %.4f,"
            + " \"same_process_share\": %.4f, %s}",
        s.processes(), s.threads(), sorted.length, seconds, t.requests, t.scripts / n,
        t.inner / n, byCommand, quantile(sorted, 0.5), sorted[sorted.length - 1],
        sameThread / n, sameProcess / n, calibration);
    return List.of(line(s, "requests_per_handoff", t.requests / n, "requests", extra),
        line(s, "handoff_p99_us", quantile(sorted, 0.99), "us", extra),
        line(s, "pairs_per_s", n / seconds, "pairs/s", extra));
  }

  /** Requests clients sent, classified as rlock-bench (bench/c/scenarios.cpp) does. */
  private static final class Traffic {
    private static final Set<String> SCRIPTS =
        Set.of("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro");
    private static final Set<String> CLIENT_LEVEL = Set.of("subscribe", "unsubscribe",
        "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe", "ping", "hello", "auth",
        "select", "echo", "multi", "exec", "discard", "quit", "readonly", "reset", "script",
        "client", "command");
    long requests;
    long scripts;
    long inner;
    final Map<String, Long> byCommand = new TreeMap<>();

    Traffic(Map<String, Long> before, Map<String, Long> after) {
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
          inner += delta;
        }
      }
    }
  }

  private static double quantile(double[] sorted, double q) {
    int rank = (int) Math.ceil(q * sorted.length);
    return sorted[Math.min(sorted.length, Math.max(rank, 1)) - 1];
  }

  private static String line(Setup s, String metric, double value, String unit, String extra) {
    return String.format(Locale.ROOT,
        "{\"scenario\": \"%s\", \"contender\": \"%s\", \"metric\": \"%s\", \"value\": %.3f,"
            + " \"unit\": \"%s\", \"extra\": %s}",
        s.scenario(), s.contender(), metric, value, unit, extra);
  }

  static void sleepNs(long ns) throws InterruptedException {
    long end = System.nanoTime() + ns;
    for (long left; (left = end - System.nanoTime()) > 0; ) {
      TimeUnit.NANOSECONDS.sleep(left);
    }
  }

  // ---- child ----

  /** The body of child `index`: answers the clock check, then runs its part until STOP. */
  static void child(Setup s, int index, Path file) throws Exception {
    boolean handoff = s.scenario().equals("handoff");
    long slots = BASE + (handoff ? 4 * handoffCapacity(s.seconds())
        : 4 * herdCapacity(s.seconds()));
    try (SharedLongs shared = new SharedLongs(file, slots, false);
        Bench.Contender c = s.factory().apply(s.url())) {
      Lock lock = s.scenario().equals("herd-fair") ? c.fairLock(lockName(s)) : c.lock(lockName(s));
      if (handoff) {
        shared.getAndAdd(READY, 1);
        answerClock(shared, index);
        handoffChild(s, shared, index, lock);
      } else {
        herdChild(s, shared, index, lock);
      }
    }
  }

  /** Answers the parent's clock check of this child (requests carry index + 1, never 0). */
  private static void answerClock(SharedLongs shared, int index) {
    long mine = index + 1;
    long last = (mine << 32) | (CALIBRATION_ROUNDS - 1);
    for (long seen = -1; seen != last; ) {
      long request = shared.get(CAL_REQUEST);
      if ((request >>> 32) == mine && request != seen) {
        shared.set(CAL_TIME, System.nanoTime());
        shared.set(CAL_ACK, request);
        seen = request;
      } else if (shared.get(STOP) != 0) {
        return;
      } else if ((request >>> 32) == mine) {
        Thread.onSpinWait(); // our check is under way: the next round comes at once
      } else {
        LockSupport.parkNanos(1_000_000);
      }
    }
  }

  private static void awaitGo(SharedLongs shared) {
    // Not in any measured path; a short park would keep both cores busy with 128 threads.
    while (shared.get(GO) == 0 && shared.get(STOP) == 0) {
      LockSupport.parkNanos(2_000_000);
    }
  }

  private static void handoffChild(Setup s, SharedLongs shared, int p, Lock lock) {
    long capacity = handoffCapacity(s.seconds());
    awaitGo(shared);
    for (long k = p; ; k += 2) {
      while (shared.get(COUNTER) < k && shared.get(STOP) == 0) {
        LockSupport.parkNanos(20_000);
      }
      if (shared.get(STOP) != 0) {
        return;
      }
      if (k >= capacity) {
        shared.set(STOP, 1);
        return;
      }
      shared.set(BASE + k, System.nanoTime());
      lock.lock();
      shared.set(BASE + capacity + k, System.nanoTime());
      shared.set(COUNTER, k + 1);
      long holdUntil = System.nanoTime() + HOLD_NS;
      for (long left; (left = holdUntil - System.nanoTime()) > 0; ) {
        LockSupport.parkNanos(left);
      }
      shared.set(BASE + 2 * capacity + k, System.nanoTime());
      lock.unlock();
      shared.set(BASE + 3 * capacity + k, System.nanoTime());
    }
  }

  private static volatile long critical;

  private static void herdChild(Setup s, SharedLongs shared, int p, Lock lock)
      throws Exception {
    long capacity = herdCapacity(s.seconds());
    List<Thread> threads = new ArrayList<>();
    Throwable[] error = new Throwable[1];
    for (int t = 0; t < s.threads(); t++) {
      int who = p * s.threads() + t;
      Thread thread = new Thread(() -> {
        shared.getAndAdd(READY, 1);
        awaitGo(shared);
        try {
          while (shared.get(STOP) == 0) {
            lock.lock();
            long acquired = System.nanoTime();
            long i = shared.getAndAdd(COUNTER, 1);
            critical = critical + 1;
            long releaseCalled = System.nanoTime();
            lock.unlock();
            long released = System.nanoTime();
            if (i >= capacity) {
              throw new IllegalStateException("more handoffs than the bench has room to record");
            }
            long at = BASE + 4 * i;
            shared.set(at, acquired);
            shared.set(at + 1, releaseCalled);
            shared.set(at + 2, released);
            shared.set(at + 3, who);
          }
        } catch (Throwable e) {
          synchronized (error) {
            if (error[0] == null) {
              error[0] = e;
            }
          }
          shared.set(STOP, 1);
        }
      });
      threads.add(thread);
      thread.start();
    }
    answerClock(shared, p); // the threads wait for GO; meanwhile the parent checks our clock
    for (Thread t : threads) {
      t.join();
    }
    if (error[0] != null) {
      throw new IllegalStateException(String.valueOf(error[0]), error[0]);
    }
  }

  static Map<String, Long> parseCommandStats(String info) {
    Map<String, Long> calls = new HashMap<>();
    for (String line : info.split("\r?\n")) {
      if (!line.startsWith("cmdstat_")) {
        continue;
      }
      int colon = line.indexOf(':');
      int at = line.indexOf("calls=");
      if (colon < 0 || at < 0) {
        continue;
      }
      int end = line.indexOf(',', at);
      calls.put(line.substring(8, colon),
          Long.parseLong(line.substring(at + 6, end < 0 ? line.length() : end)));
    }
    return calls;
  }
}
