package io.rlock.internal;

import java.lang.ref.Cleaner;

/** An rlock_client. Internal: use io.rlock.RedisLockClient. */
public final class NativeClient implements AutoCloseable {
  /** rlock.h RLOCK_MAX_DURATION_MS: the largest duration the C library accepts. */
  public static final long MAX_DURATION_MS = 1L << 53;
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
      long watchdogLeaseMs, long pollCapMs, long maxNameLength, TlsOptions tls) {
    long ptr = RlockNative.clientNew(Utf8.cString(url, "url"), connectTimeoutMs, commandTimeoutMs,
        poolSize, watchdogLeaseMs, pollCapMs, maxNameLength, tls.enabled ? 1 : 0,
        TlsOptions.bytes(tls.caFile, "sslCaFile"), TlsOptions.bytes(tls.caDir, "sslCaDirectory"),
        TlsOptions.bytes(tls.certFile, "sslCertificate"), TlsOptions.bytes(tls.keyFile, "sslKey"),
        TlsOptions.bytes(tls.serverName, "sslServerName"), tls.verify, tls.minVersion,
        tls.sentinels);
    id = RlockNative.clientId(ptr);
    handle = new Handle(ptr, "the client", null, (p, aux) -> RlockNative.clientFree(p));
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

  /** A lock handle; kind is one of NativeLock.KIND_*. No network call. */
  public NativeLock newLock(String name, byte[] rawName, int kind) {
    return handle.call(this, client -> {
      handle.retain();
      long ptr;
      try {
        ptr = RlockNative.lockNew(client, rawName, kind, 0, 0, 0, 0);
      } catch (RuntimeException | Error e) {
        handle.releaseChild();
        throw e;
      }
      return new NativeLock(ptr, name, handle);
    });
  }

  /** rlock_fenced_write: true when written, false when refused for a newer token. */
  public boolean fencedWrite(byte[] key, byte[] value, long token) {
    return handle.call(this, client -> RlockNative.fencedWrite(client, key, value, token) == 1);
  }
}
