package io.rlock;

/**
 * Told the events of a client ({@link RedisLockClient#setEventListener}), one at a time and in
 * the order they happened, on the client's event thread (a native thread attached to the JVM as
 * a daemon, named "rlock-events"). It should return quickly: while it runs, later events wait
 * in a queue of 65536, beyond which they are dropped and counted
 * ({@link RedisLockStats#getEventsDropped()}). It may use rlock (but not setEventListener or
 * close of the same client). What it throws is printed and dropped.
 */
@FunctionalInterface
public interface RedisLockEventListener {
  void onEvent(RedisLockEvent event);
}
