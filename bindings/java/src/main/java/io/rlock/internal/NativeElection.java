package io.rlock.internal;

import java.lang.ref.Cleaner;

/**
 * An rlock_election. Internal: use io.rlock.LeaderLatch or io.rlock.LeaderSelector. Freeing
 * resigns (one round trip when leading).
 */
public final class NativeElection implements AutoCloseable {
  private final Handle handle;
  private final Cleaner.Cleanable cleanable;

  NativeElection(long ptr, long payload, String name, Handle client) {
    handle = new Handle(ptr, "the election '" + name + "'", null,
        RlockNative::electionFree, client);
    handle.setAux(payload);
    cleanable = Handle.CLEANER.register(this, handle);
  }

  /** Starts campaigning; the handler given at creation hears of it. */
  public void campaign() {
    handle.execute(this, p -> RlockNative.electionCampaign(p, handle.aux()));
  }

  /** Stops campaigning or leading (a leader's lock is released at once). */
  public void resign() {
    handle.execute(this, RlockNative::electionResign);
  }

  /** Leading, within the hold's validity deadline (checked on every call). */
  public boolean isLeader() {
    if (handle.isClosed()) {
      return false;
    }
    return handle.call(this, RlockNative::electionIsLeader);
  }

  /** The current leadership's term, 0 when not the leader. */
  public long term() {
    if (handle.isClosed()) {
      return 0;
    }
    return handle.call(this, RlockNative::electionTerm);
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  /** Resigns and frees; no handler call runs after this returns. */
  @Override
  public void close() {
    handle.close();
    cleanable.clean();
  }

  /** The error of a campaign that the client's closing ended. */
  public static RuntimeException closedError(String what) {
    return Errors.closed(what);
  }

  /** The message of a failed campaign, as the binding's exceptions carry it. */
  public static RuntimeException campaignError(int code, byte[] message) {
    return Errors.fromCode(code, message);
  }
}
