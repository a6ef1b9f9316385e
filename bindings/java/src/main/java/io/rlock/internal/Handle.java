package io.rlock.internal;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.function.LongConsumer;

/**
 * One native pointer shared by threads. Calls run between {@link #enter()} and {@link #exit()};
 * {@link #close()} refuses new calls, wakes blocked ones and frees once none runs.
 *
 * <p>It is also the Cleaner action of its owner: when the owner is unreachable no call runs, and
 * the pointer is freed without any network call, but only after every child handle (a lock of
 * a client, a group of a lock) is freed: an abandoned client freed while its locks still live
 * would release their holds over the network.
 */
final class Handle implements Runnable {
  static final Cleaner CLEANER = Cleaner.create();

  /** Frees the pointer; aux is a second native pointer freed with it (or 0). */
  interface Free {
    void free(long ptr, long aux);
  }

  private final String what;
  private final LongConsumer wake;
  private final Free free;
  private final Handle[] parents;
  private long ptr;
  private long aux;
  private int inFlight;
  private int children;
  private boolean closing;
  private boolean abandoned;

  /**
   * @param what names the handle in "is closed" errors
   * @param wake wakes calls blocked on the pointer (rlock_cancel), or null
   * @param parents handles this one was {@link #retain() retained} from; released when freed
   */
  Handle(long ptr, String what, LongConsumer wake, Free free, Handle... parents) {
    this.ptr = ptr;
    this.what = what;
    this.wake = wake;
    this.free = free;
    this.parents = parents;
  }

  /** A call on the native pointer. */
  interface Call<T, E extends Exception> {
    T apply(long ptr) throws E;
  }

  /**
   * Runs body between enter and exit. The fence keeps owner reachable until the call returns:
   * otherwise the Cleaner could free the pointer while the call still uses it.
   */
  <T, E extends Exception> T call(Object owner, Call<T, E> body) throws E {
    long p = enter();
    try {
      return body.apply(p);
    } finally {
      exit();
      Reference.reachabilityFence(owner);
    }
  }

  /** As call, for a body that returns nothing. */
  void execute(Object owner, LongConsumer body) {
    call(owner, p -> {
      body.accept(p);
      return null;
    });
  }

  synchronized long enter() {
    if (closing || ptr == 0) {
      throw Errors.closed(what);
    }
    inFlight++;
    return ptr;
  }

  synchronized void exit() {
    if (--inFlight == 0) {
      notifyAll();
    }
  }

  synchronized boolean isClosed() {
    return closing || ptr == 0;
  }

  RuntimeException closedError() {
    return Errors.closed(what);
  }

  synchronized long aux() {
    return aux;
  }

  synchronized void setAux(long value) {
    aux = value;
  }

  /** Counts a child that must be freed before an abandoned this is. Call inside enter/exit. */
  synchronized void retain() {
    children++;
  }

  void releaseChild() {
    boolean freeNow;
    synchronized (this) {
      children--;
      freeNow = abandoned && children == 0;
    }
    if (freeNow) {
      freeNow();
    }
  }

  /** Refuses new calls, wakes blocked ones (every few ms, until none runs), then frees. */
  void close() {
    synchronized (this) {
      if (closing || ptr == 0) {
        return;
      }
      closing = true;
    }
    boolean interrupted = false;
    for (;;) {
      synchronized (this) {
        if (inFlight == 0) {
          break;
        }
      }
      if (wake != null) {
        wake.accept(ptr); // valid: only this method frees it, after the loop
      }
      synchronized (this) {
        if (inFlight > 0) {
          try {
            wait(5);
          } catch (InterruptedException e) {
            interrupted = true; // the handle must still be freed; the flag is restored below
          }
        }
      }
    }
    freeNow();
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /** The Cleaner action: the owner is unreachable. */
  @Override
  public void run() {
    synchronized (this) {
      abandoned = true;
      if (children > 0) {
        return;
      }
    }
    freeNow();
  }

  private void freeNow() {
    long p;
    long a;
    synchronized (this) {
      p = ptr;
      a = aux;
      ptr = 0;
      aux = 0;
      closing = true;
    }
    if (p == 0) {
      return;
    }
    free.free(p, a);
    for (Handle parent : parents) {
      parent.releaseChild();
    }
  }
}
