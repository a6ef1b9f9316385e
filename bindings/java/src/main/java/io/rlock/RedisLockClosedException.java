package io.rlock;

/** The client, or the lock object, was closed (RLOCK_ECLOSED); also thrown to threads waiting when it was closed. */
public class RedisLockClosedException extends RedisLockException {
  private static final long serialVersionUID = 1L;

  public RedisLockClosedException(String message, int code) {
    super(message, code);
  }
}
