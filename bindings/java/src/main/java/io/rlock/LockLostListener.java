package io.rlock;

/**
 * Told when a hold of a lock is found lost by the client's watchdog: its key expired, was
 * deleted or taken, or Redis stayed unreachable past the lease. It runs on the watchdog thread
 * and must return quickly; what it throws goes to that thread's uncaught-exception handler.
 * It gets the lock as an argument: a listener that keeps a strong reference to its lock keeps
 * the lock (and its native handle) alive until the lock is closed.
 */
@FunctionalInterface
public interface LockLostListener {
  /** threadId: the owner thread (Thread.getId()) whose hold was lost. */
  void lockLost(RedisLock lock, long threadId, LostReason reason);
}
