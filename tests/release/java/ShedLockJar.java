// The rlock-shedlock jar's smoke test (scripts/release/jar.sh, verify_jar_module_shedlock): run
// from source with the released base and module jars and ShedLock's core (and SLF4J's API) on the
// class path, `java -cp ... ShedLockJar.java URL`. ShedLock's LockingTaskExecutor runs a task
// under RlockLockProvider; a second lock of the name meanwhile gets nothing.
import io.rlock.RedisLockClient;
import io.rlock.shedlock.RlockLockProvider;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;

public final class ShedLockJar {
  private ShedLockJar() {}

  public static void main(String[] args) {
    if (args.length != 1) {
      System.err.println("usage: java -cp ... ShedLockJar.java URL");
      System.exit(2);
    }
    try (RedisLockClient client = RedisLockClient.create(args[0])) {
      RlockLockProvider provider = new RlockLockProvider(client);
      LockConfiguration config = new LockConfiguration(Instant.now(), "rlock-release-test",
          Duration.ofSeconds(30), Duration.ZERO);
      AtomicBoolean ran = new AtomicBoolean();
      AtomicBoolean excluded = new AtomicBoolean();
      new DefaultLockingTaskExecutor(provider).executeWithLock((Runnable) () -> {
        ran.set(true);
        excluded.set(provider.lock(config).isEmpty());
      }, config);
      boolean freeAfter = provider.lock(config).map(lock -> {
        lock.unlock();
        return true;
      }).orElse(false);
      if (!ran.get() || !excluded.get() || !freeAfter) {
        System.err.println("ran " + ran + ", excluded a second lock " + excluded
            + ", free after the task " + freeAfter);
        System.exit(1);
      }
    }
    System.out.println("ok: a ShedLock task ran under " + RlockLockProvider.class.getName()
        + " (lock shedlock:rlock-release-test)");
  }
}
