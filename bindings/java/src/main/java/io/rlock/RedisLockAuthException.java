package io.rlock;

/** Redis rejected the user name or password (RLOCK_EAUTH). */
public class RedisLockAuthException extends RedisLockConnectionException {
  private static final long serialVersionUID = 1L;

  public RedisLockAuthException(String message, int code) {
    super(message, code);
  }
}
