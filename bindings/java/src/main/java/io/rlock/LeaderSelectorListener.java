package io.rlock;

/**
 * The work of a {@link LeaderSelector}'s leader (Curator's LeaderSelectorListener shape).
 */
@FunctionalInterface
public interface LeaderSelectorListener {
  /**
   * Runs while this candidate leads, on a thread of its own; returning gives leadership up (the
   * lock is released at once). The thread is interrupted the moment leadership ends otherwise:
   * stop then, and check {@link LeaderContext#isLeader()} before each action. What it throws is
   * passed to the thread's uncaught-exception handler, and leadership is given up.
   */
  void takeLeadership(LeaderContext context) throws Exception;
}
