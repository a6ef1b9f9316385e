// Mutual exclusion across processes and threads: many owners run a non-atomic
// read-sleep-write on a shared counter file under one lock.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

// Runs `processes` worker processes of `threads` owners each, every owner doing `iterations`
// critical sections on one lock of `kind`, and checks the counter and the stamps.
void check_mutual_exclusion(int kind, int kProcesses, int kThreads, int kIterations) {
  const std::string name = unique_name("mutex");
  LockKeys cleanup(name);
  const std::string dir = make_temp_dir("rlock-mutex");
  struct RemoveDir {
    std::string path;
    ~RemoveDir() { remove_tree(path); }
  } remove_dir{dir};

  const std::string counter = dir + "/counter";
  {
    std::ofstream out(counter);
    out << "00000000000000000000\n";
  }

  const int64_t start = mono_ms();
  std::vector<std::unique_ptr<Process>> workers;
  for (int p = 0; p < kProcesses; ++p) {
    workers.push_back(std::make_unique<Process>(
        std::vector<std::string>{RLOCK_IT_WORKER, "mutex", it::server_url(), name, counter,
                                 dir + "/stamps." + std::to_string(p), std::to_string(kThreads),
                                 std::to_string(kIterations), std::to_string(kind)}));
  }
  for (int p = 0; p < kProcesses; ++p) {
    int status = 0;
    ASSERT_TRUE(workers[p]->wait(150000, &status)) << "worker " << p << " did not finish in 150 s";
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << p << " ended with " << describe_status(status);
  }
  const int64_t elapsed = mono_ms() - start;

  std::vector<std::pair<int64_t, int64_t>> sections;
  for (int p = 0; p < kProcesses; ++p) {
    std::ifstream in(dir + "/stamps." + std::to_string(p));
    int64_t enter, exit;
    while (in >> enter >> exit) sections.emplace_back(enter, exit);
  }
  long long final_value = -1;
  {
    std::ifstream in(counter);
    in >> final_value;
  }

  const long long expected = static_cast<long long>(kProcesses) * kThreads * kIterations;
  EXPECT_EQ(static_cast<long long>(sections.size()), expected) << "sections entered";
  EXPECT_EQ(final_value, static_cast<long long>(sections.size()))
      << "the counter lost updates: sections overlapped";

  std::sort(sections.begin(), sections.end());
  int overlaps = 0;
  int64_t last_exit = 0;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (i > 0 && sections[i].first < last_exit) {
      if (++overlaps <= 5) {
        ADD_FAILURE() << "section entered at " << sections[i].first << " ns began "
                      << (last_exit - sections[i].first) << " ns before the previous one exited";
      }
    }
    last_exit = std::max(last_exit, sections[i].second);
  }
  EXPECT_EQ(overlaps, 0) << "overlapping critical sections";

  RedisConn redis(test_redis_url());
  EXPECT_FALSE(redis.exists(name)) << "the lock key outlived every holder";
  // Only the fair kind has these; every waiter of it left its queue by acquiring.
  EXPECT_FALSE(redis.exists(fair_queue_key(name))) << "a fair waiter was left in the queue";
  EXPECT_FALSE(redis.exists(fair_timeout_key(name))) << "a fair waiter's deadline was left behind";
  std::printf("kind %d: %zu critical sections in %lld ms\n", kind, sections.size(),
              static_cast<long long>(elapsed));
}

// 8 * 4 * 320 = 10,240 critical sections.
TEST(MutualExclusion, ProcessesAndThreadsNeverOverlapOrLoseUpdates) {
  check_mutual_exclusion(RLOCK_LOCK_REENTRANT, 8, 4, 320);
}

TEST(MutualExclusion, FencedLockNeverOverlapsOrLosesUpdates) {
  check_mutual_exclusion(RLOCK_LOCK_FENCED, 4, 4, 150);
}

// Every handover goes to the queue head, woken on its own channel.
TEST(MutualExclusion, FairLockNeverOverlapsOrLosesUpdates) {
  check_mutual_exclusion(RLOCK_LOCK_FAIR, 4, 4, 100);
}

// Spinners hand over less promptly (no wake-up message), so fewer sections keep it short.
TEST(MutualExclusion, SpinLockNeverOverlapsOrLosesUpdates) {
  check_mutual_exclusion(RLOCK_LOCK_SPIN, 4, 4, 150);
}

}  // namespace
