package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.SslVerificationMode;

/**
 * Redisson and an rlock peer on one TLS redis-server (--tls-port, certificates from
 * tests/fixtures/tls-certs.sh): Redisson with its own TLS settings (a rediss:// address, a
 * PKCS12 trust store holding the test CA, STRICT verification), the peer with
 * rediss://...?tls_ca_file=. Each side excludes the other, and an unlock on one side wakes the
 * other's waiter through the unlock message (the peer polls every 10 s, Redisson waits for the
 * 30 s lease, so a wake-up under 2 s is the message's doing).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TlsInteropTest {
  private static final int ROUNDS = 5;
  /** Not a secret: the password PKCS12 asks for, of a file holding only the test CA. */
  private static final String TRUST_STORE_PASSWORD = "rlock-test";
  private static Path dir;
  private static Process server;
  private static int port;
  private static RedissonClient redisson;
  private static ExecutorService pool;

  @BeforeAll
  static void start() throws Exception {
    dir = Files.createTempDirectory("rlock-redisson-tls");
    Path certs = dir.resolve("certs");
    run(List.of("bash", Env.REPO.resolve("tests/fixtures/tls-certs.sh").toString(),
        certs.toString()));
    port = freePort();
    server = new ProcessBuilder("redis-server", "--port", "0", "--tls-port",
        Integer.toString(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir", dir.toString(), "--tls-cert-file", certs.resolve("server.crt").toString(),
        "--tls-key-file", certs.resolve("server.key").toString(), "--tls-ca-cert-file",
        certs.resolve("ca.crt").toString(), "--tls-auth-clients", "no")
        .redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
    awaitListening();
    // Redisson 4 keeps the SSL settings on Config (the per-server ones are deprecated).
    Config config = new Config();
    config.setLockWatchdogTimeout(30_000);
    config.setSslTruststore(trustStore(certs.resolve("ca.crt")).toUri().toURL())
        .setSslTruststorePassword(TRUST_STORE_PASSWORD)
        .setSslVerificationMode(SslVerificationMode.STRICT);
    config.useSingleServer().setAddress("rediss://127.0.0.1:" + port);
    redisson = Redisson.create(config);
    pool = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void stop() throws Exception {
    if (pool != null) {
      pool.shutdownNow();
    }
    if (redisson != null) {
      redisson.shutdown();
    }
    if (server != null) {
      server.destroy();
      server.waitFor(10, TimeUnit.SECONDS);
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  private static void run(List<String> command) throws Exception {
    Process process = new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(dir.resolve("setup.log").toFile()).start();
    if (!process.waitFor(120, TimeUnit.SECONDS) || process.exitValue() != 0) {
      process.destroyForcibly();
      throw new IllegalStateException(command + " failed:\n"
          + Files.readString(dir.resolve("setup.log")));
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return probe.getLocalPort();
    }
  }

  private static void awaitListening() throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      assertTrue(server.isAlive(), "redis-server exited: see " + dir.resolve("redis.log"));
      try (Socket socket = new Socket()) {
        socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException notYet) {
        assertTrue(System.nanoTime() < deadline, "redis-server did not listen on " + port);
        Thread.sleep(50);
      }
    }
  }

  /** A PKCS12 trust store holding the CA certificate `caFile` (PEM). */
  private static Path trustStore(Path caFile) throws Exception {
    Certificate ca;
    try (InputStream in = Files.newInputStream(caFile)) {
      ca = CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    store.setCertificateEntry("rlock-test-ca", ca);
    Path file = dir.resolve("truststore.p12");
    try (OutputStream out = Files.newOutputStream(file)) {
      store.store(out, TRUST_STORE_PASSWORD.toCharArray());
    }
    return file;
  }

  private static String url() {
    return "rediss://127.0.0.1:" + port + "?tls_ca_file=" + dir.resolve("certs/ca.crt");
  }

  private static long waiting(String kind, String name) {
    return Env.waiting(redisson, kind, name);
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced"})
  void eachSideExcludesTheOther(String kind) throws Exception {
    try (Peer peer = new Peer(url(), null, null)) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = "tls-interop:" + kind + "-excl:" + UUID.randomUUID();
        Lock lock = Env.redissonLock(redisson, kind, name);
        assertTrue(peer.ask("lock " + kind + " " + name).startsWith("locked"));
        assertFalse(pool.submit(() -> lock.tryLock()).get(30, TimeUnit.SECONDS),
            "Redisson got a lock the rlock peer holds");
        assertTrue(peer.ask("unlock " + kind + " " + name).startsWith("unlocked"));
        assertTrue(lock.tryLock(), "Redisson could not take the released lock");
        assertEquals("false", peer.ask("try " + kind + " " + name),
            "the rlock peer got a lock Redisson holds");
        lock.unlock();
        assertEquals("true", peer.ask("try " + kind + " " + name));
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced"})
  void rlockWaiterWakesWhenRedissonUnlocks(String kind) throws Exception {
    try (Peer peer = new Peer(url(), 30.0, 10.0)) {
      WakeUps.report(kind + ": Redisson unlock -> rlock waiter acquires (TLS)",
          WakeUps.rlockWaiterWakes(redisson, peer, TlsInteropTest::waiting, kind, "tls-interop",
              ROUNDS));
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced"})
  void redissonWaiterWakesWhenRlockUnlocks(String kind) throws Exception {
    try (Peer peer = new Peer(url(), null, null)) {
      WakeUps.report(kind + ": rlock unlock -> Redisson waiter acquires (TLS)",
          WakeUps.redissonWaiterWakes(redisson, peer, TlsInteropTest::waiting, pool, kind,
              "tls-interop", ROUNDS));
    }
  }
}
