package io.rlock;

/**
 * The calling thread held the lock, but it expired, was deleted or was taken before this
 * unlock (RLOCK_ELOST): the work done under it may not have been exclusive. The other holder's
 * key was not touched. Fencing tokens ({@link RedisFencedLock}) protect a resource from this.
 */
public class LockLostException extends LockNotHeldException {
  private static final long serialVersionUID = 1L;

  public LockLostException(String message, int code) {
    super(message, code);
  }
}
