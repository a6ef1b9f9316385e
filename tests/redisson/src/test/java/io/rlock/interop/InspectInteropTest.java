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
import org.redisson.api.RLock;
import org.redisson.api.RReadWriteLock;

/**
 * The operator's view of Redisson's locks: `rlock list --json` and `rlock status --json` report
 * a reentrant lock, a fair lock with a queued waiter and a read lock held by Redisson, with
 * Redisson's own owner ids ("<Redisson id>:<thread id>"). The JSON is compact and its fields
 * come in a fixed order, so exact substrings check the values.
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
          + "\",\"holds\":2,\"mode\":null}],\"queue_length\":0,\"queue\":[],"
          + "\"subscribers\":0,\"waiters\":0,\"token\":0}");
      long ttl = number(r, "ttl_ms");
      assertTrue(ttl > 0 && ttl <= 30_000, "Redisson's watchdog lease: " + ttl);

      String f = lineOf(list, prefix + "fair");
      assertHas(f, "\"kind\":\"fair\",\"locked\":true,\"mode\":null,");
      assertHas(f, "\"owner_count\":1,\"owners\":[{\"owner\":\"" + me
          + "\",\"holds\":1,\"mode\":null}],\"queue_length\":1,\"queue\":[{\"owner\":\""
          + waiting + "\",\"deadline_ms\":");
      assertHas(f, "\"subscribers\":1,\"waiters\":1,\"token\":0}");
      long deadline = number(f, "deadline_ms");
      assertTrue(deadline > queuedSince, "the waiter's place lasts beyond now: " + deadline);

      String rw = lineOf(list, prefix + "rw");
      assertHas(rw, "\"kind\":\"read-write\",\"locked\":true,\"mode\":\"read\",");
      assertHas(rw, "\"owner_count\":1,\"owners\":[{\"owner\":\"" + me
          + "\",\"holds\":1,\"mode\":\"read\"}],\"queue_length\":0,");

      for (String line : List.of(r, f, rw)) {
        String name = line.substring("{\"name\":\"".length(), line.indexOf("\","));
        String status = cli("status", "--json", name);
        assertEquals(withoutTtl(line), withoutTtl(status), "status --json of " + name);
      }
      String text = cli("status", prefix + "fair");
      assertHas(text, "owner: " + me + "\n");
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
}
