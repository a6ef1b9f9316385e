// The read-write lock: readers share, a writer excludes everyone, downgrade works, upgrade is
// refused, each read hold has its own lease, and the watchdog renews reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;
using Clock = std::chrono::steady_clock;

namespace {

struct Halves {
  it::Lock read;
  it::Lock write;
};

Halves make_rw(rlock_client* client, const std::string& name, int64_t lease_ms = 0) {
  Halves h;
  for (rlock_lock_kind kind : {RLOCK_LOCK_READ, RLOCK_LOCK_WRITE}) {
    rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
    opts.kind = kind;
    if (lease_ms != 0) opts.lease_ms = lease_ms;
    rlock_lock* l = nullptr;
    if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
      throw std::runtime_error("rlock_lock_new_n failed: " + it::last_error());
    }
    (kind == RLOCK_LOCK_READ ? h.read : h.write) = it::Lock(l);
  }
  return h;
}

std::string read_lease_key(const std::string& name, const std::string& owner, int k) {
  return "{" + name + "}:" + owner + ":rwlock_timeout:" + std::to_string(k);
}

TEST(ReadWrite, ReadersShareAndExcludeWriters) {
  const std::string name = unique_name("rw-share");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client(), b = it::make_client(), c = it::make_client();
  Halves ha = make_rw(a.get(), name), hb = make_rw(b.get(), name), hc = make_rw(c.get(), name);
  ASSERT_EQ(rlock_acquire(ha.read.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_acquire(hb.read.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(redis.hgetall(name).at("mode"), "read");
  EXPECT_EQ(rlock_acquire(hc.write.get(), 0), RLOCK_ETIMEDOUT) << "a writer got in with readers";
  // b holds a read lock: its write request is an upgrade, refused rather than timed out.
  EXPECT_EQ(rlock_acquire(hb.write.get(), 0), RLOCK_EDEADLK);

  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  ASSERT_EQ(rlock_query_for(&st, ha.read.get(), RLOCK_THREAD_CURRENT), RLOCK_OK);
  EXPECT_EQ(st.mode, RLOCK_MODE_READ);
  EXPECT_EQ(st.owner_count, 2);
  EXPECT_EQ(st.held_by_me, 1);

  EXPECT_EQ(rlock_release(ha.read.get()), RLOCK_OK);
  EXPECT_TRUE(redis.exists(name)) << "the last reader's release must not free the lock early";
  EXPECT_EQ(rlock_release(hb.read.get()), RLOCK_OK);
  EXPECT_FALSE(redis.exists(name));
  ASSERT_EQ(rlock_acquire(hb.write.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_acquire(ha.read.get(), 0), RLOCK_ETIMEDOUT) << "a reader got in with a writer";
  EXPECT_EQ(rlock_acquire(ha.write.get(), 0), RLOCK_ETIMEDOUT) << "two writers";
  ASSERT_EQ(rlock_query_for(&st, hb.write.get(), RLOCK_THREAD_CURRENT), RLOCK_OK);
  EXPECT_EQ(st.mode, RLOCK_MODE_WRITE);
  ASSERT_NE(st.owner, nullptr);
  EXPECT_EQ(std::string(st.owner, st.owner_len),
            it::owner_of(b.get(), rlock_current_thread_id()) + ":write");
  EXPECT_EQ(rlock_release(hb.write.get()), RLOCK_OK);
  EXPECT_FALSE(redis.exists(name));
}

TEST(ReadWrite, WriterMayDowngradeAndReaderMayNotUpgrade) {
  const std::string name = unique_name("rw-grade");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client(), b = it::make_client(), c = it::make_client();
  Halves ha = make_rw(a.get(), name), hb = make_rw(b.get(), name), hc = make_rw(c.get(), name);

  ASSERT_EQ(rlock_acquire(ha.write.get(), 0), RLOCK_OK);
  ASSERT_EQ(rlock_acquire(ha.read.get(), 0), RLOCK_OK) << "downgrade: " << it::last_error();
  EXPECT_EQ(rlock_acquire(hb.read.get(), 0), RLOCK_ETIMEDOUT) << "a reader got in with a writer";
  EXPECT_EQ(rlock_release(ha.write.get()), RLOCK_OK);
  EXPECT_EQ(redis.hgetall(name).at("mode"), "read");
  EXPECT_EQ(rlock_acquire(hb.read.get(), 0), RLOCK_OK) << "readers share after the downgrade";
  EXPECT_EQ(rlock_acquire(hc.write.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(rlock_release(hb.read.get()), RLOCK_OK);

  // Upgrade: refused at once, even with an unbounded wait, and nothing changes.
  const auto before = redis.hgetall(name);
  auto start = Clock::now();
  EXPECT_EQ(rlock_acquire(ha.write.get(), RLOCK_WAIT_FOREVER), RLOCK_EDEADLK);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  EXPECT_NE(it::last_error().find("upgrad"), std::string::npos) << it::last_error();
  EXPECT_EQ(redis.hgetall(name), before);
  EXPECT_EQ(rlock_release(ha.read.get()), RLOCK_OK);
  EXPECT_FALSE(redis.exists(name));
}

TEST(ReadWrite, EachReadHoldHasItsOwnLease) {
  const std::string name = unique_name("rw-lease");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  Halves h = make_rw(a.get(), name, 5000);
  const std::string owner = it::owner_of(a.get(), rlock_current_thread_id());
  ASSERT_EQ(rlock_acquire(h.read.get(), 0), RLOCK_OK);
  ASSERT_EQ(rlock_acquire(h.read.get(), 0), RLOCK_OK);
  EXPECT_EQ(redis.hgetall(name).at(owner), "2");
  for (int k : {1, 2}) {
    long long pttl = redis.pttl(read_lease_key(name, owner, k));
    EXPECT_GT(pttl, 0) << "hold " << k;
    EXPECT_LE(pttl, 5000) << "hold " << k;
  }
  EXPECT_EQ(rlock_release(h.read.get()), RLOCK_OK);
  EXPECT_FALSE(redis.exists(read_lease_key(name, owner, 2))) << "the released hold's lease key";
  EXPECT_TRUE(redis.exists(read_lease_key(name, owner, 1)));
  EXPECT_EQ(rlock_release(h.read.get()), RLOCK_OK);
  EXPECT_FALSE(redis.exists(read_lease_key(name, owner, 1)));
  EXPECT_FALSE(redis.exists(name));
  EXPECT_EQ(rlock_release(h.read.get()), RLOCK_ENOTHELD);
}

TEST(ReadWrite, WatchdogRenewsReadAndWriteHolds) {
  const std::string read_name = unique_name("rw-wd-read");
  const std::string write_name = unique_name("rw-wd-write");
  LockKeys c1(read_name), c2(write_name);
  RedisConn redis(test_redis_url());
  it::ClientSettings settings;
  settings.watchdog_lease_ms = 1000;
  it::Client a = it::make_client(settings);
  Halves r = make_rw(a.get(), read_name), w = make_rw(a.get(), write_name);
  const std::string owner = it::owner_of(a.get(), rlock_current_thread_id());
  ASSERT_EQ(rlock_acquire(r.read.get(), 0), RLOCK_OK);
  ASSERT_EQ(rlock_acquire(w.write.get(), 0), RLOCK_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_GT(redis.pttl(read_name), 0);
  EXPECT_GT(redis.pttl(read_lease_key(read_name, owner, 1)), 0) << "read lease key not renewed";
  EXPECT_GT(redis.pttl(write_name), 0);
  EXPECT_EQ(rlock_is_held(r.read.get()), 1);
  EXPECT_EQ(rlock_is_held(w.write.get()), 1);
  EXPECT_EQ(rlock_release(r.read.get()), RLOCK_OK);
  EXPECT_EQ(rlock_release(w.write.get()), RLOCK_OK);
  EXPECT_FALSE(redis.exists(read_name));
  EXPECT_FALSE(redis.exists(write_name));
}

TEST(ReadWrite, ReleasesWakeWaitersPromptly) {
  const std::string name = unique_name("rw-wake");
  LockKeys cleanup(name);
  it::ClientSettings settings;
  settings.poll_cap_ms = 10000;  // a wake-up must come from the message, not from polling
  it::Client a = it::make_client(settings), b = it::make_client(settings);
  Halves ha = make_rw(a.get(), name), hb = make_rw(b.get(), name);

  // Readers waiting on a writer: the write release wakes all of them.
  ASSERT_EQ(rlock_acquire(ha.write.get(), 0), RLOCK_OK);
  std::atomic<int> in{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&, i] {
      if (it::acquire(hb.read.get(), 10000, 0, 100 + i) == RLOCK_OK) ++in;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto released = Clock::now();
  EXPECT_EQ(rlock_release(ha.write.get()), RLOCK_OK);
  for (auto& t : readers) t.join();
  EXPECT_EQ(in.load(), 3);
  EXPECT_LT(Clock::now() - released, std::chrono::milliseconds(1500));

  // A writer waiting on readers: the last read release wakes it.
  int rc = -100;
  std::thread writer([&] { rc = it::acquire(ha.write.get(), 10000, 0, 200); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  released = Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rlock_release_for(hb.read.get(), 100 + i), RLOCK_OK);
  writer.join();
  EXPECT_EQ(rc, RLOCK_OK) << it::last_error();
  EXPECT_LT(Clock::now() - released, std::chrono::milliseconds(1500));
  EXPECT_EQ(rlock_release_for(ha.write.get(), 200), RLOCK_OK);
}

TEST(ReadWrite, ForceUnlockOnlyDeletesItsOwnMode) {
  const std::string name = unique_name("rw-force");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  Halves h = make_rw(a.get(), name);
  ASSERT_EQ(rlock_acquire(h.read.get(), 0), RLOCK_OK);
  int deleted = -1;
  EXPECT_EQ(rlock_force_unlock(&deleted, h.write.get()), RLOCK_OK);
  EXPECT_EQ(deleted, 0) << "the write half deleted a read-held lock";
  EXPECT_TRUE(redis.exists(name));
  EXPECT_EQ(rlock_force_unlock(&deleted, h.read.get()), RLOCK_OK);
  EXPECT_EQ(deleted, 1);
  EXPECT_FALSE(redis.exists(name));
  EXPECT_EQ(rlock_release(h.read.get()), RLOCK_ELOST);
}

TEST(ReadWrite, FencingTokensAreRefused) {
  it::Client a = it::make_client();
  Halves h = make_rw(a.get(), unique_name("rw-token"));
  int64_t token = 0;
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = 0;
  opts.token = &token;
  EXPECT_EQ(rlock_acquire_ex(h.read.get(), &opts), RLOCK_EINVAL);
  EXPECT_EQ(rlock_acquire_ex(h.write.get(), &opts), RLOCK_EINVAL);
}

// FAULTS.md F3 (without the kill): 8 processes of random reads and writes; writers never
// overlap anyone, and readers do overlap each other.
TEST(ReadWrite, ProcessesNeverOverlapAWriter) {
  const std::string name = unique_name("rw-f3");
  LockKeys cleanup(name);
  const std::string dir = make_temp_dir("rlock-rw");
  struct RemoveDir {
    std::string path;
    ~RemoveDir() { remove_tree(path); }
  } remove_dir{dir};
  constexpr int kProcesses = 8, kThreads = 2, kIterations = 60;
  std::vector<std::unique_ptr<Process>> workers;
  for (int p = 0; p < kProcesses; ++p) {
    workers.push_back(std::make_unique<Process>(std::vector<std::string>{
        RLOCK_IT_WORKER, "rw", it::server_url(), name, dir + "/stamps." + std::to_string(p),
        std::to_string(kThreads), std::to_string(kIterations)}));
  }
  for (int p = 0; p < kProcesses; ++p) {
    int status = 0;
    ASSERT_TRUE(workers[p]->wait(120000, &status)) << "worker " << p << " did not finish";
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << p << " ended with " << describe_status(status);
  }
  struct Section {
    bool write;
    int64_t enter, exit;
  };
  std::vector<Section> sections;
  for (int p = 0; p < kProcesses; ++p) {
    std::ifstream in(dir + "/stamps." + std::to_string(p));
    char kind;
    int64_t enter, exit;
    while (in >> kind >> enter >> exit) sections.push_back({kind == 'W', enter, exit});
  }
  ASSERT_EQ(sections.size(), size_t{kProcesses * kThreads * kIterations});
  int writer_overlaps = 0, reader_overlaps = 0, writes = 0;
  for (size_t i = 0; i < sections.size(); ++i) {
    writes += sections[i].write;
    for (size_t j = i + 1; j < sections.size(); ++j) {
      const Section& x = sections[i];
      const Section& y = sections[j];
      if (x.enter < y.exit && y.enter < x.exit) {
        if (x.write || y.write) {
          ++writer_overlaps;
        } else {
          ++reader_overlaps;
        }
      }
    }
  }
  EXPECT_EQ(writer_overlaps, 0) << "a writer overlapped another section";
  EXPECT_GT(writes, 0);
  EXPECT_GT(reader_overlaps, 0) << "readers never shared: the read lock acted exclusive";
  RedisConn redis(test_redis_url());
  EXPECT_FALSE(redis.exists(name));
  std::printf("%zu sections (%d writes), %d reader overlaps\n", sections.size(), writes,
              reader_overlaps);
}

}  // namespace
