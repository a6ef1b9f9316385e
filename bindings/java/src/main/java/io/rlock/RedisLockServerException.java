package io.rlock;

/** Redis answered with an error: a missing command, out of memory, busy with a script, a read-only replica, or another error reply (RLOCK_EUNSUPPORTED, RLOCK_EOOM, RLOCK_EBUSY, RLOCK_EREADONLY, RLOCK_EREDIS). */
public class RedisLockServerException extends RedisLockException {
  private static final long serialVersionUID = 1L;

  public RedisLockServerException(String message, int code) {
    super(message, code);
  }
}
