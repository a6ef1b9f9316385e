package io.rlock;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

/**
 * The cross-language worker: {@code URL DIR ITERATIONS NAME [NAME...]}. Each iteration takes
 * the reentrant lock NAMES[i % n] (waiting forever, watchdog lease), creates DIR/NAME.inside
 * exclusively (exit 3 with "overlap on NAME" if it exists), adds one to the decimal counter in
 * DIR/NAME.count, deletes DIR/NAME.inside and unlocks. Binding errors exit 1. Prints
 * "ok ITERATIONS" at the end. With RLOCK_WORKER_KIND=leader each iteration is one leadership
 * of the election NAME (a LeaderLatch started, awaited and closed), whose section also appends
 * "TERM java" to DIR/NAME.terms.
 */
public final class CrossLanguageWorker {
  private CrossLanguageWorker() {}

  public static void main(String[] args) {
    if (args.length < 4) {
      System.err.println("usage: worker URL DIR ITERATIONS NAME [NAME...]");
      System.exit(2);
    }
    Path dir = Paths.get(args[1]);
    int iterations;
    try {
      iterations = Integer.parseInt(args[2]);
    } catch (NumberFormatException e) {
      System.err.println("ITERATIONS must be an integer: " + args[2]);
      System.exit(2);
      return;
    }
    int names = args.length - 3;
    boolean leader = "leader".equals(System.getenv("RLOCK_WORKER_KIND"));
    try (RedisLockClient client = RedisLockClient.create(args[0])) {
      Map<String, RedisLock> locks = new HashMap<>();
      for (int i = 0; leader && i < iterations; i++) {
        String name = args[3 + i % names];
        try (LeaderLatch latch = client.leaderLatch(name)) {
          latch.start();
          long term = latch.await();
          Path inside = dir.resolve(name + ".inside");
          try {
            Files.createFile(inside);
          } catch (FileAlreadyExistsException e) {
            System.err.println("overlap on " + name);
            System.exit(3);
          }
          Path count = dir.resolve(name + ".count");
          Files.write(count, Long.toString(read(count) + 1).getBytes(StandardCharsets.US_ASCII));
          if (!latch.hasLeadership()) {
            throw new LeadershipLostException(name, term, RevokeReason.UNREACHABLE);
          }
          Files.write(dir.resolve(name + ".terms"),
              (term + " java\n").getBytes(StandardCharsets.US_ASCII),
              java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
          Files.delete(inside);
        } catch (InterruptedException e) {
          System.err.println("worker: interrupted");
          System.exit(1);
        }
      }
      for (int i = 0; !leader && i < iterations; i++) {
        String name = args[3 + i % names];
        RedisLock lock = locks.computeIfAbsent(name, client::getLock);
        lock.lock();
        try {
          Path inside = dir.resolve(name + ".inside");
          try {
            Files.createFile(inside);
          } catch (FileAlreadyExistsException e) {
            System.err.println("overlap on " + name);
            System.exit(3);
          }
          Path count = dir.resolve(name + ".count");
          Files.write(count, Long.toString(read(count) + 1).getBytes(StandardCharsets.US_ASCII));
          Files.delete(inside);
        } finally {
          lock.unlock();
        }
      }
    } catch (RuntimeException | IOException e) {
      System.err.println("worker: " + e);
      System.exit(1);
    }
    System.out.println("ok " + iterations);
  }

  private static long read(Path count) throws IOException {
    try {
      String text = new String(Files.readAllBytes(count), StandardCharsets.US_ASCII).trim();
      return text.isEmpty() ? 0 : Long.parseLong(text);
    } catch (NoSuchFileException e) {
      return 0;
    }
  }
}
