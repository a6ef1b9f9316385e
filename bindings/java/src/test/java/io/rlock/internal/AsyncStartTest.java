package io.rlock.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/**
 * A call the C library refuses to start throws in the starter, which deletes the completion's
 * global reference itself: no completion comes, and none is counted as outstanding.
 */
class AsyncStartTest {
  private static final class Unexpected extends NativeCompletion {
    @Override
    void complete(int status, long value, byte[] message) {
      throw new AssertionError("a call that did not start completed");
    }
  }

  @Test
  void aCallThatDidNotStartNeverCompletes() {
    Unexpected completion = new Unexpected();
    assertThrows(IllegalArgumentException.class,
        () -> RlockNative.acquireAsync(0, -1, 0, 1, 0, completion));
    assertThrows(IllegalArgumentException.class,
        () -> RlockNative.multiAcquireAsync(0, -1, 0, 1, 0, completion));
    assertThrows(IllegalArgumentException.class,
        () -> RlockNative.releaseAsync(0, 1, completion));
    assertThrows(IllegalArgumentException.class,
        () -> RlockNative.extendAsync(0, 1, 1000, completion));
    assertThrows(IllegalArgumentException.class,
        () -> RlockNative.multiReleaseAsync(0, 1, completion));
    assertThrows(NullPointerException.class,
        () -> RlockNative.releaseAsync(0, 1, null), "no completion: nothing to call");
    assertEquals(0, NativeCompletion.repeated());
  }
}
