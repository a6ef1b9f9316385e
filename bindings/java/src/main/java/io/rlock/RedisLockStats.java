package io.rlock;

import io.rlock.internal.NativeClient;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A snapshot of a client's statistics ({@link RedisLockClient#stats()}): counters since the
 * client was made, gauges now, and histograms of durations. Immutable. Fields are read one by
 * one, so a snapshot taken while other threads make calls may be a few calls apart between
 * fields. Lock names never appear here (they are unbounded); events carry them
 * ({@link RedisLockClient#setEventListener}).
 *
 * <p>An acquire is one lock(), tryLock() or lockAsync()... call; each round of a
 * {@link RedisMultiLock} acquire counts as a try-once acquire of every member, and its release
 * as a release of each.
 */
public final class RedisLockStats {
  private final long[] values;
  private final Map<Integer, Long> failedByCode;
  private final Histogram acquireWait;
  private final Histogram hold;
  private final Histogram handoff;
  private final Histogram commandRoundTrip;
  private final int elections; // where the election figures start
  private final Map<RevokeReason, Long> revokedByReason;

  RedisLockStats(long[] values, List<Duration> bounds) {
    this.values = values;
    int codes = (int) values[NativeClient.STATS_CODES];
    int buckets = (int) values[NativeClient.STATS_BUCKETS];
    Map<Integer, Long> failed = new TreeMap<>();
    for (int i = 0; i < codes; i++) {
      long n = values[NativeClient.STATS_HEAD + i];
      if (n != 0) {
        failed.put(-i, n);
      }
    }
    failedByCode = Collections.unmodifiableMap(failed);
    int at = NativeClient.STATS_HEAD + codes;
    int size = 2 + buckets;
    acquireWait = new Histogram(values, at, buckets, bounds);
    hold = new Histogram(values, at + size, buckets, bounds);
    handoff = new Histogram(values, at + 2 * size, buckets, bounds);
    commandRoundTrip = new Histogram(values, at + 3 * size, buckets, bounds);
    elections = at + 4 * size;
    int reasons = (int) values[NativeClient.STATS_REVOKE_REASONS];
    Map<RevokeReason, Long> revoked = new EnumMap<>(RevokeReason.class);
    for (RevokeReason reason : RevokeReason.values()) {
      long n = reason.code < reasons ? values[elections + 2 + reason.code] : 0;
      if (n != 0) {
        revoked.put(reason, n);
      }
    }
    revokedByReason = Collections.unmodifiableMap(revoked);
  }

  /**
   * False for a client built with {@code stats(false)} or the URL option {@code stats=off}:
   * everything else is then 0.
   */
  public boolean isEnabled() {
    return values[NativeClient.STATS_ENABLED] != 0;
  }

  /** Acquires that got the lock. */
  public long getAcquiresGranted() {
    return values[NativeClient.STATS_GRANTED];
  }

  /** Acquires whose wait ran out (a tryLock() of a held lock too). */
  public long getAcquiresTimedOut() {
    return values[NativeClient.STATS_TIMED_OUT];
  }

  /** Acquires cancelled (an interrupted wait, a cancelled future, a closed lock). */
  public long getAcquiresCanceled() {
    return values[NativeClient.STATS_CANCELED];
  }

  /** Acquires that failed with any other error; by code in {@link #getAcquiresFailedByCode}. */
  public long getAcquiresFailed() {
    return values[NativeClient.STATS_FAILED];
  }

  /**
   * Failed acquires by status code ({@link RedisLockException#getCode()}, such as -5 for
   * RLOCK_ECONN), for the codes seen at least once. Unmodifiable.
   */
  public Map<Integer, Long> getAcquiresFailedByCode() {
    return failedByCode;
  }

  /** The rlock.h name of a status code without the RLOCK_ prefix, e.g. "ECONN" for -5. */
  public static String codeName(int code) {
    return NativeClient.codeName(code);
  }

  /** Release calls that released a hold. */
  public long getReleases() {
    return values[NativeClient.STATS_RELEASES];
  }

  /** Release calls that failed (not held, another owner, lost, Redis unreachable...). */
  public long getReleasesFailed() {
    return values[NativeClient.STATS_RELEASES_FAILED];
  }

  /** Holds lost for a reason. */
  public long getLocksLost(LostReason reason) {
    switch (reason) {
      case GONE:
        return values[NativeClient.STATS_LOST_GONE];
      case UNREACHABLE:
        return values[NativeClient.STATS_LOST_UNREACHABLE];
      default:
        return values[NativeClient.STATS_LOST_EXPIRED];
    }
  }

  /** Holds renewed by the watchdog (one script renews many). */
  public long getRenewalsSent() {
    return values[NativeClient.STATS_RENEWALS_SENT];
  }

  /** Of the renewals sent: no answer or an error reply. */
  public long getRenewalsFailed() {
    return values[NativeClient.STATS_RENEWALS_FAILED];
  }

  /** Connections opened again after one was lost or replaced. */
  public long getReconnects() {
    return values[NativeClient.STATS_RECONNECTS];
  }

  /** Sentinel: times the master moved to another address. */
  public long getFailovers() {
    return values[NativeClient.STATS_FAILOVERS];
  }

  /** Cluster: MOVED and ASK answers followed. */
  public long getClusterRedirects() {
    return values[NativeClient.STATS_REDIRECTS];
  }

  /** EVALSHA and EVAL commands sent (renewals included). */
  public long getScriptsSent() {
    return values[NativeClient.STATS_SCRIPTS];
  }

  /** Events not delivered because the queue was full. */
  public long getEventsDropped() {
    return values[NativeClient.STATS_EVENTS_DROPPED];
  }

  /** Gauge: (lock, owner) holds the client keeps now, not lost. */
  public long getHolds() {
    return values[NativeClient.STATS_HOLDS];
  }

  /** Gauge: acquires waiting for a lock now. */
  public long getWaiters() {
    return values[NativeClient.STATS_WAITERS];
  }

  /**
   * Times an election of this client ({@link LeaderLatch}) became leader; counted whether or
   * not it has listeners.
   */
  public long getElectionsWon() {
    return values[elections];
  }

  /** Leaderships of this client's elections that ended, for any reason. */
  public long getLeadershipsRevoked() {
    return values[elections + 1];
  }

  /** Leaderships that ended for a reason. */
  public long getLeadershipsRevoked(RevokeReason reason) {
    return revokedByReason.getOrDefault(reason, 0L);
  }

  /**
   * Leaderships that ended for a reason given by its rlock.h value (rlock_revoke_reason), 0 for
   * a value out of range: for the reasons {@link RevokeReason} does not name.
   */
  public long getLeadershipsRevokedByCode(int reason) {
    int reasons = (int) values[NativeClient.STATS_REVOKE_REASONS];
    return reason >= 0 && reason < reasons ? values[elections + 2 + reason] : 0;
  }

  /** Leaderships that ended, by reason, for the reasons seen at least once. Unmodifiable. */
  public Map<RevokeReason, Long> getLeadershipsRevokedByReason() {
    return revokedByReason;
  }

  /** Gauge: elections of this client that lead now. */
  public long getLeaders() {
    return values[elections + 2 + (int) values[NativeClient.STATS_REVOKE_REASONS]];
  }

  /** TLS handshakes completed on every kind of connection, full or resumed; 0 in plaintext. */
  public long getTlsHandshakes() {
    return values[elections + 3 + (int) values[NativeClient.STATS_REVOKE_REASONS]];
  }

  /** Of the TLS handshakes, those that resumed an earlier connection's session. */
  public long getTlsSessionsResumed() {
    return values[elections + 4 + (int) values[NativeClient.STATS_REVOKE_REASONS]];
  }

  /** Granted acquires: from the call to the grant. */
  public Histogram getAcquireWait() {
    return acquireWait;
  }

  /** Holds: from the first acquire to the last release. */
  public Histogram getHold() {
    return hold;
  }

  /** Acquires woken by an unlock message: from its arrival to the grant. */
  public Histogram getHandoff() {
    return handoff;
  }

  /** Redis commands (a pipelined batch counts once): from the send to the reply. */
  public Histogram getCommandRoundTrip() {
    return commandRoundTrip;
  }

  @Override
  public String toString() {
    return "RedisLockStats{enabled=" + isEnabled() + ", granted=" + getAcquiresGranted()
        + ", timedOut=" + getAcquiresTimedOut() + ", canceled=" + getAcquiresCanceled()
        + ", failed=" + failedByCode + ", releases=" + getReleases() + ", releasesFailed="
        + getReleasesFailed() + ", holds=" + getHolds() + ", waiters=" + getWaiters()
        + ", electionsWon=" + getElectionsWon() + ", leaders=" + getLeaders() + "}";
  }

  /**
   * Durations in fixed buckets, the same for every histogram: bucket i counts the samples above
   * bound i-1 and at most bound i; the last bucket, one more than there are bounds, counts those
   * above every bound. Counts are per bucket, not cumulative ({@link #getCumulativeCounts}).
   */
  public static final class Histogram {
    private final List<Duration> bounds;
    private final long count;
    private final long sumUs;
    private final long[] buckets;

    Histogram(long[] values, int at, int bucketCount, List<Duration> bounds) {
      this.bounds = bounds;
      count = values[at];
      sumUs = values[at + 1];
      buckets = Arrays.copyOfRange(values, at + 2, at + 2 + bucketCount);
    }

    /** The upper bounds of the buckets, ascending (25 µs to 1 h). Unmodifiable. */
    public List<Duration> getBounds() {
      return bounds;
    }

    /** Samples in each bucket (a copy): one more than there are bounds. */
    public long[] getBucketCounts() {
      return buckets.clone();
    }

    /**
     * The counts as Prometheus' "le" buckets take them: element i counts the samples at most
     * bound i; the last counts every sample.
     */
    public long[] getCumulativeCounts() {
      long[] out = new long[buckets.length];
      long total = 0;
      for (int i = 0; i < buckets.length; i++) {
        total += buckets[i];
        out[i] = total;
      }
      return out;
    }

    /** Samples. */
    public long getCount() {
      return count;
    }

    /** Their total. */
    public Duration getSum() {
      return Duration.of(sumUs, ChronoUnit.MICROS);
    }

    /** Their total in microseconds, as the C library keeps it. */
    public long getSumMicros() {
      return sumUs;
    }
  }
}
