package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * 200 virtual threads awaiting one latch, virtual threads contending for a semaphore, and
 * LeaderSelectors whose bodies run on virtual threads, in a child JVM of Java 21+ (found as
 * VirtualThreadTest finds it; skipped without one), with the default scheduler and with a
 * single carrier.
 */
@Timeout(300)
class LatchVirtualThreadTest {
  static final int WAITERS = 200;

  private static Map<String, String> run(String... options) throws Exception {
    Path jdk = VirtualThreadTest.findJdk();
    assumeTrue(jdk != null, "no JDK 21+ (rlock.virtual.jdk, $RLOCK_VIRTUAL_JDK, /usr/lib/jvm)");
    Path classes = Paths.get(RedisLock.class.getProtectionDomain().getCodeSource().getLocation()
        .toURI());
    Path testClasses = Paths.get(LatchVirtualThreadWorker.class.getProtectionDomain()
        .getCodeSource().getLocation().toURI());
    List<String> command = new ArrayList<>();
    command.add(jdk.resolve("bin").resolve("java").toString());
    command.add("--enable-native-access=ALL-UNNAMED");
    command.add("-Djava.library.path=" + System.getProperty("java.library.path"));
    command.addAll(Arrays.asList(options));
    command.addAll(Arrays.asList("-cp", classes + File.pathSeparator + testClasses,
        LatchVirtualThreadWorker.class.getName(), TestRedis.url(),
        TestRedis.uniqueName("vlatch"), Integer.toString(WAITERS)));
    Path log = Files.createTempFile("rlock-vlatch", ".log");
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

  private static void check(Map<String, String> results) {
    assertEquals(WAITERS, Long.parseLong(VirtualThreadTest.result(results, "latch_waiting")),
        "every waiter waits on a future");
    int added = Integer.parseInt(VirtualThreadTest.result(results, "latch_threads_added"));
    assertTrue(added <= VirtualThreadTest.THREAD_BUDGET,
        added + " OS threads added for " + WAITERS + " waiters");
    assertEquals("true", VirtualThreadTest.result(results, "latch_unrelated_ran"));
    assertEquals(WAITERS, Integer.parseInt(VirtualThreadTest.result(results, "latch_opened")));
    assertEquals(50, Integer.parseInt(VirtualThreadTest.result(results, "sem_done")));
    assertTrue(Integer.parseInt(VirtualThreadTest.result(results, "sem_most_inside")) <= 2);
    assertEquals(2, Integer.parseInt(VirtualThreadTest.result(results, "sem_available_after")));
    // LeaderSelector bodies on virtual threads: one at a time, terms growing, all of them led.
    assertEquals(20, Integer.parseInt(VirtualThreadTest.result(results, "leaders_led")));
    assertEquals(1, Integer.parseInt(VirtualThreadTest.result(results, "leaders_most_inside")));
    assertEquals(20, Integer.parseInt(VirtualThreadTest.result(results, "leaders_on_virtual")));
    assertEquals(0, Integer.parseInt(VirtualThreadTest.result(results, "leaders_terms_down")));
  }

  @Test
  void waitersParkOnTheDefaultScheduler() throws Exception {
    check(run());
  }

  @Test
  void oneCarrierIsEnough() throws Exception {
    check(run("-Djdk.virtualThreadScheduler.parallelism=1",
        "-Djdk.virtualThreadScheduler.maxPoolSize=1"));
  }
}
