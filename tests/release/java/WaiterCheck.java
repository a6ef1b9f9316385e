// The aarch64 jar's check under qemu (scripts/release/arm64.sh, verify_arm64_run): compiled on
// the host against the jar, run by an arm64 JVM, `java -cp rlock-V.jar:classes WaiterCheck V URL...`.
// Per URL: a lock taken and released; then a waiter woken. The main thread holds the lock with a
// 60 s lease; a thread on a second client, whose poll cap is 60 s too, blocks with a 30 s wait;
// the main thread unlocks. Neither the lease nor a poll can end the waiter's sleep within its
// 30 s, so only the unlock message on pub/sub can: it must hold the lock within 10 s (the JVM
// under qemu is slow) of the unlock.
import io.rlock.RedisLock;
import io.rlock.RedisLockClient;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

public final class WaiterCheck {
  private static final long LEASE_S = 60; // the holder's lease and the waiter's poll cap
  private static final long WAIT_S = 30;
  private static final long WAKE_BOUND_MS = 10_000; // the unlock to the waiter's hold

  private WaiterCheck() {}

  private static void fail(String message) {
    System.err.println("WaiterCheck: " + message);
    System.exit(1);
  }

  private static long check(String url, String name) throws InterruptedException {
    try (RedisLockClient client = RedisLockClient.create(url)) {
      RedisLock lock = client.getLock(name);
      if (!lock.tryLock()) fail(name + " was not free");
      if (!lock.isHeldByCurrentThread()) fail("acquired but not held by this thread");
      lock.unlock();
      if (lock.isLocked()) fail("still locked after unlock");
    }
    String wakeName = name + ":wake";
    try (RedisLockClient a = RedisLockClient.create(url);
        RedisLockClient b = RedisLockClient.builder().url(url)
            .pollCap(Duration.ofSeconds(LEASE_S)).build()) {
      RedisLock holder = a.getLock(wakeName);
      if (!holder.tryLock(0, LEASE_S, TimeUnit.SECONDS)) fail(wakeName + " was not free");
      RedisLock waiter = b.getLock(wakeName);
      AtomicReference<Object> got = new AtomicReference<>();
      AtomicLong gotAt = new AtomicLong();
      Thread thread = new Thread(() -> {
        try {
          boolean ok = waiter.tryLock(WAIT_S, TimeUnit.SECONDS);
          gotAt.set(System.nanoTime());
          got.set(ok);
          if (ok) waiter.unlock();
        } catch (Throwable e) {
          got.set(e);
        }
      });
      thread.start();
      Thread.sleep(5000); // the waiter tries, fails and sleeps on its subscription
      if (got.get() != null) fail("the waiter returned (" + got.get() + ") while the lock was held");
      long released = System.nanoTime();
      holder.unlock();
      thread.join((WAIT_S + 10) * 1000);
      if (!Boolean.TRUE.equals(got.get())) {
        fail("the waiter did not get the lock within " + WAIT_S + " s of its unlock: " + got.get());
      }
      long wokenMs = (gotAt.get() - released) / 1_000_000;
      if (wokenMs > WAKE_BOUND_MS) {
        fail("the waiter got the lock " + wokenMs + " ms after the unlock (over " + WAKE_BOUND_MS + ")");
      }
      return wokenMs;
    }
  }

  public static void main(String[] args) throws InterruptedException {
    if (args.length < 2) {
      System.err.println("usage: java -cp rlock.jar:classes WaiterCheck VERSION URL...");
      System.exit(2);
    }
    String arch = System.getProperty("os.arch");
    if (!arch.equals("aarch64")) fail("running on " + arch + ", not aarch64");
    String version = RedisLockClient.version();
    if (!version.equals(args[0])) fail("the jar's library is version " + version + ", not " + args[0]);
    for (int i = 1; i < args.length; i++) {
      long wokenMs = check(args[i], "rlock-release-test:arm64-java:" + i);
      System.out.println(args[i].split("\\?")[0] + ": lock taken and released; waiter woken "
          + wokenMs + " ms after the unlock");
    }
    System.out.println("Java " + System.getProperty("java.version") + " on " + arch
        + ", librlock_jni " + version + " from the jar");
  }
}
