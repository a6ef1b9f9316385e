package io.rlock.shedlock;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A throwaway redis-server of the tests ($RLOCK_TEST_REDIS_SERVER, else redis-server on the
 * PATH) on a free loopback port below the ephemeral range, one per JVM, stopped when it exits.
 */
final class TestRedis {
  private static int port;

  private TestRedis() {}

  static synchronized String url() {
    if (port == 0) {
      port = start();
    }
    return "redis://127.0.0.1:" + port;
  }

  /** One command on a fresh connection; the reply's first line (RESP), e.g. "+hash". */
  static String command(String... args) throws IOException {
    url();
    try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
      StringBuilder out = new StringBuilder("*" + args.length + "\r\n");
      for (String arg : args) {
        out.append('$').append(arg.getBytes(StandardCharsets.UTF_8).length).append("\r\n")
            .append(arg).append("\r\n");
      }
      OutputStream os = socket.getOutputStream();
      os.write(out.toString().getBytes(StandardCharsets.UTF_8));
      os.flush();
      BufferedReader in = new BufferedReader(
          new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
      String first = in.readLine();
      if (first != null && first.startsWith("*")) { // an array: its elements, one a line
        StringBuilder all = new StringBuilder(first);
        int n = Integer.parseInt(first.substring(1));
        for (int i = 0; i < n; i++) {
          String head = in.readLine();
          all.append('\n').append(head.startsWith("$") ? in.readLine() : head);
        }
        return all.toString();
      }
      return first != null && first.startsWith("$") && !first.equals("$-1") ? in.readLine() : first;
    }
  }

  private static int freePort() throws IOException {
    int low = 32768;
    try {
      low = Integer.parseInt(
          Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range")).trim().split("\\s+")[0]);
    } catch (IOException | NumberFormatException e) {
      // keep the kernel's default
    }
    int first = low > 21024 ? 20000 : 10000;
    int last = low > 21024 ? low - 1 : 11023;
    for (int i = 0; i < 100; i++) {
      int candidate = ThreadLocalRandom.current().nextInt(first, last + 1);
      try (ServerSocket probe = new ServerSocket(candidate, 1, InetAddress.getLoopbackAddress())) {
        return probe.getLocalPort();
      } catch (IOException taken) {
        // try another
      }
    }
    throw new IOException("no free loopback port in " + first + "-" + last);
  }

  private static int start() {
    String server = System.getenv().getOrDefault("RLOCK_TEST_REDIS_SERVER", "redis-server");
    try {
      int chosen = freePort();
      Path dir = Files.createTempDirectory("rlock-shedlock-redis");
      Process process = new ProcessBuilder(server, "--port", Integer.toString(chosen), "--bind",
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
          socket.connect(new InetSocketAddress("127.0.0.1", chosen), 200);
          return chosen;
        } catch (IOException notYet) {
          Thread.sleep(50);
        }
      }
      throw new IllegalStateException(server + " did not listen on port " + chosen
          + ": see " + dir.resolve("redis.log"));
    } catch (IOException e) {
      throw new IllegalStateException("cannot start " + server + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
