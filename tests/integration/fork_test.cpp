// fork(): a child never releases, renews or reads for the parent's locks. Every call in the child
// on a client or handle made before the fork fails with RLOCK_EFORKED, the child's *_free of them
// touch nothing, and a client made in the child works. The parent, whose other thread keeps
// working on the same client meanwhile, sees its holds, keys, TTLs and replies untouched.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

constexpr int64_t kWatchdogLeaseMs = 1500;  // renewed every 500 ms
constexpr int64_t kFixedLeaseMs = 60000;
constexpr int kForks = 12;

// What the parent made before forking.
struct ParentHandles {
  rlock_client* client = nullptr;
  rlock_lock* watchdog_lock = nullptr;  // held by the main thread, renewed by the watchdog
  rlock_lock* fixed_lock = nullptr;     // held by the main thread with a fixed lease
  rlock_lock* busy_lock = nullptr;      // taken and given back by the busy thread
  rlock_multi* group = nullptr;         // of fixed_lock
  rlock_cancel_token* token = nullptr;
  int64_t parent_thread = 0;  // the main thread's id, the owner of both holds
};

// The child's checks. Each failure is printed (stderr is the test's) and counted.
class ChildChecks {
 public:
  // `rc` is RLOCK_EFORKED and rlock_last_error() says so, naming fork().
  void forked(const char* what, int rc) {
    if (rc != RLOCK_EFORKED) fail(what, "returned " + std::to_string(rc));
    last_error_is_forked(what);
  }
  // A 0/1 or void call: the answer `got` is `want`, and the last error is RLOCK_EFORKED.
  void refused(const char* what, long long got, long long want) {
    if (got != want) fail(what, "answered " + std::to_string(got));
    last_error_is_forked(what);
  }
  // A void call: only the last error tells.
  void recorded(const char* what) { last_error_is_forked(what); }
  void expect(const char* what, bool ok) {
    if (!ok) fail(what, "failed: " + it::last_error());
  }
  int failures() const { return failures_; }

 private:
  void last_error_is_forked(const char* what) {
    const rlock_error_info* e = rlock_last_error();
    if (e->code != RLOCK_EFORKED || std::strstr(e->message, "fork()") == nullptr) {
      fail(what, "left last error " + it::last_error());
    }
  }
  void fail(const char* what, const std::string& detail) {
    std::fprintf(stderr, "child %d: %s %s\n", static_cast<int>(getpid()), what, detail.c_str());
    ++failures_;
  }
  int failures_ = 0;
};

void never_called(void*, int, int64_t) {}

// Every kind of call on the parent's lock handles, as the parent's owners and as the child's.
void use_parent_locks(const ParentHandles& p, ChildChecks* c) {
  const int64_t owner = p.parent_thread;
  for (rlock_lock* lock : {p.watchdog_lock, p.fixed_lock, p.busy_lock}) {
    c->refused("rlock_is_held", rlock_is_held(lock), 0);
    c->refused("rlock_is_held_for", rlock_is_held_for(lock, owner), 0);
    c->refused("rlock_is_lost_for", rlock_is_lost_for(lock, owner), 0);
    rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
    c->forked("rlock_query_for", rlock_query_for(&st, lock, owner));
    c->forked("rlock_acquire", rlock_acquire(lock, 0));
    c->forked("rlock_acquire (waiting)", it::acquire(lock, 1000, 0, owner));
    c->forked("rlock_extend_for", rlock_extend_for(lock, owner, 100));
    c->forked("rlock_release_for", rlock_release_for(lock, owner));
    c->forked("rlock_release", rlock_release(lock));
    int deleted = 0;
    c->forked("rlock_force_unlock", rlock_force_unlock(&deleted, lock));
    int64_t token = 0;
    c->forked("rlock_lock_token_for", rlock_lock_token_for(&token, lock, owner));
    c->forked("rlock_cancel", rlock_cancel(lock));
    c->forked("rlock_lock_set_lost_callback", rlock_lock_set_lost_callback(lock, nullptr, nullptr));
    c->forked("rlock_acquire_async", rlock_acquire_async(lock, nullptr, never_called, nullptr));
    c->forked("rlock_release_async", rlock_release_async(lock, owner, never_called, nullptr));
    c->forked("rlock_extend_async", rlock_extend_async(lock, owner, 100, never_called, nullptr));
  }
}

void use_parent_client_group_token(const ParentHandles& p, ChildChecks* c) {
  const int64_t owner = p.parent_thread;
  rlock_lock* made = nullptr;
  c->forked("rlock_lock_new", rlock_lock_new(&made, p.client, "rlock-test:fork:x", nullptr));
  c->refused("rlock_client_id", rlock_client_id(p.client) == nullptr ? 0 : 1, 0);
  int accepted = 0;
  c->forked("rlock_fenced_write",
            rlock_fenced_write(&accepted, p.client, "rlock-test:fork:r", 17, "v", 1, 1));
  c->forked("rlock_multi_acquire", rlock_multi_acquire(p.group, 0));
  c->forked("rlock_multi_release_for", rlock_multi_release_for(p.group, owner));
  c->refused("rlock_multi_is_held_for", rlock_multi_is_held_for(p.group, owner), 0);
  c->forked("rlock_multi_cancel", rlock_multi_cancel(p.group));
  rlock_lock* members[] = {p.fixed_lock};
  rlock_multi* group = nullptr;
  c->forked("rlock_multi_lock_new", rlock_multi_lock_new(&group, members, 1));
  c->forked("rlock_cancel_token_cancel", rlock_cancel_token_cancel(p.token));
  c->refused("rlock_cancel_token_is_cancelled", rlock_cancel_token_is_cancelled(p.token), 0);
}

// Frees everything the parent made: only local bookkeeping, and each records RLOCK_EFORKED.
void free_parent_handles(const ParentHandles& p, ChildChecks* c) {
  rlock_lock_free(p.watchdog_lock);
  c->recorded("rlock_lock_free");
  rlock_lock_free(p.busy_lock);
  c->recorded("rlock_lock_free");
  rlock_multi_free(p.group);
  c->recorded("rlock_multi_free");
  rlock_cancel_token_free(p.token);
  c->recorded("rlock_cancel_token_free");
  rlock_client_free(p.client);  // used to release every hold of the parent's client
  c->recorded("rlock_client_free");
  rlock_lock_free(p.fixed_lock);  // a lock freed after its client
  c->recorded("rlock_lock_free");
  // Still the parent's handles, not freed ones.
  c->forked("rlock_acquire after free", rlock_acquire(p.watchdog_lock, 0));
}

// A client of the child's own works normally, with the child's owner; the parent's cancel token
// is refused there too.
void use_own_client(const ParentHandles& p, const std::string& name, ChildChecks* c) {
  rlock_client* client = nullptr;
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  const std::string url = it::server_url();
  opts.url = url.c_str();
  c->expect("rlock_client_new", rlock_client_new(&client, &opts) == RLOCK_OK);
  if (client == nullptr) return;
  rlock_lock* lock = nullptr;
  c->expect("rlock_lock_new", rlock_lock_new(&lock, client, name.c_str(), nullptr) == RLOCK_OK);
  c->forked("rlock_acquire with the parent's token", it::acquire(lock, 0, 0, 0, p.token));
  c->expect("rlock_acquire", rlock_acquire(lock, 5000) == RLOCK_OK);
  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  c->expect("rlock_query", rlock_query(&st, lock) == RLOCK_OK);
  const std::string owner = it::owner_of(client, rlock_current_thread_id());
  c->expect("the child's hold", st.held_by_me == 1 && st.hold_count == 1 && st.owner != nullptr &&
                                    std::string(st.owner, st.owner_len) == owner);
  c->expect("rlock_release", rlock_release(lock) == RLOCK_OK);
  c->expect("released", rlock_is_held(lock) == 0);
  rlock_lock_free(lock);
  rlock_client_free(client);
}

// The child: no GoogleTest here; the exit status says how many checks failed.
[[noreturn]] void child_main(const ParentHandles& p, const std::string& own_name) {
  ChildChecks checks;
  try {
    use_parent_locks(p, &checks);
    use_parent_client_group_token(p, &checks);
    free_parent_handles(p, &checks);
    use_own_client(p, own_name, &checks);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    _exit(100);
  }
  _exit(std::min(checks.failures(), 99));
}

// Waits for the child; a child that hangs (it used to, reading the parent's replies) is killed.
int wait_child(pid_t child, int64_t timeout_ms) {
  const int64_t deadline = mono_ms() + timeout_ms;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 || mono_ms() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return -1;
    }
    sleep_ms(10);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The busy thread: takes, checks and gives back its lock on the parent's client until told to
// stop. Any failure, or a reply that is not its own (another owner, count or state), is kept.
class BusyThread {
 public:
  explicit BusyThread(rlock_client* client, rlock_lock* lock)
      : client_(client), lock_(lock), thread_([this] { run(); }) {}
  ~BusyThread() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int rounds() const { return rounds_; }
  std::string failure() {
    std::lock_guard<std::mutex> g(mutex_);
    return failure_;
  }

 private:
  void run() {
    const std::string owner = it::owner_of(client_, rlock_current_thread_id());
    while (!stop_) {
      if (!round(owner)) return;
      ++rounds_;
    }
  }
  bool round(const std::string& owner) {
    int rc = rlock_acquire(lock_, 5000);
    if (rc != RLOCK_OK) return fail("acquire: " + it::last_error());
    rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
    rc = rlock_query(&st, lock_);
    if (rc != RLOCK_OK) return fail("query: " + it::last_error());
    const std::string got = st.owner == nullptr ? "" : std::string(st.owner, st.owner_len);
    if (st.held_by_me != 1 || st.hold_count != 1 || st.owner_count != 1 || got != owner) {
      return fail("query answered owner '" + got + "', count " + std::to_string(st.hold_count));
    }
    rc = rlock_release(lock_);
    if (rc != RLOCK_OK) return fail("release: " + it::last_error());
    return true;
  }
  bool fail(const std::string& what) {
    std::lock_guard<std::mutex> g(mutex_);
    failure_ = what + " (round " + std::to_string(rounds_.load()) + ")";
    return false;
  }
  rlock_client* client_;
  rlock_lock* lock_;
  std::atomic<bool> stop_{false};
  std::atomic<int> rounds_{0};
  std::mutex mutex_;
  std::string failure_;
  std::thread thread_;
};

struct Group {
  rlock_multi* group = nullptr;
  ~Group() { rlock_multi_free(group); }
};

TEST(Fork, ChildNeverTouchesTheParentsLocks) {
  const std::string watchdog_name = unique_name("fork-watchdog");
  const std::string fixed_name = unique_name("fork-fixed");
  const std::string busy_name = unique_name("fork-busy");
  const std::string child_name = unique_name("fork-child");
  LockKeys cleanup_watchdog(watchdog_name), cleanup_fixed(fixed_name), cleanup_busy(busy_name),
      cleanup_child(child_name);
  RedisConn redis(test_redis_url());
  it::ClientSettings settings;
  settings.watchdog_lease_ms = kWatchdogLeaseMs;
  it::Client client = it::make_client(settings);
  it::Lock watchdog_lock = it::make_lock(client.get(), watchdog_name);
  it::Lock fixed_lock = it::make_lock(client.get(), fixed_name, kFixedLeaseMs);
  it::Lock busy_lock = it::make_lock(client.get(), busy_name);
  it::Token token = it::make_token();
  Group group;
  rlock_lock* members[] = {fixed_lock.get()};
  ASSERT_EQ(rlock_multi_lock_new(&group.group, members, 1), RLOCK_OK) << it::last_error();

  ASSERT_EQ(rlock_acquire(watchdog_lock.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_acquire(fixed_lock.get(), 0), RLOCK_OK) << it::last_error();
  const int64_t me = rlock_current_thread_id();
  const std::map<std::string, std::string> watchdog_hash{{it::owner_of(client.get(), me), "1"}};
  const std::map<std::string, std::string> fixed_hash{{it::owner_of(client.get(), me), "1"}};
  ASSERT_EQ(redis.hgetall(watchdog_name), watchdog_hash);

  const ParentHandles parent{client.get(),
                             watchdog_lock.get(),
                             fixed_lock.get(),
                             busy_lock.get(),
                             group.group,
                             token.get(),
                             me};
  BusyThread busy(client.get(), busy_lock.get());
  for (int i = 0; i < kForks; ++i) {
    sleep_ms(20 + 17 * i % 50);  // the busy thread is somewhere else in its round each time
    const pid_t child = fork();
    ASSERT_GE(child, 0) << std::strerror(errno);
    if (child == 0) child_main(parent, child_name);
    const int status = wait_child(child, 20000);
    ASSERT_EQ(status, 0) << "fork " << i << ": -1 = the child hung, else its failed checks";
    EXPECT_EQ(redis.hgetall(watchdog_name), watchdog_hash) << "fork " << i;
    EXPECT_EQ(redis.hgetall(fixed_name), fixed_hash) << "fork " << i;
    EXPECT_GT(redis.pttl(watchdog_name), 0) << "fork " << i;
    EXPECT_GT(redis.pttl(fixed_name), kFixedLeaseMs - 30000) << "fork " << i;
    EXPECT_EQ(rlock_is_held(watchdog_lock.get()), 1) << "fork " << i;
    EXPECT_EQ(redis.exists(child_name), false) << "the child's own lock was released";
  }
  // The watchdog still renews: the key outlives two of its leases.
  int64_t lowest = kWatchdogLeaseMs;
  for (const int64_t until = mono_ms() + 2 * kWatchdogLeaseMs; mono_ms() < until; sleep_ms(50)) {
    const long long pttl = redis.pttl(watchdog_name);
    ASSERT_GT(pttl, 0) << "the watchdog stopped renewing";
    lowest = std::min<int64_t>(lowest, pttl);
  }
  std::printf("%d forks; busy rounds %d; lowest PTTL of the watchdog lock %lld ms\n", kForks,
              busy.rounds(), static_cast<long long>(lowest));
  busy.stop();
  EXPECT_EQ(busy.failure(), "") << "the busy parent thread saw a failure or a foreign reply";
  EXPECT_GT(busy.rounds(), 0);
  EXPECT_EQ(redis.hgetall(watchdog_name), watchdog_hash);
  EXPECT_EQ(redis.hgetall(fixed_name), fixed_hash);
  EXPECT_EQ(rlock_release(watchdog_lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(fixed_lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(watchdog_name));
  EXPECT_FALSE(redis.exists(fixed_name));
}

}  // namespace
