// The fair lock (RLOCK_LOCK_FAIR, Redisson RFairLock layout): first come, first served across
// processes, a dead waiter stalls the queue only until its deadline, a waiter that gives up
// leaves the queue, a release wakes only the queue head, and everything else works as on the
// reentrant lock.
//
// What is on Redis besides the lock hash N: the list "redisson_lock_queue:{N}" (waiting owners
// in arrival order) and the sorted set "redisson_lock_timeout:{N}" (owner -> wall-clock ms
// deadline). Each waiter listens on "redisson_lock__channel:{N}:<owner>".
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

constexpr int64_t kDefaultFairWaitMs = 300000;

it::Lock make_fair_lock(rlock_client* client, const std::string& name, int64_t fair_wait_ms = 0) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = RLOCK_LOCK_FAIR;
  opts.fair_wait_ms = fair_wait_ms;  // 0 = the default
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n(RLOCK_LOCK_FAIR) failed: " + it::last_error());
  }
  return it::Lock(l);
}

// The clock of the queue deadlines (wall-clock ms since the epoch).
int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Polls `done` every 5 ms until it is true or `timeout_ms` passed; its last answer.
bool eventually(const std::function<bool()>& done, int64_t timeout_ms) {
  const int64_t deadline = mono_ms() + timeout_ms;
  for (;;) {
    if (done()) return true;
    if (mono_ms() >= deadline) return false;
    sleep_ms(5);
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

std::vector<std::string> queue_of(RedisConn& redis, const std::string& name) {
  Reply r = redis.ok({"LRANGE", fair_queue_key(name), "0", "-1"});
  std::vector<std::string> out;
  for (const Reply& e : r.elements) out.push_back(e.str);
  return out;
}

int64_t parse_score(const std::string& s) { return std::llround(std::strtod(s.c_str(), nullptr)); }

// The deadline of `owner` (wall-clock ms), or -1 when it has none.
int64_t deadline_of(RedisConn& redis, const std::string& name, const std::string& owner) {
  Reply r = redis.ok({"ZSCORE", fair_timeout_key(name), owner});
  return r.is_nil() ? -1 : parse_score(r.str);
}

// The queue and every deadline, read in one script so that nothing moves in between.
struct Snapshot {
  std::vector<std::string> queue;
  std::map<std::string, int64_t> deadlines;
};

Snapshot snapshot(RedisConn& redis, const std::string& name) {
  Reply r = redis.ok({"EVAL",
                      "return {redis.call('lrange', KEYS[1], 0, -1), "
                      "redis.call('zrange', KEYS[2], 0, -1, 'WITHSCORES')}",
                      "2", fair_queue_key(name), fair_timeout_key(name)});
  if (r.elements.size() != 2) throw std::runtime_error("queue snapshot: " + r.describe());
  Snapshot out;
  for (const Reply& e : r.elements[0].elements) out.queue.push_back(e.str);
  const auto& scores = r.elements[1].elements;
  for (size_t i = 0; i + 1 < scores.size(); i += 2) {
    out.deadlines[scores[i].str] = parse_score(scores[i + 1].str);
  }
  return out;
}

void expect_no_keys_left(RedisConn& redis, const std::string& name) {
  EXPECT_FALSE(redis.exists(name)) << "the lock key is still there";
  EXPECT_FALSE(redis.exists(fair_queue_key(name)))
      << "the queue is still there: " << joined(queue_of(redis, name));
  EXPECT_FALSE(redis.exists(fair_timeout_key(name))) << "the deadlines are still there";
}

// ---- Worker processes (rlock_it_worker fair) -----------------------------------------------

struct FairWorker {
  std::unique_ptr<Process> process;
  std::string client_id;
  std::string owner(int thread) const { return client_id + ":" + std::to_string(thread); }
};

// Starts a worker and waits for its "ready CLIENT_ID" (SIGUSR1 is blocked from then on; each
// SIGUSR1 starts its next owner).
FairWorker start_fair_worker(const std::string& name, int64_t fair_wait_ms, int64_t wait_ms,
                             int64_t hold_ms, int threads, int64_t poll_cap_ms = 0) {
  FairWorker w;
  w.process = std::make_unique<Process>(std::vector<std::string>{
      RLOCK_IT_WORKER, "fair", it::server_url(), name, std::to_string(fair_wait_ms),
      std::to_string(wait_ms), std::to_string(hold_ms), std::to_string(threads),
      std::to_string(poll_cap_ms)});
  std::string line;
  if (!w.process->read_line(&line, 30000) || line.compare(0, 6, "ready ") != 0) {
    throw std::runtime_error("fair worker did not get ready in 30 s (said \"" + line + "\")");
  }
  w.client_id = line.substr(6);
  return w;
}

// Reads a worker's lines until one starts with `prefix` (returned whole); "" on EOF/timeout.
std::string read_until(Process& p, const std::string& prefix, int64_t timeout_ms,
                       std::string* seen) {
  const int64_t deadline = mono_ms() + timeout_ms;
  std::string line;
  while (p.read_line(&line, std::max<int64_t>(1, deadline - mono_ms()))) {
    *seen += line + "\n";
    if (line.compare(0, prefix.size(), prefix) == 0) return line;
  }
  return "";
}

// ---- Owners waiting on threads of this process ------------------------------------------------

// Owners on threads of their own, all through one lock handle with their own thread ids. Each
// acquires; once it holds the lock it keeps it until open(), then releases. The destructor
// cancels whatever still waits, opens and joins, so a failed assertion leaves no thread behind.
class WaiterGroup {
 public:
  static constexpr int kPending = 1;
  struct Waiter {
    int64_t thread_id = 0;
    std::atomic<int> rc{kPending};
    std::atomic<int> release_rc{kPending};
    std::atomic<int64_t> elapsed_ms{0};
    std::atomic<int> turn{-1};  // the order it acquired in (0 = first)
    bool done() const { return rc.load() != kPending; }
  };

  explicit WaiterGroup(rlock_lock* lock) : lock_(lock), cancel_(it::make_token()) {}
  ~WaiterGroup() {
    rlock_cancel_token_cancel(cancel_.get());
    open();
    join();
  }

  Waiter& start(int64_t thread_id, int64_t wait_ms) {
    waiters_.push_back(std::make_unique<Waiter>());
    Waiter* w = waiters_.back().get();
    w->thread_id = thread_id;
    threads_.emplace_back([this, w, wait_ms] {
      const int64_t t0 = mono_ms();
      int rc = it::acquire(lock_, wait_ms, 0, w->thread_id, cancel_.get());
      w->elapsed_ms = mono_ms() - t0;
      if (rc == RLOCK_OK) w->turn = next_turn_++;
      w->rc = rc;
      if (rc != RLOCK_OK) return;
      {
        std::unique_lock<std::mutex> l(mutex_);
        cv_.wait(l, [this] { return open_; });
      }
      w->release_rc = rlock_release_for(lock_, w->thread_id);
    });
    return *w;
  }

  void open() {
    std::lock_guard<std::mutex> l(mutex_);
    open_ = true;
    cv_.notify_all();
  }

  void join() {
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  rlock_lock* lock_;
  it::Token cancel_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  std::atomic<int> next_turn_{0};
  std::vector<std::unique_ptr<Waiter>> waiters_;
  std::vector<std::thread> threads_;
};

// ---- 1. FIFO across processes ---------------------------------------------------------------

TEST(Fair, WaitersOfFourProcessesAcquireInArrivalOrder) {
  constexpr int kProcesses = 4;
  constexpr int kThreads = 5;
  constexpr int kWaiters = kProcesses * kThreads;
  constexpr int64_t kHoldMs = 20;
  // Queued waiters retry this often (instead of every second), so an acquire that ignored the
  // queue would have many chances to barge in between a release and the head's acquire.
  constexpr int64_t kPollCapMs = 10;
  const std::string name = unique_name("fair-fifo");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = make_fair_lock(client.get(), name);
  ASSERT_EQ(it::acquire(lock.get(), 0), RLOCK_OK) << it::last_error();

  std::vector<FairWorker> workers;
  for (int p = 0; p < kProcesses; ++p) {
    workers.push_back(
        start_fair_worker(name, 0, RLOCK_WAIT_FOREVER, kHoldMs, kThreads, kPollCapMs));
  }
  // Waiter i is owner i / kProcesses + 1 of process i % kProcesses: the processes take turns.
  // Each starts only once the one before it is in the queue, so the arrival order is known.
  std::vector<std::string> arrival;
  for (int i = 0; i < kWaiters; ++i) {
    const FairWorker& w = workers[i % kProcesses];
    arrival.push_back(w.owner(i / kProcesses + 1));
    w.process->kill(SIGUSR1);
    std::vector<std::string> queue;
    ASSERT_TRUE(eventually(
        [&] {
          queue = queue_of(redis, name);
          return queue.size() >= arrival.size();
        },
        30000))
        << "waiter " << i << " did not join the queue in 30 s; queue: " << joined(queue);
    ASSERT_EQ(queue, arrival) << "the queue is not in arrival order";
  }
  // Each deadline is one allowance (the default fair_wait_ms) after the one ahead of it.
  Snapshot queued = snapshot(redis, name);
  ASSERT_EQ(queued.deadlines.size(), static_cast<size_t>(kWaiters));
  for (int i = 1; i < kWaiters; ++i) {
    EXPECT_EQ(queued.deadlines[arrival[i]] - queued.deadlines[arrival[i - 1]], kDefaultFairWaitMs)
        << "deadline of waiter " << i;
  }

  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();

  struct Hold {
    int64_t acquired_us = 0;
    int64_t releasing_us = 0;
    std::string owner;
  };
  std::vector<Hold> holds;
  for (int p = 0; p < kProcesses; ++p) {
    int status = 0;
    ASSERT_TRUE(workers[p].process->wait(60000, &status))
        << "worker " << p << " did not finish in 60 s after the release";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << p << " ended with " << describe_status(status);
    std::map<std::string, Hold> by_thread;
    std::string line;
    while (workers[p].process->read_line(&line, 10000)) {
      std::istringstream in(line);
      std::string word, thread;
      int64_t us = 0;
      in >> word >> thread >> us;
      if (word == "acquired") {
        by_thread[thread].acquired_us = us;
        by_thread[thread].owner = workers[p].client_id + ":" + thread;
      } else if (word == "releasing") {
        by_thread[thread].releasing_us = us;
      }
    }
    for (auto& [thread, hold] : by_thread) holds.push_back(hold);
  }
  ASSERT_EQ(holds.size(), static_cast<size_t>(kWaiters)) << "not every waiter acquired";

  std::sort(holds.begin(), holds.end(),
            [](const Hold& a, const Hold& b) { return a.acquired_us < b.acquired_us; });
  int violations = 0;
  std::vector<std::string> order;
  for (int k = 0; k < kWaiters; ++k) {
    order.push_back(holds[k].owner);
    if (holds[k].owner != arrival[k]) ++violations;
    if (k > 0) {
      EXPECT_GE(holds[k].acquired_us, holds[k - 1].releasing_us)
          << holds[k].owner << " acquired before " << holds[k - 1].owner << " released";
    }
  }
  EXPECT_EQ(violations, 0) << "acquired in the order " << joined(order) << "\n  arrived in "
                           << joined(arrival);
  expect_no_keys_left(redis, name);
}

// ---- 2. A dead head ---------------------------------------------------------------------------

// A waiter killed at the head of the queue keeps its place only until its deadline: the one
// behind it takes over then, not after the 300 s default.
TEST(Fair, KilledHeadStallsTheQueueOnlyUntilItsDeadline) {
  constexpr int64_t kFairWaitMs = 1500;
  // The holder's watchdog lease: A's deadline is (the holder's PTTL when A queues) + kFairWaitMs,
  // so this leaves time to start B and kill A before A's place runs out.
  constexpr int64_t kHolderLeaseMs = 5000;
  constexpr int64_t kSlackMs = 1500;
  const std::string name = unique_name("fair-dead-head");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::ClientSettings settings;
  settings.watchdog_lease_ms = kHolderLeaseMs;
  it::Client client = it::make_client(settings);
  it::Lock lock = make_fair_lock(client.get(), name, kFairWaitMs);
  ASSERT_EQ(it::acquire(lock.get(), 0), RLOCK_OK) << it::last_error();

  const int64_t before_a = wall_ms();
  FairWorker a = start_fair_worker(name, kFairWaitMs, RLOCK_WAIT_FOREVER, 0, 1);
  const std::string owner_a = a.owner(1);
  a.process->kill(SIGUSR1);
  std::vector<std::string> queue;
  ASSERT_TRUE(eventually(
      [&] {
        queue = queue_of(redis, name);
        return !queue.empty();
      },
      30000))
      << "A did not queue in 30 s";
  ASSERT_EQ(queue, std::vector<std::string>{owner_a});
  const int64_t queued_a = wall_ms();
  const int64_t deadline_a = deadline_of(redis, name, owner_a);
  // The holder's remaining lease plus A's allowance, which is fair_wait_ms (not 300 s).
  EXPECT_GE(deadline_a, before_a + kFairWaitMs);
  EXPECT_LE(deadline_a, queued_a + kHolderLeaseMs + kFairWaitMs)
      << "A's allowance is not fair_wait_ms (" << kFairWaitMs << ")";

  // B polls often (200 ms), so its latency is A's remaining allowance plus little.
  FairWorker b = start_fair_worker(name, kFairWaitMs, RLOCK_WAIT_FOREVER, 500, 1, 200);
  const std::string owner_b = b.owner(1);
  b.process->kill(SIGUSR1);
  ASSERT_TRUE(eventually(
      [&] {
        queue = queue_of(redis, name);
        return queue.size() >= 2;
      },
      30000))
      << "B did not queue in 30 s; queue: " << joined(queue);
  ASSERT_EQ(queue, (std::vector<std::string>{owner_a, owner_b}));
  EXPECT_EQ(deadline_of(redis, name, owner_b) - deadline_a, kFairWaitMs);

  a.process->kill(SIGKILL);
  int status = 0;
  ASSERT_TRUE(a.process->wait(10000, &status));
  ASSERT_TRUE(WIFSIGNALED(status)) << describe_status(status);

  // Release with no more than A's allowance left before its deadline (the holder's lease at A's
  // join has run out by then), so B has to wait that out, and only that.
  while (wall_ms() < deadline_a - kFairWaitMs) sleep_ms(10);
  ASSERT_EQ(queue_of(redis, name), (std::vector<std::string>{owner_a, owner_b}))
      << "A lost its place before its deadline (or the machine was too slow to set this up)";
  const int64_t release_wall = wall_ms();
  const int64_t release_us = mono_us();
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  const int64_t remaining_ms = deadline_a - release_wall;
  ASSERT_GT(remaining_ms, 0) << "A's deadline passed before the release: setup too slow";

  std::string seen;
  const std::string got = read_until(*b.process, "acquired ", 30000, &seen);
  ASSERT_FALSE(got.empty()) << "B did not acquire within 30 s of the release; it said:\n" << seen;
  const int64_t acquired_us = std::strtoll(got.c_str() + got.rfind(' ') + 1, nullptr, 10);
  const int64_t waited_ms = (acquired_us - release_us) / 1000;
  EXPECT_GE(acquired_us, release_us + (remaining_ms - 50) * 1000)
      << "B acquired " << waited_ms << " ms after the release, before A's deadline ("
      << remaining_ms << " ms after it): A's place was not kept";
  EXPECT_LT(waited_ms, remaining_ms + kSlackMs)
      << "B waited " << waited_ms << " ms; A's deadline was " << remaining_ms
      << " ms after the release";
  EXPECT_LT(waited_ms, kFairWaitMs + kSlackMs);

  // B holds the lock now; A's entry was dropped from the queue and the deadlines, and B left.
  Snapshot now = snapshot(redis, name);
  EXPECT_TRUE(now.queue.empty()) << joined(now.queue);
  EXPECT_EQ(now.deadlines.count(owner_a), 0u) << "the dead waiter's deadline is still there";
  EXPECT_TRUE(now.deadlines.empty());
  EXPECT_EQ(redis.hgetall(name).count(owner_b), 1u) << "B does not hold the lock";

  ASSERT_TRUE(b.process->wait(30000, &status)) << "B did not finish";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << describe_status(status);
  expect_no_keys_left(redis, name);
}

// ---- 3. A waiter in the middle gives up --------------------------------------------------------

constexpr int64_t kGiveUpMs = 500;

// One try of the case: W1 (forever), W2 (wait 500 ms), W3 (forever) queue behind the holder. W3
// has to queue within W2's 500 ms; *setup_ok is false when the machine was too slow for that.
void give_up_attempt(bool* setup_ok) {
  *setup_ok = false;
  constexpr int64_t kFairWaitMs = 60000;
  const std::string name = unique_name("fair-give-up");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Lock holder = make_fair_lock(holder_client.get(), name, kFairWaitMs);
  it::Client client = it::make_client();
  it::Lock lock = make_fair_lock(client.get(), name, kFairWaitMs);
  const std::string o1 = it::owner_of(client.get(), 11);
  const std::string o2 = it::owner_of(client.get(), 12);
  const std::string o3 = it::owner_of(client.get(), 13);
  ASSERT_EQ(it::acquire(holder.get(), 0), RLOCK_OK) << it::last_error();

  WaiterGroup group(lock.get());
  WaiterGroup::Waiter& w1 = group.start(11, RLOCK_WAIT_FOREVER);
  std::vector<std::string> queue;
  ASSERT_TRUE(eventually(
      [&] {
        queue = queue_of(redis, name);
        return !queue.empty();
      },
      30000));
  ASSERT_EQ(queue, std::vector<std::string>{o1});

  WaiterGroup::Waiter& w2 = group.start(12, kGiveUpMs);
  ASSERT_TRUE(eventually(
      [&] {
        queue = queue_of(redis, name);
        return queue.size() >= 2 || w2.done();
      },
      30000));
  if (queue.size() < 2) return;  // W2 gave up before it was even seen: too slow, try again
  ASSERT_EQ(queue, (std::vector<std::string>{o1, o2}));

  WaiterGroup::Waiter& w3 = group.start(13, RLOCK_WAIT_FOREVER);
  Snapshot before;
  ASSERT_TRUE(eventually(
      [&] {
        before = snapshot(redis, name);
        return before.queue.size() >= 3 || !before.deadlines.count(o2);
      },
      30000));
  if (before.queue != std::vector<std::string>{o1, o2, o3}) {
    // W2 left before W3 queued behind it: too slow, try again.
    ASSERT_FALSE(before.deadlines.count(o2)) << "queue: " << joined(before.queue);
    return;
  }
  *setup_ok = true;
  EXPECT_EQ(before.deadlines[o2] - before.deadlines[o1], kGiveUpMs)
      << "a bounded wait is the waiter's allowance";
  EXPECT_EQ(before.deadlines[o3] - before.deadlines[o2], kFairWaitMs);

  // W2 gives up on its own.
  ASSERT_TRUE(eventually([&] { return w2.done(); }, 30000)) << "W2's 500 ms wait never ended";
  EXPECT_EQ(w2.rc.load(), RLOCK_ETIMEDOUT);
  EXPECT_GE(w2.elapsed_ms.load(), kGiveUpMs - 50);

  Snapshot after = snapshot(redis, name);
  EXPECT_EQ(after.queue, (std::vector<std::string>{o1, o3})) << "W2 did not leave the queue";
  EXPECT_EQ(after.deadlines.count(o2), 0u) << "W2's deadline was left behind";
  EXPECT_EQ(after.deadlines[o1], before.deadlines[o1]) << "the waiter ahead must not move";
  EXPECT_EQ(after.deadlines[o3], before.deadlines[o3] - kGiveUpMs)
      << "the waiter behind must move up by W2's allowance";

  // The rest are served in order.
  ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK) << it::last_error();
  group.open();
  ASSERT_TRUE(eventually([&] { return w1.done() && w3.done(); }, 30000));
  group.join();
  EXPECT_EQ(w1.rc.load(), RLOCK_OK);
  EXPECT_EQ(w3.rc.load(), RLOCK_OK);
  EXPECT_EQ(w1.release_rc.load(), RLOCK_OK);
  EXPECT_EQ(w3.release_rc.load(), RLOCK_OK);
  EXPECT_EQ(w1.turn.load(), 0);
  EXPECT_EQ(w3.turn.load(), 1);
  expect_no_keys_left(redis, name);
}

TEST(Fair, WaiterGivingUpLeavesTheQueueAndMovesTheOnesBehindUp) {
  for (int attempt = 1; attempt <= 3; ++attempt) {
    bool setup_ok = false;
    give_up_attempt(&setup_ok);
    if (HasFailure() || setup_ok) return;
    std::printf("attempt %d: the third waiter did not queue within %lld ms; again\n", attempt,
                static_cast<long long>(kGiveUpMs));
  }
  FAIL() << "in 3 attempts the third waiter never queued before the second gave up";
}

// The same for a waiter that is cancelled (here: through its own handle, rlock_cancel).
TEST(Fair, CancelledWaiterLeavesTheQueueAndMovesTheOnesBehindUp) {
  const std::string name = unique_name("fair-cancel");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Lock holder = make_fair_lock(holder_client.get(), name);
  it::Client client = it::make_client();
  it::Lock lock = make_fair_lock(client.get(), name);
  it::Lock middle_lock = make_fair_lock(client.get(), name);  // only W2 waits through this one
  const std::string o1 = it::owner_of(client.get(), 31);
  const std::string o2 = it::owner_of(client.get(), 32);
  const std::string o3 = it::owner_of(client.get(), 33);
  ASSERT_EQ(it::acquire(holder.get(), 0), RLOCK_OK) << it::last_error();

  WaiterGroup group(lock.get());
  WaiterGroup middle(middle_lock.get());
  std::vector<std::string> expected;
  // Starts a waiter and waits until it is the queue's tail.
  auto queue_up = [&](WaiterGroup& g, int64_t tid,
                      const std::string& owner) -> WaiterGroup::Waiter& {
    WaiterGroup::Waiter& w = g.start(tid, RLOCK_WAIT_FOREVER);
    expected.push_back(owner);
    std::vector<std::string> queue;
    EXPECT_TRUE(eventually(
        [&] {
          queue = queue_of(redis, name);
          return queue.size() >= expected.size();
        },
        30000))
        << "queue: " << joined(queue);
    EXPECT_EQ(queue, expected);
    return w;
  };
  WaiterGroup::Waiter& w1 = queue_up(group, 31, o1);
  WaiterGroup::Waiter& w2 = queue_up(middle, 32, o2);
  WaiterGroup::Waiter& w3 = queue_up(group, 33, o3);
  ASSERT_FALSE(HasFailure());
  const Snapshot before = snapshot(redis, name);

  ASSERT_EQ(rlock_cancel(middle_lock.get()), RLOCK_OK);
  middle.join();
  EXPECT_EQ(w2.rc.load(), RLOCK_ECANCELED);
  const Snapshot after = snapshot(redis, name);
  EXPECT_EQ(after.queue, (std::vector<std::string>{o1, o3})) << "W2 did not leave the queue";
  EXPECT_EQ(after.deadlines.count(o2), 0u) << "W2's deadline was left behind";
  EXPECT_EQ(after.deadlines.at(o1), before.deadlines.at(o1));
  EXPECT_EQ(after.deadlines.at(o3), before.deadlines.at(o3) - kDefaultFairWaitMs)
      << "the waiter behind must move up by W2's allowance";
  // A W2 left in the queue would stall W3 for its whole allowance: stop here (the groups
  // cancel their waiters).
  ASSERT_FALSE(HasFailure());

  ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK) << it::last_error();
  group.open();
  group.join();
  EXPECT_EQ(w1.rc.load(), RLOCK_OK);
  EXPECT_EQ(w3.rc.load(), RLOCK_OK);
  EXPECT_EQ(w1.turn.load(), 0);
  EXPECT_EQ(w3.turn.load(), 1);
  expect_no_keys_left(redis, name);
}

// ---- 4. Only the head is woken -----------------------------------------------------------------

// Nobody publishes when a lease runs out: the waiter comes back when the holder's PTTL says it
// ends. A PTTL of 0 (the lease ends within the millisecond) used to read as "unknown" and cost
// a whole poll cap (1 s), so a waiter met the end of a 600 ms lease after 1.6 s at times.
TEST(Fair, WaiterTakesALeaseExpiredLockWhenTheLeaseEnds) {
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client();
  const int64_t lease = 600;
  for (int round = 0; round < 5; ++round) {
    const std::string name = unique_name("fair-lease-end");
    LockKeys cleanup(name);
    it::Lock holder = make_fair_lock(holder_client.get(), name);
    it::Lock waiter = make_fair_lock(waiter_client.get(), name);
    ASSERT_EQ(it::acquire(holder.get(), 0, lease), RLOCK_OK) << it::last_error();
    const int64_t start = mono_ms();
    ASSERT_EQ(it::acquire(waiter.get(), 5000), RLOCK_OK) << it::last_error();
    const int64_t took = mono_ms() - start;
    EXPECT_GE(took, lease - 50) << "round " << round;
    // A poll cap (1000 ms) late is the failure this guards against; the rest is margin.
    EXPECT_LT(took, lease + 700) << "round " << round;
    ASSERT_EQ(rlock_release(waiter.get()), RLOCK_OK) << it::last_error();
  }
}

TEST(Fair, ReleaseWakesOnlyTheQueueHeadOnItsOwnChannel) {
  constexpr int kWaiters = 5;
  const std::string name = unique_name("fair-wake");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Lock holder = make_fair_lock(holder_client.get(), name);
  it::Client client = it::make_client();
  it::Lock lock = make_fair_lock(client.get(), name);
  ASSERT_EQ(it::acquire(holder.get(), 0), RLOCK_OK) << it::last_error();

  WaiterGroup group(lock.get());
  std::vector<WaiterGroup::Waiter*> waiters;
  std::vector<std::string> owners;
  for (int k = 0; k < kWaiters; ++k) {
    waiters.push_back(&group.start(21 + k, RLOCK_WAIT_FOREVER));
    owners.push_back(it::owner_of(client.get(), 21 + k));
    std::vector<std::string> queue;
    ASSERT_TRUE(eventually(
        [&] {
          queue = queue_of(redis, name);
          return queue.size() >= owners.size();
        },
        30000))
        << "waiter " << k << " did not queue; queue: " << joined(queue);
    ASSERT_EQ(queue, owners);
  }
  // Each waiter listens on a channel of its own; nobody on the reentrant lock's shared one.
  const std::string shared = lock_channel(name);
  for (const std::string& owner : owners) {
    EXPECT_TRUE(redis.wait_numsub(shared + ":" + owner, 1, 10000)) << owner << " is not listening";
    EXPECT_EQ(redis.numsub(shared + ":" + owner), 1) << owner;
  }
  EXPECT_EQ(redis.numsub(shared), 0) << "someone listens on " << shared;

  // Every channel of the lock, the shared one included.
  RedisConn sub(test_redis_url());
  sub.psubscribe(shared + "*");
  const Snapshot queued = snapshot(redis, name);
  ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK) << it::last_error();

  std::string channel, payload;
  ASSERT_TRUE(sub.next_message(10000, &channel, &payload)) << "the release woke nobody";
  EXPECT_EQ(channel, shared + ":" + owners[0]) << "the wake-up went to someone else";
  EXPECT_EQ(payload, "0");
  ASSERT_TRUE(eventually([&] { return waiters[0]->done(); }, 10000)) << "the head did not acquire";
  EXPECT_EQ(waiters[0]->rc.load(), RLOCK_OK) << it::last_error();
  // The head holds the lock until the group opens: nothing more may be published meanwhile.
  const bool second = sub.next_message(1000, &channel, &payload);
  EXPECT_FALSE(second) << "a second message, on " << channel << ": " << payload;
  for (int k = 1; k < kWaiters; ++k) EXPECT_FALSE(waiters[k]->done()) << "waiter " << k;
  // The head left the queue; everyone behind moved up by its allowance.
  const Snapshot served = snapshot(redis, name);
  EXPECT_EQ(served.queue, std::vector<std::string>(owners.begin() + 1, owners.end()));
  EXPECT_EQ(served.deadlines.count(owners[0]), 0u);
  for (int k = 1; k < kWaiters; ++k) {
    // (A live waiter refreshes its deadline only in the last half of its allowance: not here.)
    EXPECT_EQ(served.deadlines.at(owners[k]), queued.deadlines.at(owners[k]) - kDefaultFairWaitMs)
        << "waiter " << k;
  }

  group.open();
  ASSERT_TRUE(eventually(
      [&] {
        for (auto* w : waiters) {
          if (!w->done()) return false;
        }
        return true;
      },
      30000));
  group.join();
  for (int k = 0; k < kWaiters; ++k) {
    EXPECT_EQ(waiters[k]->rc.load(), RLOCK_OK) << "waiter " << k;
    EXPECT_EQ(waiters[k]->release_rc.load(), RLOCK_OK) << "waiter " << k;
    EXPECT_EQ(waiters[k]->turn.load(), k) << "waiter " << k << " was served out of turn";
  }
  expect_no_keys_left(redis, name);
}

// A waiter whose client still listens on its channel (it waited a moment ago) skips the second
// attempt; its first one must have queued it, or a later waiter would be served first.
TEST(Fair, WaiterComingBackWhileItsChannelLingersKeepsItsPlace) {
  const std::string name = unique_name("fair-linger");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Lock holder = make_fair_lock(holder_client.get(), name);
  // Polling every 10 s: a waiter that queues within the bounds below queued by its attempts.
  it::Client client = it::make_client(it::ClientSettings{0, 10000, 0});
  it::Lock lock = make_fair_lock(client.get(), name);
  const std::string early = it::owner_of(client.get(), 31);
  const std::string late = it::owner_of(client.get(), 32);

  // 31 waits once and is served: its channel stays subscribed for a moment after.
  ASSERT_EQ(it::acquire(holder.get(), 0), RLOCK_OK) << it::last_error();
  {
    WaiterGroup group(lock.get());
    WaiterGroup::Waiter& first = group.start(31, RLOCK_WAIT_FOREVER);
    ASSERT_TRUE(eventually([&] { return queue_of(redis, name).size() == 1; }, 10000));
    ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK) << it::last_error();
    ASSERT_TRUE(eventually([&] { return first.done(); }, 10000));
    group.open();
    group.join();
    ASSERT_EQ(first.rc.load(), RLOCK_OK);
  }
  ASSERT_EQ(redis.numsub(lock_channel(name) + ":" + early), 1) << "no lingering subscription";

  ASSERT_EQ(it::acquire(holder.get(), 0), RLOCK_OK) << it::last_error();
  WaiterGroup group(lock.get());
  WaiterGroup::Waiter& w_early = group.start(31, RLOCK_WAIT_FOREVER);
  ASSERT_TRUE(
      eventually([&] { return queue_of(redis, name) == std::vector<std::string>{early}; }, 5000))
      << "the returning waiter did not queue: " << joined(queue_of(redis, name));
  WaiterGroup::Waiter& w_late = group.start(32, RLOCK_WAIT_FOREVER);
  ASSERT_TRUE(eventually(
      [&] {
        return queue_of(redis, name) == std::vector<std::string>{early, late};
      },
      10000))
      << joined(queue_of(redis, name));
  ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK) << it::last_error();
  group.open();
  ASSERT_TRUE(eventually([&] { return w_early.done() && w_late.done(); }, 10000));
  group.join();
  EXPECT_EQ(w_early.turn.load(), 0) << "the waiter that came first was served second";
  EXPECT_EQ(w_late.turn.load(), 1);
  expect_no_keys_left(redis, name);
}

// ---- 6. The rest of the API ---------------------------------------------------------------------

TEST(Fair, ReentrancyAndOwnershipWorkAsOnTheReentrantLock) {
  const std::string name = unique_name("fair-api");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  it::Client b = it::make_client();
  it::Lock la = make_fair_lock(a.get(), name);
  it::Lock lb = make_fair_lock(b.get(), name);
  const std::string me = it::owner_of(a.get(), rlock_current_thread_id());

  ASSERT_EQ(it::acquire(la.get(), 0, 20000), RLOCK_OK) << it::last_error();
  ASSERT_EQ(it::acquire(la.get(), 1000, 20000), RLOCK_OK) << it::last_error();
  it::State st = it::query(la.get());
  EXPECT_TRUE(st.locked);
  EXPECT_EQ(st.hold_count, 2);
  EXPECT_EQ(st.owner, me);
  EXPECT_EQ(st.owner_count, 1);
  EXPECT_EQ(redis.hgetall(name), (std::map<std::string, std::string>{{me, "2"}}));
  EXPECT_EQ(rlock_is_held(la.get()), 1);
  // An uncontended fair lock keeps no queue.
  EXPECT_FALSE(redis.exists(fair_queue_key(name)));
  EXPECT_FALSE(redis.exists(fair_timeout_key(name)));

  // Another owner: a try-once does not queue; a bounded wait leaves the queue when it gives up.
  EXPECT_EQ(it::acquire(lb.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_FALSE(redis.exists(fair_queue_key(name))) << "a try-once joined the queue";
  EXPECT_EQ(it::acquire(lb.get(), 300), RLOCK_ETIMEDOUT);
  EXPECT_FALSE(redis.exists(fair_queue_key(name))) << joined(queue_of(redis, name));
  EXPECT_FALSE(redis.exists(fair_timeout_key(name)));

  // Not the owner: another client, or another thread id on the same handle.
  EXPECT_EQ(rlock_release(lb.get()), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_EQ(rlock_release_for(la.get(), 4242), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_EQ(rlock_extend(lb.get(), 60000), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_EQ(it::query(la.get()).hold_count, 2) << "a refused release changed the lock";

  EXPECT_EQ(rlock_extend(la.get(), 60000), RLOCK_OK) << it::last_error();
  EXPECT_GT(redis.pttl(name), 30000);

  EXPECT_EQ(rlock_release(la.get()), RLOCK_OK) << it::last_error();
  st = it::query(la.get());
  EXPECT_TRUE(st.locked);
  EXPECT_EQ(st.hold_count, 1);
  EXPECT_EQ(rlock_release(la.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
  EXPECT_EQ(rlock_is_held(la.get()), 0);
  EXPECT_EQ(rlock_release(la.get()), RLOCK_ENOTHELD) << it::last_error();

  // Free and nobody queued: the other owner gets it at once.
  EXPECT_EQ(it::acquire(lb.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(lb.get()), RLOCK_OK) << it::last_error();
  expect_no_keys_left(redis, name);
}

TEST(Fair, FairWaitMustBePositive) {
  it::Client c = it::make_client();
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  ASSERT_EQ(rlock_lock_options_init(&opts, RLOCK_LOCK_OPTIONS_VERSION), RLOCK_OK);
  EXPECT_EQ(opts.fair_wait_ms, kDefaultFairWaitMs);
  opts.kind = RLOCK_LOCK_FAIR;
  rlock_lock* l = nullptr;
  for (int64_t bad : {int64_t{-1}, int64_t{-300000}, RLOCK_MAX_DURATION_MS + 1}) {
    opts.fair_wait_ms = bad;
    EXPECT_EQ(rlock_lock_new(&l, c.get(), "k", &opts), RLOCK_EINVAL) << bad;
    EXPECT_NE(it::last_error().find("fair_wait_ms"), std::string::npos) << it::last_error();
    EXPECT_EQ(l, nullptr);
  }
}

}  // namespace

// ---- 8. Live waiters keep their place ---------------------------------------------------------

// A holder keeps the lock for several allowances; both waiters stay alive and keep coming back,
// so neither is dropped as stale and they are served in arrival order.
TEST(Fair, LiveWaitersKeepTheirPlaceWhileTheHolderStaysLong) {
  const std::string name = unique_name("fair-live");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::ClientSettings settings;
  settings.watchdog_lease_ms = 1000;
  it::Client holder = it::make_client(settings), ca = it::make_client(), cb = it::make_client();
  auto fair_lock = [&](rlock_client* c) {
    rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
    opts.kind = RLOCK_LOCK_FAIR;
    opts.fair_wait_ms = 1000;
    rlock_lock* l = nullptr;
    if (rlock_lock_new_n(&l, c, name.data(), name.size(), &opts) != RLOCK_OK) {
      throw std::runtime_error(it::last_error());
    }
    return it::Lock(l);
  };
  it::Lock lh = fair_lock(holder.get()), la = fair_lock(ca.get()), lb = fair_lock(cb.get());
  ASSERT_EQ(rlock_acquire(lh.get(), 0), RLOCK_OK) << it::last_error();

  std::mutex order_mutex;
  std::vector<char> order;
  // Unbounded waits: their places are kept for fair_wait_ms (a bounded wait would be its own
  // allowance).
  auto waiter = [&](rlock_lock* l, char who) {
    if (rlock_acquire(l, RLOCK_WAIT_FOREVER) != RLOCK_OK) return;
    {
      std::lock_guard<std::mutex> guard(order_mutex);
      order.push_back(who);
    }
    rlock_release(l);
  };
  auto queued = [&](size_t n) {
    for (int i = 0; i < 200; ++i) {
      if (redis.ok({"LLEN", fair_queue_key(name)}).integer >= static_cast<long long>(n))
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  auto queue_now = [&] {
    std::vector<std::string> queue;
    for (const auto& e : redis.ok({"LRANGE", fair_queue_key(name), "0", "-1"}).elements) {
      queue.push_back(e.str);
    }
    return queue;
  };
  std::thread a(waiter, la.get(), 'A');
  ASSERT_TRUE(queued(1));
  const std::string a_owner = queue_now().at(0);
  std::thread b(waiter, lb.get(), 'B');
  ASSERT_TRUE(queued(2));
  // Four allowances: a waiter judged by its join-time deadline alone would be dropped and
  // re-queued behind the other, over and over.
  int samples = 0, reordered = 0;
  using SteadyClock = std::chrono::steady_clock;
  for (auto until = SteadyClock::now() + std::chrono::milliseconds(4000);
       SteadyClock::now() < until;) {
    std::vector<std::string> queue = queue_now();
    ++samples;
    if (queue.size() != 2 || queue[0] != a_owner) ++reordered;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(reordered, 0) << "of " << samples << " samples, the queue lost its arrival order";
  EXPECT_EQ(rlock_release(lh.get()), RLOCK_OK);
  a.join();
  b.join();
  EXPECT_EQ(std::string(order.begin(), order.end()), "AB");
  EXPECT_FALSE(redis.exists(fair_queue_key(name)));
  EXPECT_FALSE(redis.exists(fair_timeout_key(name)));
}

// A client that closes gives its fair holds back with the fair release, which wakes the queue's
// head on its own channel: the waiter acquires at once, not at its next revisit or poll.
TEST(Fair, ClosingTheHoldersClientWakesTheHeadAtOnce) {
  const std::string name = unique_name("fair-close");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Lock holder = make_fair_lock(holder_client.get(), name);
  ASSERT_EQ(it::acquire(holder.get(), 0), RLOCK_OK) << it::last_error();

  it::ClientSettings slow_poll;
  slow_poll.poll_cap_ms = 10000;
  it::Client waiter_client = it::make_client(slow_poll);
  // A wait of 40 s keeps the waiter's place for 40 s: it comes back by itself every 10 s.
  it::Lock waiter = make_fair_lock(waiter_client.get(), name);
  std::atomic<int> rc{-1};
  std::atomic<int> release_rc{-1};
  std::atomic<int64_t> acquired_at{0};
  std::thread t([&] {
    rc.store(it::acquire(waiter.get(), 40000));
    acquired_at.store(mono_ms());
    if (rc.load() == RLOCK_OK) release_rc.store(rlock_release(waiter.get()));
  });
  ASSERT_TRUE(eventually([&] { return queue_of(redis, name).size() == 1; }, 10000));
  ASSERT_TRUE(redis.wait_numsub(lock_channel(name) + ":" + queue_of(redis, name)[0], 1, 10000));

  const int64_t closed_at = mono_ms();
  holder_client.reset();  // closes the client, which gives the hold back (the lock is open)
  t.join();
  ASSERT_EQ(rc.load(), RLOCK_OK) << it::last_error();
  EXPECT_LT(acquired_at.load() - closed_at, 2000) << "the waiter was not woken by the close";
  EXPECT_EQ(release_rc.load(), RLOCK_OK);
}
