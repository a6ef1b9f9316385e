// The release jar's smoke test (scripts/release/jar.sh, verify_jar): run from source by a JVM
// whose class path is the jar alone, `java -cp rlock-V.jar JarLock.java URL V`. It takes and
// releases a lock, so the JNI library came out of the jar, loaded, and talked to Redis.
import io.rlock.RedisLock;
import io.rlock.RedisLockClient;
import java.util.concurrent.TimeUnit;

public final class JarLock {
  private JarLock() {}

  public static void main(String[] args) throws InterruptedException {
    if (args.length != 2) {
      System.err.println("usage: java -cp rlock.jar JarLock.java URL VERSION");
      System.exit(2);
    }
    String version = RedisLockClient.version();
    if (!version.equals(args[1])) {
      System.err.println("the jar's library is version " + version + ", not " + args[1]);
      System.exit(1);
    }
    try (RedisLockClient client = RedisLockClient.create(args[0])) {
      RedisLock lock = client.getLock("rlock-release-test:jar");
      if (!lock.tryLock(10, TimeUnit.SECONDS)) {
        System.err.println("the lock was not free");
        System.exit(1);
      }
      boolean held = lock.isHeldByCurrentThread();
      lock.unlock();
      if (!held || lock.isLocked()) {
        System.err.println("held " + held + ", still locked after unlock " + lock.isLocked());
        System.exit(1);
      }
    }
    System.out.println("ok: locked and unlocked with librlock_jni " + version + " from the jar");
  }
}
