package io.rlock.bench;

import io.rlock.RedisLockClient;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.Lock;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The Java contenders of the rlock benchmark (run through bench/peers.sh run): rlock-java, the
 * JNI binding, and redisson (Redisson's RLock, default config). Prints one JSON line per run on
 * stdout, as every contender program does; errors go to stderr with exit 1.
 */
public final class Bench {
  private static final int UNCONTENDED_NAMES = 1024;

  /** One library: both lock types implement java.util.concurrent.locks.Lock. */
  private interface Contender extends AutoCloseable {
    Lock lock(String name);

    @Override
    void close();
  }

  private static final class RlockJava implements Contender {
    private final RedisLockClient client;

    RlockJava(String url) {
      client = RedisLockClient.create(url);
    }

    @Override
    public Lock lock(String name) {
      return client.getLock(name);
    }

    @Override
    public void close() {
      client.close();
    }
  }

  private static final class RedissonContender implements Contender {
    private final RedissonClient redisson;

    RedissonContender(String url) {
      Config config = new Config();
      config.useSingleServer().setAddress(url);
      redisson = Redisson.create(config);
    }

    @Override
    public Lock lock(String name) {
      return redisson.getLock(name);
    }

    @Override
    public void close() {
      redisson.shutdown();
    }
  }

  private static final class Args {
    String contender;
    String url;
    String scenario;
    double seconds = 10;
    int threads = 16;
    int names = 256;
    // handoff: set in the two child processes the parent starts
    int side = -1;
    String shared;
    String out;
  }

  private static final class UsageError extends Exception {
    UsageError(String message) {
      super(message);
    }
  }

  public static void main(String[] argv) {
    int code;
    try {
      run(parse(argv));
      code = 0;
    } catch (UsageError e) {
      System.err.println("rlock-bench: " + e.getMessage());
      System.err.println("usage: --contender rlock-java|redisson --url redis://HOST:PORT"
          + " --scenario uncontended|throughput [--seconds S] [--threads T] [--names N]");
      code = 2;
    } catch (Throwable e) {
      System.err.println("rlock-bench: " + e);
      code = 1;
    }
    System.exit(code);
  }

  private static Args parse(String[] argv) throws UsageError {
    Args a = new Args();
    for (int i = 0; i < argv.length; i += 2) {
      String flag = argv[i];
      if (i + 1 >= argv.length) {
        throw new UsageError(flag + " needs a value");
      }
      String value = argv[i + 1];
      switch (flag) {
        case "--contender" -> a.contender = value;
        case "--url" -> a.url = value;
        case "--scenario" -> a.scenario = value;
        case "--seconds" -> a.seconds = number(flag, value);
        case "--threads" -> a.threads = whole(flag, value);
        case "--names" -> a.names = whole(flag, value);
        case "--side" -> a.side = whole(flag, value);
        case "--shared" -> a.shared = value;
        case "--out" -> a.out = value;
        default -> throw new UsageError("unknown argument " + flag);
      }
    }
    if (!"rlock-java".equals(a.contender) && !"redisson".equals(a.contender)) {
      throw new UsageError("--contender must be rlock-java or redisson, got " + a.contender);
    }
    if (a.url == null) {
      throw new UsageError("--url is required");
    }
    if (!"uncontended".equals(a.scenario) && !"throughput".equals(a.scenario)
        && !"handoff".equals(a.scenario)) {
      throw new UsageError(
          "--scenario must be uncontended, throughput or handoff, got " + a.scenario);
    }
    if (!(a.seconds > 0)) {
      throw new UsageError("--seconds must be positive, got " + a.seconds);
    }
    if (a.threads < 1) {
      throw new UsageError("--threads must be at least 1, got " + a.threads);
    }
    if (a.names < 1) {
      throw new UsageError("--names must be at least 1, got " + a.names);
    }
    return a;
  }

  private static double number(String flag, String value) throws UsageError {
    try {
      return Double.parseDouble(value);
    } catch (NumberFormatException e) {
      throw new UsageError(flag + " must be a number, got " + value);
    }
  }

  private static int whole(String flag, String value) throws UsageError {
    try {
      return Integer.parseInt(value);
    } catch (NumberFormatException e) {
      throw new UsageError(flag + " must be a whole number, got " + value);
    }
  }

  private static void run(Args a) throws Exception {
    if (a.scenario.equals("handoff")) {
      if (a.side >= 0) {
        handoffSide(a);
      } else {
        handoff(a);
      }
      return;
    }
    boolean uncontended = a.scenario.equals("uncontended");
    List<String> names = new ArrayList<>();
    int count = uncontended ? UNCONTENDED_NAMES : a.names;
    for (int i = 0; i < count; i++) {
      names.add("bench:" + (uncontended ? "u" : "t") + ":" + a.contender + ":" + i);
    }
    String pattern = "*bench:*:" + a.contender + ":*";
    String extra;
    double value;
    try (RedisAdmin admin = new RedisAdmin(a.url)) {
      admin.deleteMatching(pattern); // holds left by a run that died would stall this one
      try (Contender c = a.contender.equals("rlock-java")
          ? new RlockJava(a.url) : new RedissonContender(a.url)) {
        double[] result = uncontended ? uncontended(c, names, a.seconds)
            : throughput(c, names, a.threads, a.seconds);
        value = result[0];
        extra = uncontended
            ? String.format("{\"pairs\": %d, \"seconds\": %s}", (long) result[1], result[2])
            : String.format("{\"threads\": %d, \"names\": %d, \"pairs\": %d, \"seconds\": %s,"
                + " \"failed_acquires\": 0}", a.threads, a.names, (long) result[1], result[2]);
        // Both keep a lock under its own name, so a key left is a hold never released.
        // Checked before close, which would release what rlock still holds.
        long left = admin.exists(names);
        if (left > 0) {
          admin.deleteMatching(pattern);
          throw new IllegalStateException(left + " lock(s) still locked after the run");
        }
      }
      admin.deleteMatching(pattern);
    }
    System.out.println("{\"scenario\": \"" + a.scenario + "\", \"contender\": \"" + a.contender
        + "\", \"metric\": \"pairs_per_s\", \"value\": " + value
        + ", \"unit\": \"pairs/s\", \"extra\": " + extra + "}");
  }

  /** Returns {pairs/s, pairs, seconds}. */
  private static double[] uncontended(Contender c, List<String> names, double seconds) {
    Lock[] locks = names.stream().map(c::lock).toArray(Lock[]::new);
    long measure = (long) (seconds * 1e9);
    long next = loop(locks, 0, Math.max(measure / 10, 200_000_000L))[0];
    long[] measured = loop(locks, next, measure);
    long pairs = measured[0] - next;
    double elapsed = measured[1] / 1e9;
    return new double[] {pairs / elapsed, pairs, elapsed};
  }

  /** Runs pairs from iteration `first` for `nanos`; returns {next iteration, elapsed ns}. */
  private static long[] loop(Lock[] locks, long first, long nanos) {
    long start = System.nanoTime();
    long deadline = start + nanos;
    long i = first;
    long now;
    while ((now = System.nanoTime()) - deadline < 0) {
      Lock l = locks[(int) (i % locks.length)];
      l.lock();
      l.unlock();
      i++;
    }
    return new long[] {i, now - start};
  }

  private static volatile boolean stop;

  private static double[] throughput(Contender c, List<String> names, int threads, double seconds)
      throws InterruptedException, ExecutionException {
    Lock[][] perThread = new Lock[threads][];
    for (int t = 0; t < threads; t++) {
      perThread[t] = names.stream().map(c::lock).toArray(Lock[]::new);
    }
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch ready = new CountDownLatch(threads);
    CountDownLatch begin = new CountDownLatch(1);
    List<Future<Long>> done = new ArrayList<>();
    for (Lock[] locks : perThread) {
      done.add(pool.submit(() -> {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        long n = 0;
        ready.countDown();
        begin.await();
        try {
          while (!stop) {
            Lock l = locks[random.nextInt(locks.length)];
            l.lock();
            l.unlock();
            n++;
          }
        } catch (Throwable e) {
          stop = true;
          throw e;
        }
        return n;
      }));
    }
    ready.await();
    long start = System.nanoTime();
    begin.countDown();
    long deadline = start + (long) (seconds * 1e9);
    for (long left; !stop && (left = deadline - System.nanoTime()) > 0; ) {
      Thread.sleep(Math.min(left / 1_000_000 + 1, 50));
    }
    stop = true;
    long pairs = 0;
    try {
      for (Future<Long> f : done) {
        pairs += f.get();
      }
    } finally {
      pool.shutdown();
    }
    double elapsed = (System.nanoTime() - start) / 1e9;
    return new double[] {pairs / elapsed, pairs, elapsed};
  }

  // ---- scenario 3: hand-off latency between two processes ----

  /** Ints of the shared file: 0 = whose turn to acquire, 1 = sides ready. */
  private static final VarHandle INTS =
      MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

  /**
   * Starts two JVMs of this program that ping-pong one lock, then turns their records into
   * the time from one side's release returning to the other's acquire returning.
   * System.nanoTime is CLOCK_MONOTONIC on Linux: one clock for both processes.
   */
  private static void handoff(Args a) throws Exception {
    String name = "bench:h:" + a.contender + ":0";
    String pattern = "*bench:h:" + a.contender + ":*";
    Path dir = Files.createTempDirectory("rlock-bench-handoff");
    try (RedisAdmin admin = new RedisAdmin(a.url)) {
      admin.deleteMatching(pattern);
      Path shared = dir.resolve("shared");
      Files.write(shared, new byte[64]);
      String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
      List<Process> sides = new ArrayList<>();
      for (int side = 0; side < 2; side++) {
        sides.add(new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
            Bench.class.getName(), "--contender", a.contender, "--url", a.url,
            "--scenario", "handoff", "--seconds", Double.toString(a.seconds),
            "--side", Integer.toString(side), "--shared", shared.toString(),
            "--out", dir.resolve("side" + side).toString())
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(ProcessBuilder.Redirect.INHERIT).start());
      }
      for (Process p : sides) {
        if (p.waitFor() != 0) {
          throw new IllegalStateException("a hand-off process failed");
        }
      }
      if (admin.exists(List.of(name)) > 0) {
        admin.deleteMatching(pattern);
        throw new IllegalStateException("the lock is still locked after the run");
      }
      admin.deleteMatching(pattern);
      // Sections of both sides in time order: {acquired, release started, released}.
      List<long[]> sections = new ArrayList<>();
      for (int side = 0; side < 2; side++) {
        for (String line : Files.readAllLines(dir.resolve("side" + side))) {
          sections.add(Arrays.stream(line.split(" ")).mapToLong(Long::parseLong).toArray());
        }
      }
      sections.sort((x, y) -> Long.compare(x[0], y[0]));
      List<Double> gaps = new ArrayList<>();
      for (int i = 1; i < sections.size(); i++) {
        if (sections.get(i)[0] < sections.get(i - 1)[1]) {
          throw new IllegalStateException("two owners overlapped");
        }
        if (i > sections.size() / 10) { // the first tenth warms up
          gaps.add((sections.get(i)[0] - sections.get(i - 1)[2]) / 1e3);
        }
      }
      if (gaps.isEmpty()) {
        throw new IllegalStateException("no hand-off was measured");
      }
      gaps.sort(null);
      String extra = "{\"handoffs\": " + gaps.size() + ", \"hold_ms\": 1}";
      String[] metrics = {"handoff_p50", "handoff_p99", "handoff_max"};
      double[] qs = {0.50, 0.99, 1.0};
      for (int m = 0; m < 3; m++) {
        int rank = (int) Math.ceil(qs[m] * gaps.size());
        double v = gaps.get(Math.min(gaps.size() - 1, Math.max(rank - 1, 0)));
        System.out.println("{\"scenario\": \"handoff\", \"contender\": \"" + a.contender
            + "\", \"metric\": \"" + metrics[m] + "\", \"value\": " + v
            + ", \"unit\": \"us\", \"extra\": " + extra + "}");
      }
    } finally {
      for (File f : dir.toFile().listFiles()) {
        f.delete();
      }
      dir.toFile().delete();
    }
  }

  /** One side: take the lock, hold it 1 ms (the other side is waiting by then), let it go. */
  private static void handoffSide(Args a) throws IOException, InterruptedException {
    int me = a.side;
    try (FileChannel ch = FileChannel.open(Path.of(a.shared), StandardOpenOption.READ,
            StandardOpenOption.WRITE);
        Contender c = a.contender.equals("rlock-java")
            ? new RlockJava(a.url) : new RedissonContender(a.url);
        PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(a.out)))) {
      MappedByteBuffer shared = ch.map(FileChannel.MapMode.READ_WRITE, 0, 64);
      Lock lock = c.lock("bench:h:" + a.contender + ":0");
      INTS.getAndAdd(shared, 4, 1);
      while ((int) INTS.getVolatile(shared, 4) < 2) {
        Thread.sleep(1);
      }
      long stop = System.nanoTime() + (long) (a.seconds * 1.1e9) + 200_000_000L;
      while (System.nanoTime() < stop) {
        while ((int) INTS.getVolatile(shared, 0) != me) {
          if (System.nanoTime() >= stop) {
            return;
          }
          Thread.sleep(0, 50_000);
        }
        lock.lock();
        long acquired = System.nanoTime();
        INTS.setVolatile(shared, 0, 1 - me);
        Thread.sleep(1);
        long releaseStart = System.nanoTime();
        lock.unlock();
        out.println(acquired + " " + releaseStart + " " + System.nanoTime());
      }
    }
  }
}
