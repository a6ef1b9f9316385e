package io.rlock;

/**
 * A TLS connection could not be set up (RLOCK_ETLS): the handshake or the certificate check
 * failed (the message gives OpenSSL's reason, such as "hostname mismatch" or "certificate has
 * expired"), the server refused the client certificate, or it does not speak TLS on a rediss://
 * URL. A connection problem, so it is a {@link RedisLockConnectionException}; unlike most of
 * those, retrying does not help until the configuration or the certificates change.
 */
public class RedisLockTlsException extends RedisLockConnectionException {
  private static final long serialVersionUID = 1L;

  public RedisLockTlsException(String message, int code) {
    super(message, code);
  }
}
