package io.rlock;

/**
 * Told when the object's key expires (a lease that ran out, a semaphore's TTL), as Redisson's
 * {@code ExpiredObjectListener}. Needs the server's {@code notify-keyspace-events} to include
 * {@code E} and {@code x}.
 */
@FunctionalInterface
public interface ExpiredObjectListener extends ObjectListener {
  /** The object's name, as given to the client (without its key prefix). */
  void onExpired(String name);
}
