package io.rlock;

import io.rlock.internal.NativeClient;
import io.rlock.internal.NativeLock;
import io.rlock.internal.NativeSemaphore;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/** Java times to the C library's milliseconds: rounded up, checked, with the sentinels. */
final class Durations {
  private Durations() {}

  /** A wait: 0 tries once; beyond what C accepts means forever (tryLock(Long.MAX_VALUE, ...)). */
  static long waitMs(long time, TimeUnit unit, String what) {
    Objects.requireNonNull(unit, "unit");
    if (time < 0) {
      throw new IllegalArgumentException(what + " must not be negative, got " + time + " " + unit);
    }
    long ms = ceilMillis(time, unit);
    return ms >= NativeClient.MAX_DURATION_MS ? NativeLock.WAIT_FOREVER : ms;
  }

  /** A lock's lease: positive, or 0 or less for the watchdog (as in Redisson 4.7). */
  static long leaseMs(long time, TimeUnit unit) {
    Objects.requireNonNull(unit, "unit");
    if (time <= 0) {
      return NativeLock.LEASE_WATCHDOG;
    }
    return checkedMax(ceilMillis(time, unit), "leaseTime");
  }

  /**
   * A lock's tryLock wait: as {@link #waitMs(long, TimeUnit, String)}, except that a negative
   * wait tries once, as in Redisson (whose wait is the time left, and none is left).
   */
  static long tryWaitMs(long time, TimeUnit unit) {
    Objects.requireNonNull(unit, "unit");
    return time < 0 ? 0 : waitMs(time, unit, "waitTime");
  }

  /** A wait as a Duration: as {@link #waitMs(long, TimeUnit, String)}. */
  static long waitMs(Duration wait, String what) {
    Objects.requireNonNull(wait, what);
    if (wait.isNegative()) {
      throw new IllegalArgumentException(what + " must not be negative, got " + wait);
    }
    if (wait.isZero()) {
      return 0;
    }
    long ms = positiveMs(wait, what, false);
    return ms >= NativeClient.MAX_DURATION_MS ? NativeLock.WAIT_FOREVER : ms;
  }

  /**
   * An expirable permit's lease: positive, or -1 for none (the permit never expires), as in
   * Redisson's RPermitExpirableSemaphore.
   */
  static long permitLeaseMs(long time, TimeUnit unit) {
    Objects.requireNonNull(unit, "unit");
    if (time == -1) {
      return NativeSemaphore.LEASE_NONE;
    }
    if (time <= 0) {
      throw new IllegalArgumentException(
          "leaseTime must be positive (or -1: never expires), got " + time + " " + unit);
    }
    return checkedMax(ceilMillis(time, unit), "leaseTime");
  }

  /** A positive option duration (client settings). */
  static long positiveMs(Duration duration, String what) {
    return positiveMs(duration, what, true);
  }

  /** checked: refuse beyond what C accepts (a wait means forever there instead). */
  private static long positiveMs(Duration duration, String what, boolean checked) {
    Objects.requireNonNull(duration, what);
    if (duration.isNegative() || duration.isZero()) {
      throw new IllegalArgumentException(what + " must be positive, got " + duration);
    }
    long ms;
    try {
      ms = duration.toMillis();
      if (!duration.minusMillis(ms).isZero()) {
        ms++;
      }
    } catch (ArithmeticException e) {
      ms = Long.MAX_VALUE;
    }
    return checked ? checkedMax(ms, what) : ms;
  }

  private static long checkedMax(long ms, String what) {
    if (ms > NativeClient.MAX_DURATION_MS) {
      throw new IllegalArgumentException(
          what + " is too large (at most " + NativeClient.MAX_DURATION_MS + " ms)");
    }
    return ms;
  }

  private static long ceilMillis(long time, TimeUnit unit) {
    long ms = unit.toMillis(time);
    if (ms == Long.MAX_VALUE) {
      return ms;
    }
    return TimeUnit.MILLISECONDS.toNanos(ms) < unit.toNanos(time) ? ms + 1 : ms;
  }
}
