package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** LeaderLatch and LeaderSelector: one leader at a time, terms that grow, losses told. */
@Timeout(120)
class LeaderElectionTest {
  private final List<RedisLockClient> clients = new ArrayList<>();
  private final List<AutoCloseable> closeFirst = new ArrayList<>();
  private RawRedis raw;
  private String name;

  @BeforeEach
  void setUp() throws Exception {
    raw = new RawRedis(TestRedis.tcpUrl());
    name = TestRedis.uniqueName("leader");
  }

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : closeFirst) {
      c.close();
    }
    for (RedisLockClient c : clients) {
      c.close();
    }
    raw.command("DEL", name);
    raw.close();
  }

  RedisLockClient newClient() {
    RedisLockClient c = RedisLockClient.builder().url(TestRedis.url())
        .watchdogLease(Duration.ofMillis(1500)).build();
    clients.add(c);
    return c;
  }

  LeaderLatch latch(RedisLockClient c) {
    LeaderLatch l = c.leaderLatch(name);
    closeFirst.add(l);
    return l;
  }

  /** The latch that leads now, waiting for one; never two (checked at each sample). */
  static LeaderLatch leader(List<LeaderLatch> latches) throws InterruptedException {
    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < giveUp) {
      LeaderLatch found = null;
      for (LeaderLatch l : latches) {
        if (l.hasLeadership()) {
          assertNull(found, "two latches lead at once");
          found = l;
        }
      }
      if (found != null) {
        return found;
      }
      Thread.sleep(5);
    }
    throw new AssertionError("no leader within 10 s");
  }

  @Test
  void threeLatchesLeadOneAtATimeAndHandOver() throws Exception {
    List<LeaderLatch> latches = new ArrayList<>();
    List<String> events = Collections.synchronizedList(new ArrayList<>());
    for (int i = 0; i < 3; i++) {
      LeaderLatch l = latch(newClient());
      int index = i;
      l.addListener(new LeaderLatchListener() {
        @Override
        public void isLeader(long term) {
          events.add(index + " leader " + term);
        }

        @Override
        public void notLeader(long term, RevokeReason reason) {
          events.add(index + " not " + term + " " + reason);
        }
      });
      latches.add(l);
    }
    for (LeaderLatch l : latches) {
      l.start();
    }
    long lastTerm = 0;
    List<LeaderLatch> left = new ArrayList<>(latches);
    while (!left.isEmpty()) {
      LeaderLatch l = leader(left);
      long term = l.term().getAsLong();
      assertTrue(term > lastTerm, "terms grow with every new leader");
      assertEquals(term, l.await());
      lastTerm = term;
      assertTrue(raw.command("EXISTS", name).equals(1L));
      l.close(); // resigns: the next one leads at once
      assertFalse(l.hasLeadership());
      assertEquals(OptionalLong.empty(), l.term());
      left.remove(l);
    }
    assertEquals(6, events.size(), events.toString());
    for (int i = 0; i < 3; i++) {
      List<String> mine = new ArrayList<>();
      for (String e : events) {
        if (e.startsWith(i + " ")) {
          mine.add(e);
        }
      }
      assertEquals(2, mine.size(), mine.toString());
      assertTrue(mine.get(0).contains(" leader "), mine.toString());
      String term = mine.get(0).split(" ")[2];
      assertEquals(i + " not " + term + " RESIGNED", mine.get(1));
    }
    assertEquals(0L, raw.command("EXISTS", name));
  }

  @Test
  void deletedKeyIsToldAndTheLatchLeadsAgain() throws Exception {
    LeaderLatch l = latch(newClient());
    LinkedBlockingQueue<Object> seen = new LinkedBlockingQueue<>();
    l.addListener(new LeaderLatchListener() {
      @Override
      public void isLeader(long term) {
        seen.add(term);
      }

      @Override
      public void notLeader(long term, RevokeReason reason) {
        seen.add(reason);
      }
    });
    l.start();
    long first = (Long) seen.poll(5, TimeUnit.SECONDS);
    raw.command("DEL", name);
    assertEquals(RevokeReason.GONE, seen.poll(5, TimeUnit.SECONDS), "the loss was not told");
    Object again = seen.poll(5, TimeUnit.SECONDS);
    assertInstanceOf(Long.class, again, "the latch did not lead again");
    assertTrue((Long) again > first);
    assertTrue(l.hasLeadership());
  }

  @Test
  void awaitWaitsWhileAnotherLeads() throws Exception {
    LeaderLatch first = latch(newClient());
    first.start();
    first.await();
    LeaderLatch second = latch(newClient());
    second.start();
    assertFalse(second.await(Duration.ofMillis(200)));
    CompletableFuture<Long> future = second.awaitLeadership();
    assertFalse(future.isDone());
    first.close();
    assertTrue(future.get(5, TimeUnit.SECONDS) > 0);
  }

  @Test
  void aCampaignOnAKeyThatIsNoLockFails() throws Exception {
    raw.command("SET", name, "x");
    LeaderLatch l = latch(newClient());
    l.start();
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> l.awaitLeadership().get(5, TimeUnit.SECONDS));
    assertInstanceOf(RedisLockServerException.class, e.getCause());
    assertTrue(e.getCause().getMessage().contains("not a lock"), e.getCause().getMessage());
  }

  @Test
  void misuseIsRefused() {
    RedisLockClient c = newClient();
    LeaderLatch l = latch(c);
    l.start();
    assertThrows(IllegalStateException.class, l::start);
    l.close();
    assertThrows(IllegalStateException.class, l::start);
    assertInstanceOf(IllegalStateException.class,
        assertThrows(CompletionException.class, () -> l.awaitLeadership().join()).getCause());
    assertThrows(IllegalArgumentException.class, () -> c.leaderLatch(""));
    assertThrows(NullPointerException.class, () -> c.leaderSelector(name, null));
  }

  /**
   * Three selectors: takeLeadership never runs in two at once (a selector that ran the body
   * without leading would break it), terms grow, and with autoRequeue the lead moves around.
   */
  @Test
  void selectorsTakeLeadershipOneAtATime() throws Exception {
    AtomicInteger running = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    List<Long> terms = Collections.synchronizedList(new ArrayList<>());
    List<Integer> who = Collections.synchronizedList(new ArrayList<>());
    List<LeaderSelector> selectors = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      int index = i;
      LeaderSelector s = newClient().leaderSelector(name, ctx -> {
        int now = running.incrementAndGet();
        most.accumulateAndGet(now, Math::max);
        try {
          terms.add(ctx.term());
          who.add(index);
          for (int k = 0; k < 5; k++) {
            ctx.checkLeadership();
            Thread.sleep(5);
          }
        } finally {
          running.decrementAndGet();
        }
        Thread.sleep(1); // interrupted? then leadership ended mid-way
      }).autoRequeue();
      closeFirst.add(s);
      selectors.add(s);
    }
    for (LeaderSelector s : selectors) {
      s.start();
    }
    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (terms.size() < 12 && System.nanoTime() < giveUp) {
      Thread.sleep(10);
    }
    for (LeaderSelector s : selectors) {
      s.close();
    }
    assertTrue(terms.size() >= 12, "only " + terms.size() + " leaderships in 20 s");
    assertEquals(1, most.get(), "two bodies ran at once");
    List<Long> copy;
    synchronized (terms) {
      copy = new ArrayList<>(terms);
    }
    for (int i = 1; i < copy.size(); i++) {
      assertTrue(copy.get(i) > copy.get(i - 1), "terms must grow: " + copy);
    }
    assertTrue(new HashSet<>(who).size() >= 2, "the lead never moved: " + who);
    assertEquals(0L, raw.command("EXISTS", name));
  }

  @Test
  void aLostLeadershipInterruptsTheBody() throws Exception {
    CompletableFuture<Object> ended = new CompletableFuture<>();
    CompletableFuture<Void> inside = new CompletableFuture<>();
    LeaderSelector s = newClient().leaderSelector(name, ctx -> {
      inside.complete(null);
      try {
        Thread.sleep(10_000);
        ended.complete("not interrupted");
      } catch (InterruptedException e) {
        ended.complete(ctx.lost().get(1, TimeUnit.SECONDS));
      }
    });
    closeFirst.add(s);
    s.start();
    inside.get(5, TimeUnit.SECONDS);
    raw.command("DEL", name);
    assertEquals(RevokeReason.GONE, ended.get(5, TimeUnit.SECONDS));
    assertFalse(s.hasLeadership());
  }
}
