package io.rlock.internal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Whether a thread is virtual, on a jar built for Java 11: Thread.isVirtual (Java 21) is looked
 * up once; without it no thread is virtual.
 */
final class VirtualThreads {
  private static final MethodHandle IS_VIRTUAL = lookup();

  private VirtualThreads() {}

  private static MethodHandle lookup() {
    try {
      return MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual",
          MethodType.methodType(boolean.class));
    } catch (NoSuchMethodException | IllegalAccessException e) {
      return null;
    }
  }

  /** True on a virtual thread, which must park while it waits instead of holding its carrier. */
  static boolean current() {
    if (IS_VIRTUAL == null) {
      return false;
    }
    try {
      return (boolean) IS_VIRTUAL.invokeExact(Thread.currentThread());
    } catch (Throwable e) {
      throw new AssertionError("Thread.isVirtual failed", e);
    }
  }
}
