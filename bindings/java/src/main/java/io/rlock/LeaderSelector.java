package io.rlock;

import io.rlock.internal.ElectionHandler;
import io.rlock.internal.NativeElection;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.ref.WeakReference;
import java.util.Objects;

/**
 * Leader election in the shape of Curator's LeaderSelector (docs/leader.md): once this candidate
 * leads, {@link LeaderSelectorListener#takeLeadership} runs on a thread of its own (a virtual
 * thread on Java 21 and later, else a daemon platform thread) with a {@link LeaderContext}
 * carrying the term. Returning gives leadership up; losing it (the key deleted or taken, Redis
 * unreachable until the hold's deadline, the client closed) interrupts the thread at once. With
 * {@link #autoRequeue()} the candidate campaigns again after each leadership. Waiting to lead
 * costs no thread.
 */
public final class LeaderSelector implements AutoCloseable {
  private static final MethodHandle START_VIRTUAL = startVirtual();

  private final RedisLockClient client; // keeps the client from being cleaned while in use
  private final String name;
  private final LeaderSelectorListener listener;
  private final NativeElection election;
  private final Object lock = new Object();
  private boolean started; // under lock
  private boolean requeue; // under lock
  private boolean closed; // under lock
  private LeaderContext current; // under lock
  private Thread worker; // under lock

  LeaderSelector(RedisLockClient client, String name, byte[] rawName,
      LeaderSelectorListener listener) {
    this.client = client;
    this.name = name;
    this.listener = Objects.requireNonNull(listener, "listener");
    this.election = client.nativeClient().newElection(name, rawName, false, new Handler(this));
  }

  public String getName() {
    return name;
  }

  /** Campaign again after each leadership ends (Curator's autoRequeue). Before start(). */
  public LeaderSelector autoRequeue() {
    synchronized (lock) {
      requeue = true;
    }
    return this;
  }

  /** Starts campaigning and returns at once. Once only; not after close(). */
  public void start() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("leader selector '" + name + "' is closed");
      }
      if (started) {
        throw new IllegalStateException("leader selector '" + name + "' is already started");
      }
      started = true;
    }
    election.campaign();
  }

  /** This candidate leads now (checked against the hold's deadline). */
  public boolean hasLeadership() {
    synchronized (lock) {
      if (closed) {
        return false;
      }
    }
    return election.isLeader();
  }

  boolean leads(long term) {
    return hasLeadership() && election.term() == term;
  }

  /**
   * Stops campaigning; a running takeLeadership is interrupted and waited for, then leadership
   * is given up (the lock released at once): the body has ended before another candidate can
   * lead. Idempotent.
   */
  @Override
  public void close() {
    Thread running;
    synchronized (lock) {
      closed = true;
      running = worker;
    }
    if (running != null && running != Thread.currentThread()) {
      running.interrupt();
      boolean interrupted = false;
      for (;;) {
        try {
          running.join();
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
    election.close();
  }

  private void elected(long term) {
    LeaderContext context = new LeaderContext(this, term);
    Runnable body = () -> lead(context);
    synchronized (lock) {
      if (closed) {
        return;
      }
      current = context;
      worker = newThread(body);
      worker.start();
    }
  }

  private void revoked(long term, RevokeReason reason, RuntimeException failure) {
    Thread running = null;
    synchronized (lock) {
      if (current != null && current.term() == term) {
        current.end(reason);
        if (reason != RevokeReason.RESIGNED) {
          running = worker;
        }
      }
    }
    if (running != null) {
      running.interrupt(); // leadership is over: stop the work at once
    }
    if (failure != null) {
      Thread t = Thread.currentThread();
      t.getUncaughtExceptionHandler().uncaughtException(t, failure);
    }
  }

  private void lead(LeaderContext context) {
    try {
      listener.takeLeadership(context);
    } catch (InterruptedException e) {
      // leadership ended, or the selector closed
    } catch (Exception e) {
      Thread t = Thread.currentThread();
      t.getUncaughtExceptionHandler().uncaughtException(t, e);
    } finally {
      boolean again;
      synchronized (lock) {
        worker = null;
        current = null;
        again = requeue && !closed;
      }
      Thread.interrupted(); // an interrupt meant for the work, not for what follows
      if (!election.isClosed()) {
        try {
          election.resign(); // releases the lock unless the leadership was lost already
          if (again) {
            election.campaign();
          }
        } catch (RuntimeException e) {
          if (!election.isClosed()) {
            Thread t = Thread.currentThread();
            t.getUncaughtExceptionHandler().uncaughtException(t, e);
          }
        }
      }
      context.end(RevokeReason.RESIGNED);
    }
  }

  private Thread newThread(Runnable body) {
    if (START_VIRTUAL != null) {
      try {
        return (Thread) START_VIRTUAL.invokeExact(body);
      } catch (Throwable e) {
        throw new IllegalStateException("making a virtual thread failed", e);
      }
    }
    Thread thread = new Thread(body, "rlock-leader-" + name);
    thread.setDaemon(true);
    return thread;
  }

  /** Thread.ofVirtual().unstarted(Runnable) where the JVM has it (Java 21); null otherwise. */
  private static MethodHandle startVirtual() {
    try {
      MethodHandles.Lookup lookup = MethodHandles.publicLookup();
      Class<?> builder = Class.forName("java.lang.Thread$Builder$OfVirtual");
      MethodHandle ofVirtual = lookup.findStatic(Thread.class, "ofVirtual",
          MethodType.methodType(builder));
      MethodHandle unstarted = lookup.findVirtual(builder, "unstarted",
          MethodType.methodType(Thread.class, Runnable.class));
      return MethodHandles.foldArguments(unstarted, ofVirtual)
          .asType(MethodType.methodType(Thread.class, Runnable.class));
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  private static final class Handler implements ElectionHandler {
    private final WeakReference<LeaderSelector> selector;

    Handler(LeaderSelector selector) {
      this.selector = new WeakReference<>(selector);
    }

    @Override
    public void elected(long term) {
      LeaderSelector s = selector.get();
      if (s != null) {
        s.elected(term);
      }
    }

    @Override
    public void revoked(long term, int reason, int code, byte[] message) {
      LeaderSelector s = selector.get();
      if (s != null) {
        RevokeReason r = RevokeReason.of(reason);
        s.revoked(term, r,
            r == RevokeReason.FAILED ? NativeElection.campaignError(code, message) : null);
      }
    }
  }

  @Override
  public String toString() {
    return "LeaderSelector{" + name + ", leader=" + hasLeadership() + "}";
  }
}
