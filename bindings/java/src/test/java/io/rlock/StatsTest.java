package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** RedisLockClient.stats() against a workload with known counts, and the event listener. */
@Timeout(120)
class StatsTest extends ClientTestBase {
  static final int N = 5;
  static final int M = 3;

  static void waitFor(String what, BooleanSupplier cond) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!cond.getAsBoolean()) {
      assertTrue(System.nanoTime() < deadline, "timed out waiting for " + what);
      Thread.sleep(10);
    }
  }

  static RedisLockClient shortLeaseClient() {
    return RedisLockClient.builder().url(TestRedis.url()).watchdogLease(Duration.ofMillis(600))
        .build();
  }

  /**
   * N grants and releases, M tryLock() timeouts, an interrupted wait, an acquire refused with
   * EDEADLK, a hold lost to a deletion found by the watchdog and the failed unlock after it.
   */
  static void workload(RedisLockClient c, RedisLockClient outsider,
      java.util.concurrent.ExecutorService pool) throws Exception {
    String name = TestRedis.uniqueName("stats");
    RedisLock lock = c.getLock(name);
    for (int i = 0; i < N; i++) {
      lock.lock();
      assertEquals(1, c.stats().getHolds());
      Thread.sleep(2);
      lock.unlock();
    }
    lock.lock();
    for (int i = 0; i < M; i++) {
      assertFalse(pool.submit(() -> lock.tryLock()).get(30, TimeUnit.SECONDS));
    }
    Future<?> waiter = pool.submit(() -> {
      lock.lockInterruptibly();
      return null;
    });
    waitFor("a waiter in the stats", () -> c.stats().getWaiters() == 1);
    waiter.cancel(true);
    waitFor("the interrupted wait to end", () -> c.stats().getWaiters() == 0);
    lock.unlock();

    RedisReadWriteLock rw = c.getReadWriteLock(TestRedis.uniqueName("stats-rw"));
    rw.readLock().lock();
    assertThrows(RedisLockDeadlockException.class, () -> rw.writeLock().lock());
    rw.readLock().unlock();

    RedisLock lost = c.getLock(TestRedis.uniqueName("stats-lost"));
    CompletableFuture<LostReason> reason = new CompletableFuture<>();
    lost.addLostListener((l, threadId, r) -> reason.complete(r));
    lost.lock();
    assertTrue(outsider.getLock(lost.getName()).forceUnlock());
    assertEquals(LostReason.GONE, reason.get(10, TimeUnit.SECONDS));
    assertThrows(LockLostException.class, lost::unlock);
  }

  static void checkHistogram(String what, RedisLockStats.Histogram h) {
    List<Duration> bounds = h.getBounds();
    assertEquals(22, bounds.size(), what);
    assertEquals(Duration.ofNanos(25_000), bounds.get(0), what);
    assertEquals(Duration.ofHours(1), bounds.get(21), what);
    long[] counts = h.getBucketCounts();
    assertEquals(23, counts.length, what);
    long total = 0;
    Duration low = Duration.ZERO;
    for (int i = 0; i < counts.length; i++) {
      total += counts[i];
      if (i > 0) {
        low = low.plus(bounds.get(i - 1).multipliedBy(counts[i]));
      }
    }
    assertEquals(h.getCount(), total, what + ": buckets add up to the count");
    long[] cumulative = h.getCumulativeCounts();
    assertEquals(h.getCount(), cumulative[cumulative.length - 1], what);
    assertTrue(h.getSum().compareTo(low) >= 0, what + ": sum below what the buckets imply");
    assertEquals(h.getSum(), Duration.ofNanos(h.getSumMicros() * 1000), what);
  }

  @Test
  void knownCounts() throws Exception {
    try (RedisLockClient c = shortLeaseClient()) {
      RedisLockStats fresh = c.stats();
      assertTrue(fresh.isEnabled());
      assertEquals(0, fresh.getAcquiresGranted());
      workload(c, client, pool);
      RedisLockStats s = c.stats();
      assertEquals(N + 3, s.getAcquiresGranted(), "granted: N, the held one, read, lost");
      assertEquals(M, s.getAcquiresTimedOut());
      assertEquals(1, s.getAcquiresCanceled());
      assertEquals(1, s.getAcquiresFailed());
      assertEquals(Map.of(-21, 1L), s.getAcquiresFailedByCode(), "RLOCK_EDEADLK");
      assertEquals("EDEADLK", RedisLockStats.codeName(-21));
      assertEquals(N + 2, s.getReleases(), "releases: N, the held one, the read one");
      assertEquals(1, s.getReleasesFailed());
      assertEquals(1, s.getLocksLost(LostReason.GONE));
      assertEquals(0, s.getLocksLost(LostReason.UNREACHABLE) + s.getLocksLost(LostReason.EXPIRED));
      assertEquals(0, s.getHolds());
      assertEquals(0, s.getWaiters());
      assertEquals(N + 3, s.getAcquireWait().getCount());
      assertEquals(N + 2, s.getHold().getCount());
      assertTrue(s.getHold().getSum().compareTo(Duration.ofMillis(2 * N)) >= 0);
      assertTrue(s.getRenewalsSent() >= 1, "renewals " + s.getRenewalsSent());
      assertTrue(s.getScriptsSent() >= N + 3 + M + N + 2, "scripts " + s.getScriptsSent());
      assertTrue(s.getCommandRoundTrip().getCount() > 0);
      assertEquals(0, s.getEventsDropped());
      assertEquals(0, s.getFailovers() + s.getClusterRedirects());
      checkHistogram("acquire wait", s.getAcquireWait());
      checkHistogram("hold", s.getHold());
      checkHistogram("handoff", s.getHandoff());
      checkHistogram("command", s.getCommandRoundTrip());
      assertThrows(UnsupportedOperationException.class,
          () -> s.getAcquiresFailedByCode().put(-1, 1L));
    }
  }

  @Test
  void statsOff() {
    String url = TestRedis.url();
    String off = url + (url.contains("?") ? "&" : "?") + "stats=off";
    for (RedisLockClient c : List.of(
        RedisLockClient.builder().url(url).stats(false).build(), RedisLockClient.create(off))) {
      try (c) {
        RedisLock lock = c.getLock(TestRedis.uniqueName("stats-off"));
        lock.lock();
        lock.unlock();
        RedisLockStats s = c.stats();
        assertFalse(s.isEnabled());
        assertEquals(0, s.getAcquiresGranted() + s.getReleases() + s.getScriptsSent()
            + s.getAcquireWait().getCount());
      }
    }
    RedisLockClient on = RedisLockClient.builder().url(url).stats(true).build();
    assertTrue(on.stats().isEnabled());
    on.close();
    assertThrows(RedisLockClosedException.class, on::stats);
  }

  @Test
  void eventsInOrderWithTheirFields() throws Exception {
    try (RedisLockClient c = shortLeaseClient()) {
      LinkedBlockingQueue<RedisLockEvent> events = new LinkedBlockingQueue<>();
      List<String> threads = new ArrayList<>();
      c.setEventListener(e -> {
        threads.add(Thread.currentThread().getName() + ":" + Thread.currentThread().isDaemon());
        events.add(e);
      });
      Instant before = Instant.now().minusSeconds(1);
      String name = TestRedis.uniqueName("events");
      RedisFencedLock fenced = c.getFencedLock(name);
      long token = fenced.lockAndGetToken();
      Thread.sleep(20);
      fenced.unlock();
      RedisLock lost = c.getLock(name + ":lost");
      lost.lock();
      assertTrue(client.getLock(lost.getName()).forceUnlock());
      List<RedisLockEvent> got = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        RedisLockEvent e = events.poll(10, TimeUnit.SECONDS);
        assertTrue(e != null, "event " + i + " did not come; got " + got);
        got.add(e);
      }
      Instant after = Instant.now().plusSeconds(1);
      List<RedisLockEvent.Kind> kinds = new ArrayList<>();
      got.forEach(e -> kinds.add(e.getKind()));
      assertEquals(List.of(RedisLockEvent.Kind.ACQUIRED, RedisLockEvent.Kind.RELEASED,
          RedisLockEvent.Kind.ACQUIRED, RedisLockEvent.Kind.LOST), kinds);
      long me = Thread.currentThread().getId();
      for (RedisLockEvent e : got) {
        assertTrue(e.getTime().isAfter(before) && e.getTime().isBefore(after), e.toString());
        assertEquals(me, e.getThreadId(), e.toString());
        assertEquals(c.getId() + ":" + me, e.getOwner(), e.toString());
      }
      RedisLockEvent acquired = got.get(0);
      assertEquals(name, acquired.getName());
      assertEquals(token, acquired.getToken());
      assertTrue(token > 0);
      assertFalse(acquired.getWaited().isNegative());
      assertEquals(Duration.ZERO, acquired.getHeld());
      RedisLockEvent released = got.get(1);
      assertEquals(name, released.getName());
      assertTrue(released.getHeld().compareTo(Duration.ofMillis(20)) >= 0, released.toString());
      assertTrue(released.getHeld().compareTo(Duration.ofSeconds(10)) < 0, released.toString());
      assertEquals(lost.getName(), got.get(2).getName());
      assertEquals(0, got.get(2).getToken());
      assertEquals(lost.getName(), got.get(3).getName());
      assertEquals(LostReason.GONE, got.get(3).getLostReason());
      assertNull(acquired.getLostReason());
      assertEquals("rlock-events:true", threads.get(0));

      // Cleared: no more events.
      c.setEventListener(null);
      RedisLock more = c.getLock(TestRedis.uniqueName("events-after"));
      more.lock();
      more.unlock();
      assertNull(events.poll(200, TimeUnit.MILLISECONDS));
      assertThrows(LockLostException.class, lost::unlock);
    }
  }

  @Test
  void aThrowingListenerDoesNotStopTheEvents() throws Exception {
    LinkedBlockingQueue<RedisLockEvent> events = new LinkedBlockingQueue<>();
    client.setEventListener(e -> {
      events.add(e);
      if (e.getKind() == RedisLockEvent.Kind.ACQUIRED) {
        throw new IllegalStateException("deliberately, from the test");
      }
    });
    RedisLock lock = client.getLock(TestRedis.uniqueName("events-throw"));
    lock.lock();
    lock.unlock();
    assertEquals(RedisLockEvent.Kind.ACQUIRED, events.poll(10, TimeUnit.SECONDS).getKind());
    assertEquals(RedisLockEvent.Kind.RELEASED, events.poll(10, TimeUnit.SECONDS).getKind());
  }

  @Test
  void closeDeliversTheQueuedEvents() throws Exception {
    RedisLockClient c = RedisLockClient.create(TestRedis.url());
    List<RedisLockEvent> events = new ArrayList<>();
    c.setEventListener(e -> {
      try {
        Thread.sleep(5); // slow: events queue up behind it
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
      }
      synchronized (events) {
        events.add(e);
      }
    });
    RedisLock lock = c.getLock(TestRedis.uniqueName("events-close"));
    for (int i = 0; i < 10; i++) {
      lock.lock();
      lock.unlock();
    }
    c.close();
    synchronized (events) {
      assertEquals(20, events.size());
    }
    assertThrows(RedisLockClosedException.class, () -> c.setEventListener(e -> {}));
  }

  @Test
  void replacingTheListenerWaitsForTheRunningOne() throws Exception {
    CompletableFuture<Void> entered = new CompletableFuture<>();
    CompletableFuture<Void> leave = new CompletableFuture<>();
    client.setEventListener(e -> {
      entered.complete(null);
      leave.join();
    });
    RedisLock lock = client.getLock(TestRedis.uniqueName("events-replace"));
    lock.lock();
    entered.get(10, TimeUnit.SECONDS);
    Future<?> replace = pool.submit(() -> client.setEventListener(null));
    Thread.sleep(100);
    assertFalse(replace.isDone(), "returned while the previous listener was running");
    leave.complete(null);
    replace.get(10, TimeUnit.SECONDS);
    lock.unlock();
  }

  @Test
  void listenersReplacedWhileEventsFlow() throws Exception {
    RedisLockClient c = RedisLockClient.create(TestRedis.url());
    RedisLock lock = c.getLock(TestRedis.uniqueName("events-flow"));
    java.util.concurrent.atomic.AtomicLong calls = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.atomic.AtomicReference<String> wrong =
        new java.util.concurrent.atomic.AtomicReference<>();
    Future<?> work = pool.submit(() -> {
      for (int i = 0; i < 200; i++) {
        lock.lock();
        lock.unlock();
      }
      return null;
    });
    for (int i = 0; i < 50; i++) {
      java.util.concurrent.atomic.AtomicBoolean retired =
          new java.util.concurrent.atomic.AtomicBoolean();
      c.setEventListener(e -> {
        if (retired.get()) {
          wrong.set("a replaced listener was called after setEventListener returned");
        }
        calls.incrementAndGet();
      });
      Thread.sleep(1);
      c.setEventListener(i % 2 == 0 ? null : e -> calls.incrementAndGet());
      retired.set(true);
    }
    work.get(30, TimeUnit.SECONDS);
    c.setEventListener(e -> calls.incrementAndGet());
    c.close();
    assertNull(wrong.get());
    assertTrue(calls.get() > 0, "no listener got any event");
  }
}
