package rlock.release.modular;

import io.rlock.RedisLock;
import io.rlock.RedisLockClient;
import java.lang.module.ModuleDescriptor;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * Takes and releases a lock through the io.rlock module: its descriptor is the jar's
 * module-info (not an automatic module), it exports only the public packages, and the JNI
 * library loads from inside the module. Usage: ModularLock URL VERSION.
 */
public final class ModularLock {
  private ModularLock() {}

  private static void fail(String message) {
    System.err.println(message);
    System.exit(1);
  }

  public static void main(String[] args) throws InterruptedException {
    if (args.length != 2) {
      System.err.println("usage: java --module-path rlock.jar:DIR -m rlock.release.modular/"
          + "rlock.release.modular.ModularLock URL VERSION");
      System.exit(2);
    }
    Module rlock = RedisLockClient.class.getModule();
    if (!ModularLock.class.getModule().isNamed() || !"io.rlock".equals(rlock.getName())) {
      fail("not run as named modules: this one is " + ModularLock.class.getModule()
          + ", the binding's " + rlock);
    }
    ModuleDescriptor descriptor = rlock.getDescriptor();
    TreeSet<String> exported = new TreeSet<>();
    descriptor.exports().forEach(e -> exported.add(e.source()));
    String want = "[io.rlock, io.rlock.micrometer]";
    if (descriptor.isAutomatic() || !exported.toString().equals(want)) {
      fail("module io.rlock is " + (descriptor.isAutomatic() ? "automatic" : "explicit")
          + " and exports " + exported + ", not explicit exporting " + want);
    }
    String version = RedisLockClient.version();  // loads the JNI library
    if (!version.equals(args[1])) {
      fail("the module's library is version " + version + ", not " + args[1]);
    }
    try (RedisLockClient client = RedisLockClient.create(args[0])) {
      RedisLock lock = client.getLock("rlock-release-test:modular");
      if (!lock.tryLock(10, TimeUnit.SECONDS)) {
        fail("the lock was not free");
      }
      boolean held = lock.isHeldByCurrentThread();
      lock.unlock();
      if (!held || lock.isLocked()) {
        fail("held " + held + ", still locked after unlock " + lock.isLocked());
      }
    }
    System.out.println("ok: module " + descriptor.toNameAndVersion() + " locked and unlocked"
        + " with librlock_jni " + version + " loaded from the module");
  }
}
