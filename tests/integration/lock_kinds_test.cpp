// The fenced lock and the spin lock: what each adds to the reentrant lock.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "it_support.hpp"

using namespace rlock_test;
using Clock = std::chrono::steady_clock;

namespace {

it::Lock make_kind_lock(rlock_client* client, const std::string& name, rlock_lock_kind kind,
                        int64_t lease_ms = 0) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = kind;
  if (lease_ms != 0) opts.lease_ms = lease_ms;
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n failed: " + it::last_error());
  }
  return it::Lock(l);
}

// Acquires and returns the token the acquire reported (0 if the acquire failed).
int64_t acquire_token(rlock_lock* lock, int64_t thread_id = 0, int64_t wait_ms = 0) {
  int64_t token = 0;
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  opts.thread_id = thread_id;
  opts.token = &token;
  EXPECT_EQ(rlock_acquire_ex(lock, &opts), RLOCK_OK) << it::last_error();
  return token;
}

std::string token_key(const std::string& name) { return "redisson_lock_token:{" + name + "}"; }

TEST(Fenced, TokensStrictlyIncreaseAcrossReentriesHoldersAndClients) {
  const std::string name = unique_name("fenced");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  it::Client b = it::make_client();
  it::Lock la = make_kind_lock(a.get(), name, RLOCK_LOCK_FENCED);
  it::Lock lb = make_kind_lock(b.get(), name, RLOCK_LOCK_FENCED);

  int64_t t1 = acquire_token(la.get());
  int64_t t2 = acquire_token(la.get());  // re-entry
  EXPECT_GT(t1, 0);
  EXPECT_GT(t2, t1);
  int64_t current = 0;
  EXPECT_EQ(rlock_lock_token_for(&current, la.get(), RLOCK_THREAD_CURRENT), RLOCK_OK);
  EXPECT_EQ(current, t2);
  EXPECT_EQ(rlock_release(la.get()), RLOCK_OK);
  EXPECT_EQ(rlock_release(la.get()), RLOCK_OK);
  EXPECT_EQ(rlock_lock_token_for(&current, la.get(), RLOCK_THREAD_CURRENT), RLOCK_ENOTHELD);

  int64_t t3 = acquire_token(lb.get());  // another client
  EXPECT_GT(t3, t2);
  EXPECT_EQ(rlock_release(lb.get()), RLOCK_OK);
  int64_t t4 = acquire_token(la.get(), 777);  // another owner of the first client
  EXPECT_GT(t4, t3);
  EXPECT_EQ(rlock_release_for(la.get(), 777), RLOCK_OK);

  // The counter is Redisson's key, never expires, and holds the last token handed out.
  EXPECT_EQ(redis.pttl(token_key(name)), -1);
  EXPECT_EQ(redis.ok({"GET", token_key(name)}).str, std::to_string(t4));
  redis.del(token_key(name));
}

TEST(Fenced, FencedAcquireWithoutAskingStillAdvancesTheCounter) {
  const std::string name = unique_name("fenced-plain");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client c = it::make_client();
  it::Lock lock = make_kind_lock(c.get(), name, RLOCK_LOCK_FENCED);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  int64_t token = 0;
  EXPECT_EQ(rlock_lock_token_for(&token, lock.get(), RLOCK_THREAD_CURRENT), RLOCK_OK);
  EXPECT_EQ(redis.ok({"GET", token_key(name)}).str, std::to_string(token));
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK);
  redis.del(token_key(name));
}

TEST(Fenced, ReentrantLockGivesTokensOnlyWhenAskedFromTheSameSequence) {
  const std::string name = unique_name("fenced-reentrant");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client c = it::make_client();
  it::Lock plain = it::make_lock(c.get(), name);
  it::Lock fenced = make_kind_lock(c.get(), name, RLOCK_LOCK_FENCED);

  ASSERT_EQ(rlock_acquire(plain.get(), 0), RLOCK_OK);
  EXPECT_FALSE(redis.exists(token_key(name))) << "a plain acquire must not touch the counter";
  int64_t none = 0;
  EXPECT_EQ(rlock_lock_token_for(&none, plain.get(), RLOCK_THREAD_CURRENT), RLOCK_ENOTHELD);
  EXPECT_EQ(rlock_release(plain.get()), RLOCK_OK);

  int64_t t1 = acquire_token(fenced.get());
  EXPECT_EQ(rlock_release(fenced.get()), RLOCK_OK);
  int64_t t2 = acquire_token(plain.get());  // asked on the reentrant lock: same sequence
  EXPECT_GT(t2, t1);
  EXPECT_EQ(rlock_release(plain.get()), RLOCK_OK);
  redis.del(token_key(name));
}

// FAULTS.md A2: a holder paused past its lease comes back and writes with its old token; the
// resource refuses it, its release reports the loss, and the new holder's key is untouched.
TEST(Fenced, PausedHolderStaleWriteIsRejected) {
  const std::string name = unique_name("fenced-a2");
  const std::string resource = unique_name("fenced-a2-resource");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  Process holder({RLOCK_IT_WORKER, "fenced", it::server_url(), name, resource, "1000"});
  std::string line;
  ASSERT_TRUE(holder.read_line(&line, 10000)) << "the holder did not acquire";
  ASSERT_EQ(line.rfind("acquired ", 0), 0u) << line;
  const int64_t t1 = std::stoll(line.substr(9));

  holder.kill(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));  // 3 x the lease
  it::Client c = it::make_client();
  it::Lock lock = make_kind_lock(c.get(), name, RLOCK_LOCK_FENCED, 10000);
  const int64_t t2 = acquire_token(lock.get(), 0, 2000);
  ASSERT_GT(t2, t1);
  const std::string value = "new holder";
  int accepted = -1;
  ASSERT_EQ(rlock_fenced_write(&accepted, c.get(), resource.data(), resource.size(), value.data(),
                               value.size(), t2),
            RLOCK_OK)
      << it::last_error();
  EXPECT_EQ(accepted, 1);
  const auto fields_before = redis.hgetall(name);
  const long long pttl_before = redis.pttl(name);

  holder.kill(SIGCONT);
  holder.kill(SIGUSR1);
  bool refused = false, lost_reported = false;
  int release_rc = 0;
  auto give_up = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < give_up && holder.read_line(&line, 10000)) {
    if (line == "write refused") refused = true;
    if (line == "write accepted") ADD_FAILURE() << "the stale holder's write was accepted";
    if (line.rfind("lost ", 0) == 0) lost_reported = true;
    if (line.rfind("release ", 0) == 0) {
      release_rc = std::stoi(line.substr(8));
      break;
    }
  }
  EXPECT_TRUE(refused);
  EXPECT_EQ(release_rc, RLOCK_ELOST);
  int status = 0;
  EXPECT_TRUE(holder.wait(10000, &status));
  (void)lost_reported;  // the loss is reported by the release; the callback may race it

  EXPECT_EQ(redis.ok({"GET", resource}).str, value);
  EXPECT_EQ(redis.hgetall(name), fields_before) << "the stale holder touched the new holder's key";
  EXPECT_LE(redis.pttl(name), pttl_before) << "the stale holder extended the new holder's lease";
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK);
  redis.del(token_key(name));
  redis.del(resource);
  redis.del("rlock_fence:{" + resource + "}");
}

TEST(Fenced, FencedWriteAcceptsEqualAndNewerTokensOnly) {
  const std::string resource = unique_name("fence");
  RedisConn redis(test_redis_url());
  it::Client c = it::make_client();
  auto write = [&](int64_t token, const std::string& value) {
    int accepted = -1;
    EXPECT_EQ(rlock_fenced_write(&accepted, c.get(), resource.data(), resource.size(), value.data(),
                                 value.size(), token),
              RLOCK_OK)
        << it::last_error();
    return accepted;
  };
  EXPECT_EQ(write(5, "five"), 1);
  EXPECT_EQ(write(5, "five again"), 1);
  EXPECT_EQ(write(4, "four"), 0);
  EXPECT_EQ(redis.ok({"GET", resource}).str, "five again");
  EXPECT_EQ(write(9, "nine"), 1);
  EXPECT_EQ(redis.ok({"GET", "rlock_fence:{" + resource + "}"}).str, "9");
  int accepted = -1;
  EXPECT_EQ(rlock_fenced_write(&accepted, c.get(), resource.data(), resource.size(), "x", 1, -1),
            RLOCK_EINVAL);
  EXPECT_EQ(rlock_fenced_write(&accepted, c.get(), nullptr, 0, "x", 1, 1), RLOCK_EINVAL);
  EXPECT_EQ(rlock_fenced_write(&accepted, c.get(), "", 0, "x", 1, 1), RLOCK_EINVAL);
  EXPECT_EQ(rlock_fenced_write(nullptr, c.get(), resource.data(), resource.size(), "x", 1, 1),
            RLOCK_EINVAL);
  EXPECT_EQ(rlock_fenced_write(&accepted, nullptr, resource.data(), resource.size(), "x", 1, 1),
            RLOCK_EINVAL);
  EXPECT_EQ(redis.ok({"GET", resource}).str, "nine") << "a refused call wrote anyway";
  redis.del(resource);
  redis.del("rlock_fence:{" + resource + "}");
}

TEST(Spin, WaitsWithoutSubscribingAndGetsTheLockAfterRelease) {
  const std::string name = unique_name("spin");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client c = it::make_client();
  it::Lock lock = make_kind_lock(c.get(), name, RLOCK_LOCK_SPIN);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK);
  Clock::time_point released;
  int rc = -100;
  std::thread waiter([&] { rc = it::acquire(lock.get(), 10000, 0, 4242); });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(redis.numsub(lock_channel(name)), 0) << "a spin lock must not use pub/sub";
  released = Clock::now();
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK);
  waiter.join();
  auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - released);
  EXPECT_EQ(rc, RLOCK_OK) << it::last_error();
  // Backoff is capped at 128 ms (with jitter): generous bound for a loaded machine.
  EXPECT_LT(took.count(), 1000);
  EXPECT_EQ(rlock_release_for(lock.get(), 4242), RLOCK_OK);
}

TEST(Spin, WaitTimeAndCancelAreHonoured) {
  const std::string name = unique_name("spin-wait");
  LockKeys cleanup(name);
  it::Client c = it::make_client();
  it::Lock lock = make_kind_lock(c.get(), name, RLOCK_LOCK_SPIN);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK);
  auto start = Clock::now();
  EXPECT_EQ(it::acquire(lock.get(), 300, 0, 99), RLOCK_ETIMEDOUT);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  EXPECT_GE(waited.count(), 290);
  EXPECT_LT(waited.count(), 1300);

  int rc = -100;
  std::thread waiter([&] { rc = it::acquire(lock.get(), RLOCK_WAIT_FOREVER, 0, 98); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto cancelled = Clock::now();
  EXPECT_EQ(rlock_cancel(lock.get()), RLOCK_OK);
  waiter.join();
  EXPECT_EQ(rc, RLOCK_ECANCELED);
  EXPECT_LT(Clock::now() - cancelled, std::chrono::milliseconds(500));
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK);
}

TEST(LockKinds, BadKindAndBackoffAreRefused) {
  it::Client c = it::make_client();
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  rlock_lock* l = nullptr;
  for (int kind : {-1, 8, 99}) {
    std::memcpy(&opts.kind, &kind, sizeof kind);  // out of range on purpose, as C allows
    EXPECT_EQ(rlock_lock_new(&l, c.get(), "k", &opts), RLOCK_EINVAL) << kind;
    EXPECT_NE(it::last_error().find("kind"), std::string::npos);
    EXPECT_EQ(l, nullptr);
  }
  opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = RLOCK_LOCK_SPIN;
  opts.spin_initial_ms = -1;
  EXPECT_EQ(rlock_lock_new(&l, c.get(), "k", &opts), RLOCK_EINVAL);
  opts.spin_initial_ms = 50;
  opts.spin_max_ms = 10;
  EXPECT_EQ(rlock_lock_new(&l, c.get(), "k", &opts), RLOCK_EINVAL);
  EXPECT_NE(it::last_error().find("spin"), std::string::npos);
  // Version 1 options (before kinds existed) still work and mean a reentrant lock.
  rlock_lock_options v1 = RLOCK_LOCK_OPTIONS_INIT;
  v1.version = 1;
  const int bad_kind = 99;
  std::memcpy(&v1.kind, &bad_kind, sizeof bad_kind);  // not read at version 1
  EXPECT_EQ(rlock_lock_new(&l, c.get(), "k", &v1), RLOCK_OK) << it::last_error();
  rlock_lock_free(l);
}

}  // namespace
