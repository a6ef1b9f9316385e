// Blocking acquires: wait bounds, cancellation and pub/sub wake-ups.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

// Runs an acquire on its own thread and records when it returned.
class BackgroundAcquire {
 public:
  template <typename Fn>
  explicit BackgroundAcquire(Fn fn) {
    thread_ = std::thread([this, fn] {
      thread_id_ = rlock_current_thread_id();
      started_.store(true);
      int rc = fn();
      returned_at_ms_.store(mono_ms());
      rc_.store(rc);
      done_.store(true);
    });
    while (!started_.load()) sleep_ms(1);
  }
  ~BackgroundAcquire() {
    if (thread_.joinable()) thread_.join();
  }
  // Waits up to timeout_ms for the acquire to return.
  bool wait(int64_t timeout_ms) {
    const int64_t deadline = mono_ms() + timeout_ms;
    while (!done_.load() && mono_ms() < deadline) sleep_ms(1);
    if (done_.load()) thread_.join();
    return !thread_.joinable();
  }
  int rc() const { return rc_.load(); }
  int64_t returned_at_ms() const { return returned_at_ms_.load(); }
  int64_t thread_id() const { return thread_id_; }

 private:
  std::thread thread_;
  std::atomic<bool> started_{false}, done_{false};
  std::atomic<int> rc_{-100};
  std::atomic<int64_t> returned_at_ms_{0};
  int64_t thread_id_ = 0;
};

// ---- Wait bounds ----------------------------------------------------------------------------

TEST(WaitTime, BoundedWaitReturnsTimedOutAfterTheBound) {
  const std::string name = unique_name("wait");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client();
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);
  ASSERT_EQ(it::acquire(holder.get(), 0, 30000), RLOCK_OK) << it::last_error();
  const auto fields = redis.hgetall(name);

  int64_t start = mono_ms();
  int rc = rlock_acquire(waiter.get(), 300);
  int64_t elapsed = mono_ms() - start;
  EXPECT_EQ(rc, RLOCK_ETIMEDOUT) << it::last_error();
  EXPECT_EQ(rlock_last_error()->code, RLOCK_ETIMEDOUT);
  EXPECT_STRNE(rlock_last_error()->message, "");
  EXPECT_GE(elapsed, 290) << "returned before the wait time passed";
  EXPECT_LT(elapsed, 1300) << "overslept the wait time";

  start = mono_ms();
  rc = rlock_acquire(waiter.get(), 0);
  elapsed = mono_ms() - start;
  EXPECT_EQ(rc, RLOCK_ETIMEDOUT);
  EXPECT_LT(elapsed, 250) << "wait 0 must try once and return";

  EXPECT_EQ(it::query(waiter.get()).hold_count, 0);
  EXPECT_EQ(redis.hgetall(name), fields) << "timed-out acquires must not change the lock";
  EXPECT_EQ(rlock_release(holder.get()), RLOCK_OK);
}

// ---- Cancellation ---------------------------------------------------------------------------

// Everything a cancelled owner must not leave behind.
void expect_nothing_held(RedisConn& redis, const std::string& name, rlock_lock* lock,
                         rlock_client* client, int64_t thread_id) {
  EXPECT_EQ(rlock_is_held_for(lock, thread_id), 0);
  EXPECT_EQ(it::query(lock, thread_id).hold_count, 0);
  auto fields = redis.hgetall(name);
  EXPECT_EQ(fields.count(it::owner_of(client, thread_id)), 0u) << "a cancelled acquire left a hold";
}

TEST(Cancel, H22_CancelFromAnotherThreadWakesForeverWait) {
  const std::string name = unique_name("cancel");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  // A long poll cap: only the cancel can end the wait early.
  it::Client waiter_client = it::make_client(it::ClientSettings{0, 60000, 0});
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);
  ASSERT_EQ(it::acquire(holder.get(), 0, 30000), RLOCK_OK) << it::last_error();

  BackgroundAcquire bg([&] { return rlock_acquire(waiter.get(), RLOCK_WAIT_FOREVER); });
  EXPECT_TRUE(redis.wait_numsub(lock_channel(name), 1, 5000));
  sleep_ms(100);
  EXPECT_FALSE(bg.wait(0)) << "the acquire returned before the cancel: " << bg.rc();
  const int64_t cancelled_at = mono_ms();
  EXPECT_EQ(rlock_cancel(waiter.get()), RLOCK_OK);
  const bool returned = bg.wait(5000);
  if (!returned) {
    ADD_FAILURE() << "the acquire ignored rlock_cancel for 5 s";
    rlock_release(holder.get());  // let it finish so the thread can be joined
    bg.wait(30000);
  }
  EXPECT_EQ(bg.rc(), RLOCK_ECANCELED);
  EXPECT_LT(bg.returned_at_ms() - cancelled_at, 1000) << "cancel was not prompt";
  expect_nothing_held(redis, name, waiter.get(), waiter_client.get(), bg.thread_id());

  // rlock_cancel affects only the waits in progress, not later acquires.
  EXPECT_EQ(rlock_acquire(waiter.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(rlock_release(holder.get()), RLOCK_OK);
  EXPECT_EQ(rlock_acquire(waiter.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(waiter.get()), RLOCK_OK);
  EXPECT_FALSE(redis.exists(name));
}

TEST(Cancel, TokenCancelledBeforeTheCallFailsAtOnce) {
  const std::string name = unique_name("token-before");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  it::Token token = it::make_token();
  EXPECT_EQ(rlock_cancel_token_is_cancelled(token.get()), 0);
  EXPECT_EQ(rlock_cancel_token_cancel(token.get()), RLOCK_OK);
  EXPECT_EQ(rlock_cancel_token_cancel(token.get()), RLOCK_OK) << "cancel is idempotent";
  EXPECT_EQ(rlock_cancel_token_is_cancelled(token.get()), 1);

  // Even a free lock is not taken with a cancelled token.
  int64_t start = mono_ms();
  EXPECT_EQ(it::acquire(lock.get(), RLOCK_WAIT_FOREVER, 0, 0, token.get()), RLOCK_ECANCELED);
  EXPECT_LT(mono_ms() - start, 100);
  EXPECT_EQ(rlock_last_error()->code, RLOCK_ECANCELED);
  EXPECT_FALSE(redis.exists(name)) << "a cancelled acquire took the lock";
  expect_nothing_held(redis, name, lock.get(), client.get(), rlock_current_thread_id());

  start = mono_ms();
  EXPECT_EQ(it::acquire(lock.get(), 0, 0, 0, token.get()), RLOCK_ECANCELED) << "try-once too";
  EXPECT_LT(mono_ms() - start, 100);
  EXPECT_FALSE(redis.exists(name));
}

TEST(Cancel, H22_TokenCancelledWhileWaiting) {
  const std::string name = unique_name("token-waiting");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client(it::ClientSettings{0, 60000, 0});
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);
  it::Token token = it::make_token();
  ASSERT_EQ(it::acquire(holder.get(), 0, 30000), RLOCK_OK) << it::last_error();

  BackgroundAcquire bg(
      [&] { return it::acquire(waiter.get(), RLOCK_WAIT_FOREVER, 0, 0, token.get()); });
  EXPECT_TRUE(redis.wait_numsub(lock_channel(name), 1, 5000));
  sleep_ms(100);
  EXPECT_FALSE(bg.wait(0)) << "the acquire returned before the cancel: " << bg.rc();
  const int64_t cancelled_at = mono_ms();
  EXPECT_EQ(rlock_cancel_token_cancel(token.get()), RLOCK_OK);
  const bool returned = bg.wait(5000);
  if (!returned) {
    ADD_FAILURE() << "the acquire ignored the cancel token for 5 s";
    rlock_release(holder.get());
    bg.wait(30000);
  }
  EXPECT_EQ(bg.rc(), RLOCK_ECANCELED);
  EXPECT_LT(bg.returned_at_ms() - cancelled_at, 1000) << "cancel was not prompt";
  expect_nothing_held(redis, name, waiter.get(), waiter_client.get(), bg.thread_id());

  // The token stays cancelled: a later acquire with it is refused even once the lock is free.
  EXPECT_EQ(rlock_release(holder.get()), RLOCK_OK);
  EXPECT_EQ(it::acquire(waiter.get(), 1000, 0, 0, token.get()), RLOCK_ECANCELED);
  EXPECT_FALSE(redis.exists(name));
}

// ---- Wake-ups -------------------------------------------------------------------------------

// The waiter's poll cap is 10 s, so a wake-up within 200 ms can only come from the unlock
// message.
TEST(WakeUp, ReleaseWakesWaiterWellBeforePollCap) {
  const std::string name = unique_name("wakeup");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client(it::ClientSettings{0, 10000, 0});
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);

  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_EQ(it::acquire(holder.get(), 0, 30000), RLOCK_OK) << it::last_error();
    const int64_t tid = 9000 + round;
    BackgroundAcquire bg([&] { return it::acquire(waiter.get(), 20000, 0, tid); });
    EXPECT_TRUE(redis.wait_numsub(lock_channel(name), 1, 5000));
    sleep_ms(100);
    EXPECT_FALSE(bg.wait(0)) << "the waiter got a held lock: " << bg.rc();
    const int64_t released_at = mono_ms();
    ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK) << it::last_error();
    ASSERT_TRUE(bg.wait(30000));
    EXPECT_EQ(bg.rc(), RLOCK_OK);
    EXPECT_LT(bg.returned_at_ms() - released_at, 200)
        << "the unlock message did not wake the waiter";
    ASSERT_EQ(rlock_release_for(waiter.get(), tid), RLOCK_OK) << it::last_error();
  }
  EXPECT_FALSE(redis.exists(name));
}

// A private server (its command counts are the test's own), a holder and a waiter client on
// one lock name; the waiter polls only every 10 s, so a quick wake-up is the message's.
struct OwnServer {
  explicit OwnServer(std::string lock_name)
      : name(std::move(lock_name)),
        holder_client(it::make_client(server.tcp_url())),
        waiter_client(it::make_client(server.tcp_url(), it::ClientSettings{0, 10000, 0})),
        holder(it::make_lock(holder_client.get(), name)),
        waiter(it::make_lock(waiter_client.get(), name)) {}
  PrivateRedis server;
  RedisConn admin{server.unix_url()};
  std::string name;
  it::Client holder_client, waiter_client;
  it::Lock holder, waiter;
};

// Calls of one command in an INFO commandstats text.
long long calls(const std::string& stats, const std::string& cmd) {
  size_t at = stats.find("cmdstat_" + cmd + ":calls=");
  return at == std::string::npos ? 0 : std::stoll(stats.substr(at + cmd.size() + 15));
}

// A waiter joining a channel its client already listens on sends one attempt, not two, when no
// unlock came in between; and it still wakes on the next unlock.
TEST(WakeUp, WaiterJoiningAnActiveChannelSendsOneAttempt) {
  OwnServer own("joined-channel");
  RedisConn& admin = own.admin;
  const std::string& name = own.name;
  rlock_lock* holder = own.holder.get();
  rlock_lock* waiter = own.waiter.get();
  ASSERT_EQ(it::acquire(holder, 0, 30000), RLOCK_OK) << it::last_error();

  BackgroundAcquire first([&] { return it::acquire(waiter, 20000, 0, 7001); });
  ASSERT_TRUE(admin.wait_numsub(lock_channel(name), 1, 5000));
  sleep_ms(100);
  admin.ok({"CONFIG", "RESETSTAT"});
  BackgroundAcquire second([&] { return it::acquire(waiter, 20000, 0, 7002); });
  sleep_ms(300);
  std::string stats = admin.ok({"INFO", "commandstats"}).str;
  EXPECT_EQ(calls(stats, "evalsha") + calls(stats, "eval"), 1) << stats;
  EXPECT_FALSE(first.wait(0));
  EXPECT_FALSE(second.wait(0));

  // Both still wake by message (polling would take 10 s): the holder's release lets one in,
  // whose release lets the other in.
  ASSERT_EQ(rlock_release(holder), RLOCK_OK) << it::last_error();
  int64_t start = mono_ms();
  BackgroundAcquire* winner = nullptr;
  int64_t winner_tid = 0;
  while (winner == nullptr && mono_ms() - start < 5000) {
    if (first.wait(0)) {
      winner = &first;
      winner_tid = 7001;
    } else if (second.wait(0)) {
      winner = &second;
      winner_tid = 7002;
    } else {
      sleep_ms(1);
    }
  }
  ASSERT_NE(winner, nullptr) << "no waiter woke within 5 s of the release";
  EXPECT_LT(mono_ms() - start, 2000);
  ASSERT_EQ(winner->rc(), RLOCK_OK);
  BackgroundAcquire& other = winner == &first ? second : first;
  const int64_t other_tid = winner_tid == 7001 ? 7002 : 7001;
  start = mono_ms();
  ASSERT_EQ(rlock_release_for(waiter, winner_tid), RLOCK_OK) << it::last_error();
  ASSERT_TRUE(other.wait(5000));
  EXPECT_LT(mono_ms() - start, 2000);
  ASSERT_EQ(other.rc(), RLOCK_OK);
  ASSERT_EQ(rlock_release_for(waiter, other_tid), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(admin.exists(name));
}

// The subscription outlives its last waiter briefly: a waiter coming back within that moment
// needs no SUBSCRIBE and one attempt; later the subscription goes, so none pile up.
TEST(WakeUp, SubscriptionLingersBrieflyAfterTheLastWaiter) {
  OwnServer own("lingering");
  RedisConn& admin = own.admin;
  const std::string& name = own.name;
  const std::string channel = lock_channel(name);
  rlock_lock* holder = own.holder.get();
  rlock_lock* waiter = own.waiter.get();

  ASSERT_EQ(it::acquire(holder, 0, 30000), RLOCK_OK) << it::last_error();
  {
    BackgroundAcquire bg([&] { return it::acquire(waiter, 20000, 0, 8001); });
    ASSERT_TRUE(admin.wait_numsub(channel, 1, 5000));
    ASSERT_EQ(rlock_release(holder), RLOCK_OK) << it::last_error();
    ASSERT_TRUE(bg.wait(5000));
    ASSERT_EQ(bg.rc(), RLOCK_OK);
    ASSERT_EQ(rlock_release_for(waiter, 8001), RLOCK_OK) << it::last_error();
  }
  EXPECT_EQ(admin.numsub(channel), 1) << "the subscription went with its last waiter";

  admin.ok({"CONFIG", "RESETSTAT"});
  ASSERT_EQ(it::acquire(holder, 0, 30000), RLOCK_OK) << it::last_error();
  BackgroundAcquire again([&] { return it::acquire(waiter, 20000, 0, 8002); });
  sleep_ms(200);
  std::string stats = admin.ok({"INFO", "commandstats"}).str;
  EXPECT_EQ(calls(stats, "subscribe"), 0) << stats;
  EXPECT_EQ(calls(stats, "evalsha") + calls(stats, "eval"), 2)
      << "the holder's acquire and one attempt\n"
      << stats;
  EXPECT_FALSE(again.wait(0));
  const int64_t released_at = mono_ms();
  ASSERT_EQ(rlock_release(holder), RLOCK_OK) << it::last_error();
  ASSERT_TRUE(again.wait(5000));
  EXPECT_LT(again.returned_at_ms() - released_at, 2000) << "woken by polling, not by the message";
  ASSERT_EQ(again.rc(), RLOCK_OK);
  ASSERT_EQ(rlock_release_for(waiter, 8002), RLOCK_OK) << it::last_error();

  const int64_t start = mono_ms();
  while (admin.numsub(channel) != 0 && mono_ms() - start < 5000) sleep_ms(20);
  EXPECT_EQ(admin.numsub(channel), 0) << "the idle subscription was never dropped";
  EXPECT_FALSE(admin.exists(name));
}

// A thread that will wait as long as it takes does not barge past the sleeping waiters of its
// own client: it sends no attempt and is served after them. A re-entry by the holder is not
// held back.
TEST(WakeUp, NewWaiterQueuesBehindItsClientsSleepingWaiters) {
  OwnServer own("behind-sleepers");
  RedisConn& admin = own.admin;
  rlock_lock* lock = own.waiter.get();  // one client: the holder and both waiters
  ASSERT_EQ(it::acquire(lock, 0, 30000, 6001), RLOCK_OK) << it::last_error();
  BackgroundAcquire first([&] { return it::acquire(lock, RLOCK_WAIT_FOREVER, 0, 6002); });
  ASSERT_TRUE(admin.wait_numsub(lock_channel(own.name), 1, 5000));
  sleep_ms(200);  // asleep by now

  admin.ok({"CONFIG", "RESETSTAT"});
  const int64_t start = mono_ms();
  EXPECT_EQ(it::acquire(lock, RLOCK_WAIT_FOREVER, 30000, 6001), RLOCK_OK) << it::last_error();
  EXPECT_LT(mono_ms() - start, 1000) << "the holder's re-entry waited";
  BackgroundAcquire second([&] { return it::acquire(lock, RLOCK_WAIT_FOREVER, 0, 6003); });
  sleep_ms(300);
  std::string stats = admin.ok({"INFO", "commandstats"}).str;
  EXPECT_EQ(calls(stats, "evalsha") + calls(stats, "eval"), 1) << "only the re-entry\n" << stats;
  EXPECT_FALSE(first.wait(0));
  EXPECT_FALSE(second.wait(0));

  ASSERT_EQ(rlock_release_for(lock, 6001), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_release_for(lock, 6001), RLOCK_OK) << it::last_error();
  ASSERT_TRUE(first.wait(5000)) << "the sleeping waiter was not woken";
  ASSERT_EQ(first.rc(), RLOCK_OK);
  EXPECT_FALSE(second.wait(0)) << "the later waiter got the lock while the earlier one held it";
  ASSERT_EQ(rlock_release_for(lock, 6002), RLOCK_OK) << it::last_error();
  ASSERT_TRUE(second.wait(5000)) << "the later waiter was not woken";
  ASSERT_EQ(second.rc(), RLOCK_OK);
  ASSERT_EQ(rlock_release_for(lock, 6003), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(admin.exists(own.name));
}

}  // namespace
