package io.rlock.internal;

import io.rlock.LockAlreadyHeldException;
import io.rlock.LockLostException;
import io.rlock.LockNotHeldException;
import io.rlock.RedisLockAuthException;
import io.rlock.RedisLockClosedException;
import io.rlock.RedisLockConnectionException;
import io.rlock.RedisLockDeadlockException;
import io.rlock.RedisLockException;
import io.rlock.RedisLockNotSyncedException;
import io.rlock.RedisLockPermissionException;
import io.rlock.RedisLockServerException;
import io.rlock.RedisLockTlsException;
import java.nio.charset.StandardCharsets;

/**
 * The one table from C status codes to Java exceptions. ErrorCode is generated from rlock.h;
 * HeaderTablesTest checks that every code there is mapped here or deliberately generic.
 */
final class Errors {
  private Errors() {}

  /** Called by the JNI layer, inside the failing call; the message comes as UTF-8 bytes. */
  static RuntimeException fromCode(int code, byte[] message) {
    if (message == null) {
      return fromCode(code, "rlock error " + code);
    }
    return fromCode(code, new String(message, StandardCharsets.UTF_8));
  }

  static RuntimeException fromCode(int code, String message) {
    switch (code) {
      case ErrorCode.EINVAL:
        return new IllegalArgumentException(message);
      case ErrorCode.ENOTHELD:
      case ErrorCode.ENOTOWNER:
        return new LockNotHeldException(message, code);
      case ErrorCode.ELOST:
        return new LockLostException(message, code);
      case ErrorCode.ECONN:
        return new RedisLockConnectionException(message, code);
      case ErrorCode.ETLS:
        return new RedisLockTlsException(message, code);
      case ErrorCode.EAUTH:
        return new RedisLockAuthException(message, code);
      case ErrorCode.ENOPERM:
        return new RedisLockPermissionException(message, code);
      case ErrorCode.EUNSUPPORTED:
      case ErrorCode.EREDIS:
      case ErrorCode.EOOM:
      case ErrorCode.EBUSY:
      case ErrorCode.EREADONLY:
        return new RedisLockServerException(message, code);
      case ErrorCode.ECLOSED:
      case ErrorCode.EBADHANDLE: // a freed handle is a closed one
        return new RedisLockClosedException(message, code);
      case ErrorCode.EDEADLK:
        return new RedisLockDeadlockException(message, code);
      case ErrorCode.ENOTSYNCED:
        return new RedisLockNotSyncedException(message, code);
      default:
        return new RedisLockException(message, code);
    }
  }

  /**
   * RLOCK_EDEADLK of a non-reentrant lock's acquire means its holder asked again: Redisson throws
   * IllegalMonitorStateException there. Other failures stay as they are.
   */
  static RuntimeException alreadyHeld(RuntimeException e) {
    if (e instanceof RedisLockDeadlockException) {
      RedisLockDeadlockException deadlock = (RedisLockDeadlockException) e;
      return new LockAlreadyHeldException(deadlock.getMessage(), deadlock.getCode());
    }
    return e;
  }

  /** For a handle closed on the Java side (no C call made). */
  static RedisLockClosedException closed(String what) {
    return new RedisLockClosedException(what + " is closed", ErrorCode.ECLOSED);
  }
}
