package io.rlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** LockOwner: the thread (default), the lock object, or an id shared across clients. */
@Timeout(60)
class LockOwnerTest extends ClientTestBase {
  private static List<String> fields(String name) throws Exception {
    try (RawRedis raw = new RawRedis(TestRedis.tcpUrl())) {
      List<?> reply = (List<?>) raw.command("HKEYS", name);
      return reply.stream().map(f -> new String((byte[]) f, StandardCharsets.UTF_8))
          .collect(Collectors.toList());
    }
  }

  @Test
  void anObjectOwnerIsUnlockedFromAnotherThreadAndExcludesOtherObjects() throws Exception {
    String name = TestRedis.uniqueName("owner-object");
    RedisLock mine = client.getLock(name, LockOwner.object());
    RedisLock other = client.getLock(name, LockOwner.object());
    mine.lock();
    assertFalse(other.tryLock(), "another object on the same thread is another owner");
    boolean reentered = onOtherThread(mine::tryLock);
    assertTrue(reentered, "the object re-enters from any thread");
    boolean heldThere = onOtherThread(mine::isHeldByCurrentThread);
    assertTrue(heldThere);
    onOtherThread(() -> {
      mine.unlock();
      mine.unlock();
      return null;
    });
    assertFalse(mine.isLocked());
    RedisLock byThread = client.getLock(name);
    byThread.lock();
    boolean otherThreadGot = onOtherThread(byThread::tryLock);
    assertFalse(otherThreadGot, "the default stays the thread");
    byThread.unlock();
  }

  @Test
  void anIdOwnerIsUnlockedThroughAnotherClient() throws Exception {
    String name = TestRedis.uniqueName("owner-id");
    try (RedisLockClient other = RedisLockClient.builder().url(TestRedis.url()).build()) {
      RedisLock taker = client.getLock(name, LockOwner.id("job-42"));
      RedisLock finisher = other.getLock(name, LockOwner.id("job-42"));
      RedisLock stranger = other.getLock(name, LockOwner.id(43));
      assertTrue(taker.tryLock(0, 20, TimeUnit.SECONDS));
      // The C tests check the same version-5 UUID of "job-42".
      assertEquals(List.of("bd5e3299-69d1-5f15-b688-738ddd7fa874:1"), fields(name));
      assertFalse(stranger.tryLock());
      assertThrows(IllegalMonitorStateException.class, stranger::unlock);
      // The id never re-enters (its holds may be another process's): as a non-reentrant lock.
      assertThrows(LockAlreadyHeldException.class, finisher::tryLock);
      assertThrows(LockAlreadyHeldException.class, taker::lock);
      assertThrows(IllegalArgumentException.class,
          () -> client.getReadWriteLock(name + ":rw", LockOwner.id("job-42")));
      finisher.unlock();
      assertFalse(taker.isLocked());
      assertEquals(LockOwner.id(42).toString(), "LockOwner.id(42)");
    }
  }

  @Test
  void badOwnerIdsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> LockOwner.id(""));
    assertThrows(IllegalArgumentException.class, () -> LockOwner.id("x".repeat(1025)));
    assertThrows(IllegalArgumentException.class, () -> LockOwner.id("\uDC80"));
    assertThrows(NullPointerException.class, () -> client.getLock("x", null));
  }
}
