package io.rlock;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

/**
 * Something that happened to a client's locks or connections
 * ({@link RedisLockClient#setEventListener}). Immutable; what a kind does not use is empty, 0,
 * {@link Duration#ZERO} or null.
 */
public final class RedisLockEvent {
  /** What an event reports (numbered as rlock.h's rlock_event_kind). */
  public enum Kind {
    /** A lock was acquired: name, owner, threadId, waited, token. */
    ACQUIRED,
    /** A hold ended: name, owner, threadId, held (from the first acquire to the last release). */
    RELEASED,
    /** A hold was lost: name, owner, threadId, lostReason. */
    LOST,
    /** A watchdog renewal failed: name, owner, threadId, errorCode, detail (the message). */
    RENEWAL_FAILED,
    /** Sentinel: the master moved; detail is the new "host:port". */
    FAILOVER,
    /** Cluster: a MOVED or ASK answer was followed; detail is "MOVED slot host:port"... */
    REDIRECT,
    /** A key of the client's names expired (see {@code addListener}): name. */
    KEY_EXPIRED,
    /** A key of the client's names was deleted (see {@code addListener}): name. */
    KEY_DELETED,
    /** An election of the client became leader: name, owner, threadId, token (the term). */
    ELECTED,
    /**
     * An election's leadership ended: name, owner, threadId, token (the term; 0 when a campaign
     * ended without leading), revokeReason.
     */
    REVOKED;

    static Kind of(int value) {
      Kind[] kinds = values();
      return value >= 1 && value <= kinds.length ? kinds[value - 1] : null;
    }
  }

  private final Kind kind;
  private final Instant time;
  private final String name;
  private final String owner;
  private final long threadId;
  private final Duration duration;
  private final long token;
  private final int reason;
  private final String detail;

  RedisLockEvent(Kind kind, long unixTimeUs, byte[] name, byte[] owner, long threadId,
      long durationUs, long token, int reason, byte[] detail) {
    this.kind = kind;
    this.time = Instant.EPOCH.plus(unixTimeUs, ChronoUnit.MICROS);
    this.name = text(name);
    this.owner = text(owner);
    this.threadId = threadId;
    this.duration = Duration.of(durationUs, ChronoUnit.MICROS);
    this.token = token;
    this.reason = reason;
    this.detail = text(detail);
  }

  private static String text(byte[] bytes) {
    return bytes == null ? "" : new String(bytes, StandardCharsets.UTF_8);
  }

  public Kind getKind() {
    return kind;
  }

  /** When it happened (wall clock, microseconds). */
  public Instant getTime() {
    return time;
  }

  /** The lock's name; empty for FAILOVER and REDIRECT. */
  public String getName() {
    return name;
  }

  /** The hold's owner on Redis, "client-id:thread-id"; empty when none. */
  public String getOwner() {
    return owner;
  }

  /** The owner's thread id, 0 when none. */
  public long getThreadId() {
    return threadId;
  }

  /** ACQUIRED: from the call to the grant; otherwise zero. */
  public Duration getWaited() {
    return kind == Kind.ACQUIRED ? duration : Duration.ZERO;
  }

  /** RELEASED: from the first acquire to the last release; otherwise zero. */
  public Duration getHeld() {
    return kind == Kind.RELEASED ? duration : Duration.ZERO;
  }

  /** ACQUIRED of a fenced lock: its fencing token; ELECTED, REVOKED: the term; otherwise 0. */
  public long getToken() {
    return token;
  }

  /**
   * The raw reason: for LOST the lost reason (rlock_lost_reason), for RENEWAL_FAILED the status
   * code, for REVOKED the revoke reason (rlock_revoke_reason); otherwise 0.
   */
  public int getReason() {
    return reason;
  }

  /** LOST: why; otherwise null. */
  public LostReason getLostReason() {
    return kind == Kind.LOST ? LostReason.of(reason) : null;
  }

  /** REVOKED: why (null for a reason this binding does not know); otherwise null. */
  public RevokeReason getRevokeReason() {
    if (kind != Kind.REVOKED) {
      return null;
    }
    for (RevokeReason r : RevokeReason.values()) {
      if (r.code == reason) {
        return r;
      }
    }
    return null;
  }

  /** RENEWAL_FAILED: the status code ({@link RedisLockException#getCode()}); otherwise 0. */
  public int getErrorCode() {
    return kind == Kind.RENEWAL_FAILED ? reason : 0;
  }

  /** See the kinds; empty when none. */
  public String getDetail() {
    return detail;
  }

  @Override
  public String toString() {
    return "RedisLockEvent{" + kind + " '" + name + "' owner=" + owner + " at " + time
        + (kind == Kind.ACQUIRED ? " waited " + duration + " token " + token : "")
        + (kind == Kind.RELEASED ? " held " + duration : "")
        + (kind == Kind.LOST ? " " + getLostReason() : "")
        + (kind == Kind.ELECTED ? " term " + token : "")
        + (kind == Kind.REVOKED ? " term " + token + " " + getRevokeReason() : "")
        + (detail.isEmpty() ? "" : " " + detail) + "}";
  }
}
