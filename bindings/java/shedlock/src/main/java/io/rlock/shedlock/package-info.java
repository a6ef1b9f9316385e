/**
 * ShedLock on rlock: {@link io.rlock.shedlock.RlockLockProvider}, a ShedLock lock provider whose
 * locks are rlock locks (Redisson's layout on Redis). See docs/shedlock.md.
 */
package io.rlock.shedlock;
