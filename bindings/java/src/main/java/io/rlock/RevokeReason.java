package io.rlock;

/** Why a leadership, or a campaign, ended (rlock.h rlock_revoke_reason). */
public enum RevokeReason {
  /** The key was deleted, or is held by another owner. */
  GONE(1),
  /** Renewals failed until the hold's validity deadline. */
  UNREACHABLE(2),
  /** This candidate resigned (close()). */
  RESIGNED(4),
  /** The client was closed. */
  CLOSED(5),
  /** The campaign met an error that does not pass by itself (the key is not a lock, an ACL). */
  FAILED(6);

  final int code;

  RevokeReason(int code) {
    this.code = code;
  }

  static RevokeReason of(int code) {
    for (RevokeReason r : values()) {
      if (r.code == code) {
        return r;
      }
    }
    throw new IllegalArgumentException("unknown revoke reason " + code);
  }
}
