package io.rlock;

import java.util.EventListener;

/**
 * A listener of a lock's, semaphore's or latch's key, added with {@code addListener} (Redisson's
 * {@code ObjectListener}): an {@link ExpiredObjectListener}, a {@link DeletedObjectListener}, or
 * a class implementing both. Called on the client's event thread, in the order the server
 * published the notifications; it must return quickly.
 */
public interface ObjectListener extends EventListener {}
