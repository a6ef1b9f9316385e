package io.rlock.internal;

/** The asynchronous native calls of a lock handle and of a group handle. */
enum AsyncTarget {
  LOCK {
    @Override
    void startAcquire(long ptr, long waitMs, long leaseMs, long threadId, long cancelToken,
        NativeCompletion completion) {
      RlockNative.acquireAsync(ptr, waitMs, leaseMs, threadId, cancelToken, completion);
    }

    @Override
    void startRelease(long ptr, long threadId, NativeCompletion completion) {
      RlockNative.releaseAsync(ptr, threadId, completion);
    }

    @Override
    void releaseQuietly(long ptr, long threadId) {
      RlockNative.releaseQuietly(ptr, threadId);
    }
  },
  /** A non-reentrant lock: its holder asking again fails as Redisson's do. */
  NON_REENTRANT_LOCK {
    @Override
    void startAcquire(long ptr, long waitMs, long leaseMs, long threadId, long cancelToken,
        NativeCompletion completion) {
      LOCK.startAcquire(ptr, waitMs, leaseMs, threadId, cancelToken, completion);
    }

    @Override
    void startRelease(long ptr, long threadId, NativeCompletion completion) {
      LOCK.startRelease(ptr, threadId, completion);
    }

    @Override
    void releaseQuietly(long ptr, long threadId) {
      LOCK.releaseQuietly(ptr, threadId);
    }

    @Override
    RuntimeException acquireFailure(RuntimeException e) {
      return Errors.alreadyHeld(e);
    }
  },
  GROUP {
    @Override
    void startAcquire(long ptr, long waitMs, long leaseMs, long threadId, long cancelToken,
        NativeCompletion completion) {
      RlockNative.multiAcquireAsync(ptr, waitMs, leaseMs, threadId, cancelToken, completion);
    }

    @Override
    void startRelease(long ptr, long threadId, NativeCompletion completion) {
      RlockNative.multiReleaseAsync(ptr, threadId, completion);
    }

    @Override
    void releaseQuietly(long ptr, long threadId) {
      RlockNative.multiReleaseQuietly(ptr, threadId);
    }
  };

  /** Throws when the call did not start; otherwise completion.done follows exactly once. */
  abstract void startAcquire(long ptr, long waitMs, long leaseMs, long threadId,
      long cancelToken, NativeCompletion completion);

  abstract void startRelease(long ptr, long threadId, NativeCompletion completion);

  /** Starts giving back a grant nobody will receive; its outcome is not reported. */
  abstract void releaseQuietly(long ptr, long threadId);

  /** The exception an acquire that failed with `e` throws. */
  RuntimeException acquireFailure(RuntimeException e) {
    return e;
  }
}
