package io.rlock.interop;

import java.nio.file.Path;
import java.util.List;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/** What scripts/test-redisson.sh hands the tests: the server and the rlock programs. */
final class Env {
  private Env() {}

  /** A redis://host:port URL (Redisson does not speak unix sockets in this setup). */
  static final String URL = required("RLOCK_TEST_REDIS_URL");
  static final Path REPO = Path.of(required("RLOCK_REPO"));
  /** The Python of the venv the rlock wheel is installed in. */
  static final String PYTHON = required("RLOCK_PYTHON");
  static final String GO_WORKER = required("RLOCK_GO_WORKER");
  static final String CLI = required("RLOCK_CLI");

  static String required(String name) {
    String value = System.getenv(name);
    if (value == null || value.isEmpty()) {
      throw new IllegalStateException(name + " is not set: run scripts/test-redisson.sh");
    }
    return value;
  }

  /** A Redisson client; watchdogMs is its lockWatchdogTimeout (Redisson's default is 30 s). */
  static RedissonClient redisson(long watchdogMs) {
    Config config = new Config();
    config.setLockWatchdogTimeout(watchdogMs);
    config.useSingleServer().setAddress(URL);
    return Redisson.create(config);
  }

  /** Connections subscribed to the lock's wake-up channel: how many are waiting for it. */
  static long waiters(RedissonClient redisson, String name) {
    return redisson.getTopic("redisson_lock__channel:{" + name + "}", StringCodec.INSTANCE)
        .countSubscribers();
  }

  /** The worker commands of the cross-language contract (tests/python/test_crosslang.py). */
  static List<String> pythonWorker() {
    return List.of(PYTHON, REPO.resolve("tests/python/crosslang_worker.py").toString());
  }

  static List<String> cliWorker() {
    return List.of("bash", REPO.resolve("tests/python/crosslang_worker.sh").toString(), CLI);
  }

  static List<String> goWorker() {
    return List.of(GO_WORKER);
  }
}
