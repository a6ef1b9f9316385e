package io.rlock;

/**
 * Replica sync: the master granted the lock, but fewer replicas than asked confirmed it in time,
 * twice; each grant was taken back, so nothing is held (RLOCK_ENOTSYNCED).
 */
public class RedisLockNotSyncedException extends RedisLockException {
  private static final long serialVersionUID = 1L;

  public RedisLockNotSyncedException(String message, int code) {
    super(message, code);
  }
}
