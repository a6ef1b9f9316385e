package io.rlock.internal;

/** The server-side state of a lock from one owner's point of view (the C rlock_lock_state). */
public final class LockState {
  /** The lock key exists. */
  public final boolean locked;
  /** The asked-for owner holds it. */
  public final boolean heldByOwner;
  /** The asked-for owner's hold count. */
  public final long holdCount;
  /** Remaining TTL in ms; -1 = locked without expiry; -2 = not locked. */
  public final long ttlMs;
  /** Number of owners (readers share a read lock). */
  public final long ownerCount;
  /** A read-write lock's mode: 0 none, 1 read, 2 write (rlock_lock_mode). */
  public final int mode;

  /** Made by the JNI layer only. */
  LockState(boolean locked, boolean heldByOwner, long holdCount, long ttlMs, long ownerCount,
      int mode) {
    this.locked = locked;
    this.heldByOwner = heldByOwner;
    this.holdCount = holdCount;
    this.ttlMs = ttlMs;
    this.ownerCount = ownerCount;
    this.mode = mode;
  }
}
