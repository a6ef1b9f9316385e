package io.rlock;

/**
 * lock() or tryLock() of a non-reentrant lock by the thread that holds it (RLOCK_EDEADLK): an
 * IllegalMonitorStateException, as Redisson's non-reentrant locks throw. Nothing changed: the
 * thread still holds the lock once.
 */
public class LockAlreadyHeldException extends IllegalMonitorStateException {
  private static final long serialVersionUID = 1L;

  private final int code;

  public LockAlreadyHeldException(String message, int code) {
    super(message);
    this.code = code;
  }

  /** The rlock.h status code. */
  public int getCode() {
    return code;
  }
}
