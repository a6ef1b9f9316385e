package io.rlock.bench;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * An array of longs in a file mapped by several processes: the turns, flags and records of the
 * multi-process scenarios. Volatile reads and writes and atomic adds work across processes on
 * a shared mapping (aligned longs of a direct buffer).
 */
final class SharedLongs implements AutoCloseable {
  private static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

  private final FileChannel channel;
  private final MappedByteBuffer buffer;
  private final long length;

  /** Maps `count` longs of `path`, creating and zero-filling it when `create`. */
  SharedLongs(Path path, long count, boolean create) throws IOException {
    if (count * 8 > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("shared area too large: " + count + " longs");
    }
    channel = create
        ? FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
            StandardOpenOption.WRITE)
        : FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
    buffer = channel.map(FileChannel.MapMode.READ_WRITE, 0, count * 8);
    length = count;
  }

  long length() {
    return length;
  }

  long get(long i) {
    return (long) LONGS.getVolatile(buffer, (int) (i * 8));
  }

  void set(long i, long value) {
    LONGS.setVolatile(buffer, (int) (i * 8), value);
  }

  long getAndAdd(long i, long delta) {
    return (long) LONGS.getAndAdd(buffer, (int) (i * 8), delta);
  }

  @Override
  public void close() throws IOException {
    channel.close();
  }
}
