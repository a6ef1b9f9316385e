package io.rlock;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Optional;

/**
 * Who holds a lock and since when ({@link RedisLock#getHolder()}), from the small record every
 * rlock client keeps on Redis while it holds anything ({@code rlock_holder:{<client id>}}; the
 * lock's own keys are Redisson's, unchanged). An owner no rlock client recorded (a Redisson JVM,
 * an owner id) is not {@link #isKnown() known}: only its owner field is.
 */
public final class LockHolder {
  private final String owner;
  private final boolean known;
  private final String host;
  private final long pid;
  private final String command;
  private final Instant started;
  private final Instant since;

  LockHolder(Object[] raw) {
    long[] numbers = (long[]) raw[3];
    this.owner = text((byte[]) raw[0]);
    this.known = numbers[0] == 1;
    this.host = known ? text((byte[]) raw[1]) : null;
    this.command = known ? text((byte[]) raw[2]) : null;
    this.pid = numbers[1];
    this.started = known ? Instant.ofEpochMilli(numbers[2]) : null;
    this.since = known && numbers[3] >= 0 ? Instant.ofEpochMilli(numbers[3]) : null;
  }

  private static String text(byte[] bytes) {
    return bytes == null ? "" : new String(bytes, StandardCharsets.UTF_8);
  }

  /** The owner field, {@code "<client id>:<thread id>"} ({@code ":write"} for a writer). */
  public String getOwner() {
    return owner;
  }

  /** Whether the owner's client record was found (host, pid, command and times are known). */
  public boolean isKnown() {
    return known;
  }

  /** The holding client's host name; null when not known. */
  public String getHost() {
    return host;
  }

  /** Its process id; 0 when not known. */
  public long getPid() {
    return pid;
  }

  /** Its command line, arguments joined by spaces (256 bytes at most); null when not known. */
  public String getCommand() {
    return command;
  }

  /** When the holding client was made; null when not known. */
  public Instant getStarted() {
    return started;
  }

  /**
   * When this hold was first acquired: empty when not known, and for a hold under a second old
   * (the record lists holds from one second on).
   */
  public Optional<Instant> getSince() {
    return Optional.ofNullable(since);
  }

  @Override
  public String toString() {
    return known
        ? String.format("%s on %s, pid %d, since %s", owner, host, pid,
            since == null ? "(not recorded yet)" : since)
        : owner + " (no holder record)";
  }
}
