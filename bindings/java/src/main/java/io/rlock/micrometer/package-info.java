/**
 * {@link io.rlock.micrometer.RedisLockMetrics}: a client's statistics as Micrometer meters.
 * Micrometer (micrometer-core) is an optional dependency: add it to use this package.
 */
package io.rlock.micrometer;
