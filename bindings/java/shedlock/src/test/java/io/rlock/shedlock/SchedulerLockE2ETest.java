package io.rlock.shedlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rlock.RedisLockClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * Two Spring application contexts (two nodes, each with its own rlock client) schedule the same
 * {@code @SchedulerLock} job at the same fixed rate, from a common start: each tick must run
 * exactly once across both.
 */
class SchedulerLockE2ETest {
  static final long RATE_MS = 1000;
  static final int TICKS = 6;
  /** Each run: {nanoTime, node}. */
  static final ConcurrentLinkedQueue<long[]> RUNS = new ConcurrentLinkedQueue<>();

  @Configuration
  @EnableScheduling
  @EnableSchedulerLock(defaultLockAtMostFor = "10s")
  public static class Node {
    @Bean(destroyMethod = "close")
    public RedisLockClient rlockClient(@Value("${redis.url}") String url) {
      return RedisLockClient.create(url);
    }

    @Bean
    public LockProvider lockProvider(RedisLockClient client) {
      return new RlockLockProvider(client, "e2e:");
    }

    @Bean
    public Job job(@Value("${node}") long node) {
      return new Job(node);
    }
  }

  public static class Job {
    private final long node;

    public Job(long node) {
      this.node = node;
    }

    // lockAtLeastFor, half a tick: the other node's firing of the same tick finds the lock
    // taken if it comes less than 500 ms after the winner's, and the lock is free again by the
    // next tick if the winner fired less than 500 ms late. Ticks are told apart the same way.
    // The delay is worked out when the task is scheduled, not when the context starts (a
    // first context's start takes a while), so both nodes fire at the same instants.
    @Scheduled(fixedRateString = "${rate.ms}",
        initialDelayString = "#{T(io.rlock.shedlock.SchedulerLockE2ETest).msUntilStart()}")
    @SchedulerLock(name = "report", lockAtLeastFor = "500ms", lockAtMostFor = "10s")
    public void run() throws InterruptedException {
      RUNS.add(new long[] {System.nanoTime(), node});
      Thread.sleep(100); // a task that takes a while: the other node meets it running
    }
  }

  static volatile long startNanos;

  /** The initial delay of the job: until the common start. */
  public static long msUntilStart() {
    return Math.max(0, TimeUnit.NANOSECONDS.toMillis(startNanos - System.nanoTime()));
  }

  private static AnnotationConfigApplicationContext start(long node) {
    AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
    context.getEnvironment().getPropertySources().addFirst(new MapPropertySource("test", Map.of(
        "redis.url", TestRedis.url(), "node", node, "rate.ms", RATE_MS)));
    context.register(Node.class);
    context.refresh();
    return context;
  }

  @Test
  void eachTickRunsOnceAcrossTwoContexts() throws Exception {
    TestRedis.url();
    startNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2000);
    List<AnnotationConfigApplicationContext> nodes = new ArrayList<>();
    try {
      nodes.add(start(1));
      nodes.add(start(2));
      // Until tick TICKS - 1 has surely run (half a tick after it).
      long end = startNanos + TimeUnit.MILLISECONDS.toNanos((TICKS - 1) * RATE_MS + RATE_MS / 2);
      Thread.sleep(Math.max(0, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())));
    } finally {
      for (AnnotationConfigApplicationContext node : nodes) {
        node.close();
      }
    }
    Map<Long, List<Long>> byTick = new TreeMap<>(); // tick -> nodes that ran it
    StringBuilder seen = new StringBuilder();
    for (long[] run : RUNS) {
      double at = (run[0] - startNanos) / 1e6 / RATE_MS;
      long tick = Math.round(at);
      seen.append(String.format(" node %d at tick %.2f;", run[1], at));
      byTick.computeIfAbsent(tick, t -> new ArrayList<>()).add(run[1]);
    }
    for (long tick = 0; tick < TICKS; tick++) {
      List<Long> ran = byTick.getOrDefault(tick, List.of());
      assertEquals(1, ran.size(), "tick " + tick + " ran on nodes " + ran + ":" + seen);
    }
    assertTrue(byTick.keySet().stream().allMatch(t -> t >= 0 && t <= TICKS),
        "runs outside the ticks:" + seen);
  }
}
