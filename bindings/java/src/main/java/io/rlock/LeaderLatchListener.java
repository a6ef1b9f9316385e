package io.rlock;

/**
 * Told when a {@link LeaderLatch} gains and loses leadership (Curator's LeaderLatchListener
 * shape). Called on a library thread, one call at a time and in order: keep it short and hand
 * long work to your own threads. What it throws is printed and dropped.
 */
public interface LeaderLatchListener {
  /** This latch leads, with {@code term}. */
  void isLeader(long term);

  /**
   * The leadership of {@code term} ended (it is over already: stop acting on it). The latch
   * campaigns again by itself unless it was closed.
   */
  void notLeader(long term, RevokeReason reason);
}
