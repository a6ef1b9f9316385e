package io.rlock;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A TLS redis-server of a test (--port 0 --tls-port P), on certificates made by
 * tests/fixtures/tls-certs.sh in a temporary directory of this JVM, removed when it exits.
 */
final class TlsRedis implements AutoCloseable {
  private static Path certs;

  private final Process process;
  private final Path dir;
  final int port;

  private TlsRedis(Process process, Path dir, int port) {
    this.process = process;
    this.dir = dir;
    this.port = port;
  }

  /** The certificate directory (ca.crt, server.crt, client.crt, ...): made once per JVM. */
  static synchronized Path certs() throws IOException, InterruptedException {
    if (certs == null) {
      Path dir = Files.createTempDirectory("rlock-java-tls");
      Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(dir)));
      Path script = Paths.get("../../tests/fixtures/tls-certs.sh").toAbsolutePath().normalize();
      Path log = dir.resolve("tls-certs.log");
      Process make = new ProcessBuilder("bash", script.toString(), dir.resolve("certs").toString())
          .redirectErrorStream(true).redirectOutput(log.toFile()).start();
      if (!make.waitFor(120, TimeUnit.SECONDS) || make.exitValue() != 0) {
        make.destroyForcibly();
        throw new IllegalStateException(script + " failed:\n" + Files.readString(log));
      }
      certs = dir.resolve("certs");
    }
    return certs;
  }

  static Path cert(String name) throws IOException, InterruptedException {
    return certs().resolve(name);
  }

  /**
   * Starts a server presenting `certName`.crt/.key (server, expired, wrong-name), asking for
   * client certificates when `mutual`; extraArgs go to redis-server.
   */
  static TlsRedis start(String certName, boolean mutual, String... extraArgs) throws Exception {
    Path dir = Files.createTempDirectory("rlock-java-tls-redis");
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    String server = System.getenv().getOrDefault("RLOCK_TEST_REDIS_SERVER", "redis-server");
    List<String> command = new ArrayList<>(Arrays.asList(server, "--port", "0", "--tls-port",
        Integer.toString(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir", dir.toString(), "--tls-cert-file", cert(certName + ".crt").toString(),
        "--tls-key-file", cert(certName + ".key").toString(), "--tls-ca-cert-file",
        cert("ca.crt").toString(), "--tls-auth-clients", mutual ? "yes" : "no"));
    command.addAll(Arrays.asList(extraArgs));
    Process process = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(dir.resolve("redis.log").toFile()).start();
    TlsRedis redis = new TlsRedis(process, dir, port);
    try {
      redis.awaitListening();
    } catch (Exception | Error e) {
      redis.close();
      throw e;
    }
    return redis;
  }

  /**
   * A sentinel watching the TLS master on `masterPort` as "mymaster" (over TLS), itself on a
   * TLS port when `tls`, else on a plaintext one.
   */
  static TlsRedis sentinel(int masterPort, boolean tls) throws Exception {
    Path dir = Files.createTempDirectory("rlock-java-tls-sentinel");
    int port;
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = probe.getLocalPort();
    }
    String conf = (tls ? "port 0\ntls-port " + port : "port " + port) + "\n"
        + "bind 127.0.0.1\n"
        + "dir " + dir + "\n"
        + "tls-cert-file " + cert("server.crt") + "\n"
        + "tls-key-file " + cert("server.key") + "\n"
        + "tls-ca-cert-file " + cert("ca.crt") + "\n"
        + "tls-auth-clients no\n"
        + "tls-replication yes\n"
        + "sentinel monitor mymaster 127.0.0.1 " + masterPort + " 1\n";
    Path file = dir.resolve("sentinel.conf");
    Files.writeString(file, conf);
    String server = System.getenv().getOrDefault("RLOCK_TEST_REDIS_SERVER", "redis-server");
    Process process = new ProcessBuilder(server, file.toString(), "--sentinel")
        .redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
    TlsRedis sentinel = new TlsRedis(process, dir, port);
    try {
      sentinel.awaitListening();
    } catch (Exception | Error e) {
      sentinel.close();
      throw e;
    }
    return sentinel;
  }

  private void awaitListening() throws IOException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            "redis-server exited:\n" + Files.readString(dir.resolve("redis.log")));
      }
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException notYet) {
        Thread.sleep(50);
      }
    }
    throw new IllegalStateException("redis-server did not listen on TLS port " + port);
  }

  /** rediss://127.0.0.1:PORT, trusting the test CA through the URL. */
  String url() throws IOException, InterruptedException {
    return bareUrl() + "?tls_ca_file=" + cert("ca.crt");
  }

  /** rediss://127.0.0.1:PORT with no TLS option. */
  String bareUrl() {
    return "rediss://127.0.0.1:" + port;
  }

  // Throws no InterruptedException (javac -Xlint:try): an interrupt kills the server at once
  // and stays set on the thread.
  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
    deleteTree(dir);
  }

  static void deleteTree(Path root) {
    try (Stream<Path> paths = Files.walk(root)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // a temporary directory left behind is harmless
    }
  }
}
