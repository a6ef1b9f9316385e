package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

/**
 * TLS (rediss://) on redis-servers of the test's own: locks, waits and the watchdog over TLS,
 * mutual TLS, each verification mode, certificates that must be refused, plaintext/TLS mix-ups,
 * and the builder's ssl settings.
 */
@Timeout(120)
class TlsTest {
  /** In the URLs of the failing cases: no message may show it. */
  private static final String PASSWORD = "s3cret-Passw0rd";
  private static TlsRedis server;
  private static final ExecutorService POOL = Executors.newCachedThreadPool();

  @BeforeAll
  static void start() throws Exception {
    server = TlsRedis.start("server", false);
  }

  @AfterAll
  static void stop() throws Exception {
    POOL.shutdownNow();
    if (server != null) {
      server.close();
    }
  }

  private static Path cert(String name) throws Exception {
    return TlsRedis.cert(name);
  }

  /** A builder for `redis`, trusting the test CA through the builder. */
  private static RedisLockClient.Builder trusting(TlsRedis redis) throws Exception {
    return RedisLockClient.builder().url(redis.bareUrl()).sslCaFile(cert("ca.crt"));
  }

  /** The exception `connect` throws, after checking it has no password in its message. */
  private static <T extends Throwable> T refused(Class<T> type, Executable connect) {
    T e = assertThrows(type, connect);
    assertFalse(e.getMessage().contains(PASSWORD), "the password is in: " + e.getMessage());
    return e;
  }

  private static String withPassword(String url) {
    return url.replaceFirst("://", "://default:" + PASSWORD + "@");
  }

  private static RedisLockTlsException tlsFailure(RedisLockClient.Builder builder) {
    RedisLockTlsException e = refused(RedisLockTlsException.class, builder::build);
    assertEquals(-25, e.getCode());
    assertInstanceOf(RedisLockConnectionException.class, e);
    return e;
  }

  @Test
  void lockAndUnlockOverTls() throws Exception {
    try (RedisLockClient client = trusting(server).build();
        RedisLockClient other = RedisLockClient.create(server.url())) {
      String name = TestRedis.uniqueName("tls");
      RedisLock lock = client.getLock(name);
      lock.lock();
      assertTrue(other.getLock(name).isLocked(), "the hold is seen through another connection");
      assertFalse(other.getLock(name).tryLock(), "another client cannot take it");
      lock.unlock();
      assertFalse(other.getLock(name).isLocked());
      assertTrue(other.getLock(name).tryLock());
      other.getLock(name).unlock();
      // Its command connection's handshake, none resumed: nothing reconnected.
      RedisLockStats stats = client.stats();
      assertTrue(stats.getTlsHandshakes() >= 1, "TLS handshakes: " + stats.getTlsHandshakes());
      assertEquals(0, stats.getTlsSessionsResumed());
      assertEquals(0, stats.getLeaders());
    }
  }

  /** The waiter polls only every minute: the unlock message over TLS is what wakes it. */
  @Test
  void waiterIsWokenOverTls() throws Exception {
    try (RedisLockClient holder = trusting(server).build();
        RedisLockClient waiter = trusting(server).pollCap(Duration.ofSeconds(60)).build()) {
      String name = TestRedis.uniqueName("tls-wake");
      RedisLock held = holder.getLock(name);
      held.lock();
      CountDownLatch started = new CountDownLatch(1);
      Future<Boolean> waited = POOL.submit(() -> {
        RedisLock lock = waiter.getLock(name);
        started.countDown();
        boolean got = lock.tryLock(50, TimeUnit.SECONDS);
        if (got) {
          lock.unlock();
        }
        return got;
      });
      started.await();
      Thread.sleep(300); // let it subscribe and wait
      held.unlock();
      assertTrue(waited.get(40, TimeUnit.SECONDS), "the waiter got the lock");
    }
  }

  @Test
  void watchdogRenewsOverTls() throws Exception {
    try (RedisLockClient client = trusting(server).watchdogLease(Duration.ofMillis(900)).build();
        RedisLockClient other = RedisLockClient.create(server.url())) {
      String name = TestRedis.uniqueName("tls-watchdog");
      RedisLock lock = client.getLock(name);
      lock.lock();
      Thread.sleep(3000); // more than three leases: only renewals keep it
      RedisLock seen = other.getLock(name);
      assertTrue(seen.isLocked(), "the hold outlived its lease: renewed over TLS");
      assertTrue(seen.remainTimeToLive() > 0);
      assertFalse(seen.tryLock());
      lock.unlock();
      assertFalse(seen.isLocked());
    }
  }

  /** The virtual-thread worker (200 parked waiters and more) with its client on TLS. */
  @Test
  @Timeout(300)
  void virtualThreadsWaitOverTls() throws Exception {
    java.util.Map<String, String> results = VirtualThreadTest.runWorkerOn(server.url());
    assumeTrue(results != null, "no JDK 21+ (rlock.virtual.jdk, $RLOCK_VIRTUAL_JDK, /usr/lib/jvm)");
    assertEquals(VirtualThreadTest.WAITERS,
        Integer.parseInt(VirtualThreadTest.result(results, "drained")));
    assertEquals("true", VirtualThreadTest.result(results, "holder_unlocked"));
    assertEquals("true", VirtualThreadTest.result(results, "nothing_held"));
  }

  private static void lockWithClientCertificate(TlsRedis mutual) throws Exception {
    try (RedisLockClient client = trusting(mutual).sslCertificate(cert("client.crt"))
        .sslKey(cert("client.key")).build()) {
      RedisLock lock = client.getLock(TestRedis.uniqueName("mtls"));
      assertTrue(lock.tryLock());
      lock.unlock();
    }
  }

  /**
   * TLS 1.3 (what these servers negotiate by default): the server checks the client
   * certificate after the client's handshake is done, so the refusal comes with the first
   * command; the core reads the server's alert also when its write meets the close first.
   */
  @Test
  void mutualTlsNeedsTheClientCertificate() throws Exception {
    try (TlsRedis mutual = TlsRedis.start("server", true)) {
      lockWithClientCertificate(mutual);
      RedisLockTlsException e = refused(RedisLockTlsException.class, () -> RedisLockClient
          .builder().url(withPassword(mutual.bareUrl())).sslCaFile(cert("ca.crt")).build());
      assertTrue(e.getMessage().contains("client certificate"), e.getMessage());
    }
  }

  /** TLS 1.2: the client certificate is asked for inside the handshake, which fails. */
  @Test
  void mutualTlsOverTls12RefusesAMissingCertificateInTheHandshake() throws Exception {
    try (TlsRedis mutual = TlsRedis.start("server", true, "--tls-protocols", "TLSv1.2")) {
      lockWithClientCertificate(mutual);
      tlsFailure(RedisLockClient.builder().url(withPassword(mutual.bareUrl()))
          .sslCaFile(cert("ca.crt")));
    }
  }

  @Test
  void strictVerifiesTheHostName() throws Exception {
    try (RedisLockClient client =
        trusting(server).sslVerificationMode(SslVerificationMode.STRICT).build()) {
      assertFalse(client.getLock(TestRedis.uniqueName("strict")).isLocked());
    }
    RedisLockTlsException e = tlsFailure(RedisLockClient.builder()
        .url(withPassword(server.bareUrl())).sslCaFile(cert("ca.crt"))
        .sslServerName("other.invalid"));
    assertTrue(e.getMessage().contains("mismatch"), e.getMessage());
  }

  @Test
  void caOnlyAcceptsAnyNameOnATrustedChain() throws Exception {
    try (RedisLockClient client = trusting(server).sslServerName("other.invalid")
        .sslVerificationMode(SslVerificationMode.CA_ONLY).build()) {
      assertFalse(client.getLock(TestRedis.uniqueName("ca-only")).isLocked());
    }
    try (TlsRedis wrongName = TlsRedis.start("wrong-name", false)) {
      tlsFailure(trusting(wrongName));
      try (RedisLockClient client =
          trusting(wrongName).sslVerificationMode(SslVerificationMode.CA_ONLY).build()) {
        assertFalse(client.getLock(TestRedis.uniqueName("ca-only")).isLocked());
      }
    }
  }

  @Test
  void noneNeedsNoCa() throws Exception {
    tlsFailure(RedisLockClient.builder().url(withPassword(server.bareUrl()))); // system store
    try (RedisLockClient client = RedisLockClient.builder().url(server.bareUrl())
        .sslVerificationMode(SslVerificationMode.NONE).build()) {
      RedisLock lock = client.getLock(TestRedis.uniqueName("none"));
      assertTrue(lock.tryLock());
      lock.unlock();
    }
  }

  @Test
  void anUnrelatedCaIsRefused() throws Exception {
    RedisLockTlsException e = tlsFailure(RedisLockClient.builder()
        .url(withPassword(server.bareUrl())).sslCaFile(cert("other-ca.crt")));
    assertTrue(e.getMessage().contains("certificate verify failed"), e.getMessage());
  }

  @Test
  void anExpiredCertificateIsRefused() throws Exception {
    try (TlsRedis expired = TlsRedis.start("expired", false)) {
      RedisLockTlsException e = tlsFailure(RedisLockClient.builder()
          .url(withPassword(expired.bareUrl())).sslCaFile(cert("ca.crt")));
      assertTrue(e.getMessage().contains("expired"), e.getMessage());
    }
  }

  @Test
  void aPlaintextServerOnARedissUrlIsNamed() throws Exception {
    String plain = TestRedis.tcpUrl().replaceFirst("^redis://", "rediss://");
    RedisLockConnectionException e = refused(RedisLockConnectionException.class,
        () -> RedisLockClient.builder().url(withPassword(plain)).sslCaFile(cert("ca.crt"))
            .connectTimeout(Duration.ofSeconds(2)).build());
    assertTrue(e.getMessage().contains("plaintext"), e.getMessage());
  }

  @Test
  void aTlsServerOnARedisUrlIsNamed() {
    String url = withPassword("redis://127.0.0.1:" + server.port);
    RedisLockConnectionException e = refused(RedisLockConnectionException.class,
        () -> RedisLockClient.builder().url(url).connectTimeout(Duration.ofSeconds(2)).build());
    assertEquals(-5, e.getCode());
    assertTrue(e.getMessage().contains("TLS port"), e.getMessage());
  }

  /** sentinelSsl: TLS sentinels by default with rediss-sentinel://, plaintext ones when false. */
  @Test
  void sentinelSslChoosesHowTheSentinelsAreReached() throws Exception {
    try (TlsRedis tlsSentinel = TlsRedis.sentinel(server.port, true);
        TlsRedis plainSentinel = TlsRedis.sentinel(server.port, false)) {
      String name = TestRedis.uniqueName("tls-sentinel");
      try (RedisLockClient viaTls = RedisLockClient.builder()
          .url("rediss-sentinel://127.0.0.1:" + tlsSentinel.port + "/mymaster")
          .sslCaFile(cert("ca.crt")).build();
          RedisLockClient viaPlain = RedisLockClient.builder()
              .url("rediss-sentinel://127.0.0.1:" + plainSentinel.port + "/mymaster")
              .sslCaFile(cert("ca.crt")).sentinelSsl(false).build()) {
        RedisLock lock = viaTls.getLock(name);
        assertTrue(lock.tryLock());
        assertFalse(viaPlain.getLock(name).tryLock(), "both reach the same TLS master");
        lock.unlock();
        assertTrue(viaPlain.getLock(name).tryLock());
        viaPlain.getLock(name).unlock();
      }
      RedisLockConnectionException e = refused(RedisLockConnectionException.class,
          () -> RedisLockClient.builder()
              .url(withPassword("rediss-sentinel://127.0.0.1:" + tlsSentinel.port + "/mymaster"))
              .sslCaFile(cert("ca.crt")).sentinelSsl(false).build());
      assertTrue(e.getMessage().contains("TLS port"), e.getMessage());
    }
  }

  @Test
  void settingsInTheUrlAndTheBuilderCombine() throws Exception {
    try (RedisLockClient client = RedisLockClient.builder().url(server.url()).ssl(true)
        .sslMinimumVersion("TLSv1.3").sslVerificationMode(SslVerificationMode.STRICT).build()) {
      assertFalse(client.getLock(TestRedis.uniqueName("combined")).isLocked());
    }
  }

  @Test
  void badSettingsAreIllegalArgumentsNamingThem() throws Exception {
    Path ca = cert("ca.crt");
    String plain = "redis://127.0.0.1:" + server.port;
    expectBad("sslMinimumVersion", () -> RedisLockClient.builder().sslMinimumVersion("TLSv1.1"));
    expectBad("sslServerName", () -> RedisLockClient.builder().sslServerName(""));
    expectBad("sslServerName", () -> RedisLockClient.builder().sslServerName("a\0b"));
    expectBad("sslCaFile", () -> RedisLockClient.builder().sslCaFile(Path.of("")));
    expectBad("sslCaFile", () -> RedisLockClient.builder().url(plain).sslCaFile(ca).build());
    expectBad("ssl(true)", () -> RedisLockClient.builder().url(plain).ssl(true).build());
    expectBad("sslKey", () -> RedisLockClient.builder().url(server.bareUrl())
        .sslKey(cert("client.key")).build());
    expectBad("sentinelSsl", () -> RedisLockClient.builder().url(server.bareUrl())
        .sentinelSsl(false).build());
    expectBad("STRICT", () -> RedisLockClient.builder().url(server.url() + "&tls_verify=none")
        .sslVerificationMode(SslVerificationMode.STRICT).build());
    expectBad("no-such-ca.crt", () -> RedisLockClient.builder().url(server.bareUrl())
        .sslCaFile(ca.resolveSibling("no-such-ca.crt")).build());
    assertThrows(NullPointerException.class,
        () -> RedisLockClient.builder().sslVerificationMode(null));
  }

  private static void expectBad(String named, Executable call) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
    assertTrue(e.getMessage().contains(named), "expected '" + named + "' in: " + e.getMessage());
  }
}
