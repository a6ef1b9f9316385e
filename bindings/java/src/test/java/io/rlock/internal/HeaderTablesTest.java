package io.rlock.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rlock.RedisLockException;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The facts the Java binding keeps of the C library match it. ErrorCode is generated from rlock.h
 * at build time; what is written by hand is checked here against rlock.h (parsed): every code is
 * mapped to an exception on purpose, and every default a javadoc or docs/java.md names is the one
 * rlock.h documents (which tests/capi/header_facts_test.cpp pins to the library).
 */
class HeaderTablesTest {
  private static final Path ROOT = Paths.get("../..");
  private static final Path HEADER = ROOT.resolve("capi/include/rlock/rlock.h");

  /**
   * Codes that Errors.fromCode leaves to the base RedisLockException on purpose: the generic
   * failures (read the message), ETIMEDOUT and ECANCELED, which Acquire turns into a false
   * return or an InterruptedException before any exception is made, and EFORKED, which a JVM
   * never meets (it does not fork() and go on running Java; getCode() still tells it).
   */
  private static final Set<String> GENERIC = Set.of("OK", "ERROR", "ENOMEM", "EVERSION",
      "EINTERNAL", "EUSER", "ETIMEDOUT", "ECANCELED", "EFORKED");

  private static String read(Path path) throws IOException {
    return new String(Files.readAllBytes(path), StandardCharsets.UTF_8);
  }

  /** NAME (without RLOCK_) -> value for the items of rlock.h's enum rlock_error_code. */
  private static Map<String, Integer> headerCodes() throws IOException {
    Matcher body = Pattern
        .compile("typedef enum rlock_error_code \\{(.*?)\\} rlock_error_code;", Pattern.DOTALL)
        .matcher(read(HEADER));
    assertTrue(body.find(), "enum rlock_error_code not found in " + HEADER);
    Map<String, Integer> codes = new TreeMap<>();
    Matcher item = Pattern.compile("RLOCK_(\\w+) = (-?\\d+)").matcher(body.group(1));
    while (item.find()) {
      codes.put(item.group(1), Integer.parseInt(item.group(2)));
    }
    return codes;
  }

  @Test
  void errorCodeIsTheHeaderEnum() throws Exception {
    Map<String, Integer> generated = new TreeMap<>();
    for (Field f : ErrorCode.class.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
        generated.put(f.getName(), f.getInt(null));
      }
    }
    assertEquals(headerCodes(), generated);
  }

  @Test
  void everyCodeHasADeliberateException() throws Exception {
    for (Map.Entry<String, Integer> code : headerCodes().entrySet()) {
      RuntimeException e = Errors.fromCode(code.getValue(), "m");
      boolean generic = e.getClass() == RedisLockException.class;
      assertEquals(GENERIC.contains(code.getKey()), generic,
          code.getKey() + ": map it to an exception in Errors.fromCode, or list it in GENERIC");
      if (e instanceof RedisLockException) {
        assertEquals((int) code.getValue(), ((RedisLockException) e).getCode(), code.getKey());
      }
    }
  }

  /** C field -> the default rlock.h documents for it ("field; comment with default N"). */
  private static Map<String, Long> headerDefaults() throws IOException {
    String header = read(HEADER);
    Map<String, Long> macros = new HashMap<>();
    Matcher define =
        Pattern.compile("#define (RLOCK_\\w+) \\(\\(\\w+\\)(-?\\d+)\\w*\\)").matcher(header);
    while (define.find()) {
      macros.put(define.group(1), Long.parseLong(define.group(2)));
    }
    Map<String, Long> defaults = new HashMap<>();
    Matcher field = Pattern.compile("(\\w+);\\s*/\\*[^*]*?default (-?\\d+|RLOCK_\\w+)[^*]*\\*/")
                        .matcher(header);
    while (field.find()) {
      String value = field.group(2);
      if (!value.startsWith("RLOCK_")) {
        defaults.put(field.group(1), Long.parseLong(value));
      } else if (macros.containsKey(value)) {
        defaults.put(field.group(1), macros.get(value));
      }
    }
    return defaults;
  }

  /** Builder method (and its name in docs/java.md) -> the C field whose default it documents. */
  private static final Map<String, String> BUILDER_FIELDS = Map.of("connectTimeout",
      "connect_timeout_ms", "commandTimeout", "command_timeout_ms", "poolSize", "pool_size",
      "watchdogLease", "watchdog_lease_ms", "pollCap", "poll_cap_ms", "maxNameLength",
      "max_name_len", "fairLockWaitTimeout", "fair_wait_ms");

  private static void expectDefault(String where, String method, String number, String unit,
      Map<String, Long> defaults) {
    String field = BUILDER_FIELDS.get(method);
    assertTrue(field != null, where + ": " + method + " names a default this test does not know");
    long value = Long.parseLong(number) * ("s".equals(unit) ? 1000 : 1);
    assertEquals(defaults.get(field), value, where + ": the default of " + method);
  }

  @Test
  void documentedDefaultsAreTheHeaderOnes() throws Exception {
    Map<String, Long> defaults = headerDefaults();
    assertNotEquals(null, defaults.get("connect_timeout_ms"), "rlock.h's defaults not found");
    String client = read(Paths.get("src/main/java/io/rlock/RedisLockClient.java"));
    // "default N", "default N s" or "default N ms", possibly across a line break of the javadoc.
    Matcher doc = Pattern
        .compile("/\\*\\*[^/]*?default\\s+(?:\\*\\s+)?(\\d+)(?: (s|ms))?[^/]*?\\*/"
            + "\\s*public Builder (\\w+)\\(")
        .matcher(client);
    Set<String> seen = new HashSet<>();
    while (doc.find()) {
      expectDefault("RedisLockClient.java", doc.group(3), doc.group(1), doc.group(2), defaults);
      seen.add(doc.group(3));
    }
    assertEquals(BUILDER_FIELDS.keySet(), seen, "Builder methods whose javadoc names a default");
    Matcher prose = Pattern.compile("`(\\w+)`\\s+\\(default (\\d+)(?: (s|ms))?\\)")
                        .matcher(read(ROOT.resolve("docs/java.md")));
    boolean any = false;
    while (prose.find()) {
      expectDefault("docs/java.md", prose.group(1), prose.group(2), prose.group(3), defaults);
      any = true;
    }
    assertTrue(any, "docs/java.md no longer names a default: drop this part of the test");
  }

  @Test
  void defaultUrlIsTheHeaderDefaultAddress() throws Exception {
    String header = read(HEADER);
    Matcher host = Pattern.compile("host;\\s*/\\* default \"([^\"]+)\" \\*/").matcher(header);
    Matcher port = Pattern.compile("port;\\s*/\\* default (\\d+) \\*/").matcher(header);
    assertTrue(host.find() && port.find(), "rlock.h documents no default host and port");
    assertEquals("redis://" + host.group(1) + ":" + port.group(1),
        io.rlock.RedisLockClient.DEFAULT_URL);
  }

  /** RedisLockEvent.Kind is rlock.h's rlock_event_kind, in order from 1. */
  @Test
  void eventKindsAreTheHeaderEnum() throws Exception {
    Map<String, Integer> generated = new TreeMap<>();
    for (Field f : EventKind.class.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
        generated.put(f.getName(), f.getInt(null));
      }
    }
    Map<String, Integer> ours = new TreeMap<>();
    for (io.rlock.RedisLockEvent.Kind k : io.rlock.RedisLockEvent.Kind.values()) {
      ours.put("EVENT_" + k.name(), k.ordinal() + 1);
    }
    assertEquals(generated, ours);
  }

  /** Every status code fits the failures-by-code array of the stats, and has its name. */
  @Test
  void codesFitTheStats() throws Exception {
    Matcher define = Pattern.compile("#define RLOCK_STATS_CODES (\\d+)").matcher(read(HEADER));
    assertTrue(define.find(), "RLOCK_STATS_CODES not found in " + HEADER);
    int slots = Integer.parseInt(define.group(1));
    for (Map.Entry<String, Integer> code : headerCodes().entrySet()) {
      assertTrue(-code.getValue() < slots, code.getKey() + " is beyond RLOCK_STATS_CODES");
      assertEquals(code.getKey(), NativeClient.codeName(code.getValue()));
    }
  }
}
