package io.rlock;

/**
 * A leadership ended while its holder still acted on it: another candidate may lead now. Writes
 * fenced with the term are safe: a store that checks terms refuses the late ones.
 */
public class LeadershipLostException extends LockLostException {
  private static final long serialVersionUID = 1L;
  private final long term;
  private final RevokeReason reason;

  public LeadershipLostException(String name, long term, RevokeReason reason) {
    super("leadership of '" + name + "' (term " + term + ") was lost: "
        + reason.name().toLowerCase(java.util.Locale.ROOT), -11); // RLOCK_ELOST
    this.term = term;
    this.reason = reason;
  }

  public long getTerm() {
    return term;
  }

  public RevokeReason getReason() {
    return reason;
  }
}
