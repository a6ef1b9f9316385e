/**
 * rlock: distributed locks on Redis with Redisson's on-Redis layout, over the C library through
 * JNI. {@link io.rlock.RedisLockClient} is where to start; {@link io.rlock.micrometer} binds a
 * client's statistics to Micrometer.
 *
 * <p>The JNI library is packed in the jar under {@code native/linux-<arch>/}, outside any
 * package, so a named module still reads it as a resource.
 */
// micrometer-core declares no module-info, only an Automatic-Module-Name (micrometer.core):
// requiring it draws javac's automatic-module warning, which says nothing here.
@SuppressWarnings("requires-automatic")
module io.rlock {
  exports io.rlock;
  exports io.rlock.micrometer;

  // Only io.rlock.micrometer needs Micrometer, and only when the application uses it: static, so
  // it is never resolved for the application's sake. Not transitive: javac would then need
  // micrometer.core to compile every module requiring io.rlock; a module using RedisLockMetrics
  // hands it a registry, so it requires micrometer.core itself.
  requires static micrometer.core;
}
