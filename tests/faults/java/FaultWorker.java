// The fault suite's worker on the Java binding, run as a single source file
// (java -cp rlock.jar FaultWorker.java loop ...): the semaphore and permits kinds of worker.cpp's
// loop, writing the same history lines (mode S; System.nanoTime is CLOCK_MONOTONIC on Linux,
// the clock every worker stamps with), so the permit checker covers the binding too.
//
// usage: FaultWorker loop --url U --names A,B --kind semaphore|permits [--permits N]
//        [--threads N] [--cycles N] [--hold-us N] [--wait-ms W] [--watchdog-lease-ms W]
//        [--log F] [--seed N]     (other worker options are accepted and ignored)
import io.rlock.RedisLockClient;
import io.rlock.RedisLockException;
import io.rlock.RedisPermitExpirableSemaphore;
import io.rlock.RedisSemaphore;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

public final class FaultWorker {
  private static FileOutputStream log;

  // One write per line (O_APPEND): lines of concurrent writers never interleave.
  private static synchronized void line(String text) {
    if (log == null) return;
    try {
      log.write((text + "\n").getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new RuntimeException(e);
    }
  }

  private static int code(RedisLockException e) {
    return e.getCode();
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new HashMap<>();
    for (int i = 1; i + 1 < args.length; i += 2) o.put(args[i], args[i + 1]);
    if (args.length == 0 || !args[0].equals("loop")) throw new IllegalArgumentException("mode");
    String kind = o.getOrDefault("--kind", "permits");
    if (!kind.equals("semaphore") && !kind.equals("permits")) {
      System.err.println("unknown --kind " + kind);
      System.exit(2);
    }
    if (o.containsKey("--log")) log = new FileOutputStream(o.get("--log"), true);
    String[] names = o.getOrDefault("--names", "fault").split(",");
    int permits = Integer.parseInt(o.getOrDefault("--permits", "1"));
    int threads = Integer.parseInt(o.getOrDefault("--threads", "1"));
    long cycles = Long.parseLong(o.getOrDefault("--cycles", "1000000000"));
    int holdUs = Integer.parseInt(o.getOrDefault("--hold-us", "2000"));
    long waitMs = Long.parseLong(o.getOrDefault("--wait-ms", "5000"));
    long seed = Long.parseLong(o.getOrDefault("--seed", "0"));
    RedisLockClient.Builder builder = RedisLockClient.builder().url(o.get("--url"));
    if (o.containsKey("--watchdog-lease-ms")) {
      builder.watchdogLease(Duration.ofMillis(Long.parseLong(o.get("--watchdog-lease-ms"))));
    }
    boolean expirable = kind.equals("permits");
    AtomicLong done = new AtomicLong(), acquired = new AtomicLong(), errors = new AtomicLong();
    try (RedisLockClient client = builder.build()) {
      Map<String, Object> sems = new HashMap<>();
      for (String name : names) {
        if (expirable) {
          RedisPermitExpirableSemaphore s = client.getPermitExpirableSemaphore(name);
          s.trySetPermits(permits);
          sems.put(name, s);
        } else {
          RedisSemaphore s = client.getSemaphore(name);
          s.trySetPermits(permits);
          sems.put(name, s);
        }
      }
      long pid = ProcessHandle.current().pid();
      List<Thread> pool = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        final int index = t;
        Thread th =
            new Thread(
                () -> {
                  String owner = pid + "." + index;
                  Random rng = new Random(seed * 7919 + pid * 131 + index);
                  for (long c = 0; c < cycles; c++) {
                    String name = names[rng.nextInt(names.length)];
                    Object sem = sems.get(name);
                    long start = System.nanoTime();
                    int rc;
                    String id = null;
                    try {
                      if (expirable) {
                        id =
                            ((RedisPermitExpirableSemaphore) sem)
                                .tryAcquire(Duration.ofMillis(waitMs));
                        rc = id != null ? 0 : -2;
                      } else {
                        rc =
                            ((RedisSemaphore) sem).tryAcquire(1, Duration.ofMillis(waitMs))
                                ? 0
                                : -2;
                      }
                    } catch (RedisLockException e) {
                      rc = code(e);
                    } catch (InterruptedException e) {
                      return;
                    }
                    line("acq " + owner + " " + name + " S " + start + " " + System.nanoTime()
                        + " " + rc + " 0");
                    done.incrementAndGet();
                    if (rc != 0) {
                      if (rc != -2) errors.incrementAndGet();
                      continue;
                    }
                    acquired.incrementAndGet();
                    try {
                      long us = rng.nextInt(Math.max(1, holdUs));
                      Thread.sleep(us / 1000, (int) (us % 1000) * 1000);
                    } catch (InterruptedException e) {
                      return;
                    }
                    long leave = System.nanoTime();
                    line("leave " + owner + " " + name + " S " + leave);
                    int rel = 0;
                    try {
                      if (expirable) {
                        ((RedisPermitExpirableSemaphore) sem).release(id);
                      } else {
                        ((RedisSemaphore) sem).release(1);
                      }
                    } catch (RedisLockException e) {
                      rel = code(e);
                      errors.incrementAndGet();
                    }
                    line("rel " + owner + " " + name + " S " + leave + " " + System.nanoTime()
                        + " " + rel);
                  }
                });
        th.start();
        pool.add(th);
      }
      for (Thread th : pool) th.join();
    }
    System.out.println(
        "done cycles=" + done.get() + " acquired=" + acquired.get() + " errors=" + errors.get());
  }
}
