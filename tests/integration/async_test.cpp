// Asynchronous calls (rlock_*_async) and the waiting engine under them: completions come exactly
// once on a library thread, waiting costs no thread, a client's waiters on one held lock cost
// Redis a bounded number of attempts, and cancel, free and close end every wait.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

// OS threads of this process.
int thread_count() {
  int count = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

// Calls of one command in an INFO commandstats text.
long long calls(const std::string& stats, const std::string& cmd) {
  size_t at = stats.find("cmdstat_" + cmd + ":calls=");
  return at == std::string::npos ? 0 : std::stoll(stats.substr(at + cmd.size() + 15));
}

long long scripts_run(RedisConn& admin) {
  const std::string stats = admin.ok({"INFO", "commandstats"}).str;
  return calls(stats, "evalsha") + calls(stats, "eval");
}

// One asynchronous call's outcome, recorded by its completion.
struct Outcome {
  std::atomic<int> calls{0};
  std::atomic<int> status{1};
  std::atomic<int64_t> value{0};
  std::atomic<int64_t> thread{0};
  std::string message;  // written before `calls` is incremented
};

// Every outcome of a batch, and a way to wait for them.
class Outcomes {
 public:
  explicit Outcomes(size_t n) : items_(n) {}
  Outcome& operator[](size_t i) { return items_[i]; }
  size_t size() const { return items_.size(); }

  static void record(void* user, int status, int64_t value) {
    auto* slot = static_cast<Slot*>(user);
    Outcome& o = slot->owner->items_[slot->index];
    o.status.store(status);
    o.value.store(value);
    o.thread.store(rlock_current_thread_id());
    if (status != RLOCK_OK) o.message = rlock_last_error()->message;
    o.calls.fetch_add(1);
    slot->owner->landed(slot->index);
  }
  // The `user` pointer of call i.
  void* user(size_t i) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slots_.size() != items_.size()) {
      slots_.resize(items_.size());
      for (size_t k = 0; k < slots_.size(); ++k) slots_[k] = Slot{this, k};
    }
    return &slots_[i];
  }
  // Waits until `n` completions have come; false on timeout.
  bool wait_for(size_t n, int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return done_ >= n; });
  }
  size_t done() {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  // The hook runs on the completing thread, before the count is raised.
  void on_landed(std::function<void(size_t)> hook) { hook_ = std::move(hook); }

 private:
  struct Slot {
    Outcomes* owner;
    size_t index;
  };
  void landed(size_t i) {
    if (hook_) hook_(i);
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
    cv_.notify_all();
  }
  std::vector<Outcome> items_;
  std::vector<Slot> slots_;
  std::function<void(size_t)> hook_;
  std::mutex mutex_;
  std::condition_variable cv_;
  size_t done_ = 0;
};

int acquire_async(rlock_lock* lock, int64_t wait_ms, int64_t thread_id, Outcomes& out, size_t i,
                  rlock_cancel_token* cancel = nullptr, int64_t* token = nullptr) {
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  opts.token = token;
  return rlock_acquire_async(lock, &opts, &Outcomes::record, out.user(i));
}

// A private server (its command counts are the test's own).
struct OwnServer {
  explicit OwnServer(it::ClientSettings settings = {})
      : name(unique_name("async")),
        holder_client(it::make_client(server.tcp_url())),
        client(it::make_client(server.tcp_url(), settings)),
        holder(it::make_lock(holder_client.get(), name)),
        lock(it::make_lock(client.get(), name)) {}
  PrivateRedis server;
  RedisConn admin{server.unix_url()};
  std::string name;
  it::Client holder_client, client;
  it::Lock holder, lock;
};

// A fair lock on `own`'s server, held by its holder client, and the tested client's handle on it.
struct HeldFairLock {
  HeldFairLock(OwnServer& own, const std::string& suffix)
      : name(own.name + suffix),
        holder(make_fair_lock(own.holder_client.get(), name)),
        waiter(make_fair_lock(own.client.get(), name)) {
    if (it::acquire(holder.get(), 0, 60000) != RLOCK_OK) {
      throw std::runtime_error("the holder could not take " + name + ": " + it::last_error());
    }
  }
  static it::Lock make_fair_lock(rlock_client* client, const std::string& name) {
    rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
    opts.kind = RLOCK_LOCK_FAIR;
    rlock_lock* lock = nullptr;
    if (rlock_lock_new(&lock, client, name.c_str(), &opts) != RLOCK_OK) {
      throw std::runtime_error("rlock_lock_new(" + name + ") failed: " + it::last_error());
    }
    return it::Lock(lock);
  }
  std::string name;
  it::Lock holder, waiter;
};

// Waits up to `ms` for the fair queue of `name` to hold at least `length` entries; returns its
// length.
long long await_queue_length(RedisConn& admin, const std::string& name, long long length,
                             int64_t ms) {
  const int64_t start = mono_ms();
  long long now = admin.integer({"LLEN", fair_queue_key(name)});
  while (now < length && mono_ms() - start < ms) {
    sleep_ms(5);
    now = admin.integer({"LLEN", fair_queue_key(name)});
  }
  return now;
}

// ---- Shapes ---------------------------------------------------------------------------------

TEST(Async, AcquireAndReleaseCompleteOnceOnALibraryThread) {
  OwnServer own;
  Outcomes out(3);
  int64_t token = 0;
  rlock_lock_options fenced_opts = RLOCK_LOCK_OPTIONS_INIT;
  fenced_opts.kind = RLOCK_LOCK_FENCED;
  rlock_lock* fenced_raw = nullptr;
  const std::string fenced_name = own.name + ":fenced";
  ASSERT_EQ(rlock_lock_new(&fenced_raw, own.client.get(), fenced_name.c_str(), &fenced_opts),
            RLOCK_OK);
  it::Lock fenced(fenced_raw);

  ASSERT_EQ(acquire_async(own.lock.get(), RLOCK_WAIT_FOREVER, 4242, out, 0), RLOCK_OK)
      << it::last_error();
  ASSERT_EQ(acquire_async(fenced.get(), 0, 4242, out, 1, nullptr, &token), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(2, 10000));
  EXPECT_EQ(out[0].status.load(), RLOCK_OK) << out[0].message;
  EXPECT_EQ(out[1].status.load(), RLOCK_OK) << out[1].message;
  EXPECT_NE(out[0].thread.load(), rlock_current_thread_id());
  EXPECT_GT(token, 0);
  EXPECT_EQ(out[1].value.load(), token);
  EXPECT_EQ(rlock_is_held_for(own.lock.get(), 4242), 1);
  EXPECT_EQ(it::query(own.lock.get(), 4242).hold_count, 1);

  ASSERT_EQ(rlock_release_async(own.lock.get(), 4242, &Outcomes::record, out.user(2)), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(3, 10000));
  EXPECT_EQ(out[2].status.load(), RLOCK_OK) << out[2].message;
  EXPECT_FALSE(own.admin.exists(own.name));
  EXPECT_EQ(rlock_release_for(fenced.get(), 4242), RLOCK_OK);
  sleep_ms(100);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].calls.load(), 1) << i;
}

TEST(Async, FailuresCarryTheirMessageIntoTheCompletion) {
  OwnServer own;
  Outcomes out(3);
  ASSERT_EQ(it::acquire(own.holder.get(), 0, 30000), RLOCK_OK);
  ASSERT_EQ(acquire_async(own.lock.get(), 150, 5001, out, 0), RLOCK_OK);
  ASSERT_EQ(acquire_async(own.lock.get(), 0, 5002, out, 1), RLOCK_OK);
  ASSERT_EQ(rlock_release_async(own.lock.get(), 5003, &Outcomes::record, out.user(2)), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(3, 10000));
  EXPECT_EQ(out[0].status.load(), RLOCK_ETIMEDOUT);
  EXPECT_NE(out[0].message.find("still held by another owner after 150 ms"), std::string::npos)
      << out[0].message;
  EXPECT_EQ(out[1].status.load(), RLOCK_ETIMEDOUT);
  EXPECT_NE(out[1].message.find("held by another owner"), std::string::npos) << out[1].message;
  EXPECT_EQ(out[2].status.load(), RLOCK_ENOTOWNER) << out[2].message;
  EXPECT_EQ(rlock_release(own.holder.get()), RLOCK_OK);
}

TEST(Async, BadInputIsRefusedAtTheCallAndNothingCompletes) {
  OwnServer own;
  Outcomes out(4);
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  EXPECT_EQ(rlock_acquire_async(own.lock.get(), &opts, nullptr, nullptr), RLOCK_EINVAL);
  EXPECT_NE(std::string(rlock_last_error()->message).find("done"), std::string::npos);
  opts.lease_ms = -5;
  EXPECT_EQ(rlock_acquire_async(own.lock.get(), &opts, &Outcomes::record, out.user(0)),
            RLOCK_EINVAL);
  EXPECT_NE(std::string(rlock_last_error()->message).find("lease_ms"), std::string::npos);
  opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.version = 99;
  EXPECT_EQ(rlock_acquire_async(own.lock.get(), &opts, &Outcomes::record, out.user(1)),
            RLOCK_EVERSION);
  EXPECT_EQ(rlock_release_async(own.lock.get(), -3, &Outcomes::record, out.user(2)), RLOCK_EINVAL);
  EXPECT_EQ(rlock_extend_async(own.lock.get(), 0, 0, &Outcomes::record, out.user(3)), RLOCK_EINVAL);
  sleep_ms(200);
  EXPECT_EQ(out.done(), 0u);
  EXPECT_FALSE(own.admin.exists(own.name));
}

TEST(Async, ExtendResetsTheLease) {
  OwnServer own;
  Outcomes out(1);
  ASSERT_EQ(it::acquire(own.lock.get(), 0, 5000, 77), RLOCK_OK);
  ASSERT_EQ(rlock_extend_async(own.lock.get(), 77, 60000, &Outcomes::record, out.user(0)),
            RLOCK_OK);
  ASSERT_TRUE(out.wait_for(1, 10000));
  EXPECT_EQ(out[0].status.load(), RLOCK_OK) << out[0].message;
  EXPECT_GT(own.admin.pttl(own.name), 10000);
  EXPECT_EQ(rlock_release_for(own.lock.get(), 77), RLOCK_OK);
}

// ---- Many waiters ---------------------------------------------------------------------------

// Waiters cost no thread: the library adds a fixed few, however many wait. Their periodic
// retries are one waiter's, not one per waiter. Every waiter gets the lock in turn, one at a
// time, and nothing is left.
TEST(Async, ManyWaitersOnOneHeldLockCostNoThreadsAndFewAttempts) {
  OwnServer own(it::ClientSettings{0, 200, 0});  // poll cap 200 ms
  constexpr size_t kWaiters = 400;
  Outcomes out(kWaiters);
  std::atomic<int> holding{0}, overlaps{0};
  rlock_lock* lock = own.lock.get();
  out.on_landed([&](size_t i) {
    if (out[i].status.load() != RLOCK_OK) return;
    if (holding.fetch_add(1) != 0) overlaps.fetch_add(1);
    holding.fetch_sub(1);
    // A completion may call the library: release, then let the next one in.
    if (rlock_release_for(lock, 100000 + static_cast<int64_t>(i)) != RLOCK_OK) overlaps++;
  });
  ASSERT_EQ(it::acquire(own.holder.get(), 0, 60000), RLOCK_OK);
  // One waiter first, so the client's subscriber and engine threads exist before counting.
  ASSERT_EQ(acquire_async(lock, RLOCK_WAIT_FOREVER, 100000, out, 0), RLOCK_OK);
  ASSERT_TRUE(own.admin.wait_numsub(lock_channel(own.name), 1, 5000));
  sleep_ms(300);
  // What docs/threading.md's budget lets the client add after this: three more engine threads
  // and the two watchdog threads (the first grant, or a call whose outcome a slow machine left
  // unknown, starts them). None of it grows with the waiters.
  constexpr int kMoreThreads = 3 + 2;
  const int threads_before = thread_count();
  for (size_t i = 1; i < kWaiters; ++i) {
    ASSERT_EQ(acquire_async(lock, RLOCK_WAIT_FOREVER, 100000 + static_cast<int64_t>(i), out, i),
              RLOCK_OK);
  }
  sleep_ms(1500);  // every first attempt made, every waiter asleep
  const int threads_waiting = thread_count();
  EXPECT_LE(threads_waiting - threads_before, kMoreThreads) << "threads grew with the waiters";
  const long long before = scripts_run(own.admin);
  sleep_ms(2000);
  const long long attempts = scripts_run(own.admin) - before;
  // One waiter polls every 200 ms: about 10 in 2 s, not 400 per poll period.
  EXPECT_LE(attempts, 20) << "attempts while held grew with the waiters";
  EXPECT_EQ(out.done(), 0u);

  ASSERT_EQ(rlock_release(own.holder.get()), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(kWaiters, 60000)) << out.done() << " of " << kWaiters << " drained";
  EXPECT_EQ(overlaps.load(), 0);
  for (size_t i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(out[i].status.load(), RLOCK_OK) << i << ": " << out[i].message;
    EXPECT_EQ(out[i].calls.load(), 1) << i;
  }
  EXPECT_LE(thread_count() - threads_before, kMoreThreads);
  const int64_t start = mono_ms();
  while (own.admin.exists(own.name) && mono_ms() - start < 5000) sleep_ms(10);
  EXPECT_FALSE(own.admin.exists(own.name));
}

// The same budget for blocking waiters: their threads are the caller's, but the client's
// periodic retries are one waiter's.
TEST(Async, BlockingWaitersOfOneClientShareThePeriodicRetry) {
  OwnServer own(it::ClientSettings{0, 200, 0});
  constexpr int kWaiters = 40;
  ASSERT_EQ(it::acquire(own.holder.get(), 0, 60000), RLOCK_OK);
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      if (it::acquire(own.lock.get(), 20000, 0, 200000 + i) == RLOCK_OK) {
        granted++;
        rlock_release_for(own.lock.get(), 200000 + i);
      }
    });
  }
  sleep_ms(1500);
  const long long before = scripts_run(own.admin);
  sleep_ms(2000);
  EXPECT_LE(scripts_run(own.admin) - before, 20);
  ASSERT_EQ(rlock_release(own.holder.get()), RLOCK_OK);
  for (auto& t : threads) t.join();
  EXPECT_EQ(granted.load(), kWaiters);
}

// ---- Reconnects and fair polling ------------------------------------------------------------

// Every lock's channel is subscribed (waited on by the client) again.
bool wait_resubscribed(RedisConn& admin, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (!admin.wait_numsub(lock_channel(n), 1, 10000)) return false;
  }
  return true;
}

// A lost subscriber connection costs one attempt per lock, not one or two per waiter; and no
// waiter sleeps on a lock freed while the subscriber was down (the poll cap is a minute here, the
// leases too: only messages and the reconnect's attempts can wake them).
TEST(Async, SubscriberReconnectCostsOneAttemptPerLockAndLosesNoWaiter) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  it::Client holder_client = it::make_client(server.tcp_url());
  it::Client client = it::make_client(server.tcp_url(), it::ClientSettings{0, 60000, 0});
  constexpr size_t kLocks = 10, kPerLock = 20, kWaiters = kLocks * kPerLock;
  std::vector<std::string> names;
  std::vector<it::Lock> holders, locks;
  for (size_t l = 0; l < kLocks; ++l) {
    names.push_back(unique_name("reconnect-" + std::to_string(l)));
    holders.push_back(it::make_lock(holder_client.get(), names[l]));
    locks.push_back(it::make_lock(client.get(), names[l]));
    ASSERT_EQ(it::acquire(holders[l].get(), 0, 60000), RLOCK_OK) << it::last_error();
  }
  Outcomes out(kWaiters);
  std::atomic<int> bad_releases{0};
  out.on_landed([&](size_t i) {
    if (out[i].status.load() != RLOCK_OK) return;
    const int64_t tid = 1000 + static_cast<int64_t>(i);
    if (rlock_release_for(locks[i % kLocks].get(), tid) != RLOCK_OK) bad_releases++;
  });
  for (size_t i = 0; i < kWaiters; ++i) {
    ASSERT_EQ(acquire_async(locks[i % kLocks].get(), RLOCK_WAIT_FOREVER,
                            1000 + static_cast<int64_t>(i), out, i),
              RLOCK_OK);
  }
  ASSERT_TRUE(wait_resubscribed(admin, names));
  sleep_ms(1000);  // every first attempt made, every waiter asleep

  const long long before = scripts_run(admin);
  ASSERT_GE(admin.integer({"CLIENT", "KILL", "TYPE", "pubsub"}), 1);
  ASSERT_TRUE(wait_resubscribed(admin, names));
  sleep_ms(500);  // the attempts after the confirmation
  const long long attempts = scripts_run(admin) - before;
  EXPECT_LE(attempts, static_cast<long long>(kLocks) + 3) << "attempts grew with the waiters";
  EXPECT_EQ(out.done(), 0u);

  // Half the locks are freed while the subscriber is down: their messages are lost, and the
  // reconnect's attempts must find them free.
  ASSERT_GE(admin.integer({"CLIENT", "KILL", "TYPE", "pubsub"}), 1);
  for (size_t l = 0; l < kLocks / 2; ++l) ASSERT_EQ(rlock_release(holders[l].get()), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(kWaiters / 2, 20000))
      << out.done() << " of " << kWaiters / 2 << " served after a release during the outage";
  for (size_t l = kLocks / 2; l < kLocks; ++l) ASSERT_EQ(rlock_release(holders[l].get()), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(kWaiters, 20000)) << out.done() << " of " << kWaiters << " served";
  for (size_t i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(out[i].status.load(), RLOCK_OK) << i << ": " << out[i].message;
  }
  EXPECT_EQ(bad_releases.load(), 0);
}

// A client's fair waiters on one lock share one periodic retry (not one each), and are served
// in the order they queued.
TEST(Async, FairWaitersOfOneClientShareOnePollAndKeepQueueOrder) {
  OwnServer own(it::ClientSettings{0, 100, 0});  // poll cap 100 ms
  HeldFairLock fair(own, ":fair");
  const std::string& name = fair.name;
  it::Lock &holder = fair.holder, &waiter = fair.waiter;

  constexpr size_t kWaiters = 8;
  Outcomes out(kWaiters);
  std::mutex order_mutex;
  std::vector<size_t> order;
  std::atomic<int> bad_releases{0};
  out.on_landed([&](size_t i) {
    if (out[i].status.load() != RLOCK_OK) return;
    {
      std::lock_guard<std::mutex> g(order_mutex);
      order.push_back(i);
    }
    if (rlock_release_for(waiter.get(), 500 + static_cast<int64_t>(i)) != RLOCK_OK) {
      bad_releases++;
    }
  });
  for (size_t i = 0; i < kWaiters; ++i) {  // one at a time: the queue's order is known
    ASSERT_EQ(acquire_async(waiter.get(), RLOCK_WAIT_FOREVER, 500 + i, out, i), RLOCK_OK);
    await_queue_length(own.admin, name, static_cast<long long>(i + 1), 5000);
  }
  ASSERT_EQ(own.admin.integer({"LLEN", fair_queue_key(name)}), static_cast<long long>(kWaiters));
  sleep_ms(500);
  const long long before = scripts_run(own.admin);
  sleep_ms(2000);
  const long long attempts = scripts_run(own.admin) - before;
  // One poll every 100 ms: about 20 in 2 s, not 20 per waiter.
  EXPECT_LE(attempts, 30) << "fair polls grew with the waiters";
  EXPECT_GE(attempts, 5) << "nobody polled";
  EXPECT_EQ(out.done(), 0u);

  ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(kWaiters, 20000)) << out.done() << " of " << kWaiters << " served";
  std::vector<size_t> expected(kWaiters);
  for (size_t i = 0; i < kWaiters; ++i) expected[i] = i;
  EXPECT_EQ(order, expected) << "not served in queue order";
  EXPECT_EQ(bad_releases.load(), 0);
  EXPECT_EQ(own.admin.integer({"LLEN", fair_queue_key(name)}), 0);
}

// The client's oldest fair waiter polls for all; when it finds the lock free but another's turn
// (here: the queue's order differs from the client's, and the release's message was lost), the
// next one tries at once rather than at its revisit (75 s here).
TEST(Async, FairPollerPassesTheTurnWhenTheLockIsFreeButNotItsOwn) {
  OwnServer own(it::ClientSettings{0, 100, 0});
  HeldFairLock fair(own, ":fair-turn");
  const std::string& name = fair.name;
  it::Lock& waiter = fair.waiter;
  Outcomes out(2);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(acquire_async(waiter.get(), RLOCK_WAIT_FOREVER, 700 + i, out, i), RLOCK_OK);
    await_queue_length(own.admin, name, static_cast<long long>(i + 1), 5000);
  }
  sleep_ms(300);
  // The second waiter first in the queue, and the lock gone without a message.
  const std::string queue = fair_queue_key(name);
  own.admin.ok({"DEL", queue});
  own.admin.ok(
      {"RPUSH", queue, it::owner_of(own.client.get(), 701), it::owner_of(own.client.get(), 700)});
  own.admin.ok({"DEL", name});
  ASSERT_TRUE(out.wait_for(1, 3000)) << "the waiter whose turn it was never tried";
  EXPECT_EQ(out[1].status.load(), RLOCK_OK) << out[1].message;
  EXPECT_EQ(out[0].calls.load(), 0);
  ASSERT_EQ(rlock_release_for(waiter.get(), 701), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(2, 3000));
  EXPECT_EQ(out[0].status.load(), RLOCK_OK) << out[0].message;
  EXPECT_EQ(rlock_release_for(waiter.get(), 700), RLOCK_OK);
}

// ---- Ending waits ---------------------------------------------------------------------------

TEST(Async, CancelTokenAndRlockCancelEndWaitsAndLeaveNoQueueEntry) {
  OwnServer own;
  HeldFairLock fair(own, ":fair");
  const std::string& name = fair.name;
  it::Lock &holder = fair.holder, &waiter = fair.waiter;

  constexpr size_t kWaiters = 20;
  Outcomes out(kWaiters);
  it::Token token = it::make_token();
  for (size_t i = 0; i < kWaiters; ++i) {
    rlock_cancel_token* t = i % 2 == 0 ? token.get() : nullptr;
    ASSERT_EQ(acquire_async(waiter.get(), RLOCK_WAIT_FOREVER, 300 + i, out, i, t), RLOCK_OK);
  }
  ASSERT_EQ(await_queue_length(own.admin, name, static_cast<long long>(kWaiters), 10000),
            static_cast<long long>(kWaiters));
  token.reset();  // freed while the waits use it: they keep it
  ASSERT_EQ(out.done(), 0u);
  ASSERT_EQ(rlock_cancel(waiter.get()), RLOCK_OK);  // every wait on the handle
  ASSERT_TRUE(out.wait_for(kWaiters, 10000));
  for (size_t i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(out[i].status.load(), RLOCK_ECANCELED) << i << ": " << out[i].message;
  }
  EXPECT_EQ(own.admin.integer({"LLEN", fair_queue_key(name)}), 0);
  EXPECT_EQ(own.admin.integer({"ZCARD", fair_timeout_key(name)}), 0);
  EXPECT_EQ(rlock_release(holder.get()), RLOCK_OK);
  sleep_ms(100);
  for (size_t i = 0; i < kWaiters; ++i) EXPECT_EQ(out[i].calls.load(), 1) << i;
}

TEST(Async, TokenCancelEndsOnlyItsWaits) {
  OwnServer own;
  ASSERT_EQ(it::acquire(own.holder.get(), 0, 60000), RLOCK_OK);
  Outcomes out(2);
  it::Token token = it::make_token();
  ASSERT_EQ(acquire_async(own.lock.get(), RLOCK_WAIT_FOREVER, 11, out, 0, token.get()), 0);
  ASSERT_EQ(acquire_async(own.lock.get(), RLOCK_WAIT_FOREVER, 12, out, 1), 0);
  sleep_ms(300);
  ASSERT_EQ(rlock_cancel_token_cancel(token.get()), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(1, 5000));
  EXPECT_EQ(out[0].status.load(), RLOCK_ECANCELED);
  EXPECT_EQ(out[1].calls.load(), 0);
  ASSERT_EQ(rlock_release(own.holder.get()), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(2, 5000));
  EXPECT_EQ(out[1].status.load(), RLOCK_OK);
  EXPECT_EQ(rlock_release_for(own.lock.get(), 12), RLOCK_OK);
}

TEST(Async, FreeingTheHandleEndsItsWaitsWithCanceled) {
  OwnServer own;
  ASSERT_EQ(it::acquire(own.holder.get(), 0, 60000), RLOCK_OK);
  Outcomes out(10);
  rlock_lock* extra = nullptr;
  ASSERT_EQ(rlock_lock_new(&extra, own.client.get(), own.name.c_str(), nullptr), RLOCK_OK);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(acquire_async(extra, RLOCK_WAIT_FOREVER, 40 + i, out, i), RLOCK_OK);
  }
  sleep_ms(200);
  rlock_lock_free(extra);
  ASSERT_TRUE(out.wait_for(out.size(), 5000));
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].status.load(), RLOCK_ECANCELED);
  EXPECT_EQ(it::query(own.holder.get()).owner_count, 1);
  EXPECT_EQ(rlock_release(own.holder.get()), RLOCK_OK);
}

// rlock_client_free ends every asynchronous wait of the client, and their completions have run
// when it returns.
TEST(Async, FreeingTheClientCompletesEveryWaitBeforeItReturns) {
  PrivateRedis server;
  it::Client holder_client = it::make_client(server.tcp_url());
  const std::string name = unique_name("async-free");
  it::Lock holder = it::make_lock(holder_client.get(), name);
  ASSERT_EQ(it::acquire(holder.get(), 0, 60000), RLOCK_OK);
  rlock_client* client = it::make_client(server.tcp_url()).release();
  rlock_lock* lock = nullptr;
  ASSERT_EQ(rlock_lock_new(&lock, client, name.c_str(), nullptr), RLOCK_OK);
  Outcomes out(50);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(acquire_async(lock, RLOCK_WAIT_FOREVER, 60 + i, out, i), RLOCK_OK);
  }
  sleep_ms(200);
  rlock_client_free(client);
  EXPECT_EQ(out.done(), out.size());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].status.load(), RLOCK_ECLOSED);
  Outcomes late(1);
  EXPECT_EQ(acquire_async(lock, 0, 1, late, 0), RLOCK_ECLOSED);
  rlock_lock_free(lock);
  EXPECT_EQ(rlock_release(holder.get()), RLOCK_OK);
}

// A fair waiter's first attempt takes its place in the queue: a client freed while it waits
// (blocking or asynchronous) takes the place back.
TEST(Async, FreeingTheClientLeavesNoFairQueueEntry) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  const std::string name = unique_name("async-fair-free");
  rlock_lock_options fair = RLOCK_LOCK_OPTIONS_INIT;
  fair.kind = RLOCK_LOCK_FAIR;
  it::Client holder_client = it::make_client(server.tcp_url());
  rlock_lock* holder_raw = nullptr;
  ASSERT_EQ(rlock_lock_new(&holder_raw, holder_client.get(), name.c_str(), &fair), RLOCK_OK);
  it::Lock holder(holder_raw);
  ASSERT_EQ(it::acquire(holder.get(), 0, 60000), RLOCK_OK);
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    rlock_client* client = it::make_client(server.tcp_url()).release();
    rlock_lock* lock = nullptr;
    ASSERT_EQ(rlock_lock_new(&lock, client, name.c_str(), &fair), RLOCK_OK);
    std::atomic<int> blocking_rc{1};
    std::thread blocked([&] { blocking_rc.store(it::acquire(lock, RLOCK_WAIT_FOREVER, 0, 7)); });
    Outcomes out(1);
    ASSERT_EQ(acquire_async(lock, RLOCK_WAIT_FOREVER, 8, out, 0), RLOCK_OK);
    ASSERT_EQ(await_queue_length(admin, name, 2, 5000), 2);
    sleep_ms(round * 20);
    rlock_client_free(client);
    blocked.join();
    EXPECT_EQ(blocking_rc.load(), RLOCK_ECLOSED);
    EXPECT_EQ(out.done(), 1u);
    EXPECT_EQ(out[0].status.load(), RLOCK_ECLOSED);
    EXPECT_EQ(admin.integer({"LLEN", fair_queue_key(name)}), 0);
    EXPECT_EQ(admin.integer({"ZCARD", fair_timeout_key(name)}), 0);
    rlock_lock_free(lock);
  }
  EXPECT_EQ(rlock_release(holder.get()), RLOCK_OK);
}

// ---- Groups ---------------------------------------------------------------------------------

TEST(Async, MultiLockAcquireWaitsWithoutAThreadAndReleases) {
  OwnServer own;
  it::Lock second = it::make_lock(own.client.get(), own.name + ":2");
  it::Lock second_holder = it::make_lock(own.holder_client.get(), own.name + ":2");
  rlock_lock* members[] = {own.lock.get(), second.get()};
  rlock_multi* group = nullptr;
  ASSERT_EQ(rlock_multi_lock_new(&group, members, 2), RLOCK_OK);
  ASSERT_EQ(it::acquire(second_holder.get(), 0, 60000), RLOCK_OK);

  Outcomes out(2);
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.thread_id = 91;
  opts.lease_ms = 30000;
  ASSERT_EQ(rlock_multi_acquire_async(group, &opts, &Outcomes::record, out.user(0)), RLOCK_OK);
  sleep_ms(300);
  EXPECT_EQ(out.done(), 0u);
  EXPECT_FALSE(own.admin.exists(own.name)) << "a member was kept while another was missing";
  ASSERT_EQ(rlock_release(second_holder.get()), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(1, 10000));
  EXPECT_EQ(out[0].status.load(), RLOCK_OK) << out[0].message;
  EXPECT_GT(out[0].value.load(), 0) << "the validity";
  EXPECT_EQ(rlock_multi_is_held_for(group, 91), 1);
  ASSERT_EQ(rlock_multi_release_async(group, 91, &Outcomes::record, out.user(1)), RLOCK_OK);
  ASSERT_TRUE(out.wait_for(2, 10000));
  EXPECT_EQ(out[1].status.load(), RLOCK_OK) << out[1].message;
  EXPECT_NE(out[1].thread.load(), rlock_current_thread_id());
  EXPECT_FALSE(own.admin.exists(own.name));
  EXPECT_FALSE(own.admin.exists(own.name + ":2"));
  rlock_multi_free(group);
}

// ---- Races ----------------------------------------------------------------------------------

// Every completion comes exactly once, whatever ends the wait and whenever: grants, cancels by
// token and by handle, freed handles and a freed client, all racing.
TEST(AsyncRaces, ExactlyOnceUnderCancelFreeAndClose) {
  PrivateRedis server;
  const std::string name = unique_name("async-race");
  it::Client holder_client = it::make_client(server.tcp_url());
  it::Lock holder = it::make_lock(holder_client.get(), name);
  std::mt19937 random(12345);
  for (int round = 0; round < 12; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    rlock_client* client = it::make_client(server.tcp_url()).release();
    std::vector<rlock_lock*> locks(3);
    for (auto& l : locks) ASSERT_EQ(rlock_lock_new(&l, client, name.c_str(), nullptr), 0);
    constexpr size_t kCalls = 60;
    Outcomes out(kCalls);
    out.on_landed([&](size_t i) {
      if (out[i].status.load() == RLOCK_OK) {
        rlock_release_for(locks[i % locks.size()], 1000 + static_cast<int64_t>(i));
      }
    });
    it::Token token = it::make_token();
    ASSERT_EQ(it::acquire(holder.get(), 0, 60000), RLOCK_OK);
    size_t started = 0;
    for (size_t i = 0; i < kCalls; ++i) {
      rlock_cancel_token* t = i % 3 == 0 ? token.get() : nullptr;
      if (acquire_async(locks[i % locks.size()], RLOCK_WAIT_FOREVER, 1000 + i, out, i, t) == 0) {
        ++started;
      }
    }
    ASSERT_EQ(started, kCalls);
    std::vector<std::thread> racers;
    const int pause = static_cast<int>(random() % 20);
    racers.emplace_back([&] {
      sleep_ms(pause);
      rlock_cancel_token_cancel(token.get());
    });
    racers.emplace_back([&] {
      sleep_ms(pause / 2);
      rlock_release(holder.get());
    });
    racers.emplace_back([&] {
      sleep_ms(pause);
      rlock_cancel(locks[1]);
    });
    racers.emplace_back([&, pause] {
      sleep_ms(pause + 5);
      rlock_lock_free(locks[2]);
    });
    for (auto& r : racers) r.join();
    sleep_ms(static_cast<int64_t>(random() % 30));
    rlock_client_free(client);
    EXPECT_EQ(out.done(), kCalls);
    for (size_t i = 0; i < kCalls; ++i) {
      EXPECT_EQ(out[i].calls.load(), 1) << i;
      const int s = out[i].status.load();
      EXPECT_TRUE(s == RLOCK_OK || s == RLOCK_ECANCELED || s == RLOCK_ECLOSED) << i << ": " << s;
    }
    rlock_lock_free(locks[0]);
    rlock_lock_free(locks[1]);
    rlock_release(holder.get());  // may be released already
    // Nothing left held: the freed client released what it held.
    const int64_t start = mono_ms();
    RedisConn admin(server.unix_url());
    while (admin.exists(name) && mono_ms() - start < 5000) sleep_ms(10);
    EXPECT_FALSE(admin.exists(name)) << admin.hgetall(name).size() << " owners left";
  }
}

}  // namespace
