package io.rlock;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The bounds probe of the fault suite (tests/faults/test_h_bounds.py) on the Java binding:
 * {@code --url U --prefix P [--cases A,B,...]}, speaking the lines of the C probe
 * (tests/faults/bounds_probe.c). For each case it prepares, prints "READY CASE", waits for
 * "GO", times the call and prints "RESULT CASE ELAPSED_MS OUTCOME" (OUTCOME "ok" or the status
 * name without "RLOCK_"); on "CLEAN" it releases the case's lock if it holds it ("CLEANED CASE
 * OUTCOME", "none" when it held nothing) and waits for "NEXT" before it prepares the next case.
 * "DONE" at the end. The Java binding has no extend:
 * the test does not ask for that case.
 */
public final class BoundsProbe {
  private static final long LEASE_MS = 3000;
  private static final BufferedReader STDIN =
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
  private static final Map<Integer, String> NAMES = codeNames();

  private BoundsProbe() {}

  /** A timed call; true unless it is an acquire that ran out of time. */
  private interface Call {
    boolean run() throws InterruptedException;
  }

  public static void main(String[] args) throws IOException, InterruptedException {
    Map<String, String> options = new HashMap<>();
    options.put("--cases", "try_once_free,wait_free,wait_held,release,query");
    for (int i = 0; i + 1 < args.length; i += 2) {
      options.put(args[i], args[i + 1]);
    }
    if (!options.containsKey("--url") || !options.containsKey("--prefix")) {
      fail("usage: BoundsProbe --url U --prefix P [--cases A,B,...]");
    }
    try (RedisLockClient client = RedisLockClient.builder()
        .url(options.get("--url"))
        .commandTimeout(Duration.ofMillis(1000))
        .watchdogLease(Duration.ofMillis(LEASE_MS))
        .build()) {
      for (String name : options.get("--cases").split(",")) {
        runCase(client, options.get("--prefix"), name);
      }
    }
    System.out.println("DONE");
  }

  private static void runCase(RedisLockClient client, String prefix, String name)
      throws IOException, InterruptedException {
    RedisLock lock = client.getLock(prefix + ":" + name);
    try {
      Call call = call(name, lock);
      if (name.equals("release") || name.equals("query")) {
        if (!lock.tryLock(5000, LEASE_MS, TimeUnit.MILLISECONDS)) {
          fail("the preparing acquire of " + name + " timed out");
        }
      }
      System.out.println("READY " + name);
      expectLine("GO");
      long start = System.nanoTime();
      String result = outcome(call);
      double elapsedMs = (System.nanoTime() - start) / 1e6;
      System.out.println(String.format(Locale.ROOT, "RESULT %s %.1f %s", name, elapsedMs, result));
      expectLine("CLEAN");
      String cleaned = "none";
      if (lock.isHeldByCurrentThread()) {
        cleaned = outcome(() -> {
          lock.unlock();
          return true;
        });
      }
      System.out.println("CLEANED " + name + " " + cleaned);
    } finally {
      lock.close();
    }
    expectLine("NEXT");
  }

  private static Call call(String name, RedisLock lock) {
    switch (name) {
      case "try_once_free": // the Lock interface's try-once: the watchdog lease (3000 ms)
        return lock::tryLock;
      case "wait_free":
        return () -> lock.tryLock(500, LEASE_MS, TimeUnit.MILLISECONDS);
      case "wait_held":
        return () -> lock.tryLock(1500, LEASE_MS, TimeUnit.MILLISECONDS);
      case "release":
        return () -> {
          lock.unlock();
          return true;
        };
      case "query":
        return () -> {
          lock.isLocked();
          return true;
        };
      default:
        fail("unknown case " + name);
        return null;
    }
  }

  private static String outcome(Call call) throws InterruptedException {
    try {
      return call.run() ? "ok" : "ETIMEDOUT";
    } catch (RedisLockException e) {
      return name(e.getCode());
    } catch (LockNotHeldException e) {
      return name(e.getCode());
    } catch (IllegalArgumentException e) {
      return "EINVAL";
    }
  }

  private static String name(int code) {
    return NAMES.getOrDefault(code, "E" + code);
  }

  /** The status names of rlock.h, from the class SWIG generates from it (package-private). */
  private static Map<Integer, String> codeNames() {
    Map<Integer, String> names = new HashMap<>();
    try {
      for (Field f : Class.forName("io.rlock.internal.ErrorCode").getDeclaredFields()) {
        if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
          f.setAccessible(true);
          names.put(f.getInt(null), f.getName());
        }
      }
    } catch (ReflectiveOperationException e) {
      fail("cannot read io.rlock.internal.ErrorCode: " + e);
    }
    return names;
  }

  private static void expectLine(String word) throws IOException {
    String line = STDIN.readLine();
    if (line == null || !line.trim().equals(word)) {
      fail("expected " + word + ", got " + line);
    }
  }

  private static void fail(String message) {
    System.err.println("bounds probe: " + message);
    System.exit(2);
  }
}
