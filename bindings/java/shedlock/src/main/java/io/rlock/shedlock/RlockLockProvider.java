package io.rlock.shedlock;

import io.rlock.LockNotHeldException;
import io.rlock.LockOwner;
import io.rlock.RedisLock;
import io.rlock.RedisLockClient;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ShedLock {@link ExtensibleLockProvider} whose locks are rlock locks: ShedLock's lock
 * {@code N} is the rlock (and Redisson) lock {@code prefix + N}, a Redisson {@code RLock}
 * hash on Redis.
 *
 * <ul>
 *   <li>{@code lock} tries once, with {@code lockAtMostFor} (counted from the configuration's
 *       creation) as the lease: a node that dies leaves the lock until then, never longer. There
 *       is no watchdog renewal.
 *   <li>The owner is the returned {@link SimpleLock} (rlock's {@link LockOwner#object()}), not a
 *       thread: it may be unlocked or extended from any thread, and a second {@code lock} of the
 *       same name, from any thread or node, gets nothing while it is held.
 *   <li>{@code unlock} before {@code lockAtLeastFor} has passed shortens the lease to what is left
 *       of it instead of releasing, so the lock stays taken until then, even if this process
 *       exits; after that it releases. An unlock that finds the lock already expired (the task
 *       outran {@code lockAtMostFor}) logs a warning.
 *   <li>{@code extend(lockAtMostFor, lockAtLeastFor)} sets the lease to {@code lockAtMostFor}
 *       from now and returns the new lock (the old one is then unusable, as ShedLock requires);
 *       it returns empty when the lock has expired or is no longer this owner's.
 * </ul>
 *
 * <p>Failures to reach Redis propagate as rlock's unchecked exceptions. The client is the
 * caller's: it is neither closed nor otherwise managed here.
 */
public final class RlockLockProvider implements ExtensibleLockProvider {
  /** The prefix of lock names unless another is given: ShedLock's {@code N} is {@code shedlock:N}. */
  public static final String DEFAULT_PREFIX = "shedlock:";

  private static final Logger LOG = LoggerFactory.getLogger(RlockLockProvider.class);

  private final RedisLockClient client;
  private final String prefix;

  /** Locks named {@link #DEFAULT_PREFIX} + ShedLock's name, on {@code client}. */
  public RlockLockProvider(RedisLockClient client) {
    this(client, DEFAULT_PREFIX);
  }

  /** Locks named {@code prefix} + ShedLock's name (the prefix may be empty). */
  public RlockLockProvider(RedisLockClient client, String prefix) {
    this.client = Objects.requireNonNull(client, "client");
    this.prefix = Objects.requireNonNull(prefix, "prefix");
  }

  /** The rlock lock name of ShedLock's lock {@code name}. */
  public String lockName(String name) {
    return prefix + name;
  }

  @Override
  public Optional<SimpleLock> lock(LockConfiguration configuration) {
    RedisLock lock = client.getLock(lockName(configuration.getName()), LockOwner.object());
    boolean held = false;
    try {
      held = lock.tryLock(0, msUntil(configuration.getLockAtMostUntil()), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      // rlock leaves nothing held on an interrupt: the task is skipped, the status kept.
      Thread.currentThread().interrupt();
    } finally {
      if (!held) {
        lock.close();
      }
    }
    return held ? Optional.of(new Held(lock, configuration)) : Optional.empty();
  }

  /** Milliseconds from now until {@code instant}, at least 1 (rlock's shortest lease). */
  static long msUntil(Instant instant) {
    return Math.max(1, Duration.between(ClockProvider.now(), instant).toMillis());
  }

  @Override
  public String toString() {
    return "RlockLockProvider[prefix=" + prefix + "]";
  }

  /** One hold; the RedisLock object is the owner, so any thread may end it. */
  private static final class Held extends AbstractSimpleLock {
    private final RedisLock lock;

    Held(RedisLock lock, LockConfiguration configuration) {
      super(configuration);
      this.lock = lock;
    }

    @Override
    protected void doUnlock() {
      try {
        long keepFor =
            Duration.between(ClockProvider.now(), lockConfiguration.getLockAtLeastUntil()).toMillis();
        if (keepFor > 0) {
          // lockAtLeastFor: the lease ends the hold, on Redis, whatever happens to this process.
          lock.extendLease(keepFor, TimeUnit.MILLISECONDS);
        } else {
          lock.unlock();
        }
      } catch (LockNotHeldException expired) {
        LOG.warn("ShedLock lock {} ({}) had expired before its unlock: its task ran longer than"
            + " lockAtMostFor={}", lockConfiguration.getName(), lock.getName(),
            lockConfiguration.getLockAtMostFor());
      } finally {
        lock.close(); // no network call: a hold left (lockAtLeastFor) expires by its lease
      }
    }

    @Override
    protected Optional<SimpleLock> doExtend(LockConfiguration next) {
      try {
        lock.extendLease(msUntil(next.getLockAtMostUntil()), TimeUnit.MILLISECONDS);
      } catch (LockNotHeldException expiredOrTaken) {
        lock.close();
        return Optional.empty();
      }
      return Optional.of(new Held(lock, next));
    }
  }
}
