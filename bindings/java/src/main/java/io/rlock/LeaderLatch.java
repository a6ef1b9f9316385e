package io.rlock;

import io.rlock.internal.ElectionHandler;
import io.rlock.internal.NativeElection;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Leader election on a name among every candidate on the same Redis, in any process or language
 * (docs/leader.md), in the shape of Curator's LeaderLatch. {@link #start()} campaigns (no thread
 * waits per candidate); {@link #hasLeadership()} says whether this latch leads now, checked
 * against the hold's validity deadline on every call; {@link #term()} is the leadership's term,
 * which grows with every new leader of the name: pass it to the store with each write so it can
 * refuse an old leader's. After a loss the latch campaigns again; {@link #close()} resigns, and
 * another candidate takes over at once. Waiting ({@link #await()}, {@link #awaitLeadership()})
 * parks on a CompletableFuture, so virtual threads wait without holding a carrier.
 */
public final class LeaderLatch implements AutoCloseable {
  private final RedisLockClient client; // keeps the client from being cleaned while in use
  private final String name;
  private final NativeElection election;
  private final CopyOnWriteArrayList<LeaderLatchListener> listeners =
      new CopyOnWriteArrayList<>();
  private final Object lock = new Object();
  private CompletableFuture<Long> leadership = new CompletableFuture<>(); // under lock
  private boolean started; // under lock
  private volatile boolean closed;

  LeaderLatch(RedisLockClient client, String name, byte[] rawName) {
    this.client = client;
    this.name = name;
    this.election = client.nativeClient().newElection(name, rawName, true, new Handler(this));
  }

  /** The name of the election (the key of its fenced lock). */
  public String getName() {
    return name;
  }

  /** Starts campaigning and returns at once. Once only; not after close(). */
  public void start() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("leader latch '" + name + "' is closed");
      }
      if (started) {
        throw new IllegalStateException("leader latch '" + name + "' is already started");
      }
      started = true;
    }
    election.campaign();
  }

  /** This latch leads now (false from the moment leadership ends, or when closed). */
  public boolean hasLeadership() {
    return !closed && election.isLeader();
  }

  /** The term of the current leadership; empty when not the leader. */
  public OptionalLong term() {
    long term = closed ? 0 : election.term();
    return term > 0 ? OptionalLong.of(term) : OptionalLong.empty();
  }

  /**
   * Completes with the term once this latch leads (at once if it does), or exceptionally when
   * the latch is closed or the campaign fails. Cancelling the returned future cancels nothing
   * else.
   */
  public CompletableFuture<Long> awaitLeadership() {
    synchronized (lock) {
      return leadership.copy();
    }
  }

  /** Waits until this latch leads; its term. */
  public long await() throws InterruptedException {
    try {
      return awaitLeadership().get();
    } catch (ExecutionException e) {
      throw unwrap(e);
    }
  }

  /** Waits at most {@code timeout} until this latch leads: true if it does. */
  public boolean await(Duration timeout) throws InterruptedException {
    Objects.requireNonNull(timeout, "timeout");
    try {
      awaitLeadership().get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (ExecutionException e) {
      throw unwrap(e);
    }
  }

  public void addListener(LeaderLatchListener listener) {
    listeners.add(Objects.requireNonNull(listener, "listener"));
  }

  public void removeListener(LeaderLatchListener listener) {
    listeners.remove(listener);
  }

  /** Resigns (a leader's lock is released at once) and frees the latch. Idempotent. */
  @Override
  public void close() {
    closed = true;
    election.close(); // its last revoked (RESIGNED) runs before this returns
    synchronized (lock) {
      leadership.completeExceptionally(
          new IllegalStateException("leader latch '" + name + "' is closed"));
    }
  }

  private static RuntimeException unwrap(ExecutionException e) {
    return e.getCause() instanceof RuntimeException
        ? (RuntimeException) e.getCause()
        : new IllegalStateException(e.getCause());
  }

  private void elected(long term) {
    synchronized (lock) {
      if (!leadership.complete(term)) {
        leadership = CompletableFuture.completedFuture(term);
      }
    }
    for (LeaderLatchListener l : listeners) {
      try {
        l.isLeader(term);
      } catch (RuntimeException e) {
        Thread t = Thread.currentThread();
        t.getUncaughtExceptionHandler().uncaughtException(t, e);
      }
    }
  }

  private void revoked(long term, RevokeReason reason, RuntimeException failure) {
    synchronized (lock) {
      if (term > 0 && leadership.isDone()) {
        leadership = new CompletableFuture<>(); // until the next leadership
      }
      if (failure != null) {
        leadership.completeExceptionally(failure);
      }
    }
    if (term == 0) {
      return; // a campaign that ended without leadership: the future says why
    }
    for (LeaderLatchListener l : listeners) {
      try {
        l.notLeader(term, reason);
      } catch (RuntimeException e) {
        Thread t = Thread.currentThread();
        t.getUncaughtExceptionHandler().uncaughtException(t, e);
      }
    }
  }

  /** What the C callbacks reach: no reference to the latch's client (Cleaner safety). */
  private static final class Handler implements ElectionHandler {
    private final java.lang.ref.WeakReference<LeaderLatch> latch;

    Handler(LeaderLatch latch) {
      this.latch = new java.lang.ref.WeakReference<>(latch);
    }

    @Override
    public void elected(long term) {
      LeaderLatch l = latch.get();
      if (l != null) {
        l.elected(term);
      }
    }

    @Override
    public void revoked(long term, int reason, int code, byte[] message) {
      LeaderLatch l = latch.get();
      if (l != null) {
        RevokeReason r = RevokeReason.of(reason);
        RuntimeException failure = null;
        if (r == RevokeReason.FAILED) {
          failure = NativeElection.campaignError(code, message);
        } else if (term == 0 && r == RevokeReason.CLOSED) {
          failure = NativeElection.closedError("the client of leader latch '" + l.name + "'");
        }
        l.revoked(term, r, failure);
      }
    }
  }

  @Override
  public String toString() {
    return "LeaderLatch{" + name + ", leader=" + hasLeadership() + "}";
  }
}
