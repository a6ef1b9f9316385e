package io.rlock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Strings reach Redis exactly or are refused (docs/bad-input.md H3, H24): URLs and names cross
 * JNI as standard UTF-8, never modified UTF-8; a NUL in a URL and a lone surrogate anywhere are
 * IllegalArgumentExceptions.
 */
class StringsTest {
  /** The keys that start with prefix, as Redis stores them. */
  private static List<Object> keys(RawRedis raw, String prefix) throws IOException {
    @SuppressWarnings("unchecked")
    List<Object> keys = (List<Object>) raw.command("KEYS", prefix + "*");
    return keys;
  }

  @Test
  void urlWithNulIsRefusedBeforeConnecting() throws Exception {
    // A listener nobody else knows: a connection attempt would be waiting in its backlog.
    try (ServerSocket listener = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
      int port = listener.getLocalPort();
      listener.setSoTimeout(300);
      for (String url : new String[] {"redis://127.0.0.1:" + port + "\u0000garbage",
          "redis://127.0.0.1\u0000.evil:" + port, "redis://:pass\u0000word@127.0.0.1:" + port,
          "redis://us\u0000er:pw@127.0.0.1:" + port,
          "redis://127.0.0.1:" + port + "/0?sync_timeout_ms=50\u0000"}) {
        RuntimeException e = assertThrows(RuntimeException.class,
            () -> RedisLockClient.builder().url(url).connectTimeout(Duration.ofMillis(300))
                .commandTimeout(Duration.ofMillis(300)).build().close());
        assertTrue(e instanceof IllegalArgumentException, url + ": " + e);
        String message = e.getMessage();
        assertTrue(message.contains("url") && message.contains("NUL"), message);
        assertFalse(message.contains("word") || message.contains("garbage"), message);
        try (Socket accepted = listener.accept()) {
          throw new AssertionError(url + ": a connection was made from " + accepted);
        } catch (SocketTimeoutException expected) {
          // nothing connected
        }
      }
    }
  }

  @Test
  void urlIsSentAsUtf8NotModifiedUtf8() throws Exception {
    String user = "rlock-java-utf8-" + ProcessHandle.current().pid();
    String password = "pw-\uD83D\uDD12-\u00e9"; // a character outside the BMP, and one inside
    String hostPort = TestRedis.tcpUrl().substring("redis://".length());
    try (RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
      raw.command("ACL", "SETUSER", user, "reset", "on",
          (">" + password).getBytes(StandardCharsets.UTF_8), "~*", "&*", "+@all");
      try (RedisLockClient client =
          RedisLockClient.create("redis://" + user + ":" + password + "@" + hostPort)) {
        RedisLock lock = client.getLock(TestRedis.uniqueName("utf8-url"));
        assertTrue(lock.tryLock());
        lock.unlock();
      } finally {
        raw.command("ACL", "DELUSER", user);
      }
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> RedisLockClient.create("redis://:pw\uD800@" + hostPort));
    assertTrue(e.getMessage().contains("url") && e.getMessage().contains("surrogate"),
        e.getMessage());
  }

  @Test
  void namesReachRedisAsExactUtf8() throws Exception {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url());
        RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
      for (String suffix : new String[] {":\u9501\uD83D\uDD12", "\u0000after-nul",
          ":caf\u00e9\u0000\uD83D\uDE00"}) {
        String prefix = TestRedis.uniqueName("utf8");
        String name = prefix + suffix;
        byte[] expected = name.getBytes(StandardCharsets.UTF_8);
        RedisLock lock = client.getLock(name);
        assertTrue(lock.tryLock(), name);
        try {
          List<Object> keys = keys(raw, prefix);
          assertEquals(1, keys.size(), name);
          assertArrayEquals(expected, (byte[]) keys.get(0), name);
          @SuppressWarnings("unchecked")
          List<Object> fields = (List<Object>) raw.command("HKEYS", expected);
          assertEquals(client.getId() + ":" + Thread.currentThread().getId(),
              new String((byte[]) fields.get(0), StandardCharsets.UTF_8));
        } finally {
          lock.unlock();
        }
        assertEquals(List.of(), keys(raw, prefix));
      }
    }
  }

  @Test
  void loneSurrogatesAreRefusedNotReplaced() throws Exception {
    try (RedisLockClient client = RedisLockClient.create(TestRedis.url());
        RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
      String prefix = TestRedis.uniqueName("surrogate");
      for (String bad : new String[] {"\uD800", "a\uDFFFb", "\uDC80\uDC81", "\uD83D"}) {
        IllegalArgumentException e =
            assertThrows(IllegalArgumentException.class, () -> client.getLock(prefix + bad));
        assertTrue(e.getMessage().contains("lock name") && e.getMessage().contains("surrogate"),
            e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> client.fencedWrite(prefix + bad, "v", 1));
        IllegalArgumentException value = assertThrows(IllegalArgumentException.class,
            () -> client.fencedWrite(prefix, "value" + bad, 1));
        assertTrue(value.getMessage().contains("value"), value.getMessage());
      }
      assertEquals(List.of(), keys(raw, prefix));
      assertNull(raw.command("GET", prefix + "?"));
    }
  }

  @Test
  void errorMessagesAreCapped() {
    RedisLockConnectionException e = assertThrows(RedisLockConnectionException.class,
        () -> RedisLockClient.create("redis://" + "h".repeat(100_000) + ":1"));
    assertTrue(e.getMessage().getBytes(StandardCharsets.UTF_8).length <= 1024,
        "a message of " + e.getMessage().length() + " characters");
    assertTrue(e.getMessage().startsWith("cannot connect to Redis at "),
        e.getMessage().substring(0, 80));
  }
}
