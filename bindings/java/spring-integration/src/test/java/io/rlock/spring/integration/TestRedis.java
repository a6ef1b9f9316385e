package io.rlock.spring.integration;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Redis server of the tests: the CTest fixture's (RLOCK_TEST_REDIS_URL) when set, else a
 * throwaway redis-server on a free loopback port, stopped when the JVM exits.
 */
final class TestRedis {
  private static final AtomicLong NAMES = new AtomicLong();
  private static String url;

  private TestRedis() {}

  static synchronized String url() {
    if (url == null) {
      String given = System.getenv("RLOCK_TEST_REDIS_URL");
      url = given != null && !given.isEmpty() ? given : startServer();
    }
    return url;
  }

  /** A registry key no other test uses. */
  static String uniqueKey(String prefix) {
    return "rlock-spring-test:" + prefix + ":" + ProcessHandle.current().pid() + ":"
        + NAMES.incrementAndGet();
  }

  private static String startServer() {
    String server = System.getenv().getOrDefault("RLOCK_TEST_REDIS_SERVER", "redis-server");
    try {
      int port;
      try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        port = probe.getLocalPort();
      }
      Path dir = Files.createTempDirectory("rlock-spring-redis");
      Process process = new ProcessBuilder(server, "--port", Integer.toString(port), "--bind",
          "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString())
          .redirectErrorStream(true)
          .redirectOutput(dir.resolve("redis.log").toFile())
          .start();
      Runtime.getRuntime().addShutdownHook(new Thread(process::destroy));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (System.nanoTime() < deadline) {
        if (!process.isAlive()) {
          throw new IllegalStateException(server + " exited: see " + dir.resolve("redis.log"));
        }
        try (Socket socket = new Socket()) {
          socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
          return "redis://127.0.0.1:" + port;
        } catch (IOException notYet) {
          Thread.sleep(50);
        }
      }
      throw new IllegalStateException(server + " did not listen on port " + port);
    } catch (IOException e) {
      throw new IllegalStateException("cannot start " + server + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
