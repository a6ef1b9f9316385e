package io.rlock;

import io.rlock.internal.Utf8;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Who owns what a {@link RedisLock} acquires, chosen when the lock is made
 * ({@code client.getLock(name, LockOwner.object())}):
 *
 * <ul>
 *   <li>{@link #thread()}, the default: the calling thread, across every RedisLock object of the
 *       client, as in Redisson;
 *   <li>{@link #object()}: the RedisLock object, whichever thread calls, so a lock taken on one
 *       thread (a callback, a pool task) can be unlocked on another through the same object;
 *   <li>{@link #id(String)}: an id the caller gives. Every RedisLock naming it, in any process
 *       or language, is that one owner, so one process may unlock or extend what another
 *       locked. On Redis it is {@code "<version-5 UUID of the id>:1"}; such holds are not
 *       released when the client closes (they last their lease: give them one). The id never
 *       re-enters: locking while it holds the lock throws {@link LockAlreadyHeldException}, as
 *       a non-reentrant lock does. Read-write locks refuse it.
 * </ul>
 *
 * <p>The methods taking a {@code threadId} (Redisson's async forms) act for that number as the
 * owner, as before, except under an id owner, which is one owner whatever number is given.
 */
public final class LockOwner {
  // Object owners' numbers: above OS and Java thread ids and the other bindings' own ranges
  // (Python from 2^40, Go from 2^41), never reused.
  private static final AtomicLong NEXT_OBJECT = new AtomicLong(1L << 42);
  private static final LockOwner THREAD = new LockOwner(Kind.THREAD, null);
  private static final LockOwner OBJECT = new LockOwner(Kind.OBJECT, null);
  static final int MAX_ID_BYTES = 1024;

  enum Kind { THREAD, OBJECT, ID }

  final Kind kind;
  final byte[] id; // UTF-8 of a caller-given id, else null
  private final String text;

  private LockOwner(Kind kind, String text) {
    this.kind = kind;
    this.text = text;
    this.id = text == null ? null : Utf8.exact(text, "owner id");
  }

  /** The calling thread (Redisson's rule; the default). */
  public static LockOwner thread() {
    return THREAD;
  }

  /** Each RedisLock object made with it is an owner of its own, for every thread. */
  public static LockOwner object() {
    return OBJECT;
  }

  /** A caller-given owner id: 1 to 1024 bytes of UTF-8. */
  public static LockOwner id(String id) {
    Objects.requireNonNull(id, "owner id");
    LockOwner owner = new LockOwner(Kind.ID, id);
    if (owner.id.length == 0 || owner.id.length > MAX_ID_BYTES) {
      throw new IllegalArgumentException(
          "owner id must be 1 to " + MAX_ID_BYTES + " bytes of UTF-8, got " + owner.id.length);
    }
    return owner;
  }

  /** A caller-given owner id given as a number: the same owner as its decimal digits. */
  public static LockOwner id(long id) {
    return id(Long.toString(id));
  }

  /** The owner number a new lock object acts as: 0 for the calling thread. */
  long newNumber() {
    switch (kind) {
      case OBJECT:
        return NEXT_OBJECT.getAndIncrement();
      case ID:
        return 1; // the library's one number for a caller-given owner
      default:
        return 0;
    }
  }

  @Override
  public String toString() {
    return kind == Kind.ID ? "LockOwner.id(" + text + ")"
        : "LockOwner." + kind.name().toLowerCase(Locale.ROOT) + "()";
  }
}
