package io.rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * Redisson in its default cluster mode (sharded pub/sub on Redis 7) and an rlock peer on the
 * same Redis Cluster: they exclude each other, and an unlock on one side wakes a waiter on the
 * other through the unlock message (SPUBLISH) on names spread over the slots, in both
 * directions. The rlock peer polls only every 10 s and Redisson waits for the 30 s lease, so a
 * wake-up under 2 s is the message's doing.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ClusterInteropTest {
  private static final int ROUNDS = 6;
  private static final String SEEDS = Env.required("RLOCK_TEST_CLUSTER_SEEDS");
  private static RedissonClient redisson;
  private static ExecutorService pool;

  @BeforeAll
  static void start() {
    Config config = new Config();
    config.setLockWatchdogTimeout(30_000);
    for (String seed : SEEDS.split(",")) {
      config.useClusterServers().addNodeAddress("redis://" + seed);
    }
    redisson = Redisson.create(config);
    pool = Executors.newCachedThreadPool();
  }

  @AfterAll
  static void stop() {
    pool.shutdownNow();
    redisson.shutdown();
  }

  private static String url() {
    return "redis-cluster://" + SEEDS;
  }

  private static String unique(String what) {
    return "cluster-interop:" + what + ":" + UUID.randomUUID();
  }

  /** Waiters on the lock's wake-up channel, as the channel's shard shows them. */
  private static long waiting(String kind, String name) {
    switch (kind) {
      case "fair":
        return redisson.getList("redisson_lock_queue:{" + name + "}", StringCodec.INSTANCE).size();
      case "write":
        return redisson.getShardedTopic("redisson_rwlock:{" + name + "}", StringCodec.INSTANCE)
            .countSubscribers();
      default:
        return redisson.getShardedTopic("redisson_lock__channel:{" + name + "}",
            StringCodec.INSTANCE).countSubscribers();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write"})
  void eachSideExcludesTheOther(String kind) throws Exception {
    try (Peer peer = new Peer(url(), null, null)) {
      for (int round = 0; round < ROUNDS; round++) {
        String name = unique(kind + "-excl");
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
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write"})
  void rlockWaiterWakesWhenRedissonUnlocks(String kind) throws Exception {
    try (Peer peer = new Peer(url(), 30.0, 10.0)) {
      WakeUps.report(kind + ": Redisson unlock -> rlock waiter acquires (cluster)",
          WakeUps.rlockWaiterWakes(redisson, peer, ClusterInteropTest::waiting, kind,
              "cluster-interop", ROUNDS));
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"reentrant", "fenced", "fair", "write"})
  void redissonWaiterWakesWhenRlockUnlocks(String kind) throws Exception {
    try (Peer peer = new Peer(url(), null, null)) {
      WakeUps.report(kind + ": rlock unlock -> Redisson waiter acquires (cluster)",
          WakeUps.redissonWaiterWakes(redisson, peer, ClusterInteropTest::waiting, pool, kind,
              "cluster-interop", ROUNDS));
    }
  }
}
