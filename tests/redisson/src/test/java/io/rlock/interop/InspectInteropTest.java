package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;

/**
 * The operator's view of Redisson's locks: `rlock list --json` and `rlock status --json` report
 * a reentrant lock, a fair lock with a queued waiter and a read lock held by Redisson, with
 * Redisson's own owner ids ("<Redisson id>:<thread id>"); and Redisson's semaphores and latches:
 * a permit-expirable semaphore with permits held and a waiter is listed as a semaphore, a plain
 * semaphore and a latch show as counters in status. The JSON is compact and its fields come in a
 * fixed order, so exact substrings check the values.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class InspectInteropTest extends InteropTest {

  /** Runs the rlock CLI against the test server; its stdout, after checking it exited 0. */
  private static String cli(String... args) throws Exception {
    List<String> argv = new ArrayList<>(List.of(Env.CLI));
    argv.addAll(List.of(args));
    argv.add("--url");
    argv.add(Env.URL);
    Process process = new ProcessBuilder(argv).redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (InputStream in = process.getInputStream()) {
      in.transferTo(out);
    }
    assertTrue(process.waitFor(30, TimeUnit.SECONDS), "rlock " + argv + " did not end");
    String text = out.toString(StandardCharsets.UTF_8);
    assertEquals(0, process.exitValue(), "rlock " + args[0] + " failed: " + text);
    return text;
  }

  private static String lineOf(String jsonLines, String name) {
    for (String line : jsonLines.split("\n")) {
      if (line.startsWith("{\"name\":\"" + name + "\",")) return line;
    }
    throw new AssertionError("no line for " + name + " in:\n" + jsonLines);
  }

  private static long number(String json, String field) {
    Matcher m = Pattern.compile("\"" + field + "\":(-?\\d+)").matcher(json);
    assertTrue(m.find(), field + " in " + json);
    return Long.parseLong(m.group(1));
  }

  /** An owner's holder fields when its client keeps no holder record (Redisson's never do). */
  private static final String NO_RECORD =
      ",\"host\":null,\"pid\":null,\"command\":null,\"started_ms\":null,\"since_ms\":null";

  private static void assertHas(String json, String part) {
    assertTrue(json.contains(part), "expected " + part + "\n in " + json);
  }

  /** The object without its TTL, which moves between two reads. */
  private static String withoutTtl(String json) {
    return json.replaceAll("\"ttl_ms\":-?\\d+,", "").trim();
  }

  @Test
  void listAndStatusShowRedissonHoldsWithRedissonOwnerIds() throws Exception {
    String prefix = unique("inspect") + ":";
    String id = redisson.getId();
    String me = id + ":" + Thread.currentThread().getId();

    RLock reentrant = redisson.getLock(prefix + "reentrant");
    reentrant.lock();
    reentrant.lock();
    RLock fair = redisson.getFairLock(prefix + "fair");
    fair.lock();
    CompletableFuture<Long> waiterThread = new CompletableFuture<>();
    Future<Boolean> waiter = pool.submit(() -> {
      waiterThread.complete(Thread.currentThread().getId());
      boolean got = fair.tryLock(60, 10, TimeUnit.SECONDS);
      if (got) fair.unlock();
      return got;
    });
    long queuedSince = System.currentTimeMillis();
    RReadWriteLock readWrite = redisson.getReadWriteLock(prefix + "rw");
    readWrite.readLock().lock();
    try {
      String waiting = id + ":" + waiterThread.get(10, TimeUnit.SECONDS);
      long end = System.currentTimeMillis() + 10_000;
      while (Env.fairWaiters(redisson, prefix + "fair") < 1
          || Env.subscribers(redisson, "redisson_lock__channel:{" + prefix + "fair}:" + waiting)
              < 1) {
        assertTrue(System.currentTimeMillis() < end, "the Redisson waiter never queued");
        Thread.sleep(20);
      }

      String list = cli("list", "--match", prefix + "*", "--json");
      assertEquals(3, list.trim().split("\n").length, "three locks listed:\n" + list);

      String r = lineOf(list, prefix + "reentrant");
      assertHas(r, "\"kind\":\"reentrant\",\"locked\":true,\"mode\":null,");
      assertHas(r, "\"owner_count\":1,\"owners\":[{\"owner\":\"" + me
          + "\",\"holds\":2,\"mode\":null" + NO_RECORD + "}],\"leader\":null,"
          + "\"queue_length\":0,\"queue\":[],"
          + "\"subscribers\":0,\"waiters\":0,\"token\":0,");
      long ttl = number(r, "ttl_ms");
      assertTrue(ttl > 0 && ttl <= 30_000, "Redisson's watchdog lease: " + ttl);

      String f = lineOf(list, prefix + "fair");
      assertHas(f, "\"kind\":\"fair\",\"locked\":true,\"mode\":null,");
      assertHas(f, "\"owner_count\":1,\"owners\":[{\"owner\":\"" + me
          + "\",\"holds\":1,\"mode\":null" + NO_RECORD + "}],\"leader\":null,"
          + "\"queue_length\":1,\"queue\":[{\"owner\":\""
          + waiting + "\",\"deadline_ms\":");
      assertHas(f, "\"subscribers\":1,\"waiters\":1,\"token\":0,");
      long deadline = number(f, "deadline_ms");
      assertTrue(deadline > queuedSince, "the waiter's place lasts beyond now: " + deadline);

      String rw = lineOf(list, prefix + "rw");
      assertHas(rw, "\"kind\":\"read-write\",\"locked\":true,\"mode\":\"read\",");
      assertHas(rw, "\"owner_count\":1,\"owners\":[{\"owner\":\"" + me
          + "\",\"holds\":1,\"mode\":\"read\"" + NO_RECORD + "}],\"leader\":null,"
          + "\"queue_length\":0,");

      for (String line : List.of(r, f, rw)) {
        String name = line.substring("{\"name\":\"".length(), line.indexOf("\","));
        String status = cli("status", "--json", name);
        assertEquals(withoutTtl(line), withoutTtl(status), "status --json of " + name);
      }
      String text = cli("status", prefix + "fair");
      assertHas(text, "owner: " + me + "\n");
      // Redisson keeps no holder record: who holds it is unknown to rlock.
      assertHas(text, "held by: unknown (");
      assertHas(text, "kind: fair\n");
      assertHas(text, "queued: " + waiting + " (");
    } finally {
      reentrant.unlock();
      reentrant.unlock();
      fair.unlock();
      readWrite.readLock().unlock();
    }
    assertTrue(waiter.get(30, TimeUnit.SECONDS), "the Redisson waiter got the fair lock");
    assertEquals("", cli("list", "--match", prefix + "*", "--json"), "nothing left held");
  }

  @Test
  void listAndStatusShowRedissonSemaphoresAndLatches() throws Exception {
    String prefix = unique("inspect-sem") + ":";
    RPermitExpirableSemaphore expirable = redisson.getPermitExpirableSemaphore(prefix + "pool");
    assertTrue(expirable.trySetPermits(2));
    long before = System.currentTimeMillis();
    String leased = expirable.acquire(60, TimeUnit.SECONDS);
    long after = System.currentTimeMillis();
    String unleased = expirable.acquire();
    Future<String> waiter = pool.submit(() -> expirable.tryAcquire(30, 10, TimeUnit.SECONDS));
    RSemaphore plain = redisson.getSemaphore(prefix + "plain");
    assertTrue(plain.trySetPermits(5));
    RCountDownLatch latch = redisson.getCountDownLatch(prefix + "latch");
    assertTrue(latch.trySetCount(2));
    try {
      long end = System.currentTimeMillis() + 10_000;
      while (Env.subscribers(redisson, "redisson_sc:{" + prefix + "pool}") < 1) {
        assertTrue(System.currentTimeMillis() < end, "the Redisson waiter never subscribed");
        Thread.sleep(20);
      }

      String list = cli("list", "--match", prefix + "*", "--json");
      assertEquals(1, list.trim().split("\n").length,
          "only the semaphore with permits held is listed:\n" + list);
      String line = lineOf(list, prefix + "pool");
      assertHas(line, "\"kind\":\"semaphore\",\"locked\":false,");
      assertHas(line, "\"subscribers\":1,\"waiters\":1,\"token\":0,"
          + "\"permits_available\":0,\"permits_held\":2,\"earliest_deadline_ms\":");
      long deadline = number(line, "earliest_deadline_ms");
      assertTrue(deadline >= before + 60_000 && deadline <= after + 60_000,
          "the 60 s lease's deadline: " + deadline + " not in [" + (before + 60_000) + ", "
              + (after + 60_000) + "]");
      assertEquals(line.trim(), cli("status", "--json", prefix + "pool").trim());
      String text = cli("status", prefix + "pool");
      assertHas(text, "kind: semaphore\npermits free: 0\npermits held: 2\n");

      assertHas(cli("status", "--json", prefix + "plain"),
          "\"kind\":\"counter\",\"locked\":false,");
      assertHas(cli("status", "--json", prefix + "plain"), "\"permits_available\":5,");
      assertHas(cli("status", prefix + "latch"), "kind: counter\nvalue: 2 (");

      // The leased permit given back goes to the waiter: still two held, one with a 10 s lease.
      expirable.release(leased);
      String taken = waiter.get(10, TimeUnit.SECONDS);
      assertTrue(taken != null, "the Redisson waiter got the released permit");
      String after10 = cli("status", "--json", prefix + "pool");
      assertHas(after10, "\"permits_available\":0,\"permits_held\":2,");
      long next = number(after10, "earliest_deadline_ms");
      assertTrue(next > System.currentTimeMillis() && next <= System.currentTimeMillis() + 10_000,
          "the waiter's 10 s lease is now the first to end: " + next);
      expirable.release(taken);
      expirable.release(unleased);
      assertEquals("", cli("list", "--match", prefix + "*", "--json"), "no permit held");
    } finally {
      expirable.delete();
      plain.delete();
      latch.delete();
    }
  }
}
