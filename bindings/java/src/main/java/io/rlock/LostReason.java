package io.rlock;

import io.rlock.internal.LostHandler;

/** Why a held lock was lost. */
public enum LostReason {
  /** The renewal found the key deleted or held by someone else. */
  GONE,
  /** Redis could not be reached before the lease ran out. */
  UNREACHABLE,
  /** An explicit lease ran out while the lock was still held. */
  EXPIRED;

  static LostReason of(int reason) {
    switch (reason) {
      case LostHandler.GONE:
        return GONE;
      case LostHandler.UNREACHABLE:
        return UNREACHABLE;
      case LostHandler.EXPIRED:
        return EXPIRED;
      default:
        throw new IllegalArgumentException("unknown lost reason " + reason);
    }
  }
}
