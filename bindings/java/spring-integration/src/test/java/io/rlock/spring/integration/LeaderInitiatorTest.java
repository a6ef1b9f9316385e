package io.rlock.spring.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rlock.RedisLockClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.springframework.integration.leader.Candidate;
import org.springframework.integration.leader.Context;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/**
 * Three LockRegistryLeaderInitiators, each on its own registry and client (three "nodes"):
 * one leader at a time, and another takes over when the leader stops.
 */
class LeaderInitiatorTest {
  private static final long BOUND_NS = TimeUnit.SECONDS.toNanos(15);

  /** Counts its grants and revocations. */
  static final class Node implements Candidate {
    final String id;
    final String role;
    final AtomicInteger granted = new AtomicInteger();
    final AtomicInteger revoked = new AtomicInteger();

    Node(String id, String role) {
      this.id = id;
      this.role = role;
    }

    @Override
    public String getRole() {
      return role;
    }

    @Override
    public String getId() {
      return id;
    }

    @Override
    public void onGranted(Context context) {
      granted.incrementAndGet();
    }

    @Override
    public void onRevoked(Context context) {
      revoked.incrementAndGet();
    }
  }

  @Test
  void oneLeaderAtATimeAndATakeOverWhenTheLeaderStops() throws Exception {
    String registryKey = TestRedis.uniqueKey("leader");
    List<RedisLockClient> clients = new ArrayList<>();
    List<Node> nodes = new ArrayList<>();
    List<LockRegistryLeaderInitiator> initiators = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        RedisLockClient client = RedisLockClient.create(TestRedis.url());
        clients.add(client);
        // A 2 s lease, shorter than the steady phase below: the leader keeps the lock only
        // because each heartbeat's re-entrant tryLock sets the lease again.
        RlockLockRegistry registry =
            new RlockLockRegistry(client, registryKey, Duration.ofSeconds(2));
        Node node = new Node("node-" + i, "role");
        nodes.add(node);
        LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(registry, node);
        initiator.setHeartBeatMillis(100);
        initiator.setBusyWaitMillis(50);
        initiators.add(initiator);
      }
      initiators.forEach(LockRegistryLeaderInitiator::start);

      int first = awaitOneLeader(initiators, -1);
      // Steady phase, longer than the lease: never two leaders, and no change of leader.
      assertAtMostOneLeaderFor(initiators, 2500);
      assertEquals(first, leaderIndex(initiators), "the leader kept its leadership");
      assertEquals(1, totalGrants(nodes), "one grant so far");

      initiators.get(first).stop();
      assertEventually(() -> nodes.get(first).revoked.get() == 1, "the stopped leader is revoked");
      assertFalse(initiators.get(first).getContext().isLeader());
      int second = awaitOneLeader(initiators, first);
      assertTrue(second != first);
      assertAtMostOneLeaderFor(initiators, 500);

      initiators.get(second).stop();
      int third = awaitOneLeader(initiators, second);
      assertTrue(third != first && third != second, "the last node takes over");
      assertEquals(3, totalGrants(nodes), "one grant per node");
    } finally {
      initiators.forEach(LockRegistryLeaderInitiator::destroy);
      clients.forEach(RedisLockClient::close);
    }
  }

  private static int totalGrants(List<Node> nodes) {
    return nodes.stream().mapToInt(n -> n.granted.get()).sum();
  }

  /** The index of the one leader, or -1 when none; fails when there are two. */
  private static int leaderIndex(List<LockRegistryLeaderInitiator> initiators) {
    int leader = -1;
    for (int i = 0; i < initiators.size(); i++) {
      if (initiators.get(i).getContext().isLeader()) {
        assertEquals(-1, leader, "two leaders: " + leader + " and " + i);
        leader = i;
      }
    }
    return leader;
  }

  private static int awaitOneLeader(List<LockRegistryLeaderInitiator> initiators, int notThis)
      throws InterruptedException {
    long deadline = System.nanoTime() + BOUND_NS;
    while (System.nanoTime() < deadline) {
      int leader = leaderIndex(initiators);
      if (leader >= 0 && leader != notThis) {
        return leader;
      }
      Thread.sleep(20);
    }
    throw new AssertionError("no new leader within 15 s");
  }

  private static void assertAtMostOneLeaderFor(List<LockRegistryLeaderInitiator> initiators,
      long millis) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < end) {
      leaderIndex(initiators);
      Thread.sleep(10);
    }
  }

  private static void assertEventually(BooleanSupplier condition, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + BOUND_NS;
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within 15 s: " + what);
      }
      Thread.sleep(20);
    }
  }
}
