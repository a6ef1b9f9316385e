package io.rlock;

/**
 * Told when the object's key is deleted ({@code DEL} or {@code UNLINK}: an unlock that frees the
 * lock, a force unlock, a semaphore's delete), as Redisson's {@code DeletedObjectListener}. Needs
 * the server's {@code notify-keyspace-events} to include {@code E} and {@code g}.
 */
@FunctionalInterface
public interface DeletedObjectListener extends ObjectListener {
  /** The object's name, as given to the client (without its key prefix). */
  void onDeleted(String name);
}
