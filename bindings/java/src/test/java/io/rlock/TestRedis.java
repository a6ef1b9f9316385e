package io.rlock;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Redis server of the tests: the CTest fixture's (RLOCK_TEST_REDIS_URL, and the TCP URL in
 * $RLOCK_TEST_REDIS_DIR/url) when set, else a throwaway redis-server on a free loopback port,
 * stopped when the JVM exits.
 */
final class TestRedis {
  private static final AtomicLong NAMES = new AtomicLong();
  private static String url;
  private static String tcpUrl;

  private TestRedis() {}

  /** The URL to test against (unix:// under CTest). */
  static synchronized String url() {
    if (url == null) {
      String given = System.getenv("RLOCK_TEST_REDIS_URL");
      if (given != null && !given.isEmpty()) {
        url = given;
        tcpUrl = readTcpUrl();
      } else {
        url = tcpUrl = startServer();
      }
    }
    return url;
  }

  /** A redis://127.0.0.1:PORT URL of the same server. */
  static synchronized String tcpUrl() {
    url();
    return tcpUrl != null ? tcpUrl : url;
  }

  /** A lock name no other test uses. */
  static String uniqueName(String prefix) {
    return "rlock-java-test:" + prefix + ":" + ProcessHandle.current().pid() + ":"
        + NAMES.incrementAndGet();
  }

  private static String readTcpUrl() {
    String dir = System.getenv("RLOCK_TEST_REDIS_DIR");
    if (dir == null) {
      return null;
    }
    try {
      return Files.readString(Paths.get(dir, "url"), StandardCharsets.UTF_8).trim();
    } catch (IOException e) {
      return null;
    }
  }

  private static String startServer() {
    String server = System.getenv().getOrDefault("RLOCK_TEST_REDIS_SERVER", "redis-server");
    try {
      int port;
      try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
        port = probe.getLocalPort();
      }
      Path dir = Files.createTempDirectory("rlock-java-redis");
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
