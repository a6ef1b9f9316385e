package io.rlock;

import io.rlock.internal.NativeClient;
import io.rlock.internal.NativeEventHandler;
import io.rlock.internal.NativeLock;
import io.rlock.internal.NativeSemaphore;
import io.rlock.internal.TlsOptions;
import io.rlock.internal.Utf8;
import java.nio.file.Path;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
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
  private final long fairWaitMs; // 0: the library default
  // The event listener and the objects' key listeners (addListener), guarded by objectListeners;
  // the event thread reads them through `listeners`. Native calls (which may wait for the event
  // thread) are made with no lock held: a listener may add or remove listeners itself.
  private final Map<Integer, NamedListener> objectListeners = new HashMap<>();
  private final Listeners listeners = new Listeners();
  private final EventDispatch dispatch = new EventDispatch(listeners); // the one handler
  private int nextListenerId = 1;
  private boolean dispatchInstalled;
  private int watchedKinds;

  private RedisLockClient(NativeClient nativeClient, long fairWaitMs) {
    this.nativeClient = nativeClient;
    this.fairWaitMs = fairWaitMs;
  }

  /** Used when no URL is given, $RLOCK_URL is not set and {@link Builder#ssl} is on. */
  public static final String DEFAULT_TLS_URL = "rediss://127.0.0.1:6379";

  /**
   * Connects to {@code url}: {@code redis://[[user]:password@]host[:port][/db]} or
   * {@code unix://[[user]:password@]/path/to/socket[?db=N]}; {@code rediss://} is TLS, verified
   * against the system's trust store unless the URL says otherwise ({@code ?tls_ca_file=...},
   * docs/tls.md) or the builder's ssl settings do. Null means $RLOCK_URL, then
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
    private boolean ssl;
    private SslVerificationMode sslVerificationMode;
    private Path sslCaFile;
    private Path sslCaDirectory;
    private Path sslCertificate;
    private Path sslKey;
    private String sslServerName;
    private Integer sslMinimumVersion;
    private Boolean sentinelSsl;
    private boolean statsOff;
    private String keyPrefix;
    private long fairWaitMs;

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

    /**
     * How long a fair lock's waiter keeps its place in the queue without coming back (so a
     * waiter whose process died stalls the queue at most this long), for waits without a
     * bound; default 300 s, as Redisson's fairLockWaitTimeout.
     */
    public Builder fairLockWaitTimeout(Duration timeout) {
      fairWaitMs = Durations.positiveMs(timeout, "fairLockWaitTimeout");
      return this;
    }

    /** The longest a waiter sleeps before trying again without a wake-up; default 1 s. */
    public Builder pollCap(Duration cap) {
      pollCapMs = Durations.positiveMs(cap, "pollCap");
      return this;
    }

    /**
     * Puts {@code prefix} before every name, as Redisson's {@code NameMapper} does with a prefix:
     * the keys and channels of name N are those of {@code prefix + N}, so services sharing one
     * Redis keep apart, and a Redisson client mapping names the same way sees the same locks.
     * Names in events, lost-lock notifications and listings come back without it; {@link
     * #maxNameLength} bounds prefix and name together. The URL option {@code key_prefix=} sets
     * it too; where both do they must agree. At most 1024 UTF-8 bytes, not empty.
     */
    public Builder keyPrefix(String prefix) {
      if (prefix == null) {
        throw new NullPointerException("keyPrefix must not be null");
      }
      if (prefix.isEmpty()) {
        throw new IllegalArgumentException("keyPrefix must not be empty");
      }
      keyPrefix = prefix;
      return this;
    }

    /** The longest lock name in UTF-8 bytes; default 65536. */
    public Builder maxNameLength(int bytes) {
      maxNameLength = inRange(bytes, NativeClient.HARD_MAX_NAME_LEN, "maxNameLength");
      return this;
    }

    /**
     * TLS to every Redis server. Off: as the URL says ({@code rediss://},
     * {@code rediss-sentinel://} and {@code rediss-cluster://} are TLS). On, the URL must be one
     * of those (a plaintext one is an IllegalArgumentException), and without a URL the client
     * connects to {@link RedisLockClient#DEFAULT_TLS_URL}.
     */
    public Builder ssl(boolean enabled) {
      ssl = enabled;
      return this;
    }

    /**
     * How the server's certificate is checked: STRICT (a trusted chain naming the host; the C
     * library's own choice when unset), CA_ONLY (a trusted chain, any names) or NONE (no check,
     * logged once). Needs TLS, as every ssl setting but {@link #ssl} does.
     */
    public Builder sslVerificationMode(SslVerificationMode mode) {
      sslVerificationMode = Objects.requireNonNull(mode, "sslVerificationMode");
      return this;
    }

    /** A PEM file of the CA certificates to trust instead of the system's trust store. */
    public Builder sslCaFile(Path file) {
      sslCaFile = pathSetting(file, "sslCaFile");
      return this;
    }

    /** A directory of CA certificates named by their hashes ({@code openssl rehash}). */
    public Builder sslCaDirectory(Path directory) {
      sslCaDirectory = pathSetting(directory, "sslCaDirectory");
      return this;
    }

    /** The client certificate chain (PEM) for mutual TLS; its key too, unless sslKey is set. */
    public Builder sslCertificate(Path file) {
      sslCertificate = pathSetting(file, "sslCertificate");
      return this;
    }

    /** The client certificate's private key (PEM, not encrypted). */
    public Builder sslKey(Path file) {
      sslKey = pathSetting(file, "sslKey");
      return this;
    }

    /**
     * The name sent as SNI and looked for in the server's certificate, when it differs from the
     * host connected to (an IP address, a tunnel, a load balancer).
     */
    public Builder sslServerName(String name) {
      Objects.requireNonNull(name, "sslServerName");
      if (name.isEmpty()) {
        throw new IllegalArgumentException("sslServerName must not be empty");
      }
      Utf8.cString(name, "sslServerName");
      sslServerName = name;
      return this;
    }

    /**
     * The oldest TLS version accepted: "TLSv1.2" (what the C library takes when unset) or
     * "TLSv1.3" (the JSSE names, as in Redisson's sslProtocols; "1.2" and "1.3" work too).
     */
    public Builder sslMinimumVersion(String version) {
      Objects.requireNonNull(version, "sslMinimumVersion");
      switch (version) {
        case "TLSv1.2":
        case "1.2":
          sslMinimumVersion = TlsOptions.VERSION_1_2;
          break;
        case "TLSv1.3":
        case "1.3":
          sslMinimumVersion = TlsOptions.VERSION_1_3;
          break;
        default:
          throw new IllegalArgumentException(
              "sslMinimumVersion must be TLSv1.2 or TLSv1.3, got '" + version + "'");
      }
      return this;
    }

    /**
     * Sentinel deployments: whether the sentinels, too, are reached over TLS. Unset: as the
     * master ({@code rediss-sentinel://} means both, as in Redisson). False: plaintext
     * sentinels in front of TLS masters.
     */
    public Builder sentinelSsl(boolean enabled) {
      sentinelSsl = enabled;
      return this;
    }

    /**
     * Whether the client keeps statistics ({@link RedisLockClient#stats()}): on unless turned
     * off here or by the URL option {@code stats=off}. They cost a few atomic additions per
     * call; off is for measuring that cost.
     */
    public Builder stats(boolean enabled) {
      statsOff = !enabled;
      return this;
    }

    private static Path pathSetting(Path path, String what) {
      Objects.requireNonNull(path, what);
      if (path.toString().isEmpty()) {
        throw new IllegalArgumentException(what + " must not be an empty path");
      }
      return path;
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
        target = ssl ? DEFAULT_TLS_URL : DEFAULT_URL;
      }
      return new RedisLockClient(new NativeClient(target, connectTimeoutMs, commandTimeoutMs,
          poolSize, watchdogLeaseMs, pollCapMs, maxNameLength, tlsOptions(target), statsOff,
          keyPrefix),
          fairWaitMs);
    }

    /** The URL's scheme, lower-cased ("" without one: the C library explains). */
    private static String scheme(String url) {
      int end = url.indexOf("://");
      return end < 0 ? "" : url.substring(0, end).toLowerCase(Locale.ROOT);
    }

    /** A scheme for a message: one that could hold a password is not shown. */
    private static String shown(String scheme) {
      return scheme.matches("[a-z-]{1,20}") ? scheme + "://" : "a URL of another form";
    }

    /** The first ssl setting given besides ssl() and sentinelSsl(), or null. */
    private String firstSslSetting() {
      Object[][] settings = {{sslVerificationMode, "sslVerificationMode"},
          {sslCaFile, "sslCaFile"}, {sslCaDirectory, "sslCaDirectory"},
          {sslCertificate, "sslCertificate"}, {sslKey, "sslKey"},
          {sslServerName, "sslServerName"},
          {sslMinimumVersion, "sslMinimumVersion"}};
      for (Object[] setting : settings) {
        if (setting[0] != null) {
          return (String) setting[1];
        }
      }
      return null;
    }

    /**
     * The TLS fields, after the checks that can name this builder's settings (the C library
     * checks them all again, naming its own fields).
     */
    private TlsOptions tlsOptions(String url) {
      String scheme = scheme(url);
      boolean tlsUrl = scheme.startsWith("rediss");
      boolean sentinels = scheme.endsWith("-sentinel");
      if (ssl && !tlsUrl) {
        throw new IllegalArgumentException("ssl(true) needs a TLS URL (rediss://, "
            + "rediss-sentinel:// or rediss-cluster://), got " + shown(scheme));
      }
      if (sentinelSsl != null && !sentinels) {
        throw new IllegalArgumentException("sentinelSsl applies to Sentinel URLs only "
            + "(redis-sentinel:// or rediss-sentinel://), got " + shown(scheme));
      }
      String setting = firstSslSetting();
      if (setting != null && !tlsUrl && !(sentinels && Boolean.TRUE.equals(sentinelSsl))) {
        throw new IllegalArgumentException(setting + " needs TLS: use a rediss://, "
            + "rediss-sentinel:// or rediss-cluster:// URL");
      }
      String urlVerify = queryValue(url, "tls_verify");
      if (sslVerificationMode == SslVerificationMode.STRICT && urlVerify != null
          && !urlVerify.equals("full")) {
        // STRICT is the C library's 0, "unset", which the URL's choice would override.
        throw new IllegalArgumentException(
            "sslVerificationMode STRICT and the URL's tls_verify=" + urlVerify + " disagree");
      }
      if (sslKey != null && sslCertificate == null) {
        throw new IllegalArgumentException("sslKey given without sslCertificate");
      }
      if (!ssl && setting == null && sentinelSsl == null) {
        return TlsOptions.NONE;
      }
      int sentinelChoice = sentinelSsl == null ? TlsOptions.SENTINEL_AUTO
          : sentinelSsl ? TlsOptions.SENTINEL_ON : TlsOptions.SENTINEL_OFF;
      return new TlsOptions(ssl, text(sslCaFile), text(sslCaDirectory), text(sslCertificate),
          text(sslKey), sslServerName, verifyChoice(),
          sslMinimumVersion == null ? 0 : sslMinimumVersion, sentinelChoice);
    }

    /** The value of query option `key` in `url`, or null. */
    private static String queryValue(String url, String key) {
      int query = url.indexOf('?');
      if (query < 0) {
        return null;
      }
      for (String item : url.substring(query + 1).split("&")) {
        if (item.startsWith(key + "=")) {
          return item.substring(key.length() + 1);
        }
      }
      return null;
    }

    private int verifyChoice() {
      if (sslVerificationMode == null) {
        return 0; // unset: the C library's default (full verification)
      }
      switch (sslVerificationMode) {
        case CA_ONLY:
          return TlsOptions.VERIFY_CA;
        case NONE:
          return TlsOptions.VERIFY_NONE;
        default:
          return TlsOptions.VERIFY_FULL;
      }
    }

    private static String text(Path path) {
      return path == null ? null : path.toString();
    }
  }

  /** The client's id (a UUID): the first half of every owner it writes to Redis. */
  public String getId() {
    return nativeClient.id();
  }

  public boolean isClosed() {
    return nativeClient.isClosed();
  }

  private static volatile List<Duration> histogramBounds;

  /** The upper bounds of every histogram's buckets (25 µs to 1 h). Unmodifiable. */
  static List<Duration> histogramBounds() {
    List<Duration> bounds = histogramBounds;
    if (bounds == null) {
      List<Duration> made = new ArrayList<>();
      for (long us : NativeClient.histogramBoundsUs()) {
        made.add(Duration.of(us, ChronoUnit.MICROS));
      }
      bounds = Collections.unmodifiableList(made);
      histogramBounds = bounds;
    }
    return bounds;
  }

  /**
   * A snapshot of the client's statistics: no I/O, about a microsecond, from any thread. Throws
   * {@link RedisLockClosedException} once the client is closed.
   */
  public RedisLockStats stats() {
    return new RedisLockStats(nativeClient.stats(), histogramBounds());
  }

  /**
   * Sets the listener told of each event of this client, or with null stops the events (off by
   * default). Events come in the order they happened, one at a time, on the client's event
   * thread (see {@link RedisLockEventListener}); queuing one costs about a microsecond in the
   * call that makes it. When this returns, a previous listener is no longer running and gets no
   * more events; events still queued go to the new one. {@link #close()} delivers the events
   * already queued, then stops. The listener is held until replaced or the client is closed: if
   * it refers to the client, close the client (the Cleaner cannot free it).
   */
  public void setEventListener(RedisLockEventListener listener) {
    synchronized (objectListeners) {
      listeners.events = listener;
    }
    // Always set again: the native call returns once a running callback has returned, so the
    // previous listener gets nothing more.
    syncEventDispatch(true);
  }

  /**
   * Adds a listener of the key of {@code name} (a lock's, semaphore's or latch's
   * {@code addListener}); returns its id for {@link #removeObjectListener}. The first one of a
   * kind subscribes to the server's key events of that kind, once the listener can be told.
   */
  int addObjectListener(String name, ObjectListener listener) {
    if (listener == null) {
      throw new NullPointerException("listener must not be null");
    }
    if (!(listener instanceof ExpiredObjectListener)
        && !(listener instanceof DeletedObjectListener)) {
      throw new IllegalArgumentException("listener must be an ExpiredObjectListener or a "
          + "DeletedObjectListener (or both), not " + listener.getClass().getName());
    }
    int id;
    synchronized (objectListeners) {
      id = nextListenerId++;
      objectListeners.put(id, new NamedListener(name, listener));
      listeners.objects = Map.copyOf(objectListeners);
    }
    try {
      syncEventDispatch(false);
      syncKeyEvents();
    } catch (RuntimeException | Error e) {
      removeObjectListener(name, id);
      throw e;
    }
    return id;
  }

  /** Removes a listener of {@code name} that {@link #addObjectListener} added; else nothing. */
  void removeObjectListener(String name, int id) {
    synchronized (objectListeners) {
      NamedListener l = objectListeners.get(id);
      if (l == null || !l.name.equals(name)) {
        return;
      }
      objectListeners.remove(id);
      listeners.objects = Map.copyOf(objectListeners);
    }
    try {
      syncKeyEvents();
    } catch (RedisLockClosedException closed) {
      // nothing is subscribed any more
    } finally {
      syncEventDispatch(false);
    }
  }

  /**
   * Installs the native event handler while a listener needs it, else clears it (events then
   * cost nothing). {@code always}: set it again even when already in that state.
   */
  private void syncEventDispatch(boolean always) {
    boolean force = always;
    while (true) {
      boolean want;
      synchronized (objectListeners) {
        want = listeners.events != null || !objectListeners.isEmpty();
        if (want == dispatchInstalled && !force) {
          return;
        }
      }
      nativeClient.setEventHandler(want ? dispatch : null);
      synchronized (objectListeners) {
        dispatchInstalled = want;
      }
      force = false;
    }
  }

  /** Subscribes to the key events the listeners need (none: unsubscribes). */
  private void syncKeyEvents() {
    while (true) {
      int want = 0;
      synchronized (objectListeners) {
        for (NamedListener l : objectListeners.values()) {
          want |= (l.listener instanceof ExpiredObjectListener ? KEY_EXPIRED : 0)
              | (l.listener instanceof DeletedObjectListener ? KEY_DELETED : 0);
        }
        if (want == watchedKinds) {
          return;
        }
      }
      nativeClient.watchKeyEvents(want);
      synchronized (objectListeners) {
        watchedKinds = want;
      }
    }
  }

  /** What the event thread tells: written under the client's objectListeners lock. */
  private static final class Listeners {
    volatile RedisLockEventListener events;
    volatile Map<Integer, NamedListener> objects = Map.of();
  }

  private static final int KEY_EXPIRED = 1;
  private static final int KEY_DELETED = 2;

  private static final class NamedListener {
    final String name;
    final ObjectListener listener;

    NamedListener(String name, ObjectListener listener) {
      this.name = name;
      this.listener = listener;
    }
  }

  /**
   * Makes the public event of the JNI call and tells the listeners; refers to the listeners
   * only, not to the client.
   */
  private static final class EventDispatch implements NativeEventHandler {
    private final Listeners listeners;

    EventDispatch(Listeners listeners) {
      this.listeners = listeners;
    }

    @Override
    public void event(int kind, long unixTimeUs, byte[] name, byte[] owner, long threadId,
        long durationUs, long token, int reason, byte[] detail) {
      try {
        RedisLockEvent.Kind k = RedisLockEvent.Kind.of(kind);
        if (k == null) {
          return; // a kind newer than this binding
        }
        RedisLockEvent event = new RedisLockEvent(k, unixTimeUs, name, owner, threadId,
            durationUs, token, reason, detail);
        if (k == RedisLockEvent.Kind.KEY_EXPIRED || k == RedisLockEvent.Kind.KEY_DELETED) {
          tellObjectListeners(k, event.getName());
        }
        RedisLockEventListener listener = listeners.events;
        if (listener != null) {
          listener.onEvent(event);
        }
      } catch (Throwable t) {
        uncaught(t);
      }
    }

    private void tellObjectListeners(RedisLockEvent.Kind kind, String name) {
      for (NamedListener l : listeners.objects.values()) {
        if (!l.name.equals(name)) {
          continue;
        }
        try {
          if (kind == RedisLockEvent.Kind.KEY_EXPIRED
              && l.listener instanceof ExpiredObjectListener) {
            ((ExpiredObjectListener) l.listener).onExpired(name);
          } else if (kind == RedisLockEvent.Kind.KEY_DELETED
              && l.listener instanceof DeletedObjectListener) {
            ((DeletedObjectListener) l.listener).onDeleted(name);
          }
        } catch (Throwable t) {
          uncaught(t);
        }
      }
    }

    /** Nothing may unwind into C: reported as an uncaught exception of this thread would be. */
    private static void uncaught(Throwable t) {
      Thread current = Thread.currentThread();
      try {
        current.getUncaughtExceptionHandler().uncaughtException(current, t);
      } catch (Throwable ignored) {
        // the handler itself failed: dropped
      }
    }
  }

  /**
   * A reentrant lock (Redisson RLock layout); waiters are woken by pub/sub. No I/O. The lock key
   * is the name's UTF-8; a name with a lone surrogate is an IllegalArgumentException.
   */
  public RedisLock getLock(String name) {
    return getLock(name, LockOwner.thread());
  }

  /** {@link #getLock(String)} owned by {@code owner} (see {@link LockOwner}). */
  public RedisLock getLock(String name, LockOwner owner) {
    return makeLock(name, NativeLock.KIND_REENTRANT, "RedisLock", owner);
  }

  /** A reentrant lock served first come, first served across processes (RFairLock). */
  public RedisLock getFairLock(String name) {
    return getFairLock(name, LockOwner.thread());
  }

  /** {@link #getFairLock(String)} owned by {@code owner}. */
  public RedisLock getFairLock(String name, LockOwner owner) {
    return makeLock(name, NativeLock.KIND_FAIR, "RedisFairLock", owner);
  }

  /** A reentrant lock whose waiters retry with backoff instead of subscribing (RSpinLock). */
  public RedisLock getSpinLock(String name) {
    return getSpinLock(name, LockOwner.thread());
  }

  /** {@link #getSpinLock(String)} owned by {@code owner}. */
  public RedisLock getSpinLock(String name, LockOwner owner) {
    return makeLock(name, NativeLock.KIND_SPIN, "RedisSpinLock", owner);
  }

  /** A reentrant lock whose every acquire gets a fencing token (RFencedLock). */
  public RedisFencedLock getFencedLock(String name) {
    return getFencedLock(name, LockOwner.thread());
  }

  /** {@link #getFencedLock(String)} owned by {@code owner}. */
  public RedisFencedLock getFencedLock(String name, LockOwner owner) {
    Objects.requireNonNull(owner, "owner");
    return new RedisFencedLock(this, name, newLock(name, NativeLock.KIND_FENCED, owner),
        owner.newNumber());
  }

  /**
   * A lock its holding thread cannot lock again (Redisson's getNonReentrantLock): lock() and
   * tryLock() by that thread throw {@link LockAlreadyHeldException} (an
   * IllegalMonitorStateException) at once and leave its one hold as it was. Same keys as
   * {@link #getLock}.
   */
  public RedisLock getNonReentrantLock(String name) {
    return getNonReentrantLock(name, LockOwner.thread());
  }

  /** {@link #getNonReentrantLock(String)} owned by {@code owner}. */
  public RedisLock getNonReentrantLock(String name, LockOwner owner) {
    return makeLock(name, NativeLock.KIND_NON_REENTRANT, "RedisNonReentrantLock", owner);
  }

  /**
   * {@link #getFairLock} that its holding thread cannot lock again (Redisson's
   * getNonReentrantFairLock), as {@link #getNonReentrantLock}.
   */
  public RedisLock getNonReentrantFairLock(String name) {
    return getNonReentrantFairLock(name, LockOwner.thread());
  }

  /** {@link #getNonReentrantFairLock(String)} owned by {@code owner}. */
  public RedisLock getNonReentrantFairLock(String name, LockOwner owner) {
    return makeLock(name, NativeLock.KIND_NON_REENTRANT_FAIR, "RedisNonReentrantFairLock", owner);
  }

  /** A read-write lock (RReadWriteLock): shared readers, one exclusive writer. */
  public RedisReadWriteLock getReadWriteLock(String name) {
    return getReadWriteLock(name, LockOwner.thread());
  }

  /**
   * {@link #getReadWriteLock(String)} owned by {@code owner}; under {@link LockOwner#object()}
   * the two halves are one owner (a writer may read).
   */
  public RedisReadWriteLock getReadWriteLock(String name, LockOwner owner) {
    Objects.requireNonNull(owner, "owner");
    long number = owner.newNumber();
    NativeLock read = newLock(name, NativeLock.KIND_READ, owner);
    try {
      NativeLock write = newLock(name, NativeLock.KIND_WRITE, owner);
      return new RedisReadWriteLock(name, new RedisLock(this, name, read, "RedisReadLock", number),
          new RedisLock(this, name, write, "RedisWriteLock", number));
    } catch (RuntimeException e) {
      read.close();
      throw e;
    }
  }

  private RedisLock makeLock(String name, int kind, String kindName, LockOwner owner) {
    Objects.requireNonNull(owner, "owner");
    return new RedisLock(this, name, newLock(name, kind, owner), kindName, owner.newNumber());
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
   * A counting semaphore (Redisson RSemaphore layout; shared with Redisson processes). No I/O.
   * Close it, or let it go, once its permits are given back.
   */
  public RedisSemaphore getSemaphore(String name) {
    return new RedisSemaphore(this, name, nativeClient.newSemaphore(name,
        nameBytes(name, "semaphore name"), NativeSemaphore.KIND_PLAIN,
        NativeSemaphore.LEASE_WATCHDOG));
  }

  /**
   * A semaphore of permits with ids and leases (Redisson RPermitExpirableSemaphore layout).
   * Permits taken without a lease are renewed by its watchdog while the object lives. No I/O.
   */
  public RedisPermitExpirableSemaphore getPermitExpirableSemaphore(String name) {
    return new RedisPermitExpirableSemaphore(this, name, nativeClient.newSemaphore(name,
        nameBytes(name, "semaphore name"), NativeSemaphore.KIND_EXPIRABLE,
        NativeSemaphore.LEASE_WATCHDOG));
  }

  /**
   * A count-down latch (Redisson RCountDownLatch layout). No I/O. On a Redis Cluster the name
   * must not contain braces.
   */
  /**
   * A leader election on {@code name} in the shape of Curator's LeaderLatch (docs/leader.md):
   * {@code start()} it, then {@code await()} or {@code hasLeadership()}. No network call here.
   */
  public LeaderLatch leaderLatch(String name) {
    return new LeaderLatch(this, name, nameBytes(name, "election name"));
  }

  /**
   * A leader election on {@code name} in the shape of Curator's LeaderSelector: while this
   * candidate leads, {@code listener.takeLeadership} runs on a thread of its own (a virtual
   * thread where the JVM has them), interrupted the moment leadership ends. {@code start()} it.
   */
  public LeaderSelector leaderSelector(String name, LeaderSelectorListener listener) {
    return new LeaderSelector(this, name, nameBytes(name, "election name"), listener);
  }

  NativeClient nativeClient() {
    return nativeClient;
  }

  public RedisCountDownLatch getCountDownLatch(String name) {
    return new RedisCountDownLatch(this, name,
        nativeClient.newLatch(name, nameBytes(name, "latch name")));
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

  private NativeLock newLock(String name, int kind, LockOwner owner) {
    boolean fair = kind == NativeLock.KIND_FAIR || kind == NativeLock.KIND_NON_REENTRANT_FAIR;
    long fairWait = fair ? fairWaitMs : 0;
    return nativeClient.newLock(name, nameBytes(name, "lock name"), kind, fairWait, owner.id);
  }

  /** RedisLock#getHolder: the raw answer of NativeClient#lockHolder. */
  Object[] lockHolder(String name) {
    return nativeClient.lockHolder(nameBytes(name, "lock name"));
  }

  private static byte[] nameBytes(String name, String what) {
    Objects.requireNonNull(name, what);
    if (name.isEmpty()) {
      throw new IllegalArgumentException(what + " must not be empty");
    }
    return Utf8.exact(name, what);
  }
}
