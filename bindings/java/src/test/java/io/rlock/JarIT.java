package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs after the jar is built (failsafe): a JVM given only the jar (and the worker from the test
 * classes), with a java.library.path where the library is not, must load the jar's own copy.
 */
@Timeout(120)
class JarIT {
  @Test
  void theJarLoadsItsOwnNativeLibrary(@TempDir Path dir) throws Exception {
    Path jar = Paths.get(System.getProperty("rlock.jar"));
    assertTrue(Files.isRegularFile(jar), jar + " was not built");
    Path testClasses = Paths.get(CrossLanguageWorker.class.getProtectionDomain().getCodeSource()
        .getLocation().toURI());
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    Process child = new ProcessBuilder(java, "-Djava.library.path=" + dir.resolve("nothing-here"),
        "-cp", jar + File.pathSeparator + testClasses, CrossLanguageWorker.class.getName(),
        TestRedis.tcpUrl(), dir.toString(), "5", "rlock-java-test:jar")
        .redirectErrorStream(true)
        .start();
    assertTrue(child.waitFor(100, TimeUnit.SECONDS));
    String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, child.exitValue(), output);
    assertEquals("ok 5", output.trim());
    assertEquals("5", Files.readString(dir.resolve("rlock-java-test:jar.count")).trim());
  }

  /** Micrometer is optional: a JVM without it uses the client, its stats and its events. */
  @Test
  void theJarWorksWithoutMicrometer(@TempDir Path dir) throws Exception {
    Path jar = Paths.get(System.getProperty("rlock.jar"));
    Path testClasses = Paths.get(NoMicrometerWorker.class.getProtectionDomain().getCodeSource()
        .getLocation().toURI());
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    Process child = new ProcessBuilder(java, "-Djava.library.path=" + dir.resolve("nothing-here"),
        "-cp", jar + File.pathSeparator + testClasses, NoMicrometerWorker.class.getName(),
        TestRedis.tcpUrl(), TestRedis.uniqueName("no-micrometer"))
        .redirectErrorStream(true)
        .start();
    assertTrue(child.waitFor(100, TimeUnit.SECONDS));
    String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, child.exitValue(), output);
    assertEquals("ok", output.trim());
  }
}
