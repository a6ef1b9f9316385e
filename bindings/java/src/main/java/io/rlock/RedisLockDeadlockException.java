package io.rlock;

/** The acquire would wait for the calling thread itself: a holder of the read lock asked for the write lock of the same read-write lock (RLOCK_EDEADLK). */
public class RedisLockDeadlockException extends RedisLockException {
  private static final long serialVersionUID = 1L;

  public RedisLockDeadlockException(String message, int code) {
    super(message, code);
  }
}
