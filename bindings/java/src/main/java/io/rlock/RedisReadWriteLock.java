package io.rlock;

import java.util.concurrent.locks.ReadWriteLock;

/**
 * A read-write lock (Redisson RReadWriteLock): readers share, a writer excludes everyone else.
 * The writer may also take the read lock (downgrade: unlock the write lock afterwards and keep
 * reading); a reader asking for the write lock cannot get it while it reads: every
 * {@code tryLock} and {@code tryLockAsync} answers false at once (as Redisson's, which waits
 * first), {@code lock()} and {@code lockAsync()} fail with {@link RedisLockDeadlockException}
 * instead of waiting for itself.
 */
public final class RedisReadWriteLock implements ReadWriteLock {
  private final String name;
  private final RedisLock read;
  private final RedisLock write;

  RedisReadWriteLock(String name, RedisLock read, RedisLock write) {
    this.name = name;
    this.read = read;
    this.write = write;
  }

  public String getName() {
    return name;
  }

  @Override
  public RedisLock readLock() {
    return read;
  }

  @Override
  public RedisLock writeLock() {
    return write;
  }

  /** Closes both halves: frees their native handles, no network call, no unlock. */
  public void close() {
    try {
      read.close();
    } finally {
      write.close();
    }
  }

  @Override
  public String toString() {
    return "RedisReadWriteLock[" + name + "]";
  }
}
