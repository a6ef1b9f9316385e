/**
 * Distributed locks on Redis with Redisson's on-Redis layout: {@link io.rlock.RedisLockClient}
 * makes locks ({@link io.rlock.RedisLock}, fair, spin, fenced, read-write, multi), semaphores and
 * count-down latches that a Redisson client, the rlock CLI and the Python, Go and C bindings
 * share.
 */
package io.rlock;
