package io.rlock.internal;

import java.lang.ref.Cleaner;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.HashMap;
import java.util.Map;

/** An rlock_client. Internal: use io.rlock.RedisLockClient. */
public final class NativeClient implements AutoCloseable {
  /** rlock.h RLOCK_MAX_DURATION_MS: the largest duration the C library accepts. */
  public static final long MAX_DURATION_MS = 1L << 53;
  /** RLOCK_ETIMEDOUT and RLOCK_ECANCELED: acquire outcomes, not failures. */
  public static final int TIMED_OUT = ErrorCode.ETIMEDOUT;
  public static final int CANCELED = ErrorCode.ECANCELED;
  /** rlock.h RLOCK_HARD_MAX_NAME_LEN. */
  public static final long HARD_MAX_NAME_LEN = 16L * 1024 * 1024;

  private final Handle handle;
  private final Cleaner.Cleanable cleanable;
  private final String id;

  /**
   * Connects once (fails fast on a bad address, credentials or certificate). Zero durations =
   * defaults.
   */
  public NativeClient(String url, long connectTimeoutMs, long commandTimeoutMs, int poolSize,
      long watchdogLeaseMs, long pollCapMs, long maxNameLength, TlsOptions tls,
      boolean statsOff, String keyPrefix) {
    long ptr = RlockNative.clientNew(Utf8.cString(url, "url"), connectTimeoutMs, commandTimeoutMs,
        poolSize, watchdogLeaseMs, pollCapMs, maxNameLength, tls.enabled ? 1 : 0,
        TlsOptions.bytes(tls.caFile, "sslCaFile"), TlsOptions.bytes(tls.caDir, "sslCaDirectory"),
        TlsOptions.bytes(tls.certFile, "sslCertificate"), TlsOptions.bytes(tls.keyFile, "sslKey"),
        TlsOptions.bytes(tls.serverName, "sslServerName"), tls.verify, tls.minVersion,
        tls.sentinels, statsOff ? StatsMode.STATS_OFF : StatsMode.STATS_ON,
        keyPrefix == null ? null : Utf8.cString(keyPrefix, "keyPrefix"));
    id = RlockNative.clientId(ptr);
    // aux: the event handler's payload, freed after the client (whose free delivers the
    // events still queued to it).
    handle = new Handle(ptr, "the client", null, (p, aux) -> RlockNative.clientFree(p, aux));
    cleanable = Handle.CLEANER.register(this, handle);
  }

  /** The version of the loaded C library. */
  public static String version() {
    return RlockNative.versionString();
  }

  public String id() {
    return id;
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  /** Releases what the client still holds (best effort), wakes its waiters, closes. */
  @Override
  public void close() {
    handle.close();
    cleanable.clean();
  }

  /**
   * A lock handle; kind is one of NativeLock.KIND_*; fairWaitMs: a fair lock's waiter timeout
   * (0: the library's default); ownerId: a caller-given owner's UTF-8, or null. No network call.
   */
  public NativeLock newLock(String name, byte[] rawName, int kind, long fairWaitMs,
      byte[] ownerId) {
    return handle.call(this, client -> {
      handle.retain();
      long ptr;
      try {
        ptr = RlockNative.lockNew(client, rawName, kind, 0, 0, 0, fairWaitMs,
            ownerId == null ? new byte[0] : ownerId);
      } catch (RuntimeException | Error e) {
        handle.releaseChild();
        throw e;
      }
      return new NativeLock(ptr, name, handle, kind, ownerId != null);
    });
  }

  /** A semaphore handle; kind is one of NativeSemaphore.KIND_*. No network call. */
  public NativeSemaphore newSemaphore(String name, byte[] rawName, int kind, long leaseMs) {
    return handle.call(this, client -> {
      handle.retain();
      try {
        return new NativeSemaphore(RlockNative.semaphoreNew(client, rawName, kind, leaseMs), name,
            kind, handle);
      } catch (RuntimeException | Error e) {
        handle.releaseChild();
        throw e;
      }
    });
  }

  /** An election (requeue: campaign again after a loss) reporting to handler. No network call. */
  public NativeElection newElection(String name, byte[] rawName, boolean requeue,
      ElectionHandler handler) {
    return handle.call(this, client -> {
      handle.retain();
      long ptr = 0;
      try {
        ptr = RlockNative.electionNew(client, rawName, requeue ? 1 : 0);
        long payload = RlockNative.electionPayloadNew(handler);
        return new NativeElection(ptr, payload, name, handle);
      } catch (RuntimeException | Error e) {
        if (ptr != 0) {
          RlockNative.electionFree(ptr, 0);
        }
        handle.releaseChild();
        throw e;
      }
    });
  }

  /** A count-down latch handle. No network call. */
  public NativeLatch newLatch(String name, byte[] rawName) {
    return handle.call(this, client -> {
      handle.retain();
      try {
        return new NativeLatch(RlockNative.latchNew(client, rawName), name, handle);
      } catch (RuntimeException | Error e) {
        handle.releaseChild();
        throw e;
      }
    });
  }

  /**
   * rlock_client_stats, flattened by the JNI layer (rlock.i, rlockj_client_stats): read with
   * the STATS_* offsets.
   */
  public long[] stats() {
    return handle.call(this, RlockNative::clientStats);
  }

  /** Offsets into {@link #stats()}. */
  public static final int STATS_ENABLED = 0;
  public static final int STATS_GRANTED = 1;
  public static final int STATS_TIMED_OUT = 2;
  public static final int STATS_CANCELED = 3;
  public static final int STATS_FAILED = 4;
  public static final int STATS_RELEASES = 5;
  public static final int STATS_RELEASES_FAILED = 6;
  public static final int STATS_LOST_GONE = 7;
  public static final int STATS_LOST_UNREACHABLE = 8;
  public static final int STATS_LOST_EXPIRED = 9;
  public static final int STATS_RENEWALS_SENT = 10;
  public static final int STATS_RENEWALS_FAILED = 11;
  public static final int STATS_RECONNECTS = 12;
  public static final int STATS_FAILOVERS = 13;
  public static final int STATS_REDIRECTS = 14;
  public static final int STATS_SCRIPTS = 15;
  public static final int STATS_EVENTS_DROPPED = 16;
  public static final int STATS_HOLDS = 17;
  public static final int STATS_WAITERS = 18;
  /** RLOCK_STATS_CODES: the failures by code that follow the head. */
  public static final int STATS_CODES = 19;
  /** RLOCK_HISTOGRAM_BUCKETS: per histogram, count, sum_us and this many buckets follow. */
  public static final int STATS_BUCKETS = 20;
  /**
   * RLOCK_STATS_REVOKE_REASONS: after the histograms come elections won, leaderships revoked,
   * this many revoked by reason ([reason]) and the leaders gauge.
   */
  public static final int STATS_REVOKE_REASONS = 21;
  /** Where the failures by code start ([-code]); the four histograms follow them. */
  public static final int STATS_HEAD = 22;

  /** rlock_histogram_bounds_us(): the upper bounds of the buckets, microseconds. */
  public static long[] histogramBoundsUs() {
    return RlockNative.histogramBoundsUs();
  }

  private static final Map<Integer, String> CODE_NAMES = codeNames();

  private static Map<Integer, String> codeNames() {
    Map<Integer, String> names = new HashMap<>();
    for (Field f : ErrorCode.class.getDeclaredFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class) {
        try {
          names.put(f.getInt(null), f.getName());
        } catch (IllegalAccessException e) {
          throw new AssertionError(e);
        }
      }
    }
    return names;
  }

  /** The status codes rlock.h names (negative), ascending by magnitude: not RLOCK_OK. */
  public static int[] errorCodes() {
    return CODE_NAMES.keySet().stream().filter(c -> c < 0).sorted((a, b) -> b - a)
        .mapToInt(Integer::intValue).toArray();
  }

  /** The rlock.h name of a status code without RLOCK_ ("ECONN"), or "E" and the number. */
  public static String codeName(int code) {
    String name = CODE_NAMES.get(code);
    return name != null ? name : "E" + (-code);
  }

  /**
   * Subscribes to the key events of {@code kinds} (rlock_client_watch_key_events: 1 expired, 2
   * deleted; 0 stops), reported to the event handler as kinds 7 and 8.
   */
  public void watchKeyEvents(int kinds) {
    handle.execute(this, client -> RlockNative.clientWatchKeyEvents(client, kinds));
  }

  /**
   * Sets (null: clears) the client's event handler. When this returns, a call of the previous
   * handler has returned and it gets no more events (from the handler itself it returns at once).
   * Setting the installed handler again, or none, holds no lock while the native call waits for
   * a running callback, so that callback may itself set it.
   */
  public void setEventHandler(NativeEventHandler handler) {
    if (handler == null || handler == installedHandler) {
      // No lock held while the native call waits for a running callback (which may call this);
      // the payload stays until the client is freed.
      long payload = handler == null ? 0 : handle.aux();
      handle.execute(this, client -> RlockNative.eventCallbackSet(client, payload));
      return;
    }
    synchronized (eventLock) {
      handle.execute(this, client -> {
        long previous = handle.aux();
        long payload = RlockNative.eventPayloadNew(handler);
        try {
          RlockNative.eventCallbackSet(client, payload);
        } catch (RuntimeException | Error e) {
          RlockNative.eventPayloadFree(payload);
          throw e;
        }
        handle.setAux(payload); // freed with the client from now on
        installedHandler = handler;
        if (previous != 0) {
          RlockNative.eventPayloadFree(previous);
        }
      });
    }
  }

  private final Object eventLock = new Object();
  private volatile NativeEventHandler installedHandler; // the handler of the payload in aux

  /**
   * Who holds the lock {@code name} (rlock_inspect's first owner and its holder record): null
   * when it is free, else {owner, host, command} as byte[] (host and command null when
   * unknown) and a long[] {known, pid, started_ms, since_ms}.
   */
  public Object[] lockHolder(byte[] name) {
    return handle.call(this, client -> RlockNative.lockHolder(client, name));
  }

  /** rlock_fenced_write: true when written, false when refused for a newer token. */
  public boolean fencedWrite(byte[] key, byte[] value, long token) {
    return handle.call(this, client -> RlockNative.fencedWrite(client, key, value, token) == 1);
  }
}
