package io.rlock.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.rlock.LostReason;
import io.rlock.RedisLockClient;
import io.rlock.RedisLockClosedException;
import io.rlock.RedisLockStats;
import io.rlock.internal.NativeClient;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * Binds a client's statistics ({@link RedisLockClient#stats()}) to a Micrometer registry, with
 * the names every rlock binding uses (docs/metrics.md). Micrometer is an optional dependency of
 * rlock: this class is the only one that needs it.
 *
 * <pre>{@code
 * new RedisLockMetrics(client, Tags.of("rlock.client", "orders")).bindTo(registry);
 * // Spring Boot: a @Bean of type MeterBinder is bound to the application's registry.
 * }</pre>
 *
 * <p>Meters (all read from one {@code stats()} per meter read, never cached):
 * <ul>
 *   <li>FunctionCounters {@code rlock.acquires} (tag {@code rlock.outcome} = granted, timed_out,
 *       canceled, failed; with failed also {@code error.type} = the status code's name without
 *       RLOCK_, one counter per code rlock.h names: Micrometer meters are registered when bound,
 *       so every code has one from the start, 0 until seen), {@code rlock.releases} (released,
 *       failed), {@code rlock.locks.lost} ({@code rlock.lost.reason} = gone, unreachable,
 *       expired), {@code rlock.renewals} (renewed, failed), {@code rlock.reconnects},
 *       {@code rlock.failovers}, {@code rlock.cluster.redirects}, {@code rlock.scripts},
 *       {@code rlock.events.dropped}, {@code rlock.elections.won},
 *       {@code rlock.leaderships.revoked} ({@code rlock.revoke.reason} = gone, unreachable,
 *       expired, resigned, closed, failed);</li>
 *   <li>Gauges {@code rlock.holds}, {@code rlock.waiters} and {@code rlock.leaders};</li>
 *   <li>for each histogram ({@code rlock.acquire.wait.duration}, {@code rlock.hold.duration},
 *       {@code rlock.handoff.duration}, {@code rlock.command.duration}) a FunctionTimer with the
 *       client's exact count and total time.</li>
 * </ul>
 *
 * <p><b>Buckets.</b> Micrometer has no meter that takes a histogram's bucket counts from a
 * function: its histograms (Timer, DistributionSummary) are fed one sample at a time, and the
 * client keeps its own (fixed buckets, 25 µs to 1 h). Rather than re-recording samples the
 * client already counted, the buckets are exported as they are: a FunctionCounter
 * {@code <histogram>.bucket} per bucket, tagged {@code le} with the upper bound in seconds
 * ({@code +Inf} for the last), counting cumulatively like Prometheus' {@code _bucket} series
 * (the Prometheus registry names them {@code rlock_acquire_wait_duration_bucket_total}). With
 * the FunctionTimer's count and sum they are the whole histogram; a quantile over them is
 * {@code histogram_quantile} over a {@code rate} of those series, as with a native histogram.
 * They are 23 series per histogram: {@code buckets(false)} leaves them out.
 *
 * <p>A client built with statistics off binds nothing. After the client is closed, the meters
 * keep the last values read. Lock names are never tags (they are unbounded).
 */
// "exports": its API is Micrometer's, which module io.rlock requires static but not transitive
// (module-info.java says why); its users require micrometer.core themselves.
@SuppressWarnings("exports")
public final class RedisLockMetrics implements MeterBinder {
  private final RedisLockClient client;
  private final Tags tags;
  private final boolean buckets;

  /** The client's meters, without extra tags. */
  public RedisLockMetrics(RedisLockClient client) {
    this(client, Tags.empty());
  }

  /** The client's meters with {@code tags} added to each, e.g. {@code rlock.client=orders}. */
  public RedisLockMetrics(RedisLockClient client, Iterable<Tag> tags) {
    this(client, tags, true);
  }

  private RedisLockMetrics(RedisLockClient client, Iterable<Tag> tags, boolean buckets) {
    this.client = Objects.requireNonNull(client, "client");
    this.tags = Tags.of(Objects.requireNonNull(tags, "tags"));
    this.buckets = buckets;
  }

  /** A copy that exports the histograms' buckets (the default) or not. */
  public RedisLockMetrics buckets(boolean enabled) {
    return new RedisLockMetrics(client, tags, enabled);
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    Reader reader = new Reader();
    if (!reader.read(client).isEnabled()) {
      return; // statistics off: zeros would look measured
    }
    counter(registry, reader, "rlock.acquires", "Lock acquires ended, by outcome",
        RedisLockStats::getAcquiresGranted, "rlock.outcome", "granted");
    counter(registry, reader, "rlock.acquires", "Lock acquires ended, by outcome",
        RedisLockStats::getAcquiresTimedOut, "rlock.outcome", "timed_out");
    counter(registry, reader, "rlock.acquires", "Lock acquires ended, by outcome",
        RedisLockStats::getAcquiresCanceled, "rlock.outcome", "canceled");
    for (int code : NativeClient.errorCodes()) {
      if (code == NativeClient.TIMED_OUT || code == NativeClient.CANCELED) {
        continue; // outcomes of their own, never failures
      }
      counter(registry, reader, "rlock.acquires", "Lock acquires ended, by outcome",
          s -> s.getAcquiresFailedByCode().getOrDefault(code, 0L), "rlock.outcome", "failed",
          "error.type", RedisLockStats.codeName(code));
    }
    counter(registry, reader, "rlock.releases", "Lock release calls, by outcome",
        RedisLockStats::getReleases, "rlock.outcome", "released");
    counter(registry, reader, "rlock.releases", "Lock release calls, by outcome",
        RedisLockStats::getReleasesFailed, "rlock.outcome", "failed");
    for (LostReason reason : LostReason.values()) {
      counter(registry, reader, "rlock.locks.lost", "Holds lost, by reason",
          s -> s.getLocksLost(reason), "rlock.lost.reason",
          reason.name().toLowerCase(java.util.Locale.ROOT));
    }
    counter(registry, reader, "rlock.renewals", "Watchdog renewals of holds, by outcome",
        s -> s.getRenewalsSent() - s.getRenewalsFailed(), "rlock.outcome", "renewed");
    counter(registry, reader, "rlock.renewals", "Watchdog renewals of holds, by outcome",
        RedisLockStats::getRenewalsFailed, "rlock.outcome", "failed");
    counter(registry, reader, "rlock.reconnects", "Connections opened again",
        RedisLockStats::getReconnects);
    counter(registry, reader, "rlock.failovers", "Sentinel master changes followed",
        RedisLockStats::getFailovers);
    counter(registry, reader, "rlock.cluster.redirects", "Cluster MOVED and ASK answers followed",
        RedisLockStats::getClusterRedirects);
    counter(registry, reader, "rlock.scripts", "EVALSHA and EVAL commands sent",
        RedisLockStats::getScriptsSent);
    counter(registry, reader, "rlock.events.dropped", "Events dropped because the queue was full",
        RedisLockStats::getEventsDropped);
    counter(registry, reader, "rlock.elections.won",
        "Times an election of the client became leader", RedisLockStats::getElectionsWon);
    for (String[] reason : REVOKE_REASONS) {
      int code = Integer.parseInt(reason[0]);
      counter(registry, reader, "rlock.leaderships.revoked", "Leaderships that ended, by reason",
          s -> s.getLeadershipsRevokedByCode(code), "rlock.revoke.reason", reason[1]);
    }
    gauge(registry, reader, "rlock.holds", "Holds the client keeps now", RedisLockStats::getHolds);
    gauge(registry, reader, "rlock.waiters", "Acquires waiting for a lock now",
        RedisLockStats::getWaiters);
    gauge(registry, reader, "rlock.leaders", "Elections leading now",
        RedisLockStats::getLeaders);
    histogram(registry, reader, "rlock.acquire.wait.duration",
        "Wait of granted acquires, from the call to the grant", RedisLockStats::getAcquireWait);
    histogram(registry, reader, "rlock.hold.duration",
        "Holds, from the first acquire to the last release", RedisLockStats::getHold);
    histogram(registry, reader, "rlock.handoff.duration",
        "Acquires woken by an unlock message: from its arrival to the grant",
        RedisLockStats::getHandoff);
    histogram(registry, reader, "rlock.command.duration",
        "Redis commands, from the send to the reply", RedisLockStats::getCommandRoundTrip);
  }

  // rlock_revoke_reason values and their tag values, every one the C library has (3, expired,
  // has no RevokeReason constant, so the counts are read by code).
  private static final String[][] REVOKE_REASONS = {{"1", "gone"}, {"2", "unreachable"},
      {"3", "expired"}, {"4", "resigned"}, {"5", "closed"}, {"6", "failed"}};

  /** The client's latest stats; the last ones read once it is closed. */
  private static final class Reader {
    private volatile RedisLockStats last;

    RedisLockStats read(RedisLockClient client) {
      try {
        RedisLockStats now = client.stats();
        last = now;
        return now;
      } catch (RedisLockClosedException e) {
        RedisLockStats before = last;
        if (before == null) {
          throw e;
        }
        return before;
      }
    }

    double value(RedisLockClient client, ToDoubleFunction<RedisLockStats> f) {
      try {
        return f.applyAsDouble(read(client));
      } catch (RedisLockClosedException e) {
        return Double.NaN; // closed before anything was read
      }
    }
  }

  private interface Count {
    long of(RedisLockStats stats);
  }

  // The client is the meters' (weakly held) object; the functions refer to the reader only, so
  // the registry does not keep the client alive.
  private void counter(MeterRegistry registry, Reader reader, String name, String description,
      Count count, String... tagPairs) {
    FunctionCounter.builder(name, client, c -> reader.value(c, s -> count.of(s)))
        .description(description)
        .tags(tags)
        .tags(tagPairs)
        .register(registry);
  }

  private void gauge(MeterRegistry registry, Reader reader, String name, String description,
      Count count) {
    Gauge.builder(name, client, c -> reader.value(c, s -> count.of(s)))
        .description(description)
        .tags(tags)
        .register(registry);
  }

  private interface Pick {
    RedisLockStats.Histogram of(RedisLockStats stats);
  }

  private void histogram(MeterRegistry registry, Reader reader, String name, String description,
      Pick pick) {
    FunctionTimer.builder(name, client,
            c -> (long) reader.value(c, s -> pick.of(s).getCount()),
            c -> reader.value(c, s -> pick.of(s).getSumMicros()), TimeUnit.MICROSECONDS)
        .description(description)
        .tags(tags)
        .register(registry);
    if (!buckets) {
      return;
    }
    List<Duration> bounds = reader.read(client).getAcquireWait().getBounds();
    for (int i = 0; i <= bounds.size(); i++) {
      int bucket = i;
      String le = i < bounds.size() ? seconds(bounds.get(i)) : "+Inf";
      FunctionCounter.builder(name + ".bucket", client,
              c -> reader.value(c, s -> pick.of(s).getCumulativeCounts()[bucket]))
          .description(description + ": samples at most le seconds (cumulative)")
          .tags(tags)
          .tag("le", le)
          .register(registry);
    }
  }

  /** A bound in seconds as Prometheus prints it ("2.5E-5" for 25 µs, "0.001", "3600.0"). */
  static String seconds(Duration d) {
    return Double.toString(d.toNanos() / 1e9);
  }
}
