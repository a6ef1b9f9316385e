package io.rlock.internal;

/**
 * Told each event of a client (rlock_client_set_event_callback), in order, on the client's event
 * thread (a library thread attached to the JVM as a daemon). It must return quickly and should
 * not throw (what it throws is printed and dropped: nothing may unwind into C).
 */
@FunctionalInterface
public interface NativeEventHandler {
  /**
   * Called by the JNI layer (method name and signature are fixed there). Byte arrays are null
   * when empty; names are the lock's bytes (UTF-8 for names made from Java strings).
   */
  void event(int kind, long unixTimeUs, byte[] name, byte[] owner, long threadId,
      long durationUs, long token, int reason, byte[] detail);
}
