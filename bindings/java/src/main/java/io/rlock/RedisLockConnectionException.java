package io.rlock;

/** Redis could not be reached, did not answer within the command timeout, or broke the protocol (RLOCK_ECONN). */
public class RedisLockConnectionException extends RedisLockException {
  private static final long serialVersionUID = 1L;

  public RedisLockConnectionException(String message, int code) {
    super(message, code);
  }
}
