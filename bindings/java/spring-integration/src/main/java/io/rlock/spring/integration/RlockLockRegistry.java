package io.rlock.spring.integration;

import io.rlock.LockLostException;
import io.rlock.LockNotHeldException;
import io.rlock.RedisLock;
import io.rlock.RedisLockClient;
import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * A Spring Integration {@link org.springframework.integration.support.locks.LockRegistry} whose
 * locks are rlock locks ({@link RedisLockClient#getLock(String)}) named
 * {@code registryKey + ":" + key}, so other rlock, Redisson, Python or Go clients contend for
 * the same locks.
 *
 * <p>A lock is owned by the client and the calling thread: reentrant for the thread holding it,
 * and excluding every other thread and client. {@code unlock()} from a thread that does not
 * hold it throws {@link IllegalStateException}, and from one whose hold expired or was taken
 * meanwhile {@link ConcurrentModificationException}, as Spring's RedisLockRegistry does.
 *
 * <p>Leases: made without {@code expireAfter}, a hold is renewed by the client's watchdog until
 * unlocked and ends within the watchdog lease (30 s by default) after its process dies. Made
 * with {@code expireAfter}, every acquire and {@link #renewLock(Object)} set the lease to it
 * and nothing renews it in between, as RedisLockRegistry's {@code expireAfter}.
 */
public final class RlockLockRegistry
    implements ExpirableLockRegistry<DistributedLock>, RenewableLockRegistry<DistributedLock> {

  private final RedisLockClient client;
  private final String registryKey;
  private final Duration expireAfter;  // null: the watchdog
  private final Map<String, RegistryLock> locks = new ConcurrentHashMap<>();

  /** Locks held while their holders run, renewed by the client's watchdog. */
  public RlockLockRegistry(RedisLockClient client, String registryKey) {
    this(client, registryKey, null);
  }

  /**
   * Locks held for {@code expireAfter} after each acquire or renewal ({@code null}: renewed by
   * the client's watchdog instead).
   */
  public RlockLockRegistry(RedisLockClient client, String registryKey, Duration expireAfter) {
    this.client = Objects.requireNonNull(client, "client");
    Objects.requireNonNull(registryKey, "registryKey");
    if (registryKey.isEmpty()) {
      throw new IllegalArgumentException("registryKey must not be empty");
    }
    if (expireAfter != null && expireAfter.toMillis() < 1) {
      throw new IllegalArgumentException("expireAfter must be at least 1 ms, got " + expireAfter);
    }
    this.registryKey = registryKey;
    this.expireAfter = expireAfter;
  }

  /** The prefix of the lock names: a key's lock is {@code registryKey + ":" + key}. */
  public String getRegistryKey() {
    return registryKey;
  }

  /** The lease of each hold, or null when the client's watchdog renews them. */
  public Duration getExpireAfter() {
    return expireAfter;
  }

  /**
   * The lock of {@code lockKey} (a String, as RedisLockRegistry requires): the same object for
   * the same key until {@link #expireUnusedOlderThan(long)} drops it.
   */
  @Override
  public DistributedLock obtain(Object lockKey) {
    return lockOf(lockKey);
  }

  private RegistryLock lockOf(Object lockKey) {
    if (!(lockKey instanceof String)) {
      throw new IllegalArgumentException("lockKey must be a String, got "
          + (lockKey == null ? "null" : lockKey.getClass().getName()));
    }
    return locks.computeIfAbsent((String) lockKey,
        key -> new RegistryLock(client.getLock(registryKey + ":" + key)));
  }

  /**
   * Drops the locks that no thread holds through this registry and that were last acquired
   * (or made, if never acquired) more than {@code age} ms ago. A dropped lock still works for
   * whoever kept it: ownership lives on Redis, not in the object.
   */
  @Override
  public void expireUnusedOlderThan(long age) {
    long cutoff = System.currentTimeMillis() - age;
    locks.values().removeIf(lock -> lock.holds.get() == 0 && lock.lastUsed < cutoff);
  }

  /**
   * Renews the calling thread's hold of {@code lockKey}: to {@code expireAfter}; with the
   * watchdog, checks on Redis that the hold is still there (the watchdog renews it). Throws
   * {@link IllegalStateException} when the calling thread does not hold it.
   */
  @Override
  public void renewLock(Object lockKey) {
    RegistryLock lock = heldLock(lockKey);
    if (expireAfter != null) {
      renew(lock, expireAfter, lockKey);
    } else if (lock.delegate.getHoldCount() == 0) {
      throw new IllegalStateException("the lock of " + lockKey + " is no longer held (lost)");
    }
  }

  /**
   * Sets the remaining lease of the calling thread's hold of {@code lockKey} to {@code ttl}.
   * On a watchdog hold it lasts until the watchdog's next renewal. Throws
   * {@link IllegalStateException} when the calling thread does not hold it.
   */
  @Override
  public void renewLock(Object lockKey, Duration ttl) {
    Objects.requireNonNull(ttl, "ttl");
    renew(heldLock(lockKey), ttl, lockKey);
  }

  private RegistryLock heldLock(Object lockKey) {
    RegistryLock lock = lockOf(lockKey);
    if (!lock.delegate.isHeldByCurrentThread()) {
      throw new IllegalStateException("cannot renew the lock of " + lockKey
          + ": the current thread does not hold it");
    }
    return lock;
  }

  private static void renew(RegistryLock lock, Duration ttl, Object lockKey) {
    try {
      lock.delegate.extendLease(ttl.toMillis(), TimeUnit.MILLISECONDS);
    } catch (LockNotHeldException lost) {
      throw new IllegalStateException("cannot renew the lock of " + lockKey + ": " + lost.getMessage(),
          lost);
    }
  }

  @Override
  public String toString() {
    return "RlockLockRegistry{registryKey=" + registryKey + ", expireAfter="
        + (expireAfter == null ? "watchdog" : expireAfter) + "}";
  }

  /** One key's lock: the rlock lock plus what expireUnusedOlderThan needs to know. */
  private final class RegistryLock implements DistributedLock {
    final RedisLock delegate;
    final AtomicInteger holds = new AtomicInteger();  // holds taken through this object
    volatile long lastUsed = System.currentTimeMillis();

    RegistryLock(RedisLock delegate) {
      this.delegate = delegate;
    }

    /** The lease in ms of an acquire without a ttl: -1 makes rlock use the watchdog. */
    private long lease() {
      return expireAfter == null ? -1 : expireAfter.toMillis();
    }

    private boolean acquired(boolean acquired) {
      if (acquired) {
        holds.incrementAndGet();
        lastUsed = System.currentTimeMillis();
      }
      return acquired;
    }

    @Override
    public void lock() {
      delegate.lock(lease(), TimeUnit.MILLISECONDS);
      acquired(true);
    }

    @Override
    public void lock(Duration ttl) {
      delegate.lock(ttlMs(ttl), TimeUnit.MILLISECONDS);
      acquired(true);
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
      delegate.lockInterruptibly(lease(), TimeUnit.MILLISECONDS);
      acquired(true);
    }

    @Override
    public boolean tryLock() {
      try {
        return tryLock(0, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
      Objects.requireNonNull(unit, "unit");
      return acquired(delegate.tryLock(unit.toMillis(time), lease(), TimeUnit.MILLISECONDS));
    }

    @Override
    public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
      Objects.requireNonNull(waitTime, "waitTime");
      return acquired(delegate.tryLock(waitTime.toMillis(), ttlMs(ttl), TimeUnit.MILLISECONDS));
    }

    private long ttlMs(Duration ttl) {
      Objects.requireNonNull(ttl, "ttl");
      if (ttl.toMillis() < 1) {
        throw new IllegalArgumentException("ttl must be at least 1 ms, got " + ttl);
      }
      return ttl.toMillis();
    }

    @Override
    public void unlock() {
      try {
        delegate.unlock();
      } catch (LockLostException lost) {
        holds.updateAndGet(n -> Math.max(0, n - 1));
        throw new ConcurrentModificationException("the lock " + delegate.getName()
            + " expired or was taken before unlock: the integrity of what it protects may have"
            + " been compromised (" + lost.getMessage() + ")", lost);
      } catch (LockNotHeldException notHolder) {
        throw new IllegalStateException("You do not own the lock " + delegate.getName()
            + " (the current thread does not hold it)", notHolder);
      }
      holds.updateAndGet(n -> Math.max(0, n - 1));
    }

    @Override
    public Condition newCondition() {
      throw new UnsupportedOperationException("rlock locks do not support conditions");
    }

    @Override
    public String toString() {
      return "RlockLockRegistry.Lock{" + delegate.getName() + "}";
    }
  }
}
