package io.rlock;

/** The Redis ACL user lacks a command or key the lock needs (RLOCK_ENOPERM). */
public class RedisLockPermissionException extends RedisLockException {
  private static final long serialVersionUID = 1L;

  public RedisLockPermissionException(String message, int code) {
    super(message, code);
  }
}
