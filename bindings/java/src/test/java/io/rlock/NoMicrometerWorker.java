package io.rlock;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Run by JarIT in a JVM given only the jar and the test classes, without Micrometer (an optional
 * dependency): the client, its stats and its events work there. Prints "ok" or fails.
 */
public final class NoMicrometerWorker {
  private NoMicrometerWorker() {}

  public static void main(String[] args) throws Exception {
    try {
      Class.forName("io.micrometer.core.instrument.MeterRegistry");
      throw new AssertionError("Micrometer is on the class path: the check proves nothing");
    } catch (ClassNotFoundException expected) {
      // as it should be
    }
    try (RedisLockClient client = RedisLockClient.create(args[0])) {
      LinkedBlockingQueue<RedisLockEvent> events = new LinkedBlockingQueue<>();
      client.setEventListener(events::add);
      RedisLock lock = client.getLock(args[1]);
      lock.lock();
      lock.unlock();
      RedisLockStats stats = client.stats();
      if (stats.getAcquiresGranted() != 1 || stats.getReleases() != 1) {
        throw new AssertionError("stats: " + stats);
      }
      RedisLockEvent first = events.poll(10, TimeUnit.SECONDS);
      if (first == null || first.getKind() != RedisLockEvent.Kind.ACQUIRED) {
        throw new AssertionError("first event: " + first);
      }
    }
    System.out.println("ok");
  }
}
