package io.rlock.internal;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Makes native waits interruptible. Java has no hook on Thread.interrupt(), so each
 * interruptible wait registers a cancel token here, and one daemon thread checks the waiting
 * threads every 20 ms and cancels the token of an interrupted one; the C acquire then returns
 * RLOCK_ECANCELED having left nothing held. The thread sleeps while nobody waits.
 */
final class InterruptWatcher {
  private static final long POLL_MS = 20;
  private static final Object LOCK = new Object();
  private static final Set<Waiter> WAITERS = new HashSet<>(); // guarded by LOCK
  private static Thread thread; // guarded by LOCK

  private InterruptWatcher() {}

  /** A cancel token watched for the calling thread until closed. */
  static final class Waiter implements AutoCloseable {
    private final Thread owner = Thread.currentThread();
    private long token;
    private boolean cancelled;

    private Waiter(long token) {
      this.token = token;
    }

    long token() {
      return token;
    }

    synchronized boolean cancelled() {
      return cancelled;
    }

    private synchronized void cancelIfInterrupted() {
      if (token != 0 && !cancelled && owner.isInterrupted()) {
        RlockNative.cancelTokenCancel(token);
        cancelled = true;
      }
    }

    /** After the acquire returned: the token is no longer in use. */
    @Override
    public void close() {
      synchronized (LOCK) {
        WAITERS.remove(this);
      }
      synchronized (this) {
        RlockNative.cancelTokenFree(token);
        token = 0;
      }
    }
  }

  static Waiter register() {
    Waiter waiter = new Waiter(RlockNative.cancelTokenNew());
    synchronized (LOCK) {
      WAITERS.add(waiter);
      if (thread == null) {
        thread = new Thread(InterruptWatcher::watch, "rlock-interrupt-watcher");
        thread.setDaemon(true);
        thread.start();
      }
      LOCK.notifyAll();
    }
    return waiter;
  }

  private static void watch() {
    List<Waiter> snapshot = new ArrayList<>();
    for (;;) {
      try {
        synchronized (LOCK) {
          while (WAITERS.isEmpty()) {
            LOCK.wait();
          }
          snapshot.clear();
          snapshot.addAll(WAITERS);
        }
        for (Waiter waiter : snapshot) {
          waiter.cancelIfInterrupted();
        }
        Thread.sleep(POLL_MS);
      } catch (InterruptedException e) {
        // Nobody should interrupt this thread; it keeps serving the waiters.
      }
    }
  }
}
