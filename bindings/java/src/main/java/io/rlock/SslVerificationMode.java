package io.rlock;

/**
 * How the client checks a TLS server's certificate, set by
 * {@link RedisLockClient.Builder#sslVerificationMode}; the names are Redisson's.
 */
public enum SslVerificationMode {
  /** A chain to a trusted CA that names the host connected to (or sslServerName). */
  STRICT,
  /**
   * A chain to a trusted CA, whatever names it gives: for clusters whose nodes announce bare IP
   * addresses that their certificates do not list.
   */
  CA_ONLY,
  /** No check at all: encrypted but not authenticated. The C library logs it once per process. */
  NONE
}
