package io.rlock;

import io.rlock.internal.NativeClient;
import io.rlock.internal.NativeLock;
import io.rlock.internal.Utf8;
import java.time.Duration;
import java.util.Objects;

/**
 * A connection to one Redis deployment, shared by every lock made from it (Redisson's
 * RedissonClient for locks). Thread-safe. Use it with try-with-resources:
 *
 * <pre>{@code
 * try (RedisLockClient client = RedisLockClient.create("redis://127.0.0.1:6379")) {
 *   RedisLock lock = client.getLock("orders");
 *   lock.lock();
 *   try {
 *     // ...
 *   } finally {
 *     lock.unlock();
 *   }
 * }
 * }</pre>
 *
 * <p>{@link #close()} wakes threads waiting for its locks ({@link RedisLockClosedException}),
 * releases what its locks still hold (best effort: the rest expire by their lease) and closes
 * the connections. A client that becomes unreachable without close() is freed by a Cleaner
 * after its locks are, releasing nothing over the network.
 */
public final class RedisLockClient implements AutoCloseable {
  /** Used when no URL is given and $RLOCK_URL is not set. */
  public static final String DEFAULT_URL = "redis://127.0.0.1:6379";

  private final NativeClient nativeClient;

  private RedisLockClient(NativeClient nativeClient) {
    this.nativeClient = nativeClient;
  }

  /**
   * Connects to {@code url}: {@code redis://[[user]:password@]host[:port][/db]} or
   * {@code unix://[[user]:password@]/path/to/socket[?db=N]}. Null means $RLOCK_URL, then
   * {@link #DEFAULT_URL}. Connects once, so a wrong address or password fails here. The URL is
   * sent as UTF-8; one with a NUL character or a lone surrogate is an IllegalArgumentException
   * before any connection.
   */
  public static RedisLockClient create(String url) {
    return builder().url(url).build();
  }

  /** {@code create(null)}. */
  public static RedisLockClient create() {
    return create(null);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The version of the native library in use, e.g. "0.2.0". */
  public static String version() {
    return NativeClient.version();
  }

  /** Client settings; unset ones take the C library's defaults (given in each method). */
  public static final class Builder {
    private String url;
    private long connectTimeoutMs;
    private long commandTimeoutMs;
    private int poolSize;
    private long watchdogLeaseMs;
    private long pollCapMs;
    private long maxNameLength;

    private Builder() {}

    /** As for {@link RedisLockClient#create(String)}; null means $RLOCK_URL or the default. */
    public Builder url(String url) {
      this.url = url;
      return this;
    }

    /** Bounds each connect; default 2 s. */
    public Builder connectTimeout(Duration timeout) {
      connectTimeoutMs = Durations.positiveMs(timeout, "connectTimeout");
      return this;
    }

    /** Bounds each round trip; default 3 s. */
    public Builder commandTimeout(Duration timeout) {
      commandTimeoutMs = Durations.positiveMs(timeout, "commandTimeout");
      return this;
    }

    /** Command connections; default 8. */
    public Builder poolSize(int size) {
      poolSize = (int) inRange(size, 1024, "poolSize");
      return this;
    }

    /**
     * The lease of holds taken without one, renewed every third of it while held; default
     * 30 s (Redisson's lockWatchdogTimeout).
     */
    public Builder watchdogLease(Duration lease) {
      watchdogLeaseMs = Durations.positiveMs(lease, "watchdogLease");
      return this;
    }

    /** The longest a waiter sleeps before trying again without a wake-up; default 1 s. */
    public Builder pollCap(Duration cap) {
      pollCapMs = Durations.positiveMs(cap, "pollCap");
      return this;
    }

    /** The longest lock name in UTF-8 bytes; default 65536. */
    public Builder maxNameLength(int bytes) {
      maxNameLength = inRange(bytes, NativeClient.HARD_MAX_NAME_LEN, "maxNameLength");
      return this;
    }

    private static long inRange(long value, long max, String what) {
      if (value < 1 || value > max) {
        throw new IllegalArgumentException(
            what + " must be between 1 and " + max + ", got " + value);
      }
      return value;
    }

    public RedisLockClient build() {
      String target = url;
      if (target == null) {
        target = System.getenv("RLOCK_URL");
      }
      if (target == null || target.isEmpty()) {
        target = DEFAULT_URL;
      }
      return new RedisLockClient(new NativeClient(target, connectTimeoutMs, commandTimeoutMs,
          poolSize, watchdogLeaseMs, pollCapMs, maxNameLength));
    }
  }

  /** The client's id (a UUID): the first half of every owner it writes to Redis. */
  public String getId() {
    return nativeClient.id();
  }

  public boolean isClosed() {
    return nativeClient.isClosed();
  }

  /**
   * A reentrant lock (Redisson RLock layout); waiters are woken by pub/sub. No I/O. The lock key
   * is the name's UTF-8; a name with a lone surrogate is an IllegalArgumentException.
   */
  public RedisLock getLock(String name) {
    return new RedisLock(this, name, newLock(name, NativeLock.KIND_REENTRANT), "RedisLock");
  }

  /** A reentrant lock served first come, first served across processes (RFairLock). */
  public RedisLock getFairLock(String name) {
    return new RedisLock(this, name, newLock(name, NativeLock.KIND_FAIR), "RedisFairLock");
  }

  /** A reentrant lock whose waiters retry with backoff instead of subscribing (RSpinLock). */
  public RedisLock getSpinLock(String name) {
    return new RedisLock(this, name, newLock(name, NativeLock.KIND_SPIN), "RedisSpinLock");
  }

  /** A reentrant lock whose every acquire gets a fencing token (RFencedLock). */
  public RedisFencedLock getFencedLock(String name) {
    return new RedisFencedLock(this, name, newLock(name, NativeLock.KIND_FENCED));
  }

  /** A read-write lock (RReadWriteLock): shared readers, one exclusive writer. */
  public RedisReadWriteLock getReadWriteLock(String name) {
    NativeLock read = newLock(name, NativeLock.KIND_READ);
    try {
      NativeLock write = newLock(name, NativeLock.KIND_WRITE);
      return new RedisReadWriteLock(name, new RedisLock(this, name, read, "RedisReadLock"),
          new RedisLock(this, name, write, "RedisWriteLock"));
    } catch (RuntimeException e) {
      read.close();
      throw e;
    }
  }

  /**
   * Several locks taken as one (RedissonMultiLock): held only when every member is. Members
   * may come from different clients; the locks must not be closed while the group is in use.
   */
  public RedisMultiLock getMultiLock(RedisLock... locks) {
    return new RedisMultiLock(locks, false);
  }

  /**
   * The RedLock algorithm over members on independent Redis servers (one client each): held
   * when a majority granted it within the lease.
   */
  public RedisMultiLock getRedLock(RedisLock... locks) {
    return new RedisMultiLock(locks, true);
  }

  /**
   * Sets the string {@code key} to {@code value} only if {@code token} is at least the highest
   * token seen for the key, atomically: a holder whose fenced lock was taken over cannot
   * overwrite the newer holder's write. Returns false when refused.
   */
  public boolean fencedWrite(String key, String value, long token) {
    Objects.requireNonNull(value, "value");
    if (token <= 0) {
      throw new IllegalArgumentException("token must be positive, got " + token);
    }
    return nativeClient.fencedWrite(nameBytes(key, "key"), Utf8.exact(value, "value"), token);
  }

  /** Releases what the locks still hold, wakes their waiters, closes. Idempotent. */
  @Override
  public void close() {
    nativeClient.close();
  }

  @Override
  public String toString() {
    return "RedisLockClient[" + getId() + (isClosed() ? ", closed]" : "]");
  }

  private NativeLock newLock(String name, int kind) {
    return nativeClient.newLock(name, nameBytes(name, "lock name"), kind);
  }

  private static byte[] nameBytes(String name, String what) {
    Objects.requireNonNull(name, what);
    if (name.isEmpty()) {
      throw new IllegalArgumentException(what + " must not be empty");
    }
    return Utf8.exact(name, what);
  }
}
