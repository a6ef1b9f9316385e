package io.rlock.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Loads librlock_jni: from java.library.path when it is there (a build tree, a system
 * install), else from the copy packed in the jar under {@code native/<os>-<arch>/}, which is
 * written to a temporary file, loaded, and deleted at once (the mapping stays valid).
 */
final class NativeLoader {
  private static final String LIBRARY = "rlock_jni";
  private static boolean loaded;

  private NativeLoader() {}

  static synchronized void load() {
    if (loaded) {
      return;
    }
    try {
      System.loadLibrary(LIBRARY);
    } catch (UnsatisfiedLinkError notOnPath) {
      try {
        loadFromJar();
      } catch (IOException | UnsatisfiedLinkError notInJar) {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(
            "rlock: cannot load the native library " + System.mapLibraryName(LIBRARY)
                + ": not on java.library.path (" + notOnPath.getMessage() + ") and not loadable"
                + " from the jar (" + notInJar.getMessage() + ")");
        error.addSuppressed(notOnPath);
        error.addSuppressed(notInJar);
        throw error;
      }
    }
    loaded = true;
  }

  private static void loadFromJar() throws IOException {
    String file = System.mapLibraryName(LIBRARY);
    String resource = "/native/" + platform() + "/" + file;
    try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new UnsatisfiedLinkError(resource + " is not on the class path");
      }
      Path dir = Files.createTempDirectory("rlock-jni");
      Path copy = dir.resolve(file);
      try {
        Files.copy(in, copy);
        System.load(copy.toAbsolutePath().toString());
      } finally {
        Files.deleteIfExists(copy);
        Files.deleteIfExists(dir);
      }
    }
  }

  /** The jar's directory name for this JVM's platform, e.g. linux-x86_64. */
  static String platform() {
    return platform(System.getProperty("os.name", ""), System.getProperty("os.arch", ""));
  }

  /**
   * The jar's directory name for an os.name and os.arch: the release jar has linux-x86_64 and
   * linux-aarch64 (HotSpot's os.arch on Linux is amd64 or aarch64).
   */
  static String platform(String osName, String osArch) {
    String os = osName.toLowerCase(Locale.ROOT);
    String arch = osArch.toLowerCase(Locale.ROOT);
    if (os.startsWith("linux")) {
      os = "linux";
    } else if (os.startsWith("mac") || os.startsWith("darwin")) {
      os = "osx";
    } else if (os.startsWith("windows")) {
      os = "windows";
    }
    if (arch.equals("amd64") || arch.equals("x86_64")) {
      arch = "x86_64";
    } else if (arch.equals("arm64") || arch.equals("aarch64")) {
      arch = "aarch64";
    }
    return os + "-" + arch;
  }
}
