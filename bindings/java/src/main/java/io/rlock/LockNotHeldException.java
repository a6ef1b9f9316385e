package io.rlock;

/**
 * Unlock (or extend) of a lock the calling thread does not hold: nobody holds it
 * (RLOCK_ENOTHELD), or another owner does (RLOCK_ENOTOWNER; the lock is left untouched).
 */
public class LockNotHeldException extends IllegalMonitorStateException {
  private static final long serialVersionUID = 1L;

  private final int code;

  public LockNotHeldException(String message, int code) {
    super(message);
    this.code = code;
  }

  /** The rlock.h status code. */
  public int getCode() {
    return code;
  }
}
