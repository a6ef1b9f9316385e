package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Several JVMs contend through the cross-language worker. */
@Timeout(120)
class ProcessTest {
  @Test
  void jvmProcessesExcludeEachOther(@TempDir Path dir) throws Exception {
    String name = TestRedis.uniqueName("processes").replace(':', '-');
    int iterations = 40;
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    List<Process> workers = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      workers.add(new ProcessBuilder(java,
          "-Djava.library.path=" + System.getProperty("java.library.path"),
          "-cp", System.getProperty("java.class.path"), CrossLanguageWorker.class.getName(),
          TestRedis.tcpUrl(), dir.toString(), Integer.toString(iterations), name)
          .redirectErrorStream(true)
          .start());
    }
    for (Process worker : workers) {
      assertTrue(worker.waitFor(100, TimeUnit.SECONDS), "a worker did not finish");
      String output = new String(worker.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(0, worker.exitValue(), output);
      assertEquals("ok " + iterations, output.trim());
    }
    String count = Files.readString(dir.resolve(name + ".count"), StandardCharsets.US_ASCII);
    assertEquals(3 * iterations, Long.parseLong(count.trim()));
    assertTrue(Files.notExists(dir.resolve(name + ".inside")));
  }
}
