package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Virtual threads, in a child JVM of Java 21 or newer (VirtualThreadWorker): the JDK is the
 * system property rlock.virtual.jdk or $RLOCK_VIRTUAL_JDK if set, else the newest JDK 21+ under
 * /usr/lib/jvm (CI machines have Temurin 25 there). Without one these tests are skipped.
 */
@Timeout(300)
class VirtualThreadTest {
  static final int WAITERS = 200;
  /** Library threads per client (the budget) plus carriers and JVM housekeeping. */
  static final int THREAD_BUDGET = 16 + Runtime.getRuntime().availableProcessors() + 8;

  private static final Map<String, String> RESULTS = new HashMap<>();
  private static final Map<String, String> ONE_CARRIER = new HashMap<>();
  private static Path jdk;

  @BeforeAll
  static void runTheWorker() throws Exception {
    jdk = findJdk();
    assumeTrue(jdk != null, "no JDK 21+ (rlock.virtual.jdk, $RLOCK_VIRTUAL_JDK, /usr/lib/jvm)");
    RESULTS.putAll(runWorker());
    // One carrier and no compensation: a single wait holding its carrier would stall it all.
    ONE_CARRIER.putAll(runWorker("-Djdk.virtualThreadScheduler.parallelism=1",
        "-Djdk.virtualThreadScheduler.maxPoolSize=1"));
  }

  /** Runs VirtualThreadWorker in a child JVM of the found JDK: its "key value" lines. */
  static Map<String, String> runWorker(String... options) throws Exception {
    return runWorker(jdk, TestRedis.url(), options);
  }

  /** The worker's results with its client on `url`; null without a JDK 21+. */
  static Map<String, String> runWorkerOn(String url) throws Exception {
    Path found = findJdk();
    return found == null ? null : runWorker(found, url);
  }

  private static Map<String, String> runWorker(Path jdkHome, String url, String... options)
      throws Exception {
    Path classes = Paths.get(RedisLock.class.getProtectionDomain().getCodeSource().getLocation()
        .toURI());
    Path testClasses = Paths.get(VirtualThreadWorker.class.getProtectionDomain().getCodeSource()
        .getLocation().toURI());
    List<String> command = new ArrayList<>();
    command.add(jdkHome.resolve("bin").resolve("java").toString());
    command.add("--enable-native-access=ALL-UNNAMED");
    command.add("-Djava.library.path=" + System.getProperty("java.library.path"));
    command.addAll(Arrays.asList(options));
    command.addAll(Arrays.asList("-cp", classes + File.pathSeparator + testClasses,
        VirtualThreadWorker.class.getName(), url, TestRedis.uniqueName("virtual"),
        Integer.toString(WAITERS), Integer.toString(THREAD_BUDGET)));
    Path log = Files.createTempFile("rlock-virtual", ".log");
    try {
      Process child = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start();
      boolean ended = child.waitFor(120, TimeUnit.SECONDS);
      if (!ended) {
        child.destroyForcibly().waitFor();
      }
      String output = Files.readString(log);
      assertTrue(ended, "the worker hung (carriers held?) " + command + ":\n" + output);
      assertEquals(0, child.exitValue(), command + ":\n" + output);
      assertTrue(output.contains("\nend"), output);
      Map<String, String> results = new HashMap<>();
      Matcher line = Pattern.compile("(?m)^(\\w+) (\\S+)$").matcher(output);
      while (line.find()) {
        results.put(line.group(1), line.group(2));
      }
      results.put("output", output);
      return results;
    } finally {
      Files.deleteIfExists(log);
    }
  }

  static Path findJdk() throws IOException {
    String given = System.getProperty("rlock.virtual.jdk", System.getenv("RLOCK_VIRTUAL_JDK"));
    if (given != null && !given.isEmpty()) {
      return Paths.get(given);
    }
    Path root = Paths.get("/usr/lib/jvm");
    if (!Files.isDirectory(root)) {
      return null;
    }
    try (Stream<Path> dirs = Files.list(root)) {
      List<Path> jdks = dirs.filter(d -> feature(d) >= 21 && Files.isExecutable(
          d.resolve("bin").resolve("java"))).collect(Collectors.toList());
      return jdks.stream().max((a, b) -> Integer.compare(feature(a), feature(b))).orElse(null);
    }
  }

  /** The feature release of a JDK directory from its release file, 0 when unknown. */
  static int feature(Path jdk) {
    try {
      for (String l : Files.readAllLines(jdk.resolve("release"), StandardCharsets.UTF_8)) {
        Matcher m = Pattern.compile("^JAVA_VERSION=\"(\\d+)").matcher(l);
        if (m.find()) {
          return Integer.parseInt(m.group(1));
        }
      }
    } catch (IOException | RuntimeException e) {
      return 0;
    }
    return 0;
  }

  static String result(String key) {
    return result(RESULTS, key);
  }

  static String result(Map<String, String> results, String key) {
    String value = results.get(key);
    assertTrue(value != null, "no '" + key + "' in:\n" + results.get("output"));
    return value;
  }

  @Test
  void waitersParkAndDrainWhileAnUnrelatedVirtualThreadRuns() {
    assertEquals(WAITERS, Long.parseLong(result("waiting")), "every waiter waits on a future");
    assertTrue(Long.parseLong(result("unrelated_ms")) >= 0);
    assertEquals("true", result("holder_unlocked"), "a virtual-thread holder unlocks");
    assertEquals(WAITERS, Integer.parseInt(result("drained")), "each waiter got its turn once");
    assertEquals("false", result("locked_after"));
  }

  @Test
  void osThreadsDoNotGrowWithWaiters() {
    int added = Integer.parseInt(result("threads_added"));
    assertTrue(added <= THREAD_BUDGET,
        added + " OS threads added for " + WAITERS + " waiters (budget " + THREAD_BUDGET + ")");
  }

  /** Library threads attached to the JVM are detached when they end: no thread is kept. */
  @Test
  void noThreadIsKeptAfterTheWaitersDrained() {
    int after = Integer.parseInt(result("threads_after"));
    assertTrue(after <= THREAD_BUDGET, after + " OS threads kept after the waiters drained");
  }

  @Test
  void interruptsAndTimeOutsKeepTheirMeaning() {
    assertEquals("true", result("interrupted"), "lockInterruptibly throws InterruptedException");
    assertEquals("true", result("timed_out"), "tryLock(300 ms) gives up");
    assertEquals("true", result("lock_ignores_interrupt"));
    assertEquals("true", result("interrupt_flag_kept"));
    assertEquals("true", result("nothing_held"));
  }

  @Test
  void oneCarrierIsEnough() {
    assertEquals(WAITERS, Integer.parseInt(result(ONE_CARRIER, "drained")));
    assertEquals("true", result(ONE_CARRIER, "holder_unlocked"));
    assertEquals("true", result(ONE_CARRIER, "nothing_held"));
    assertEquals(20, Integer.parseInt(result(ONE_CARRIER, "group_drained")));
  }

  @Test
  void groupsParkToo() {
    assertEquals(20, Integer.parseInt(result("group_drained")));
  }
}
