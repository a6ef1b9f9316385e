package io.rlock;

import java.util.concurrent.locks.Lock;

/**
 * One hold of a lock, for try-with-resources: {@code try (Held held = lock.locked()) { ... }}.
 * Closing it unlocks once, in the thread that closes it (the one that locked, in that form);
 * it throws {@link LockLostException} if the hold was lost meanwhile, as {@code unlock()} does.
 * Made by {@link RedisLock#locked()} and {@link RedisMultiLock#locked()}.
 */
public final class Held implements AutoCloseable {
  private final Lock lock;

  Held(Lock lock) {
    this.lock = lock;
  }

  /** The lock held. */
  public Lock lock() {
    return lock;
  }

  @Override
  public void close() {
    lock.unlock();
  }
}
