package io.rlock;

import io.rlock.internal.NativeLatch;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A count-down latch on Redis (Redisson RCountDownLatch shape and layout: Redisson processes
 * share it), made by {@link RedisLockClient#getCountDownLatch(String)}. A latch that does not
 * exist is open (count 0).
 *
 * <p>Awaits cost no thread: every waiter is woken by the zero-count message. A blocking await
 * parks the calling thread (a virtual thread frees its carrier) and is interruptible. Futures
 * of the {@code *Async} methods complete on a library thread: stages attached without an
 * executor must not block; ending a future first cancels its wait.
 */
public class RedisCountDownLatch implements AutoCloseable {
  private final RedisLockClient client; // keeps the client from being cleaned while in use
  private final String name;
  final NativeLatch nativeLatch;

  RedisCountDownLatch(RedisLockClient client, String name, NativeLatch nativeLatch) {
    this.client = client;
    this.name = name;
    this.nativeLatch = nativeLatch;
  }

  public String getName() {
    return name;
  }

  public RedisLockClient getClient() {
    return client;
  }

  /**
   * Sets the count (1 to 999999999999999) of a latch that does not exist (is open): true when
   * set, false when it exists. Other counts throw {@link IllegalArgumentException}.
   */
  public boolean trySetCount(long count) {
    return nativeLatch.trySetCount(count);
  }

  /** Counts down by one; at 0 the latch opens and every waiter wakes. Open stays open. */
  public void countDown() {
    nativeLatch.countDown();
  }

  /** The count now (0: open). */
  public long getCount() {
    return nativeLatch.count();
  }

  /** Waits until the count is 0. */
  public void await() throws InterruptedException {
    nativeLatch.await(NativeLatch.WAIT_FOREVER);
  }

  /** Waits at most {@code timeout} (0: checks once): true when open, false when it ran out. */
  public boolean await(Duration timeout) throws InterruptedException {
    return nativeLatch.await(Durations.waitMs(timeout, "timeout"));
  }

  public boolean await(long timeout, TimeUnit unit) throws InterruptedException {
    return nativeLatch.await(Durations.waitMs(timeout, unit, "timeout"));
  }

  /** Deletes the latch, which opens it without waking waiters (as Redisson): true when it existed. */
  public boolean delete() {
    return nativeLatch.delete();
  }

  /** Starts {@link #await()}: completes when the count is 0. */
  public CompletableFuture<Void> awaitAsync() {
    return nativeLatch.awaitForeverAsync();
  }

  /** Starts {@link #await(Duration)}: true when open, false when the time ran out. */
  public CompletableFuture<Boolean> awaitAsync(Duration timeout) {
    return nativeLatch.awaitAsync(Durations.waitMs(timeout, "timeout"));
  }

  public CompletableFuture<Boolean> awaitAsync(long timeout, TimeUnit unit) {
    return nativeLatch.awaitAsync(Durations.waitMs(timeout, unit, "timeout"));
  }

  /** Frees the native handle (no network call) and wakes awaits through this object. */
  @Override
  public void close() {
    nativeLatch.close();
  }

  @Override
  public String toString() {
    return "RedisCountDownLatch[" + name + "]";
  }

  /**
   * Adds a listener of this latch's key (Redisson's {@code addListener}): an {@link
   * ExpiredObjectListener} is told when the key expires, a {@link DeletedObjectListener} when it
   * is deleted (the count reaching zero, delete). Works from Redis keyspace notifications, so the server's {@code
   * notify-keyspace-events} must include {@code E} and {@code x} (expired) or {@code g}
   * (deleted): a {@link RedisLockServerException} names what is missing when the server
   * shows it; not on a Redis Cluster. Listeners run on the client's event thread. Returns the
   * id for {@link #removeListener}.
   */
  public int addListener(ObjectListener listener) {
    return client.addObjectListener(name, listener);
  }

  /** Removes a listener {@link #addListener} added to this object; another id does nothing. */
  public void removeListener(int listenerId) {
    client.removeObjectListener(name, listenerId);
  }
}
