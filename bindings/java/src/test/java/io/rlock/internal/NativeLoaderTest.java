package io.rlock.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The jar's native/<os>-<arch> directories as the JVMs of the release's platforms name them. */
class NativeLoaderTest {
  @Test
  void linuxJvmsFindTheReleaseDirectories() {
    assertEquals("linux-x86_64", NativeLoader.platform("Linux", "amd64"));
    assertEquals("linux-x86_64", NativeLoader.platform("Linux", "x86_64"));
    assertEquals("linux-aarch64", NativeLoader.platform("Linux", "aarch64"));
    assertEquals("linux-aarch64", NativeLoader.platform("Linux", "arm64"));
  }

  @Test
  void thisJvmMatchesItsProperties() {
    String os = System.getProperty("os.name");
    String arch = System.getProperty("os.arch");
    assertEquals(NativeLoader.platform(os, arch), NativeLoader.platform());
  }
}
