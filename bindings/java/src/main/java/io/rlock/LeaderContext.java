package io.rlock;

import java.util.concurrent.CompletableFuture;

/** One leadership of a {@link LeaderSelector}: its term, and whether it still holds. */
public final class LeaderContext {
  private final LeaderSelector selector;
  private final long term;
  private final CompletableFuture<RevokeReason> lost = new CompletableFuture<>();

  LeaderContext(LeaderSelector selector, long term) {
    this.selector = selector;
    this.term = term;
  }

  /** The term: it grows with every new leader of the name. Fence each write with it. */
  public long term() {
    return term;
  }

  /** Still the leader: false from the moment leadership ends (checked against the deadline). */
  public boolean isLeader() {
    return !lost.isDone() && selector.leads(term);
  }

  /** Completes with the reason once this leadership has ended. */
  public CompletableFuture<RevokeReason> lost() {
    return lost.copy();
  }

  /** Throws {@link LeadershipLostException} once this leadership has ended. */
  public void checkLeadership() {
    if (!isLeader()) {
      throw new LeadershipLostException(selector.getName(), term,
          lost.getNow(RevokeReason.UNREACHABLE));
    }
  }

  void end(RevokeReason reason) {
    lost.complete(reason);
  }

  boolean ended() {
    return lost.isDone();
  }
}
