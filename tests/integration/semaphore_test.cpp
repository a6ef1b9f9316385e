// Semaphores (plain and permit-expirable) and count-down latches through the C ABI: each call's
// effect on Redis in Redisson's layout, waiting and wake-ups (from rlock and from a Redisson-like
// writer), leases and the permits' watchdog, cancellation, and bad input leaving Redis unchanged.
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

using Clock = std::chrono::steady_clock;

using it::Latch;
using it::Semaphore;

Semaphore make_semaphore(rlock_client* client, const std::string& name,
                         rlock_semaphore_kind kind = RLOCK_SEMAPHORE_PLAIN, int64_t lease_ms = 0) {
  rlock_semaphore_options opts = RLOCK_SEMAPHORE_OPTIONS_INIT;
  opts.kind = kind;
  if (lease_ms != 0) opts.lease_ms = lease_ms;
  rlock_semaphore* s = nullptr;
  if (rlock_semaphore_new_n(&s, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_semaphore_new_n failed: " + it::last_error());
  }
  return Semaphore(s);
}

Latch make_latch(rlock_client* client, const std::string& name) {
  rlock_latch* l = nullptr;
  if (rlock_latch_new_n(&l, client, name.data(), name.size()) != RLOCK_OK) {
    throw std::runtime_error("rlock_latch_new_n failed: " + it::last_error());
  }
  return Latch(l);
}

std::string sem_channel(const std::string& name) { return "redisson_sc:{" + name + "}"; }
std::string deadlines(const std::string& name) { return "{" + name + "}:timeout"; }
std::string latch_channel(const std::string& name) {
  return "redisson_countdownlatch__channel__{" + name + "}";
}

std::string raw_id(const std::string& hex) {
  std::string raw;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return raw;
}

int64_t epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Deletes a semaphore's or latch's keys when the scope ends.
struct Keys {
  explicit Keys(std::string n) : name(std::move(n)) {}
  ~Keys() {
    try {
      RedisConn redis(test_redis_url());
      redis.command({"DEL", name, deadlines(name)});
    } catch (...) {
    }
  }
  std::string name;
};

std::string get(RedisConn& redis, const std::string& key) {
  Reply r = redis.ok({"GET", key});
  return r.is_nil() ? "(nil)" : r.str;
}

// A call that must fail with `code`, leaving the key's value as it was.
#define EXPECT_FAILS_UNCHANGED(call, code, redis, key)                      \
  do {                                                                      \
    const std::string before_ = get(redis, key);                            \
    EXPECT_EQ((call), code) << it::last_error();                            \
    EXPECT_STRNE(rlock_last_error()->message, "");                          \
    EXPECT_EQ(get(redis, key), before_) << "the failed call changed Redis"; \
  } while (0)

// ---- Plain semaphore ------------------------------------------------------------------------

TEST(Semaphore, PermitsAreCountedInTheStringKeyAndPublishedOnRelease) {
  Keys keys(unique_name("sem-layout"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), name);
  RedisConn redis(test_redis_url());
  RedisConn listener(test_redis_url());
  listener.subscribe(sem_channel(name));

  int set = -1;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 3, 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(set, 1);
  EXPECT_EQ(get(redis, name), "3");
  std::string channel, payload;
  ASSERT_TRUE(listener.next_message(2000, &channel, &payload));
  EXPECT_EQ(payload, "3") << "trySetPermits publishes the count it set";
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 5, 0), RLOCK_OK);
  EXPECT_EQ(set, 0) << "a semaphore that exists keeps its count";
  EXPECT_EQ(get(redis, name), "3");

  ASSERT_EQ(rlock_semaphore_acquire(sem.get(), 2, 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(get(redis, name), "1");
  int64_t held = -1, available = -1, held_ids = -1;
  int exists = -1;
  ASSERT_EQ(rlock_semaphore_held(&held, sem.get()), RLOCK_OK);
  EXPECT_EQ(held, 2);
  ASSERT_EQ(rlock_semaphore_available(&available, &held_ids, &exists, sem.get()), RLOCK_OK);
  EXPECT_EQ(available, 1);
  EXPECT_EQ(held_ids, 0);
  EXPECT_EQ(exists, 1);
  EXPECT_EQ(rlock_semaphore_acquire(sem.get(), 2, 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(get(redis, name), "1") << "a refused acquire takes nothing";

  ASSERT_EQ(rlock_semaphore_release(sem.get(), 2), RLOCK_OK) << it::last_error();
  EXPECT_EQ(get(redis, name), "3");
  ASSERT_TRUE(listener.next_message(2000, &channel, &payload));
  EXPECT_EQ(channel, sem_channel(name));
  EXPECT_EQ(payload, "3") << "a release publishes the new count (Redisson wakes that many)";
  ASSERT_EQ(rlock_semaphore_held(&held, sem.get()), RLOCK_OK);
  EXPECT_EQ(held, 0);
}

TEST(Semaphore, AddDrainAndDelete) {
  Keys keys(unique_name("sem-add"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), name);
  RedisConn redis(test_redis_url());
  int64_t count = 0;
  ASSERT_EQ(rlock_semaphore_add_permits(&count, sem.get(), 4), RLOCK_OK) << it::last_error();
  EXPECT_EQ(count, 4) << "a missing semaphore counts as 0";
  ASSERT_EQ(rlock_semaphore_add_permits(&count, sem.get(), -6), RLOCK_OK);
  EXPECT_EQ(count, -2) << "taking permits away may go below 0, as in Redisson";
  EXPECT_EQ(get(redis, name), "-2");
  EXPECT_EQ(rlock_semaphore_acquire(sem.get(), 1, 0), RLOCK_ETIMEDOUT);
  int64_t drained = 0;
  ASSERT_EQ(rlock_semaphore_drain(&drained, sem.get()), RLOCK_OK);
  EXPECT_EQ(drained, -2);
  EXPECT_EQ(get(redis, name), "0");
  ASSERT_EQ(rlock_semaphore_add_permits(&count, sem.get(), 2), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_drain(&drained, sem.get()), RLOCK_OK);
  EXPECT_EQ(drained, 2);
  int deleted = -1;
  ASSERT_EQ(rlock_semaphore_delete(&deleted, sem.get()), RLOCK_OK);
  EXPECT_EQ(deleted, 1);
  EXPECT_FALSE(redis.exists(name));
  ASSERT_EQ(rlock_semaphore_delete(&deleted, sem.get()), RLOCK_OK);
  EXPECT_EQ(deleted, 0);
}

TEST(Semaphore, TtlOfTrySetIsKeptByAcquireAndRelease) {
  Keys keys(unique_name("sem-ttl"));
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), keys.name);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 2, 60000), RLOCK_OK);
  EXPECT_GT(redis.pttl(keys.name), 50000);
  ASSERT_EQ(rlock_semaphore_acquire(sem.get(), 1, 0), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_release(sem.get(), 1), RLOCK_OK);
  EXPECT_GT(redis.pttl(keys.name), 50000) << "DECRBY and INCRBY keep the expiry";
}

TEST(Semaphore, WaiterIsWokenByAReleaseOfAnotherClientAndByARedissonStyleRelease) {
  Keys keys(unique_name("sem-wake"));
  const std::string& name = keys.name;
  it::ClientSettings slow;
  slow.poll_cap_ms = 30000;  // only a message explains a quick wake-up
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client(slow);
  Semaphore holder = make_semaphore(holder_client.get(), name);
  Semaphore waiter = make_semaphore(waiter_client.get(), name);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, holder.get(), 1, 0), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_acquire(holder.get(), 1, 0), RLOCK_OK);

  for (int round = 0; round < 2; ++round) {
    std::atomic<int> rc{1};
    std::atomic<int64_t> woke_at{0};
    std::thread t([&] {
      rc = rlock_semaphore_acquire(waiter.get(), 1, 20000);
      woke_at = Clock::now().time_since_epoch().count();
    });
    ASSERT_TRUE(redis.wait_numsub(sem_channel(name), 1, 5000));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(rc.load(), 1) << "the waiter did not wait";
    const auto released = Clock::now();
    if (round == 0) {
      ASSERT_EQ(rlock_semaphore_release(holder.get(), 1), RLOCK_OK);
    } else {  // what Redisson's release does: INCRBY, then PUBLISH the new count
      ASSERT_EQ(redis.integer({"INCRBY", name, "1"}), 1);
      redis.ok({"PUBLISH", sem_channel(name), "1"});
    }
    t.join();
    EXPECT_EQ(rc.load(), RLOCK_OK) << it::last_error();
    const auto waited = Clock::time_point(Clock::duration(woke_at.load())) - released;
    EXPECT_LT(waited, std::chrono::milliseconds(5000)) << "woken by the poll, not the message";
    std::printf("round %d: woken %lld ms after the release\n", round,
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()));
    ASSERT_EQ(rlock_semaphore_release(waiter.get(), 1), RLOCK_OK);
    ASSERT_EQ(rlock_semaphore_acquire(holder.get(), 1, 0), RLOCK_OK);
  }
  ASSERT_EQ(rlock_semaphore_release(holder.get(), 1), RLOCK_OK);
}

TEST(Semaphore, MissingSemaphoreTimesOutWithAMessageAndAWaiterWakesWhenItIsSet) {
  Keys keys(unique_name("sem-missing"));
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), keys.name);
  RedisConn redis(test_redis_url());
  EXPECT_EQ(rlock_semaphore_acquire(sem.get(), 1, 0), RLOCK_ETIMEDOUT);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "does not exist"), nullptr)
      << rlock_last_error()->message;
  EXPECT_FALSE(redis.exists(keys.name)) << "an acquire never creates the semaphore";
  std::atomic<int> rc{1};
  std::thread t([&] { rc = rlock_semaphore_acquire(sem.get(), 2, 20000); });
  ASSERT_TRUE(redis.wait_numsub(sem_channel(keys.name), 1, 5000));
  it::Client other = it::make_client();
  Semaphore setter = make_semaphore(other.get(), keys.name);
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, setter.get(), 2, 0), RLOCK_OK);
  t.join();
  EXPECT_EQ(rc.load(), RLOCK_OK);
  EXPECT_EQ(get(redis, keys.name), "0");
}

TEST(Semaphore, ManyWaitersAreAllServedWhenPermitsArrive) {
  Keys keys(unique_name("sem-many"));
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), keys.name);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 0, 0), RLOCK_OK);
  constexpr int kWaiters = 8;
  std::atomic<int> granted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&] {
      if (rlock_semaphore_acquire(sem.get(), 1, 20000) == RLOCK_OK) ++granted;
    });
  }
  ASSERT_TRUE(redis.wait_numsub(sem_channel(keys.name), 1, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  int64_t count = 0;
  ASSERT_EQ(rlock_semaphore_add_permits(&count, sem.get(), kWaiters), RLOCK_OK);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(granted.load(), kWaiters);
  EXPECT_EQ(get(redis, keys.name), "0");
  int64_t held = 0;
  ASSERT_EQ(rlock_semaphore_held(&held, sem.get()), RLOCK_OK);
  EXPECT_EQ(held, kWaiters);
  ASSERT_EQ(rlock_semaphore_release(sem.get(), kWaiters), RLOCK_OK);
  EXPECT_EQ(get(redis, keys.name), std::to_string(kWaiters));
}

TEST(Semaphore, CancelAndTokenEndAWaitAndTakeNothing) {
  Keys keys(unique_name("sem-cancel"));
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), keys.name);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 0, 0), RLOCK_OK);
  std::atomic<int> rc{1};
  std::thread t([&] { rc = rlock_semaphore_acquire(sem.get(), 1, RLOCK_WAIT_FOREVER); });
  ASSERT_TRUE(redis.wait_numsub(sem_channel(keys.name), 1, 5000));
  ASSERT_EQ(rlock_semaphore_cancel(sem.get()), RLOCK_OK);
  t.join();
  EXPECT_EQ(rc.load(), RLOCK_ECANCELED);

  it::Token token = it::make_token();
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;
  opts.cancel = token.get();
  std::thread t2([&] { rc = rlock_semaphore_acquire_ex(sem.get(), &opts); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(rlock_cancel_token_cancel(token.get()), RLOCK_OK);
  t2.join();
  EXPECT_EQ(rc.load(), RLOCK_ECANCELED);
  EXPECT_EQ(get(redis, keys.name), "0");
}

struct AsyncResult {
  std::atomic<int> calls{0};
  std::atomic<int> status{1};
  std::atomic<int64_t> value{0};
  static void record(void* user, int status, int64_t value) {
    auto* r = static_cast<AsyncResult*>(user);
    r->status = status;
    r->value = value;
    ++r->calls;
  }
};

bool wait_for(const std::function<bool()>& done, int64_t timeout_ms) {
  const auto end = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(Semaphore, AsyncAcquiresCompleteOnceWithThePermitsAsValue) {
  Keys keys(unique_name("sem-async"));
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), keys.name);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 0, 0), RLOCK_OK);
  constexpr int kCalls = 50;
  std::vector<AsyncResult> results(kCalls);
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;
  opts.permits = 2;
  opts.wait_ms = 20000;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_EQ(rlock_semaphore_acquire_async(sem.get(), &opts, &AsyncResult::record, &results[i]),
              RLOCK_OK)
        << it::last_error();
  }
  int64_t count = 0;
  ASSERT_EQ(rlock_semaphore_add_permits(&count, sem.get(), 2 * kCalls), RLOCK_OK);
  ASSERT_TRUE(wait_for(
      [&] {
        for (auto& r : results)
          if (r.calls.load() == 0) return false;
        return true;
      },
      20000));
  for (auto& r : results) {
    EXPECT_EQ(r.calls.load(), 1);
    EXPECT_EQ(r.status.load(), RLOCK_OK);
    EXPECT_EQ(r.value.load(), 2);
  }
  EXPECT_EQ(get(redis, keys.name), "0");
  ASSERT_EQ(rlock_semaphore_release(sem.get(), 2 * kCalls), RLOCK_OK);
}

TEST(Semaphore, BadInputIsRefusedWithNothingChanged) {
  Keys keys(unique_name("sem-bad"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), name);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 2, 0), RLOCK_OK);
  for (int64_t permits : {int64_t{-1}, int64_t{2147483648}}) {
    EXPECT_FAILS_UNCHANGED(rlock_semaphore_acquire(sem.get(), permits, 0), RLOCK_EINVAL, redis,
                           name);
    EXPECT_FAILS_UNCHANGED(rlock_semaphore_release(sem.get(), permits), RLOCK_EINVAL, redis, name);
  }
  // As Redisson: 0 permits are taken and given back at once, and a count is not capped.
  EXPECT_EQ(rlock_semaphore_acquire(sem.get(), 0, 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_semaphore_release(sem.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_semaphore_acquire(sem.get(), 2147483647, 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(get(redis, name), "2");
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_release(sem.get(), 1), RLOCK_ENOTHELD, redis, name);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "holds 0"), nullptr);
  ASSERT_EQ(rlock_semaphore_acquire(sem.get(), 1, 0), RLOCK_OK);
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_release(sem.get(), 2), RLOCK_ENOTHELD, redis, name);
  ASSERT_EQ(rlock_semaphore_release(sem.get(), 1), RLOCK_OK);
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_try_set_permits(&set, sem.get(), -1, 0), RLOCK_EINVAL,
                         redis, name);
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_add_permits(nullptr, sem.get(), 0), RLOCK_EINVAL, redis,
                         name);
  // Ids belong to the expirable kind only, and the other way round.
  rlock_permit_id id;
  EXPECT_FAILS_UNCHANGED(rlock_permit_acquire(&id, sem.get(), 0, 0), RLOCK_EINVAL, redis, name);
  EXPECT_FAILS_UNCHANGED(rlock_permit_release(sem.get(), "00112233445566778899aabbccddeeff"),
                         RLOCK_EINVAL, redis, name);
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;
  opts.lease_ms = 1000;
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_acquire_ex(sem.get(), &opts), RLOCK_EINVAL, redis, name);
  opts.version = 99;
  EXPECT_EQ(rlock_semaphore_acquire_ex(sem.get(), &opts), RLOCK_EVERSION);

  // The wrong key type: a hash at the name.
  redis.command({"DEL", name});
  redis.ok({"HSET", name, "field", "1"});
  EXPECT_EQ(rlock_semaphore_acquire(sem.get(), 1, 0), RLOCK_EREDIS);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "not a count"), nullptr)
      << rlock_last_error()->message;
  int64_t count = 0;
  EXPECT_EQ(rlock_semaphore_add_permits(&count, sem.get(), 1), RLOCK_EREDIS);
  EXPECT_EQ(rlock_semaphore_available(&count, nullptr, nullptr, sem.get()), RLOCK_EREDIS);
  EXPECT_EQ(redis.hgetall(name).at("field"), "1") << "the hash was changed";
  // A string that is not a count.
  redis.command({"DEL", name});
  redis.ok({"SET", name, "many"});
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_acquire(sem.get(), 1, 0), RLOCK_EREDIS, redis, name);
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_add_permits(&count, sem.get(), 1), RLOCK_EREDIS, redis,
                         name);

  // Bad names and options.
  rlock_semaphore* s = nullptr;
  EXPECT_EQ(rlock_semaphore_new(&s, client.get(), "", nullptr), RLOCK_EINVAL);
  rlock_semaphore_options sopts = RLOCK_SEMAPHORE_OPTIONS_INIT;
  sopts.kind = static_cast<rlock_semaphore_kind>(7);
  EXPECT_EQ(rlock_semaphore_new(&s, client.get(), "x", &sopts), RLOCK_EINVAL);
  sopts.kind = RLOCK_SEMAPHORE_EXPIRABLE;
  sopts.lease_ms = -5;
  EXPECT_EQ(rlock_semaphore_new(&s, client.get(), "x", &sopts), RLOCK_EINVAL);
  EXPECT_EQ(s, nullptr);
}

// Redisson's releaseIfExists: the permits go back only to a semaphore that still exists, and the
// answer says which happened; the release's other rules (this client's permits only) stay.
TEST(Semaphore, ReleaseIfExistsGivesBackOnlyToASemaphoreThatExists) {
  Keys keys(unique_name("sem-if-exists"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), name);
  RedisConn redis(test_redis_url());
  RedisConn listener(test_redis_url());
  listener.subscribe(sem_channel(name));
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 3, 0), RLOCK_OK);
  std::string channel, payload;
  ASSERT_TRUE(listener.next_message(2000, &channel, &payload));
  ASSERT_EQ(rlock_semaphore_acquire(sem.get(), 3, 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(get(redis, name), "0");

  int released = -1;
  ASSERT_EQ(rlock_semaphore_release_if_exists(&released, sem.get(), 2), RLOCK_OK)
      << it::last_error();
  EXPECT_EQ(released, 1);
  EXPECT_EQ(get(redis, name), "2");
  ASSERT_TRUE(listener.next_message(2000, &channel, &payload));
  EXPECT_EQ(channel, sem_channel(name));
  EXPECT_EQ(payload, "2") << "publishes the new count, as release does";
  int64_t held = -1;
  ASSERT_EQ(rlock_semaphore_held(&held, sem.get()), RLOCK_OK);
  EXPECT_EQ(held, 1);

  released = -1;
  ASSERT_EQ(rlock_semaphore_release_if_exists(&released, sem.get(), 0), RLOCK_OK);
  EXPECT_EQ(released, 0) << "0 permits answer false, as in Redisson";
  EXPECT_EQ(get(redis, name), "2");

  redis.command({"DEL", name});
  released = -1;
  ASSERT_EQ(rlock_semaphore_release_if_exists(&released, sem.get(), 1), RLOCK_OK)
      << it::last_error();
  EXPECT_EQ(released, 0);
  EXPECT_EQ(redis.integer({"EXISTS", name}), 0) << "a missing semaphore must not be created";
  ASSERT_EQ(rlock_semaphore_held(&held, sem.get()), RLOCK_OK);
  EXPECT_EQ(held, 0) << "the permits went with the semaphore";
  EXPECT_FALSE(listener.next_message(200, &channel, &payload)) << "published " << payload;
  // NULL out_released is allowed.
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 1, 0), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_acquire(sem.get(), 1, 0), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_release_if_exists(nullptr, sem.get(), 1), RLOCK_OK);
  EXPECT_EQ(get(redis, name), "1");

  // Bad input: nothing changes, and the message names the problem.
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_release_if_exists(&released, sem.get(), 1), RLOCK_ENOTHELD,
                         redis, name);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "holds 0"), nullptr);
  for (int64_t permits : {int64_t{-1}, int64_t{2147483648}}) {
    EXPECT_FAILS_UNCHANGED(rlock_semaphore_release_if_exists(&released, sem.get(), permits),
                           RLOCK_EINVAL, redis, name);
    EXPECT_NE(std::strstr(rlock_last_error()->message, "permits must be from 0 to"), nullptr)
        << rlock_last_error()->message;
  }
  EXPECT_EQ(rlock_semaphore_release_if_exists(&released, nullptr, 1), RLOCK_EINVAL);
  Semaphore expirable = make_semaphore(client.get(), name, RLOCK_SEMAPHORE_EXPIRABLE);
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_release_if_exists(&released, expirable.get(), 1),
                         RLOCK_EINVAL, redis, name);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "only for a plain semaphore"), nullptr)
      << rlock_last_error()->message;
}

TEST(Semaphore, FreeingTheClientGivesBackItsPermits) {
  Keys keys(unique_name("sem-close"));
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), keys.name);
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 5, 0), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_acquire(sem.get(), 3, 0), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_release(sem.get(), 1), RLOCK_OK);
  EXPECT_EQ(get(redis, keys.name), "3");
  sem.reset();
  client.reset();  // anonymous permits: nobody else could give them back
  EXPECT_EQ(get(redis, keys.name), "5") << "the 2 permits still held were not given back";
}

TEST(Semaphore, FreedHandleIsRefused) {
  it::Client client = it::make_client();
  rlock_semaphore* s = nullptr;
  ASSERT_EQ(rlock_semaphore_new(&s, client.get(), "sem-freed", nullptr), RLOCK_OK);
  rlock_semaphore_free(s);
  EXPECT_EQ(rlock_semaphore_acquire(s, 1, 0), RLOCK_EBADHANDLE);
  rlock_semaphore_free(s);  // a second free only records the error
  EXPECT_EQ(rlock_last_error()->code, RLOCK_EBADHANDLE);
}

// ---- Permit-expirable semaphore -------------------------------------------------------------

TEST(ExpirableSemaphore, PermitIdsAndDeadlinesAreInTheSortedSet) {
  Keys keys(unique_name("psem-layout"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), name, RLOCK_SEMAPHORE_EXPIRABLE);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 3, 0), RLOCK_OK);
  const int64_t before = epoch_ms();
  rlock_permit_id id;
  ASSERT_EQ(rlock_permit_acquire(&id, sem.get(), 0, 60000), RLOCK_OK) << it::last_error();
  ASSERT_EQ(std::strlen(id.hex), 32u);
  for (char c : std::string(id.hex)) EXPECT_TRUE(std::isxdigit(c) && !std::isupper(c)) << id.hex;
  EXPECT_EQ(get(redis, name), "2");
  Reply score = redis.ok({"ZSCORE", deadlines(name), raw_id(id.hex)});
  ASSERT_FALSE(score.is_nil()) << "the member is the id's 16 raw bytes";
  const int64_t deadline = std::stoll(score.str);
  EXPECT_GE(deadline, before + 60000);
  EXPECT_LE(deadline, epoch_ms() + 60000);

  rlock_permit_id forever;
  ASSERT_EQ(rlock_permit_acquire(&forever, sem.get(), 0, RLOCK_LEASE_NONE), RLOCK_OK);
  EXPECT_EQ(redis.ok({"ZSCORE", deadlines(name), raw_id(forever.hex)}).str, "922337203685477");
  int64_t available = 0, held = 0;
  int exists = 0;
  ASSERT_EQ(rlock_semaphore_available(&available, &held, &exists, sem.get()), RLOCK_OK);
  EXPECT_EQ(available, 1);
  EXPECT_EQ(held, 2);
  EXPECT_EQ(exists, 1);

  rlock_permit_id ids[2];
  std::memcpy(ids[0].hex, id.hex, sizeof id.hex);
  std::memcpy(ids[1].hex, forever.hex, sizeof id.hex);
  ASSERT_EQ(rlock_permit_release_n(sem.get(), ids, 2), RLOCK_OK) << it::last_error();
  EXPECT_EQ(get(redis, name), "3");
  EXPECT_EQ(redis.integer({"ZCARD", deadlines(name)}), 0);
}

TEST(ExpirableSemaphore, ExpiredPermitComesBackToAWaiter) {
  Keys keys(unique_name("psem-expiry"));
  it::Client dead_client = it::make_client();
  it::ClientSettings slow;
  slow.poll_cap_ms = 30000;  // the waiter's retry at the lease's end must bring it back
  it::Client client = it::make_client(slow);
  Semaphore dead = make_semaphore(dead_client.get(), keys.name, RLOCK_SEMAPHORE_EXPIRABLE);
  Semaphore sem = make_semaphore(client.get(), keys.name, RLOCK_SEMAPHORE_EXPIRABLE);
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 1, 0), RLOCK_OK);
  constexpr int64_t kLease = 400;
  rlock_permit_id lost;
  ASSERT_EQ(rlock_permit_acquire(&lost, dead.get(), 0, kLease), RLOCK_OK);
  const auto taken = Clock::now();
  rlock_permit_id id;
  ASSERT_EQ(rlock_permit_acquire(&id, sem.get(), 10000, 60000), RLOCK_OK) << it::last_error();
  const auto after = Clock::now() - taken;
  EXPECT_GE(after, std::chrono::milliseconds(kLease - 50));
  EXPECT_LT(after, std::chrono::milliseconds(kLease + 2000)) << "not retried at the lease's end";
  std::printf(
      "the expired permit came back %lld ms after it was taken (lease %lld ms)\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(after).count()),
      static_cast<long long>(kLease));
  EXPECT_EQ(rlock_permit_release(dead.get(), lost.hex), RLOCK_ENOTHELD)
      << "the expired permit was given back, so its holder no longer has it";
  ASSERT_EQ(rlock_permit_release(sem.get(), id.hex), RLOCK_OK);
}

// Renewal is per client, as a lock's: a freed handle's permits stay renewed while the client
// lives, and its close gives them back.
TEST(ExpirableSemaphore, WatchdogRenewsAFreedHandlesPermitsUntilTheClientCloses) {
  Keys keys(unique_name("psem-watchdog"));
  it::ClientSettings fast;
  fast.watchdog_lease_ms = 600;
  it::Client client = it::make_client(fast);
  Semaphore sem = make_semaphore(client.get(), keys.name, RLOCK_SEMAPHORE_EXPIRABLE);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 1, 0), RLOCK_OK);
  rlock_permit_id id;
  ASSERT_EQ(rlock_permit_acquire(&id, sem.get(), 0, 0), RLOCK_OK) << "default lease: watchdog";
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // over 3 leases
  Reply score = redis.ok({"ZSCORE", deadlines(keys.name), raw_id(id.hex)});
  ASSERT_FALSE(score.is_nil());
  EXPECT_GT(std::stoll(score.str), epoch_ms()) << "the watchdog did not renew the permit";
  int64_t available = -1;
  ASSERT_EQ(rlock_semaphore_available(&available, nullptr, nullptr, sem.get()), RLOCK_OK);
  EXPECT_EQ(available, 0);
  sem.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // over 2 leases
  it::Client other = it::make_client();
  Semaphore reader = make_semaphore(other.get(), keys.name, RLOCK_SEMAPHORE_EXPIRABLE);
  ASSERT_EQ(rlock_semaphore_available(&available, nullptr, nullptr, reader.get()), RLOCK_OK);
  EXPECT_EQ(available, 0) << "the permit of a freed handle was not renewed";
  score = redis.ok({"ZSCORE", deadlines(keys.name), raw_id(id.hex)});
  ASSERT_FALSE(score.is_nil());
  EXPECT_GT(std::stoll(score.str), epoch_ms());
  client.reset();  // the close gives it back at once
  ASSERT_EQ(rlock_semaphore_available(&available, nullptr, nullptr, reader.get()), RLOCK_OK);
  EXPECT_EQ(available, 1) << "the client's close did not give the permit back";
  EXPECT_TRUE(redis.ok({"ZSCORE", deadlines(keys.name), raw_id(id.hex)}).is_nil());
}

// Freeing the client must not wait for the permits' watchdog to wake for its next round (a
// third of the watchdog lease, 10 s here): found by the Redisson interop peer, whose exit took
// 10 s after a watchdog permit was given back.
TEST(ExpirableSemaphore, ClientFreeDoesNotWaitForTheWatchdogRound) {
  Keys keys(unique_name("psem-watchdog-free"));
  it::ClientSettings slow;
  slow.watchdog_lease_ms = 30000;
  it::Client client = it::make_client(slow);
  Semaphore sem = make_semaphore(client.get(), keys.name, RLOCK_SEMAPHORE_EXPIRABLE);
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 1, 0), RLOCK_OK);
  rlock_permit_id id;
  ASSERT_EQ(rlock_permit_acquire(&id, sem.get(), 0, 0), RLOCK_OK) << "default lease: watchdog";
  ASSERT_EQ(rlock_permit_release(sem.get(), id.hex), RLOCK_OK);
  const Clock::time_point started = Clock::now();
  client.reset();  // the semaphore handle outlives its client
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
  EXPECT_LT(took, 2000) << "rlock_client_free waited for the watchdog's next round";
}

// The watchdog's permits go back when the client is freed, as its locks do (else they would
// stay taken for a watchdog lease); permits with a lease of their own keep it.
TEST(ExpirableSemaphore, ClientFreeGivesBackTheWatchdogPermitsOnly) {
  Keys keys(unique_name("psem-close"));
  RedisConn redis(test_redis_url());
  it::ClientSettings slow;
  slow.watchdog_lease_ms = 30000;
  it::Client client = it::make_client(slow);
  Semaphore sem = make_semaphore(client.get(), keys.name, RLOCK_SEMAPHORE_EXPIRABLE);
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 4, 0), RLOCK_OK);
  rlock_permit_id watched, leased, forever;
  ASSERT_EQ(rlock_permit_acquire(&watched, sem.get(), 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
  ASSERT_EQ(rlock_permit_acquire(&leased, sem.get(), 0, 60000), RLOCK_OK);
  ASSERT_EQ(rlock_permit_acquire(&forever, sem.get(), 0, RLOCK_LEASE_NONE), RLOCK_OK);
  EXPECT_EQ(get(redis, keys.name), "1");
  client.reset();  // the semaphore handle outlives its client
  EXPECT_EQ(get(redis, keys.name), "2") << "the watchdog's permit was not given back";
  EXPECT_TRUE(redis.ok({"ZSCORE", deadlines(keys.name), raw_id(watched.hex)}).is_nil());
  EXPECT_FALSE(redis.ok({"ZSCORE", deadlines(keys.name), raw_id(leased.hex)}).is_nil());
  EXPECT_FALSE(redis.ok({"ZSCORE", deadlines(keys.name), raw_id(forever.hex)}).is_nil());
}

TEST(ExpirableSemaphore, UpdateLeaseMovesTheDeadline) {
  Keys keys(unique_name("psem-update"));
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), keys.name, RLOCK_SEMAPHORE_EXPIRABLE);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 1, 0), RLOCK_OK);
  rlock_permit_id id;
  ASSERT_EQ(rlock_permit_acquire(&id, sem.get(), 0, 1000), RLOCK_OK);
  ASSERT_EQ(rlock_permit_update_lease(sem.get(), id.hex, RLOCK_LEASE_NONE), RLOCK_OK);
  EXPECT_EQ(redis.ok({"ZSCORE", deadlines(keys.name), raw_id(id.hex)}).str, "922337203685477");
  ASSERT_EQ(rlock_permit_update_lease(sem.get(), id.hex, 100), RLOCK_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(rlock_permit_update_lease(sem.get(), id.hex, 1000), RLOCK_ENOTHELD)
      << "an expired permit cannot be revived";
  EXPECT_EQ(get(redis, keys.name), "1") << "the expired permit went back";
}

// Redisson's setPermits: the total (available + held) becomes the number given; the available
// count moves by the difference, below 0 while more are held.
TEST(ExpirableSemaphore, SetPermitsSetsTheTotalCountingHeldPermits) {
  Keys keys(unique_name("psem-set"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), name, RLOCK_SEMAPHORE_EXPIRABLE);
  RedisConn redis(test_redis_url());
  RedisConn listener(test_redis_url());
  listener.subscribe(sem_channel(name));
  std::string channel, payload;

  int64_t available = -100;
  ASSERT_EQ(rlock_semaphore_set_permits(&available, sem.get(), 3), RLOCK_OK) << it::last_error();
  EXPECT_EQ(available, 3);
  EXPECT_EQ(get(redis, name), "3") << "a missing semaphore is made with the total";
  ASSERT_TRUE(listener.next_message(2000, &channel, &payload));
  EXPECT_EQ(payload, "3");

  rlock_permit_id ids[2];
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;
  opts.permits = 2;
  opts.wait_ms = 0;
  opts.lease_ms = 60000;
  opts.ids = ids;
  ASSERT_EQ(rlock_semaphore_acquire_ex(sem.get(), &opts), RLOCK_OK) << it::last_error();
  EXPECT_EQ(get(redis, name), "1");

  ASSERT_EQ(rlock_semaphore_set_permits(&available, sem.get(), 5), RLOCK_OK) << it::last_error();
  EXPECT_EQ(available, 3) << "5 in all, 2 of them held";
  EXPECT_EQ(get(redis, name), "3");
  ASSERT_TRUE(listener.next_message(2000, &channel, &payload));
  EXPECT_EQ(payload, "3") << "a raised count is published, so waiters try again";

  ASSERT_EQ(rlock_semaphore_set_permits(&available, sem.get(), 1), RLOCK_OK) << it::last_error();
  EXPECT_EQ(available, -1) << "1 in all while 2 are held";
  EXPECT_EQ(get(redis, name), "-1");
  ASSERT_EQ(rlock_semaphore_set_permits(nullptr, sem.get(), 1), RLOCK_OK) << "same total again";
  EXPECT_EQ(get(redis, name), "-1");
  EXPECT_FALSE(listener.next_message(200, &channel, &payload))
      << "a count of 0 or less wakes nobody and is not published; got " << payload;
  EXPECT_EQ(redis.integer({"ZCARD", deadlines(name)}), 2) << "held permits stay held";

  ASSERT_EQ(rlock_permit_release_n(sem.get(), ids, 2), RLOCK_OK) << it::last_error();
  EXPECT_EQ(get(redis, name), "1") << "the total is reached as the permits come back";

  // An expired permit goes back before the total is worked out.
  rlock_permit_id short_lived;
  ASSERT_EQ(rlock_permit_acquire(&short_lived, sem.get(), 0, 100), RLOCK_OK);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  ASSERT_EQ(rlock_semaphore_set_permits(&available, sem.get(), 2), RLOCK_OK) << it::last_error();
  EXPECT_EQ(available, 2);
  EXPECT_EQ(get(redis, name), "2");
  EXPECT_EQ(redis.integer({"ZCARD", deadlines(name)}), 0);
  ASSERT_EQ(rlock_semaphore_set_permits(&available, sem.get(), 0), RLOCK_OK);
  EXPECT_EQ(get(redis, name), "0");

  // Bad input: nothing changes, and the message names the problem.
  for (int64_t permits : {int64_t{-1}, int64_t{2147483648}}) {
    EXPECT_FAILS_UNCHANGED(rlock_semaphore_set_permits(&available, sem.get(), permits),
                           RLOCK_EINVAL, redis, name);
    EXPECT_NE(std::strstr(rlock_last_error()->message, "permits must be from 0 to 2147483647"),
              nullptr)
        << rlock_last_error()->message;
  }
  EXPECT_EQ(rlock_semaphore_set_permits(&available, nullptr, 1), RLOCK_EINVAL);
  Semaphore plain = make_semaphore(client.get(), name);
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_set_permits(&available, plain.get(), 4), RLOCK_EINVAL,
                         redis, name);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "only for a permit-expirable semaphore"),
            nullptr)
      << rlock_last_error()->message;
  redis.command({"DEL", deadlines(name)});
  redis.ok({"SET", deadlines(name), "x"});
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_set_permits(&available, sem.get(), 4), RLOCK_EREDIS, redis,
                         name);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "not a sorted set"), nullptr)
      << rlock_last_error()->message;
}

// Redisson's getLeaseTime: the ms left on a held permit, -1 (RLOCK_LEASE_NONE in C) for a
// permit without lease, and "not held" for one that is not held.
TEST(ExpirableSemaphore, LeaseTimeTellsWhatIsLeftOfAPermitsLease) {
  Keys keys(unique_name("psem-lease-time"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), name, RLOCK_SEMAPHORE_EXPIRABLE);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 4, 0), RLOCK_OK);

  rlock_permit_id leased, forever, watched, brief;
  ASSERT_EQ(rlock_permit_acquire(&leased, sem.get(), 0, 60000), RLOCK_OK);
  int64_t left = 0;
  ASSERT_EQ(rlock_permit_lease_time(&left, sem.get(), leased.hex), RLOCK_OK) << it::last_error();
  EXPECT_GT(left, 50000);
  EXPECT_LE(left, 60000);
  ASSERT_EQ(rlock_permit_acquire(&forever, sem.get(), 0, RLOCK_LEASE_NONE), RLOCK_OK);
  ASSERT_EQ(rlock_permit_lease_time(&left, sem.get(), forever.hex), RLOCK_OK) << it::last_error();
  EXPECT_EQ(left, RLOCK_LEASE_NONE);
  ASSERT_EQ(rlock_permit_acquire(&watched, sem.get(), 0, RLOCK_LEASE_WATCHDOG), RLOCK_OK);
  ASSERT_EQ(rlock_permit_lease_time(&left, sem.get(), watched.hex), RLOCK_OK) << it::last_error();
  EXPECT_GT(left, 0);
  EXPECT_LE(left, 30000) << "the watchdog's lease (30 s by default)";
  // Upper-case hex names the same permit.
  std::string upper(leased.hex);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_EQ(rlock_permit_lease_time(&left, sem.get(), upper.c_str()), RLOCK_OK);
  EXPECT_GT(left, 50000);
  // A deadline written by another client (as Redisson writes it) is read the same way.
  const std::string other = "00112233445566778899aabbccddeeff";
  redis.ok({"ZADD", deadlines(name), std::to_string(epoch_ms() + 5000), raw_id(other)});
  ASSERT_EQ(rlock_permit_lease_time(&left, sem.get(), other.c_str()), RLOCK_OK);
  EXPECT_GT(left, 3000);
  EXPECT_LE(left, 5000);

  // Not held: released, never taken, or expired (which also gives the permit back).
  ASSERT_EQ(rlock_permit_release(sem.get(), leased.hex), RLOCK_OK);
  left = 77;
  EXPECT_EQ(rlock_permit_lease_time(&left, sem.get(), leased.hex), RLOCK_ENOTHELD);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "is not held"), nullptr)
      << rlock_last_error()->message;
  EXPECT_EQ(left, 77) << "nothing is written on failure";
  EXPECT_EQ(rlock_permit_lease_time(&left, sem.get(), "ffeeddccbbaa99887766554433221100"),
            RLOCK_ENOTHELD);
  ASSERT_EQ(rlock_permit_acquire(&brief, sem.get(), 0, 100), RLOCK_OK);
  const std::string before = get(redis, name);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(rlock_permit_lease_time(&left, sem.get(), brief.hex), RLOCK_ENOTHELD);
  EXPECT_EQ(std::stoll(get(redis, name)), std::stoll(before) + 1)
      << "the expired permit went back, as Redisson's getLeaseTime gives it back";

  // Bad input: the message names the problem; nothing changes.
  for (const char* bad :
       {"", "xyz", "00112233445566778899aabbccddeeffaa", "0011223344556677889gaabbccddeeff"}) {
    EXPECT_FAILS_UNCHANGED(rlock_permit_lease_time(&left, sem.get(), bad), RLOCK_EINVAL, redis,
                           name);
    EXPECT_NE(std::strstr(rlock_last_error()->message, "a permit id is 32 hex digits"), nullptr)
        << rlock_last_error()->message;
  }
  EXPECT_EQ(rlock_permit_lease_time(nullptr, sem.get(), forever.hex), RLOCK_EINVAL);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "out_lease_ms"), nullptr);
  EXPECT_EQ(rlock_permit_lease_time(&left, sem.get(), nullptr), RLOCK_EINVAL);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "id must not be NULL"), nullptr);
  EXPECT_EQ(rlock_permit_lease_time(&left, nullptr, forever.hex), RLOCK_EINVAL);
  Semaphore plain = make_semaphore(client.get(), name);
  EXPECT_FAILS_UNCHANGED(rlock_permit_lease_time(&left, plain.get(), forever.hex), RLOCK_EINVAL,
                         redis, name);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "only for a permit-expirable semaphore"),
            nullptr);
}

TEST(ExpirableSemaphore, BadIdsAndUnknownIdsChangeNothing) {
  Keys keys(unique_name("psem-bad"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Semaphore sem = make_semaphore(client.get(), name, RLOCK_SEMAPHORE_EXPIRABLE);
  RedisConn redis(test_redis_url());
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 2, 0), RLOCK_OK);
  rlock_permit_id id;
  ASSERT_EQ(rlock_permit_acquire(&id, sem.get(), 0, 60000), RLOCK_OK);
  for (const char* bad :
       {"", "xyz", "00112233445566778899aabbccddeeffaa", "0011223344556677889gaabbccddeeff"}) {
    EXPECT_FAILS_UNCHANGED(rlock_permit_release(sem.get(), bad), RLOCK_EINVAL, redis, name);
    EXPECT_FAILS_UNCHANGED(rlock_permit_update_lease(sem.get(), bad, 1000), RLOCK_EINVAL, redis,
                           name);
  }
  EXPECT_FAILS_UNCHANGED(rlock_permit_release(sem.get(), "00112233445566778899aabbccddeeff"),
                         RLOCK_ENOTHELD, redis, name);
  // All or none: a held id with an unknown one releases neither.
  rlock_permit_id ids[2];
  std::memcpy(ids[0].hex, id.hex, sizeof id.hex);
  std::strcpy(ids[1].hex, "00112233445566778899aabbccddeeff");
  EXPECT_FAILS_UNCHANGED(rlock_permit_release_n(sem.get(), ids, 2), RLOCK_ENOTHELD, redis, name);
  EXPECT_EQ(redis.integer({"ZCARD", deadlines(name)}), 1);
  std::memcpy(ids[1].hex, id.hex, sizeof id.hex);
  EXPECT_FAILS_UNCHANGED(rlock_permit_release_n(sem.get(), ids, 2), RLOCK_EINVAL, redis, name);
  EXPECT_FAILS_UNCHANGED(rlock_permit_release_n(sem.get(), ids, 0), RLOCK_EINVAL, redis, name);
  EXPECT_FAILS_UNCHANGED(rlock_permit_acquire(&id, sem.get(), 0, -7), RLOCK_EINVAL, redis, name);
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;  // no place for the ids
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_acquire_ex(sem.get(), &opts), RLOCK_EINVAL, redis, name);
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_release(sem.get(), 1), RLOCK_EINVAL, redis, name);
  EXPECT_FAILS_UNCHANGED(rlock_semaphore_try_set_permits(&set, sem.get(), 1, 5000), RLOCK_EINVAL,
                         redis, name);
  // The deadlines key of the wrong type.
  redis.command({"DEL", deadlines(name)});
  redis.ok({"SET", deadlines(name), "x"});
  EXPECT_FAILS_UNCHANGED(rlock_permit_acquire(&id, sem.get(), 0, 1000), RLOCK_EREDIS, redis, name);
  EXPECT_NE(std::strstr(rlock_last_error()->message, "not a sorted set"), nullptr)
      << rlock_last_error()->message;
}

// ---- Count-down latch -----------------------------------------------------------------------

TEST(Latch, CountDownToZeroOpensItForEveryWaiter) {
  Keys keys(unique_name("latch"));
  const std::string& name = keys.name;
  it::ClientSettings slow;
  slow.poll_cap_ms = 30000;
  it::Client client = it::make_client();
  it::Client waiters_client = it::make_client(slow);
  Latch latch = make_latch(client.get(), name);
  Latch waiting = make_latch(waiters_client.get(), name);
  RedisConn redis(test_redis_url());
  RedisConn listener(test_redis_url());
  listener.subscribe(latch_channel(name));
  int set = 0;
  ASSERT_EQ(rlock_latch_try_set_count(&set, latch.get(), 2), RLOCK_OK) << it::last_error();
  EXPECT_EQ(set, 1);
  EXPECT_EQ(get(redis, name), "2");
  std::string channel, payload;
  ASSERT_TRUE(listener.next_message(2000, &channel, &payload));
  EXPECT_EQ(payload, "1") << "a set latch announces itself closed";
  ASSERT_EQ(rlock_latch_try_set_count(&set, latch.get(), 5), RLOCK_OK);
  EXPECT_EQ(set, 0);

  constexpr int kWaiters = 4;
  std::atomic<int> opened{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&] {
      if (rlock_latch_await(waiting.get(), 20000, nullptr) == RLOCK_OK) ++opened;
    });
  }
  ASSERT_TRUE(redis.wait_numsub(latch_channel(name), 2, 5000));
  int64_t left = -1;
  ASSERT_EQ(rlock_latch_count_down(&left, latch.get()), RLOCK_OK);
  EXPECT_EQ(left, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(opened.load(), 0) << "opened before the count reached 0";
  const auto counted = Clock::now();
  ASSERT_EQ(rlock_latch_count_down(&left, latch.get()), RLOCK_OK);
  EXPECT_EQ(left, 0);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(opened.load(), kWaiters);
  EXPECT_LT(Clock::now() - counted, std::chrono::milliseconds(5000)) << "not woken by the message";
  EXPECT_FALSE(redis.exists(name)) << "an open latch has no key";
  ASSERT_TRUE(listener.next_message(2000, &channel, &payload));
  EXPECT_EQ(payload, "0") << "the zero-count message";
  ASSERT_EQ(rlock_latch_count_down(&left, latch.get()), RLOCK_OK);
  EXPECT_EQ(left, 0) << "an open latch stays open";
  EXPECT_FALSE(redis.exists(name));
  int64_t count = -1;
  ASSERT_EQ(rlock_latch_count(&count, latch.get()), RLOCK_OK);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(rlock_latch_await(latch.get(), 0, nullptr), RLOCK_OK) << "open: no wait";
}

TEST(Latch, AwaitTimesOutAndIsCancelled) {
  Keys keys(unique_name("latch-wait"));
  it::Client client = it::make_client();
  Latch latch = make_latch(client.get(), keys.name);
  int set = 0;
  ASSERT_EQ(rlock_latch_try_set_count(&set, latch.get(), 1), RLOCK_OK);
  const auto start = Clock::now();
  EXPECT_EQ(rlock_latch_await(latch.get(), 300, nullptr), RLOCK_ETIMEDOUT);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(290));
  EXPECT_EQ(rlock_latch_await(latch.get(), 0, nullptr), RLOCK_ETIMEDOUT);
  it::Token token = it::make_token();
  std::atomic<int> rc{1};
  std::thread t([&] { rc = rlock_latch_await(latch.get(), RLOCK_WAIT_FOREVER, token.get()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(rlock_cancel_token_cancel(token.get()), RLOCK_OK);
  t.join();
  EXPECT_EQ(rc.load(), RLOCK_ECANCELED);
  std::thread t2([&] { rc = rlock_latch_await(latch.get(), RLOCK_WAIT_FOREVER, nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(rlock_latch_cancel(latch.get()), RLOCK_OK);
  t2.join();
  EXPECT_EQ(rc.load(), RLOCK_ECANCELED);
}

TEST(Latch, AsyncAwaitsAreReleasedByOneCountDown) {
  Keys keys(unique_name("latch-async"));
  it::Client client = it::make_client();
  Latch latch = make_latch(client.get(), keys.name);
  int set = 0;
  ASSERT_EQ(rlock_latch_try_set_count(&set, latch.get(), 1), RLOCK_OK);
  constexpr int kAwaits = 100;
  std::vector<AsyncResult> results(kAwaits);
  for (int i = 0; i < kAwaits; ++i) {
    ASSERT_EQ(
        rlock_latch_await_async(latch.get(), 20000, nullptr, &AsyncResult::record, &results[i]),
        RLOCK_OK);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (auto& r : results) EXPECT_EQ(r.calls.load(), 0) << "completed before the count-down";
  ASSERT_EQ(rlock_latch_count_down(nullptr, latch.get()), RLOCK_OK);
  ASSERT_TRUE(wait_for(
      [&] {
        for (auto& r : results)
          if (r.calls.load() == 0) return false;
        return true;
      },
      10000));
  for (auto& r : results) {
    EXPECT_EQ(r.calls.load(), 1);
    EXPECT_EQ(r.status.load(), RLOCK_OK);
  }
}

TEST(Latch, BadInputAndDelete) {
  Keys keys(unique_name("latch-bad"));
  const std::string& name = keys.name;
  it::Client client = it::make_client();
  Latch latch = make_latch(client.get(), name);
  RedisConn redis(test_redis_url());
  int set = 0;
  EXPECT_FAILS_UNCHANGED(rlock_latch_try_set_count(&set, latch.get(), 0), RLOCK_EINVAL, redis,
                         name);
  EXPECT_FAILS_UNCHANGED(rlock_latch_try_set_count(&set, latch.get(), -3), RLOCK_EINVAL, redis,
                         name);
  EXPECT_FAILS_UNCHANGED(rlock_latch_try_set_count(&set, latch.get(), 1000000000000000),
                         RLOCK_EINVAL, redis, name);
  EXPECT_FALSE(redis.exists(name));
  redis.ok({"HSET", name, "f", "v"});
  int64_t left = 0;
  EXPECT_EQ(rlock_latch_count_down(&left, latch.get()), RLOCK_EREDIS);
  EXPECT_EQ(rlock_latch_count(&left, latch.get()), RLOCK_EREDIS);
  EXPECT_EQ(rlock_latch_await(latch.get(), 0, nullptr), RLOCK_EREDIS);
  EXPECT_EQ(redis.hgetall(name).at("f"), "v");
  redis.command({"DEL", name});
  ASSERT_EQ(rlock_latch_try_set_count(&set, latch.get(), 3), RLOCK_OK);
  int deleted = 0;
  ASSERT_EQ(rlock_latch_delete(&deleted, latch.get()), RLOCK_OK);
  EXPECT_EQ(deleted, 1);
  EXPECT_FALSE(redis.exists(name));
  rlock_latch* l = nullptr;
  EXPECT_EQ(rlock_latch_new(&l, client.get(), ""), RLOCK_EINVAL);
  EXPECT_EQ(rlock_latch_new(&l, client.get(), nullptr), RLOCK_EINVAL);
}

}  // namespace
