package io.rlock.internal;

/**
 * Told when a hold acquired through a lock handle is found lost. Called on the client's watchdog
 * thread (attached to the JVM as a daemon for the call); it must return quickly and should not
 * throw (what it throws is printed and dropped: nothing may unwind into C).
 */
@FunctionalInterface
public interface LostHandler {
  /** The renewal found the key deleted or held by someone else. */
  int GONE = LostReason.LOST_GONE;
  /** Redis could not be reached before the lease ran out. */
  int UNREACHABLE = LostReason.LOST_UNREACHABLE;
  /** An explicit lease ran out while the lock was still held. */
  int EXPIRED = LostReason.LOST_EXPIRED;

  /** Called by the JNI layer (method name and signature are fixed there). */
  void lost(long threadId, int reason);
}
