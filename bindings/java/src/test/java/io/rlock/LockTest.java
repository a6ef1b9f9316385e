package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class LockTest extends ClientTestBase {
  @Test
  void threadsExcludeEachOther() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("counter"));
    assertEquals(200, contend(lock, 4, 50));
    assertFalse(lock.isLocked());
  }

  @Test
  void h18ReentrantPerThreadWithHoldCount() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("reentrant"));
    lock.lock();
    assertTrue(lock.tryLock());
    lock.lock();
    assertEquals(3, lock.getHoldCount());
    assertTrue(lock.isHeldByCurrentThread());
    assertFalse(other(lock::tryLock), "another thread is another owner");
    assertEquals(0, (int) onOtherThread(lock::getHoldCount));
    lock.unlock();
    lock.unlock();
    assertEquals(1, lock.getHoldCount());
    assertTrue(lock.isLocked());
    lock.unlock();
    assertEquals(0, lock.getHoldCount());
    assertFalse(lock.isLocked());
    assertFalse(lock.isHeldByCurrentThread());
    assertEquals(-2, lock.remainTimeToLive());
  }

  @Test
  void holderNamesThisProcessAndWhenItTookTheLock() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("holder"));
    assertFalse(lock.getHolder().isPresent());
    java.time.Instant before = java.time.Instant.now();
    lock.lock();
    java.time.Instant after = java.time.Instant.now();
    try {
      // Listed once the hold is a second old, off the caller's path.
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      LockHolder holder = lock.getHolder().get();
      while (!holder.getSince().isPresent() && System.nanoTime() < deadline) {
        Thread.sleep(10);
        holder = lock.getHolder().get();
      }
      assertTrue(holder.isKnown(), holder.toString());
      assertEquals(ProcessHandle.current().pid(), holder.getPid());
      String host = new String(java.nio.file.Files.readAllBytes(
          java.nio.file.Paths.get("/proc/sys/kernel/hostname")), "UTF-8").trim();
      assertEquals(host, holder.getHost());
      assertTrue(holder.getCommand().contains("java"), holder.getCommand());
      java.time.Instant since = holder.getSince().get();
      assertFalse(since.isBefore(before.minusMillis(5)) || since.isAfter(after.plusMillis(5)),
          since + " not within " + before + " .. " + after);
      assertFalse(holder.getStarted().isAfter(since));
      assertTrue(holder.getOwner().startsWith(client.getId() + ":"), holder.getOwner());
    } finally {
      lock.unlock();
    }
    assertFalse(lock.getHolder().isPresent());
  }

  @Test
  void tryLockTimesOutWhileAnotherThreadHolds() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("trylock"));
    lock.lock();
    try {
      assertFalse(other(lock::tryLock));
      long start = System.nanoTime();
      assertFalse(other(() -> lock.tryLock(300, TimeUnit.MILLISECONDS)));
      assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(300),
          "tryLock(300 ms) returned before its time");
    } finally {
      lock.unlock();
    }
    assertTrue(other(() -> {
      boolean got = lock.tryLock(1, TimeUnit.SECONDS);
      if (got) {
        lock.unlock();
      }
      return got;
    }));
  }

  @Test
  void waiterGetsTheLockWhenReleased() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("handoff"));
    lock.lock();
    CountDownLatch waiting = new CountDownLatch(1);
    Future<Boolean> waiter = pool.submit(() -> {
      waiting.countDown();
      boolean got = lock.tryLock(20, TimeUnit.SECONDS);
      if (got) {
        lock.unlock();
      }
      return got;
    });
    waiting.await();
    Thread.sleep(200);
    lock.unlock();
    assertTrue(waiter.get(20, TimeUnit.SECONDS));
  }

  @Test
  void h13UnlockByANonHolderThrowsAndLeavesTheLock() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("nonholder"));
    IllegalMonitorStateException notHeld = assertThrows(IllegalMonitorStateException.class,
        lock::unlock, "unlock of a free lock");
    assertEquals(-3, ((LockNotHeldException) notHeld).getCode());
    lock.lock();
    try {
      Throwable thrown = onOtherThread(() -> {
        try {
          lock.unlock();
          return null;
        } catch (Throwable t) {
          return t;
        }
      });
      assertInstanceOf(IllegalMonitorStateException.class, thrown);
      assertEquals(-12, ((LockNotHeldException) thrown).getCode());
      assertTrue(lock.isLocked(), "the key is untouched");
      assertEquals(1, lock.getHoldCount());
      assertTrue(lock.remainTimeToLive() > 0);
    } finally {
      lock.unlock();
    }
  }

  @Test
  void h22LockInterruptiblyIsWokenByInterruptPromptlyAndLeavesNothing() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("interrupt"));
    lock.lock();
    AtomicReference<Throwable> outcome = new AtomicReference<>();
    CountDownLatch started = new CountDownLatch(1);
    Thread waiter = new Thread(() -> {
      started.countDown();
      try {
        lock.lockInterruptibly();
        outcome.set(new AssertionError("acquired a held lock"));
      } catch (Throwable t) {
        outcome.set(t);
      }
    });
    waiter.start();
    started.await();
    Thread.sleep(300); // let it block in the native wait
    assertTrue(waiter.isAlive(), "the waiter is waiting");
    long interruptedAt = System.nanoTime();
    waiter.interrupt();
    waiter.join(5000);
    long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - interruptedAt);
    assertFalse(waiter.isAlive());
    assertInstanceOf(InterruptedException.class, outcome.get());
    assertTrue(tookMs < 2000, "interrupt took " + tookMs + " ms");
    lock.unlock();
    assertFalse(lock.isLocked(), "the interrupted waiter left no lock behind");
  }

  /**
   * An interrupt ends the wait at once, as in Redisson: a release sent right after it never
   * lets the interrupted waiter in (a wait that noticed interrupts by polling could be granted
   * the lock meanwhile and return normally).
   */
  @Test
  void aReleaseRightAfterTheInterruptNeverLetsTheWaiterIn() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("interrupt-then-release"));
    for (int round = 0; round < 10; round++) {
      lock.lock();
      CompletableFuture<Throwable> outcome = new CompletableFuture<>();
      CountDownLatch started = new CountDownLatch(1);
      Thread waiter = new Thread(() -> {
        started.countDown();
        try {
          lock.lockInterruptibly();
          lock.unlock();
          outcome.complete(new AssertionError("the interrupted waiter got the lock"));
        } catch (Throwable t) {
          outcome.complete(t);
        }
      });
      waiter.start();
      started.await();
      Thread.sleep(100); // waiting
      waiter.interrupt();
      lock.unlock();
      assertInstanceOf(InterruptedException.class, outcome.get(10, TimeUnit.SECONDS),
          "round " + round);
      waiter.join(5000);
      assertFalse(lock.isLocked(), "round " + round + ": the interrupted waiter left a hold");
    }
  }

  @Test
  void tryLockWithTimeIsInterruptibleToo() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("interrupt-try"));
    lock.lock();
    try {
      CompletableFuture<Throwable> outcome = new CompletableFuture<>();
      Thread waiter = new Thread(() -> {
        try {
          outcome.complete(new AssertionError("tryLock returned " + lock.tryLock(60, TimeUnit.SECONDS)));
        } catch (Throwable t) {
          outcome.complete(t);
        }
      });
      waiter.start();
      Thread.sleep(300);
      waiter.interrupt();
      assertInstanceOf(InterruptedException.class, outcome.get(2, TimeUnit.SECONDS));
      Thread.currentThread().interrupt();
      assertThrows(InterruptedException.class, lock::lockInterruptibly,
          "an interrupted thread does not start waiting");
      assertFalse(Thread.currentThread().isInterrupted(), "the flag is consumed");
    } finally {
      lock.unlock();
    }
  }

  @Test
  void uninterruptibleLockKeepsWaitingAndKeepsTheFlag() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("uninterruptible"));
    lock.lock();
    CompletableFuture<Boolean> flagAfterLock = new CompletableFuture<>();
    Thread waiter = new Thread(() -> {
      lock.lock();
      flagAfterLock.complete(Thread.currentThread().isInterrupted());
      lock.unlock();
    });
    waiter.start();
    Thread.sleep(300);
    waiter.interrupt();
    Thread.sleep(300);
    assertFalse(flagAfterLock.isDone(), "lock() gave up on interrupt");
    lock.unlock();
    assertTrue(flagAfterLock.get(20, TimeUnit.SECONDS), "the interrupt flag is kept");
  }

  @Test
  void h15LeaseExpiresAndTheLateUnlockIsLost() throws Exception {
    RedisLock lock = client.getLock(TestRedis.uniqueName("lease"));
    lock.lock(300, TimeUnit.MILLISECONDS);
    long ttl = lock.remainTimeToLive();
    assertTrue(ttl > 0 && ttl <= 300, "ttl " + ttl);
    assertTrue(other(() -> {
      boolean got = lock.tryLock(10, TimeUnit.SECONDS);
      if (got) {
        lock.unlock();
      }
      return got;
    }), "the lock frees itself when its lease runs out");
    LockLostException lost = assertThrows(LockLostException.class, lock::unlock);
    assertEquals(-11, lost.getCode());
    assertEquals(-2, lock.remainTimeToLive(), "the unlock re-created nothing");
  }

  @Test
  void forceUnlockAndConditions() {
    RedisLock lock = client.getLock(TestRedis.uniqueName("force"));
    assertFalse(lock.forceUnlock());
    lock.lock();
    assertTrue(lock.forceUnlock());
    assertFalse(lock.isLocked());
    assertThrows(IllegalMonitorStateException.class, lock::unlock);
    assertThrows(UnsupportedOperationException.class, lock::newCondition);
  }

  @Test
  void lostListenerFiresWhenTheKeyIsDeleted() throws Exception {
    try (RedisLockClient shortLease = RedisLockClient.builder().url(TestRedis.url())
        .watchdogLease(java.time.Duration.ofMillis(600)).build()) {
      String name = TestRedis.uniqueName("lost");
      RedisLock lock = shortLease.getLock(name);
      CompletableFuture<LostReason> lost = new CompletableFuture<>();
      AtomicReference<Long> lostThread = new AtomicReference<>();
      lock.addLostListener((l, threadId, reason) -> {
        lostThread.set(threadId);
        lost.complete(reason);
      });
      lock.lock();
      assertTrue(client.getLock(name).forceUnlock(), "deleted through another client");
      assertEquals(LostReason.GONE, lost.get(10, TimeUnit.SECONDS));
      assertEquals(Thread.currentThread().getId(), lostThread.get());
      assertFalse(lock.isHeldByCurrentThread());
      assertThrows(LockLostException.class, lock::unlock);
    }
  }

  @Test
  void h20ListenerMayCallTheLock() throws Exception {
    try (RedisLockClient shortLease = RedisLockClient.builder().url(TestRedis.url())
        .watchdogLease(java.time.Duration.ofMillis(600)).build()) {
      String name = TestRedis.uniqueName("lost-calls");
      RedisLock lock = shortLease.getLock(name);
      CompletableFuture<String> calls = new CompletableFuture<>();
      lock.addLostListener((l, threadId, reason) -> {
        StringBuilder seen = new StringBuilder();
        seen.append(l.isLocked()); // a round trip from the watchdog thread
        try {
          l.unlock(); // the watchdog thread is another owner
        } catch (LockNotHeldException e) {
          seen.append(" ").append(e.getCode());
        }
        calls.complete(seen.toString());
      });
      lock.lock();
      assertTrue(client.getLock(name).forceUnlock(), "deleted through another client");
      assertEquals("false -3", calls.get(10, TimeUnit.SECONDS));
      assertThrows(LockLostException.class, lock::unlock);
      assertFalse(client.getLock(name).isLocked(), "nothing re-created");
    }
  }

  @Test
  void fencedTokensIncrease() throws Exception {
    RedisFencedLock lock = client.getFencedLock(TestRedis.uniqueName("fenced"));
    assertNull(lock.getToken());
    Long first = lock.lockAndGetToken();
    assertEquals(first, lock.getToken());
    lock.unlock();
    Long second = onOtherThread(() -> {
      Long token = lock.tryLockAndGetToken(5, TimeUnit.SECONDS);
      lock.unlock();
      return token;
    });
    Long third = lock.tryLockAndGetToken();
    lock.unlock();
    assertTrue(first > 0 && second > first && third > second,
        first + ", " + second + ", " + third);
    assertTrue(client.fencedWrite(TestRedis.uniqueName("resource"), "v", third));
  }

  @Test
  void h10ClosedLockAndClientRefuseCalls() {
    RedisLock lock = client.getLock(TestRedis.uniqueName("closed"));
    lock.close();
    lock.close();
    assertThrows(RedisLockClosedException.class, lock::tryLock);
    RedisLock other = client.getLock(TestRedis.uniqueName("closed2"));
    client.close();
    client.close();
    assertTrue(client.isClosed());
    RedisLockClosedException e = assertThrows(RedisLockClosedException.class, other::tryLock);
    assertEquals(-20, e.getCode());
    assertThrows(RedisLockClosedException.class, () -> client.getLock("x"));
  }
}
