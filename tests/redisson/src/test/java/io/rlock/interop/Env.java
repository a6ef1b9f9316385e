package io.rlock.interop;

import java.nio.file.Path;
import java.util.List;
import org.redisson.Redisson;
import org.redisson.api.RLock;
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

  /** Connections subscribed to a channel (PUBSUB NUMSUB). */
  static long subscribers(RedissonClient redisson, String channel) {
    return redisson.getTopic(channel, StringCodec.INSTANCE).countSubscribers();
  }

  /** Connections waiting for a reentrant or fenced lock: subscribed to its wake-up channel. */
  static long waiters(RedissonClient redisson, String name) {
    return subscribers(redisson, "redisson_lock__channel:{" + name + "}");
  }

  /** Waiters of a read-write lock: subscribed to its channel. */
  static long readWriteWaiters(RedissonClient redisson, String name) {
    return subscribers(redisson, "redisson_rwlock:{" + name + "}");
  }

  /** Waiters of a fair lock: owners in its queue. */
  static long fairWaiters(RedissonClient redisson, String name) {
    return redisson.getList("redisson_lock_queue:{" + name + "}", StringCodec.INSTANCE).size();
  }

  /**
   * Redisson's lock of an rlock peer/worker kind: reentrant, fenced, fair, write, non-reentrant
   * or non-reentrant-fair.
   */
  static RLock redissonLock(RedissonClient redisson, String kind, String name) {
    switch (kind) {
      case "reentrant": return redisson.getLock(name);
      case "fenced": return redisson.getFencedLock(name);
      case "fair": return redisson.getFairLock(name);
      case "write": return redisson.getReadWriteLock(name).writeLock();
      case "non-reentrant": return redisson.getNonReentrantLock(name);
      case "non-reentrant-fair": return redisson.getNonReentrantFairLock(name);
      default: throw new IllegalArgumentException("unknown kind " + kind);
    }
  }

  /** How many are waiting for the lock of that kind and name, as Redis shows it. */
  static long waiting(RedissonClient redisson, String kind, String name) {
    switch (kind) {
      case "fair":
      case "non-reentrant-fair":
        return fairWaiters(redisson, name);
      case "write": return readWriteWaiters(redisson, name);
      default: return waiters(redisson, name);
    }
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
