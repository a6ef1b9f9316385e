// The non-reentrant kinds (RLOCK_LOCK_NON_REENTRANT and RLOCK_LOCK_NON_REENTRANT_FAIR, Redisson
// 4.4+ getNonReentrantLock / getNonReentrantFairLock): the reentrant and fair layouts, but the
// holder asking again gets RLOCK_EDEADLK at once and nothing changes on Redis. Everything else
// (waiting, wake-ups, the fair queue, extend, the watchdog, force unlock, query) works as on the
// kinds they are built on.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

it::Lock make_nr_lock(rlock_client* client, const std::string& name, rlock_lock_kind kind) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = kind;
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n failed: " + it::last_error());
  }
  return it::Lock(l);
}

// Both kinds run every case.
class NonReentrant : public ::testing::TestWithParam<rlock_lock_kind> {
 protected:
  bool fair() const { return GetParam() == RLOCK_LOCK_NON_REENTRANT_FAIR; }
};

std::string kind_label(const ::testing::TestParamInfo<rlock_lock_kind>& info) {
  return info.param == RLOCK_LOCK_NON_REENTRANT_FAIR ? "Fair" : "Plain";
}

INSTANTIATE_TEST_SUITE_P(Kinds, NonReentrant,
                         ::testing::Values(RLOCK_LOCK_NON_REENTRANT, RLOCK_LOCK_NON_REENTRANT_FAIR),
                         kind_label);

TEST_P(NonReentrant, HolderAskingAgainGetsDeadlockAtOnceAndNothingChanges) {
  const std::string name = unique_name("nr-again");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client c = it::make_client();
  it::Lock lock = make_nr_lock(c.get(), name, GetParam());
  it::Lock other_handle = make_nr_lock(c.get(), name, GetParam());  // the same owner
  ASSERT_EQ(it::acquire(lock.get(), 0, 60000), RLOCK_OK) << it::last_error();
  const auto fields = redis.hgetall(name);
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields.begin()->first, it::owner_of(c.get(), rlock_current_thread_id()));
  EXPECT_EQ(fields.begin()->second, "1") << "Redisson's layout: owner field = 1";
  redis.ok({"PEXPIRE", name, "50000"});  // a refused acquire must not reset the lease

  // Try once, a bounded wait, and an unbounded one: each refused at once, not after its wait.
  for (int64_t wait_ms : {int64_t{0}, int64_t{2000}, int64_t{RLOCK_WAIT_FOREVER}}) {
    for (rlock_lock* handle : {lock.get(), other_handle.get()}) {
      const int64_t t0 = mono_ms();
      EXPECT_EQ(it::acquire(handle, wait_ms), RLOCK_EDEADLK) << "wait " << wait_ms;
      EXPECT_LT(mono_ms() - t0, 1000) << "wait " << wait_ms << ": not refused at once";
      const std::string message = rlock_last_error()->message;
      EXPECT_NE(message.find("not reentrant"), std::string::npos) << message;
    }
  }
  EXPECT_EQ(redis.hgetall(name), fields) << "the hold count must stay 1";
  EXPECT_LE(redis.pttl(name), 50000);
  EXPECT_GT(redis.pttl(name), 40000);
  if (fair()) {
    EXPECT_FALSE(redis.exists(fair_queue_key(name))) << "the holder must not queue for itself";
    EXPECT_FALSE(redis.exists(fair_timeout_key(name)));
  }
  EXPECT_EQ(it::query(lock.get()).hold_count, 1);
  EXPECT_TRUE(rlock_is_held(lock.get()));

  // One release frees it.
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ENOTHELD);
  // Free again, the owner takes it as anyone would.
  EXPECT_EQ(it::acquire(other_handle.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(other_handle.get()), RLOCK_OK);
}

TEST_P(NonReentrant, AsyncAcquireByTheHolderIsRefusedToo) {
  const std::string name = unique_name("nr-async");
  LockKeys cleanup(name);
  it::Client c = it::make_client();
  it::Lock lock = make_nr_lock(c.get(), name, GetParam());
  ASSERT_EQ(it::acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  struct Outcome {
    std::atomic<int> status{1};
  } outcome;
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;  // waits forever
  ASSERT_EQ(
      rlock_acquire_async(
          lock.get(), &opts,
          [](void* user, int status, int64_t) { static_cast<Outcome*>(user)->status = status; },
          &outcome),
      RLOCK_OK)
      << it::last_error();
  const int64_t deadline = mono_ms() + 5000;
  while (outcome.status == 1 && mono_ms() < deadline) sleep_ms(5);
  EXPECT_EQ(outcome.status.load(), RLOCK_EDEADLK);
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK);
}

TEST_P(NonReentrant, OtherOwnersAreExcludedAndWokenByTheRelease) {
  const std::string name = unique_name("nr-wake");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  it::Client b = it::make_client();
  it::Lock la = make_nr_lock(a.get(), name, GetParam());
  it::Lock lb = make_nr_lock(b.get(), name, GetParam());
  ASSERT_EQ(it::acquire(la.get(), 0), RLOCK_OK) << it::last_error();

  EXPECT_EQ(it::acquire(lb.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(it::acquire(lb.get(), 300), RLOCK_ETIMEDOUT);
  // Another thread of the same client is another owner: excluded, not refused.
  EXPECT_EQ(it::acquire(la.get(), 0, 0, 4242), RLOCK_ETIMEDOUT);

  std::atomic<int> rc{1};
  std::atomic<int64_t> got_at{0};
  constexpr int64_t kWaiter = 77;  // an owner of its own, whichever thread runs it
  std::thread waiter([&] {
    rc = it::acquire(lb.get(), 10000, 0, kWaiter);
    got_at = mono_ms();
  });
  // Wait until it listens (a fair waiter on its own channel, after joining the queue).
  if (fair()) {
    const int64_t until = mono_ms() + 5000;
    while (mono_ms() < until && redis.integer({"LLEN", fair_queue_key(name)}) < 1) sleep_ms(5);
    ASSERT_EQ(redis.integer({"LLEN", fair_queue_key(name)}), 1);
    const std::string queued = redis.ok({"LINDEX", fair_queue_key(name), "0"}).str;
    ASSERT_TRUE(redis.wait_numsub(lock_channel(name) + ":" + queued, 1, 5000));
  } else {
    ASSERT_TRUE(redis.wait_numsub(lock_channel(name), 1, 5000));
  }
  sleep_ms(200);
  EXPECT_EQ(rc.load(), 1) << "the waiter got the lock while it was held";
  const int64_t released_at = mono_ms();
  ASSERT_EQ(rlock_release(la.get()), RLOCK_OK) << it::last_error();
  waiter.join();
  EXPECT_EQ(rc.load(), RLOCK_OK) << it::last_error();
  EXPECT_LT(got_at - released_at, 2000) << "woken by the release, not by polling";
  const auto fields = redis.hgetall(name);
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields.begin()->second, "1");
  if (fair()) {
    EXPECT_FALSE(redis.exists(fair_queue_key(name)));
  }
  EXPECT_EQ(it::acquire(lb.get(), 0, 0, kWaiter), RLOCK_EDEADLK);
  EXPECT_EQ(rlock_release_for(lb.get(), kWaiter), RLOCK_OK);
  EXPECT_FALSE(redis.exists(name));
}

TEST_P(NonReentrant, ExtendWatchdogQueryAndForceUnlock) {
  const std::string name = unique_name("nr-lease");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::ClientSettings settings;
  settings.watchdog_lease_ms = 900;
  it::Client a = it::make_client(settings);
  it::Client b = it::make_client();
  it::Lock la = make_nr_lock(a.get(), name, GetParam());
  it::Lock lb = make_nr_lock(b.get(), name, GetParam());

  ASSERT_EQ(it::acquire(la.get(), 0), RLOCK_OK) << it::last_error();  // the watchdog renews
  sleep_ms(2000);
  EXPECT_TRUE(redis.exists(name)) << "the watchdog did not renew the lease";
  EXPECT_TRUE(rlock_is_held(la.get()));

  EXPECT_EQ(rlock_extend(la.get(), 45000), RLOCK_OK) << it::last_error();
  EXPECT_GT(redis.pttl(name), 40000);
  EXPECT_EQ(rlock_extend(lb.get(), 45000), RLOCK_ENOTOWNER);

  const it::State mine = it::query(la.get());
  EXPECT_TRUE(mine.locked);
  EXPECT_EQ(mine.hold_count, 1);
  EXPECT_EQ(mine.owner, it::owner_of(a.get(), rlock_current_thread_id()));
  const it::State theirs = it::query(lb.get());
  EXPECT_EQ(theirs.hold_count, 0);
  EXPECT_EQ(theirs.owner_hold_count, 1);

  std::atomic<int> rc{1};
  constexpr int64_t kWaiter = 77;
  std::thread waiter([&] { rc = it::acquire(lb.get(), 10000, 0, kWaiter); });
  sleep_ms(300);
  EXPECT_EQ(rc.load(), 1);
  int deleted = 0;
  ASSERT_EQ(rlock_force_unlock(&deleted, lb.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(deleted, 1);
  waiter.join();
  EXPECT_EQ(rc.load(), RLOCK_OK) << "force unlock must wake the waiter";
  EXPECT_EQ(rlock_release(la.get()), RLOCK_ELOST);
  EXPECT_EQ(rlock_release_for(lb.get(), kWaiter), RLOCK_OK);
}

TEST(NonReentrantFair, WaitersAreServedInArrivalOrder) {
  const std::string name = unique_name("nr-fair-order");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client c = it::make_client();
  it::Lock lock = make_nr_lock(c.get(), name, RLOCK_LOCK_NON_REENTRANT_FAIR);
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 1), RLOCK_OK) << it::last_error();

  constexpr int kWaiters = 3;
  std::vector<std::thread> threads;
  std::atomic<int> next_turn{0};
  std::vector<std::atomic<int>> turn(kWaiters);
  std::vector<std::atomic<int>> rc(kWaiters);
  for (int i = 0; i < kWaiters; ++i) {
    turn[i] = -1;
    rc[i] = 1;
    threads.emplace_back([&, i] {
      const int64_t thread_id = 100 + i;
      rc[i] = it::acquire(lock.get(), 10000, 0, thread_id);
      if (rc[i] != RLOCK_OK) return;
      turn[i] = next_turn++;
      EXPECT_EQ(it::acquire(lock.get(), 0, 0, thread_id), RLOCK_EDEADLK);
      sleep_ms(20);
      EXPECT_EQ(rlock_release_for(lock.get(), thread_id), RLOCK_OK);
    });
    // Each joins the queue before the next starts.
    const int64_t until = mono_ms() + 5000;
    while (mono_ms() < until && redis.integer({"LLEN", fair_queue_key(name)}) < i + 1) sleep_ms(5);
    ASSERT_EQ(redis.integer({"LLEN", fair_queue_key(name)}), i + 1);
  }
  EXPECT_EQ(it::acquire(lock.get(), 0, 0, 1), RLOCK_EDEADLK);
  EXPECT_EQ(redis.integer({"LLEN", fair_queue_key(name)}), kWaiters) << "the queue moved";
  ASSERT_EQ(rlock_release_for(lock.get(), 1), RLOCK_OK);
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kWaiters; ++i) {
    EXPECT_EQ(rc[i].load(), RLOCK_OK) << "waiter " << i;
    EXPECT_EQ(turn[i].load(), i) << "waiter " << i << " was served out of order";
  }
  EXPECT_FALSE(redis.exists(name));
  EXPECT_FALSE(redis.exists(fair_queue_key(name)));
  EXPECT_FALSE(redis.exists(fair_timeout_key(name)));
}

TEST(NonReentrantKinds, ReentrantAndNonReentrantHandlesShareOneLock) {
  // The same hash: a reentrant handle may enter again what a non-reentrant one holds (as
  // Redisson's RLock does), while the non-reentrant handle refuses any hold of its owner.
  const std::string name = unique_name("nr-mixed");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client c = it::make_client();
  it::Lock nr = make_nr_lock(c.get(), name, RLOCK_LOCK_NON_REENTRANT);
  it::Lock plain = it::make_lock(c.get(), name);
  ASSERT_EQ(it::acquire(plain.get(), 0), RLOCK_OK);
  EXPECT_EQ(it::acquire(nr.get(), 0), RLOCK_EDEADLK);
  ASSERT_EQ(rlock_release(plain.get()), RLOCK_OK);
  ASSERT_EQ(it::acquire(nr.get(), 0), RLOCK_OK);
  EXPECT_EQ(it::acquire(plain.get(), 0), RLOCK_OK);
  EXPECT_EQ(redis.hgetall(name).begin()->second, "2");
  EXPECT_EQ(rlock_release(plain.get()), RLOCK_OK);
  EXPECT_EQ(rlock_release(nr.get()), RLOCK_OK);
  EXPECT_FALSE(redis.exists(name));
}

TEST(NonReentrantKinds, InspectionShowsTheLayoutTheyShare) {
  // The keys cannot tell a non-reentrant lock from a reentrant one held once, nor the fair
  // kinds apart: inspection reports the layout (documented in rlock.h).
  const std::string name = unique_name("nr-inspect");
  LockKeys cleanup(name);
  it::Client c = it::make_client();
  for (rlock_lock_kind kind : {RLOCK_LOCK_NON_REENTRANT, RLOCK_LOCK_NON_REENTRANT_FAIR}) {
    it::Lock lock = make_nr_lock(c.get(), name, kind);
    ASSERT_EQ(it::acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
    std::thread waiter([&] { EXPECT_EQ(it::acquire(lock.get(), 300, 0, 5), RLOCK_ETIMEDOUT); });
    sleep_ms(100);  // queued, for the fair kind
    rlock_lock_info* info = nullptr;
    ASSERT_EQ(rlock_inspect(&info, c.get(), name.data(), name.size()), RLOCK_OK)
        << it::last_error();
    EXPECT_EQ(info->kind,
              kind == RLOCK_LOCK_NON_REENTRANT ? RLOCK_FOUND_REENTRANT : RLOCK_FOUND_FAIR);
    EXPECT_EQ(info->owner_count, 1);
    EXPECT_EQ(info->owners[0].hold_count, 1);
    rlock_lock_info_free(info);
    waiter.join();
    EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK);
  }
}

}  // namespace
