package io.rlock.internal;

import java.nio.charset.StandardCharsets;

/**
 * Java strings to the bytes the C library gets: standard UTF-8, never JNI's modified UTF-8
 * (which writes NUL as C0 80 and a character outside the BMP as two 3-byte surrogates).
 */
public final class Utf8 {
  private Utf8() {}

  /**
   * {@code text} as UTF-8, exactly. A lone surrogate has no UTF-8 form: it is refused rather
   * than replaced by '?', so two different strings never become one key.
   */
  public static byte[] exact(String text, String what) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        throw new IllegalArgumentException(String.format(
            "%s has no UTF-8 form: lone surrogate U+%04X at index %d", what, (int) c, i));
      }
    }
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** As {@link #exact}, for a string the C library reads up to its first NUL: one is refused. */
  public static byte[] cString(String text, String what) {
    int nul = text.indexOf('\0');
    if (nul >= 0) {
      throw new IllegalArgumentException(what + " contains a NUL character (at index " + nul
          + "); it cannot be passed to the C library");
    }
    return exact(text, what);
  }
}
