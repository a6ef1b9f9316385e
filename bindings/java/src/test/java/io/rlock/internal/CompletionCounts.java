package io.rlock.internal;

/** Test access to the completion counters of the JNI layer. */
public final class CompletionCounts {
  private CompletionCounts() {}

  /** Started asynchronous calls whose completion has not finished. */
  public static long outstanding() {
    return NativeCompletion.outstanding();
  }

  /** Completions called more than once (must stay 0). */
  public static long repeated() {
    return NativeCompletion.repeated();
  }
}
