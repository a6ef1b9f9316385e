package io.rlock.internal;

/**
 * The TLS fields of rlock_client_options (version 3), as the C library takes them: null strings
 * and zero choices are unset. Internal: use io.rlock.RedisLockClient.Builder.
 */
public final class TlsOptions {
  public static final int VERIFY_FULL = TlsVerify.TLS_VERIFY_FULL;
  public static final int VERIFY_CA = TlsVerify.TLS_VERIFY_CA;
  public static final int VERIFY_NONE = TlsVerify.TLS_VERIFY_NONE;
  public static final int VERSION_1_2 = TlsVersion.TLS_1_2;
  public static final int VERSION_1_3 = TlsVersion.TLS_1_3;
  public static final int SENTINEL_AUTO = SentinelTls.SENTINEL_TLS_AUTO;
  public static final int SENTINEL_ON = SentinelTls.SENTINEL_TLS_ON;
  public static final int SENTINEL_OFF = SentinelTls.SENTINEL_TLS_OFF;

  /** No TLS field set: the URL alone decides. */
  public static final TlsOptions NONE =
      new TlsOptions(false, null, null, null, null, null, 0, 0, 0);

  final boolean enabled;
  final String caFile;
  final String caDir;
  final String certFile;
  final String keyFile;
  final String serverName;
  final int verify;
  final int minVersion;
  final int sentinels;

  public TlsOptions(boolean enabled, String caFile, String caDir, String certFile,
      String keyFile, String serverName, int verify, int minVersion, int sentinels) {
    this.enabled = enabled;
    this.caFile = caFile;
    this.caDir = caDir;
    this.certFile = certFile;
    this.keyFile = keyFile;
    this.serverName = serverName;
    this.verify = verify;
    this.minVersion = minVersion;
    this.sentinels = sentinels;
  }

  /** A field's UTF-8 for the C library, null when unset; `what` names it in errors. */
  static byte[] bytes(String value, String what) {
    return value == null ? null : Utf8.cString(value, what);
  }
}
