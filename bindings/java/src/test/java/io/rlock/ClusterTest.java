package io.rlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The binding takes a redis-cluster:// URL unchanged (the CTest cluster fixture). */
@Timeout(60)
class ClusterTest {
  private static String clusterUrl() throws Exception {
    String dir = System.getenv("RLOCK_TEST_CLUSTER_DIR");
    if (dir == null || dir.isEmpty()) {
      // Under CTest the fixture is always there; by hand, without it, there is no cluster.
      assertTrue(System.getenv("RLOCK_TEST_REDIS_URL") == null,
          "RLOCK_TEST_CLUSTER_DIR is not set: the CTest test lacks the cluster fixture");
      Assumptions.abort("no cluster: run through CTest (java_junit), which starts one");
    }
    return new String(Files.readAllBytes(Path.of(dir, "url")), StandardCharsets.UTF_8).trim();
  }

  @Test
  void namesInManySlotsExcludeAcrossClients() throws Exception {
    String url = clusterUrl();
    try (RedisLockClient a = RedisLockClient.create(url);
        RedisLockClient b = RedisLockClient.create(url)) {
      for (int i = 0; i < 16; i++) {
        String name = TestRedis.uniqueName("cluster") + "-" + i;
        RedisLock mine = a.getLock(name);
        RedisLock theirs = b.getLock(name);
        assertTrue(mine.tryLock(), name);
        assertFalse(theirs.tryLock(), name + ": the other client got a held lock");
        mine.unlock();
        assertTrue(theirs.tryLock(1, TimeUnit.SECONDS), name + ": not free after the unlock");
        assertTrue(theirs.isLocked());
        theirs.unlock();
        assertFalse(theirs.isLocked(), name + ": still locked after the unlock");
      }
    }
  }
}
