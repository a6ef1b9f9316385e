package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.rlock.micrometer.RedisLockMetrics;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Each meter of RedisLockMetrics in a SimpleMeterRegistry against stats(). */
@Timeout(120)
class RedisLockMetricsTest extends ClientTestBase {
  static final Set<String> NAMES = Set.of("rlock.acquires", "rlock.releases", "rlock.locks.lost",
      "rlock.renewals", "rlock.reconnects", "rlock.failovers", "rlock.cluster.redirects",
      "rlock.scripts", "rlock.events.dropped", "rlock.holds", "rlock.waiters",
      "rlock.elections.won", "rlock.leaderships.revoked", "rlock.leaders",
      "rlock.acquire.wait.duration", "rlock.hold.duration", "rlock.handoff.duration",
      "rlock.command.duration", "rlock.acquire.wait.duration.bucket", "rlock.hold.duration.bucket",
      "rlock.handoff.duration.bucket", "rlock.command.duration.bucket");

  static double counter(SimpleMeterRegistry r, String name, String... tags) {
    return r.get(name).tags("rlock.client", "orders").tags(tags).functionCounter().count();
  }

  @Test
  void everyMeterEqualsStats() throws Exception {
    RedisLockClient c = StatsTest.shortLeaseClient();
    try {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      new RedisLockMetrics(c, Tags.of("rlock.client", "orders")).bindTo(registry);
      StatsTest.workload(c, client, pool);
      RedisLockStats s = c.stats();
      assertEquals(StatsTest.N + 3, s.getAcquiresGranted());

      Set<String> names = new TreeSet<>();
      for (Meter m : registry.getMeters()) {
        names.add(m.getId().getName());
        assertEquals("orders", m.getId().getTag("rlock.client"), m.getId().toString());
        for (io.micrometer.core.instrument.Tag t : m.getId().getTags()) {
          assertTrue(Set.of("rlock.client", "rlock.outcome", "error.type", "rlock.lost.reason",
              "rlock.revoke.reason", "le").contains(t.getKey()),
              "no lock name as a tag: " + m.getId());
        }
      }
      assertEquals(new TreeSet<>(NAMES), names);

      assertEquals(s.getAcquiresGranted(), counter(registry, "rlock.acquires", "rlock.outcome", "granted"));
      assertEquals(s.getAcquiresTimedOut(), counter(registry, "rlock.acquires", "rlock.outcome", "timed_out"));
      assertEquals(s.getAcquiresCanceled(), counter(registry, "rlock.acquires", "rlock.outcome", "canceled"));
      assertEquals(1.0, counter(registry, "rlock.acquires", "rlock.outcome", "failed", "error.type", "EDEADLK"));
      double failed = 0;
      for (FunctionCounter f : registry.get("rlock.acquires").tag("rlock.outcome", "failed").functionCounters()) {
        failed += f.count();
        String type = f.getId().getTag("error.type");
        assertTrue(type != null && type.matches("E[A-Z]+"), f.getId().toString());
        assertTrue(!type.equals("ETIMEDOUT") && !type.equals("ECANCELED"), type);
      }
      assertEquals(s.getAcquiresFailed(), failed);
      assertEquals(s.getReleases(), counter(registry, "rlock.releases", "rlock.outcome", "released"));
      assertEquals(s.getReleasesFailed(), counter(registry, "rlock.releases", "rlock.outcome", "failed"));
      for (LostReason reason : LostReason.values()) {
        assertEquals(s.getLocksLost(reason), counter(registry, "rlock.locks.lost",
            "rlock.lost.reason", reason.name().toLowerCase(Locale.ROOT)));
      }
      assertEquals(1.0, counter(registry, "rlock.locks.lost", "rlock.lost.reason", "gone"));
      assertEquals(s.getRenewalsSent() - s.getRenewalsFailed(),
          counter(registry, "rlock.renewals", "rlock.outcome", "renewed"));
      assertEquals(s.getRenewalsFailed(), counter(registry, "rlock.renewals", "rlock.outcome", "failed"));
      for (Map.Entry<String, Long> e : Map.of("rlock.reconnects", s.getReconnects(),
          "rlock.failovers", s.getFailovers(), "rlock.cluster.redirects", s.getClusterRedirects(),
          "rlock.scripts", s.getScriptsSent(), "rlock.events.dropped", s.getEventsDropped())
          .entrySet()) {
        assertEquals((double) e.getValue(), counter(registry, e.getKey()), e.getKey());
      }
      assertTrue(s.getScriptsSent() > 0);
      for (Map.Entry<String, Long> e : Map.of("rlock.holds", s.getHolds(), "rlock.waiters",
          s.getWaiters()).entrySet()) {
        Gauge g = registry.get(e.getKey()).gauge();
        assertEquals((double) e.getValue(), g.value(), e.getKey());
      }

      Map<String, RedisLockStats.Histogram> histograms = Map.of(
          "rlock.acquire.wait.duration", s.getAcquireWait(), "rlock.hold.duration", s.getHold(),
          "rlock.handoff.duration", s.getHandoff(), "rlock.command.duration",
          s.getCommandRoundTrip());
      for (Map.Entry<String, RedisLockStats.Histogram> e : histograms.entrySet()) {
        RedisLockStats.Histogram h = e.getValue();
        FunctionTimer timer = registry.get(e.getKey()).functionTimer();
        assertEquals((double) h.getCount(), timer.count(), e.getKey());
        assertEquals((double) h.getSumMicros(), timer.totalTime(TimeUnit.MICROSECONDS), 1e-6,
            e.getKey());
        long[] cumulative = h.getCumulativeCounts();
        List<Duration> bounds = h.getBounds();
        for (int i = 0; i < cumulative.length; i++) {
          String le = i < bounds.size() ? Double.toString(bounds.get(i).toNanos() / 1e9) : "+Inf";
          assertEquals((double) cumulative[i],
              counter(registry, e.getKey() + ".bucket", "le", le), e.getKey() + " le " + le);
        }
      }
      assertTrue(s.getHold().getCount() > 0 && s.getCommandRoundTrip().getCount() > 0);
      assertEquals("2.5E-5", registry.get("rlock.hold.duration.bucket").tag("le", "2.5E-5")
          .functionCounter().getId().getTag("le"));

      // Once closed, the meters keep the last values read.
      double granted = counter(registry, "rlock.acquires", "rlock.outcome", "granted");
      c.close();
      assertEquals(granted, counter(registry, "rlock.acquires", "rlock.outcome", "granted"));
    } finally {
      c.close();
    }
  }

  static final List<String> REVOKE_REASONS =
      List.of("gone", "unreachable", "expired", "resigned", "closed", "failed");

  /** A leadership won, then resigned: the election meters, stats() and the events agree. */
  @Test
  void electionMetersFollowAWonAndResignedLeadership() throws Exception {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    new RedisLockMetrics(client, Tags.of("rlock.client", "orders")).bindTo(registry);
    java.util.concurrent.LinkedBlockingQueue<RedisLockEvent> events =
        new java.util.concurrent.LinkedBlockingQueue<>();
    client.setEventListener(e -> {
      if (e.getKind() == RedisLockEvent.Kind.ELECTED
          || e.getKind() == RedisLockEvent.Kind.REVOKED) {
        events.add(e);
      }
    });
    String name = "metrics-election-" + System.nanoTime();
    LeaderLatch latch = client.leaderLatch(name);
    long term;
    try {
      latch.start();
      term = latch.await();
      assertEquals(1.0, counter(registry, "rlock.elections.won"));
      assertEquals(1.0, registry.get("rlock.leaders").gauge().value());
      for (String reason : REVOKE_REASONS) {
        assertEquals(0.0, counter(registry, "rlock.leaderships.revoked", "rlock.revoke.reason",
            reason), reason);
      }
    } finally {
      latch.close(); // resigns
    }
    assertEquals(1.0, counter(registry, "rlock.elections.won"));
    assertEquals(0.0, registry.get("rlock.leaders").gauge().value());
    for (String reason : REVOKE_REASONS) {
      assertEquals(reason.equals("resigned") ? 1.0 : 0.0,
          counter(registry, "rlock.leaderships.revoked", "rlock.revoke.reason", reason), reason);
    }
    RedisLockStats s = client.stats();
    assertEquals(1, s.getElectionsWon());
    assertEquals(1, s.getLeadershipsRevoked());
    assertEquals(0, s.getLeaders());
    assertEquals(Map.of(RevokeReason.RESIGNED, 1L), s.getLeadershipsRevokedByReason());
    assertEquals(1, s.getLeadershipsRevokedByCode(4));

    RedisLockEvent elected = events.poll(10, TimeUnit.SECONDS);
    RedisLockEvent revoked = events.poll(10, TimeUnit.SECONDS);
    assertTrue(elected != null && revoked != null, "events: " + elected + " " + revoked);
    assertEquals(RedisLockEvent.Kind.ELECTED, elected.getKind());
    assertEquals(name, elected.getName());
    assertEquals(term, elected.getToken());
    assertNull(elected.getRevokeReason());
    assertEquals(RedisLockEvent.Kind.REVOKED, revoked.getKind());
    assertEquals(name, revoked.getName());
    assertEquals(term, revoked.getToken());
    assertEquals(RevokeReason.RESIGNED, revoked.getRevokeReason());
    assertTrue(!elected.getOwner().isEmpty() && elected.getOwner().equals(revoked.getOwner()));
    client.setEventListener(null);
  }

  @Test
  void withoutBuckets() {
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    new RedisLockMetrics(client).buckets(false).bindTo(registry);
    assertNull(registry.find("rlock.hold.duration.bucket").meter());
    registry.get("rlock.hold.duration").functionTimer();
    assertTrue(registry.get("rlock.acquires").meter().getId().getTags().stream()
        .noneMatch(t -> t.getKey().equals("rlock.client")));
  }

  @Test
  void aClientWithStatsOffBindsNothing() {
    try (RedisLockClient off = RedisLockClient.builder().url(TestRedis.url()).stats(false)
        .build()) {
      SimpleMeterRegistry registry = new SimpleMeterRegistry();
      new RedisLockMetrics(off).bindTo(registry);
      assertTrue(registry.getMeters().isEmpty());
    }
  }
}
