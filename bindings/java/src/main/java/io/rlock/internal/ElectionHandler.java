package io.rlock.internal;

/**
 * Told of an election's leaderships. Called on library threads (attached to the JVM as daemons
 * for the call), or on the thread that resigns or closes the client; it must return quickly and
 * should not throw (what it throws is printed and dropped: nothing may unwind into C).
 */
public interface ElectionHandler {
  /** This candidate leads, with this term. Called by the JNI layer. */
  void elected(long term);

  /**
   * The leadership of {@code term} ended, or (term 0) the campaign did; {@code reason} is an
   * rlock_revoke_reason, and for a failed campaign {@code code} and the UTF-8 {@code message}
   * say why. Called by the JNI layer.
   */
  void revoked(long term, int reason, int code, byte[] message);
}
