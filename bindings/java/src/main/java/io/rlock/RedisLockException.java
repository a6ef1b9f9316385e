package io.rlock;

/**
 * The base of rlock's failures (all unchecked). {@link #getCode()} is the C library's status
 * code (a negative RLOCK_E* value of rlock.h) and the message, from the C library, names the
 * problem. Invalid arguments throw {@link IllegalArgumentException}, and unlocking a lock the
 * calling thread does not hold throws {@link LockNotHeldException} (an
 * {@link IllegalMonitorStateException}).
 */
public class RedisLockException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int code;

  public RedisLockException(String message, int code) {
    super(message);
    this.code = code;
  }

  /** The rlock.h status code, e.g. -5 for RLOCK_ECONN. */
  public int getCode() {
    return code;
  }
}
