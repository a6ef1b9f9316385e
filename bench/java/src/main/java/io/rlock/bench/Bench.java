package io.rlock.bench;

import io.rlock.RedisLockClient;
import java.util.ArrayList;
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
 * JNI binding, and redisson (Redisson's RLock, default config). Prints its JSON result lines on
 * stdout, as every contender program does; errors go to stderr with exit 1. The multi-process
 * scenarios (handoff, herd, herd-fair) are in {@link Multi}.
 */
public final class Bench {
  private static final int UNCONTENDED_NAMES = 1024;

  /** One library: both lock types implement java.util.concurrent.locks.Lock. */
  interface Contender extends AutoCloseable {
    Lock lock(String name);

    Lock fairLock(String name);

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
    public Lock fairLock(String name) {
      return client.getFairLock(name);
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
    public Lock fairLock(String name) {
      return redisson.getFairLock(name);
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
    int processes = 8;
    int waiters = 1000; // many-waiters: virtual threads waiting
    int locks = 1; // many-waiters: held locks they spread over
    int child = -1; // hidden: this JVM is child N of a multi-process scenario
    String shared; // hidden: the children's shared file
  }

  private static final List<String> SCENARIOS =
      List.of("uncontended", "throughput", "handoff", "herd", "herd-fair", "many-waiters",
          "semaphore", "latch");
  /** Scenarios of Redisson only (the Java binding's semaphores are not measured yet). */
  private static final List<String> REDISSON_ONLY = List.of("semaphore", "latch");

  private static final class UsageError extends Exception {
    private static final long serialVersionUID = 1L;

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
          + " --scenario uncontended|throughput|handoff|herd|herd-fair|many-waiters"
          + "|semaphore|latch (these two: redisson only)"
          + " [--seconds S] [--threads T] [--names N] [--processes P] [--waiters N]"
          + " [--locks N]");
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
        case "--processes" -> a.processes = whole(flag, value);
        case "--waiters" -> a.waiters = whole(flag, value);
        case "--locks" -> a.locks = whole(flag, value);
        case "--child" -> a.child = whole(flag, value);
        case "--shared" -> a.shared = value;
        default -> throw new UsageError("unknown argument " + flag);
      }
    }
    if (!"rlock-java".equals(a.contender) && !"redisson".equals(a.contender)) {
      throw new UsageError("--contender must be rlock-java or redisson, got " + a.contender);
    }
    if (a.url == null) {
      throw new UsageError("--url is required");
    }
    if (!SCENARIOS.contains(a.scenario)) {
      throw new UsageError("--scenario must be one of " + String.join(", ", SCENARIOS)
          + ", got " + a.scenario);
    }
    if (a.processes < 1) {
      throw new UsageError("--processes must be at least 1, got " + a.processes);
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
    if (a.locks < 1 || a.locks > a.waiters) {
      throw new UsageError("--locks must be 1 to --waiters (" + a.waiters + "), got " + a.locks);
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

  private static Contender contender(String name, String url) {
    return name.equals("rlock-java") ? new RlockJava(url) : new RedissonContender(url);
  }

  private static void run(Args a) throws Exception {
    if (a.scenario.equals("many-waiters")) {
      manyWaiters(a);
      return;
    }
    if (REDISSON_ONLY.contains(a.scenario)) {
      primitives(a);
      return;
    }
    if (!a.scenario.equals("uncontended") && !a.scenario.equals("throughput")) {
      Multi.Setup setup = new Multi.Setup(a.contender, a.url, a.scenario, a.seconds, a.processes,
          a.threads, url -> contender(a.contender, url));
      if (a.child >= 0) {
        Multi.child(setup, a.child, java.nio.file.Paths.get(a.shared));
        return;
      }
      String pattern = "*bench:*:" + a.contender + ":*";
      List<String> lines;
      try (RedisAdmin admin = new RedisAdmin(a.url)) {
        admin.deleteMatching(pattern); // holds left by a run that died would stall this one
        try {
          lines = Multi.run(setup, admin);
        } finally {
          admin.deleteMatching(pattern);
        }
      }
      lines.forEach(System.out::println);
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

  private static void manyWaiters(Args a) throws Exception {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < a.locks; i++) {
      names.add("bench:mw:" + a.contender + ":" + i);
    }
    String pattern = "*bench:*:" + a.contender + ":*";
    List<String> lines;
    try (RedisAdmin admin = new RedisAdmin(a.url)) {
      admin.deleteMatching(pattern); // holds left by a run that died would stall this one
      try (Contender c = contender(a.contender, a.url)) {
        lines = Waiters.run(
            new Waiters.Setup(a.contender, a.waiters, a.locks, a.seconds, c::lock), admin, names);
        // Before close, which would release what rlock still holds.
        long left = admin.exists(names);
        if (left > 0) {
          admin.deleteMatching(pattern);
          throw new IllegalStateException(left + " lock(s) still locked after the run");
        }
      } finally {
        admin.deleteMatching(pattern);
      }
    }
    lines.forEach(System.out::println);
  }

  private static void primitives(Args a) throws Exception {
    if (!"redisson".equals(a.contender)) {
      throw new UsageError("--scenario " + a.scenario + " is for redisson only, not "
          + a.contender);
    }
    String pattern = "*bench:*:" + a.contender + ":*";
    List<String> lines;
    try (RedisAdmin admin = new RedisAdmin(a.url)) {
      admin.deleteMatching(pattern); // a semaphore or latch left by a run that died
      try {
        lines = a.scenario.equals("semaphore")
            ? Primitives.semaphore(a.contender, a.url, a.seconds, a.threads, admin)
            : Primitives.latch(a.contender, a.url, a.seconds, admin);
      } finally {
        admin.deleteMatching(pattern);
      }
    }
    lines.forEach(System.out::println);
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
}
