// The Lua scripts' own guarantees, run through the core against the fixture server: a retried
// release is applied once (the unlock latch), an ambiguous acquire is undone only if it
// happened, and one renew call answers for many locks.
#include "rlock/core/scripts.hpp"

#include <gtest/gtest.h>

#include <string>

#include "rlock/core/client.hpp"
#include "rlock/core/config.hpp"
#include "rlock/core/names.hpp"
#include "test_redis.hpp"

namespace core = rlock::core;
using rlock_test::LockKeys;
using rlock_test::RedisConn;

namespace {

std::shared_ptr<core::Client> make_client() {
  core::ClientConfig config;
  config.endpoint = core::parse_url(rlock_test::test_redis_url());
  return core::Client::create(config);
}

core::Reply run(core::Client& client, const core::Script& script, const core::Args& keys,
                const core::Args& argv) {
  return core::eval_script(client.transport(), script, keys, argv, core::Retry::No);
}

TEST(Scripts, RetriedReleaseWithTheSameLatchIsAppliedOnce) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string name = rlock_test::unique_name("latch");
  LockKeys cleanup(name);
  const std::string owner = client->owner(7);
  const std::string channel = core::lock_channel(name);
  for (int i = 0; i < 2; ++i) {
    core::Reply r = run(*client, core::scripts::acquire, {name}, {"30000", owner});
    ASSERT_EQ(r.elements.at(0).integer, 1);
  }
  const std::string latch = core::unlock_latch(name, "request-1");
  core::Reply first =
      run(*client, core::scripts::release, {name, channel, latch}, {"30000", owner, "1", "5000"});
  ASSERT_EQ(first.type, core::Reply::Type::Integer) << first.str;
  EXPECT_EQ(first.integer, 1);
  // The retry of the same request (same latch) answers as the first did and changes nothing.
  core::Reply retry =
      run(*client, core::scripts::release, {name, channel, latch}, {"30000", owner, "1", "5000"});
  EXPECT_EQ(retry.integer, 1);
  EXPECT_EQ(redis.hgetall(name).at(owner), "1");
  EXPECT_GT(redis.pttl(latch), 0) << "the latch must expire by itself";
  // A new request releases the last hold.
  core::Reply last =
      run(*client, core::scripts::release, {name, channel, core::unlock_latch(name, "request-2")},
          {"30000", owner, "1", "5000"});
  EXPECT_EQ(last.integer, 0);
  EXPECT_FALSE(redis.exists(name));
  redis.del(latch);
  redis.del(core::unlock_latch(name, "request-2"));
}

TEST(Scripts, UndoAcquireTakesBackOnlyAnAppliedAcquire) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string name = rlock_test::unique_name("undo");
  LockKeys cleanup(name);
  const std::string owner = client->owner(9);
  const std::string channel = core::lock_channel(name);
  ASSERT_EQ(run(*client, core::scripts::acquire, {name}, {"30000", owner}).elements.at(0).integer,
            1);
  // An acquire that "would have made" count 2 never happened: nothing to undo.
  EXPECT_EQ(
      run(*client, core::scripts::undo_acquire, {name, channel}, {owner, "2", "30000"}).integer, 0);
  EXPECT_EQ(redis.hgetall(name).at(owner), "1");
  ASSERT_EQ(run(*client, core::scripts::acquire, {name}, {"30000", owner}).elements.at(0).integer,
            1);
  EXPECT_EQ(
      run(*client, core::scripts::undo_acquire, {name, channel}, {owner, "2", "30000"}).integer, 1);
  EXPECT_EQ(redis.hgetall(name).at(owner), "1");
  EXPECT_EQ(
      run(*client, core::scripts::undo_acquire, {name, channel}, {owner, "1", "30000"}).integer, 1);
  EXPECT_FALSE(redis.exists(name));
}

TEST(Scripts, OneRenewCallAnswersForEveryLock) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string held = rlock_test::unique_name("renew-held");
  const std::string gone = rlock_test::unique_name("renew-gone");
  const std::string wrong_type = rlock_test::unique_name("renew-string");
  LockKeys c1(held), c2(gone), c3(wrong_type);
  const std::string owner = client->owner(11);
  ASSERT_EQ(run(*client, core::scripts::acquire, {held}, {"1000", owner}).elements.at(0).integer,
            1);
  redis.ok({"SET", wrong_type, "not a lock"});
  core::Reply r =
      run(*client, core::scripts::renew, {held, gone, wrong_type}, {"60000", owner, owner, owner});
  ASSERT_EQ(r.type, core::Reply::Type::Array) << r.str;
  ASSERT_EQ(r.elements.size(), 3u);
  EXPECT_EQ(r.elements[0].integer, 1);
  EXPECT_EQ(r.elements[1].integer, 0);
  EXPECT_EQ(r.elements[2].integer, 0) << "a key of another type must not fail the batch";
  EXPECT_GT(redis.pttl(held), 1000) << "renewal must reset the lease to the renewal's";
  EXPECT_FALSE(redis.exists(gone)) << "renewal must never create a lock";
}

TEST(Scripts, H8_InvalidLeaseIsRefusedBeforeAnyWrite) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string name = rlock_test::unique_name("badlease");
  LockKeys cleanup(name);
  const std::string owner = client->owner(13);
  for (const char* lease : {"0", "-5", "1.5", "abc", ""}) {
    core::Reply r = run(*client, core::scripts::acquire, {name}, {lease, owner});
    EXPECT_TRUE(r.is_error()) << "lease '" << lease << "' was accepted";
    EXPECT_FALSE(redis.exists(name)) << "lease '" << lease << "' left a key";
  }
}

}  // namespace
