// The Lua scripts' own guarantees, run through the core against the fixture server: a retried
// release is applied once (the unlock latch), an ambiguous acquire is undone only if it
// happened, and one renew call answers for many locks.
#include "rlock/core/scripts.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
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

// The read undo takes back only the owner's newest read hold, with its lease key, and leaves
// other readers alone; the last hold of the last reader deletes the hash and wakes waiters.
TEST(Scripts, ReadUndoTakesBackOnlyTheAppliedHold) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  const std::string name = rlock_test::unique_name("undo-read");
  LockKeys cleanup(name);
  const std::string owner = client->owner(21), other = client->owner(22);
  const std::string channel = core::rw_channel(name);
  // Args only views its strings: these must outlive it.
  const std::string prefix = core::read_lease_prefix(name, owner), tagged = core::hash_tagged(name);
  const std::string other_prefix = core::read_lease_prefix(name, other);
  const core::Args keys{name, channel, prefix, tagged};
  for (const std::string& who : {owner, owner, other}) {
    core::Reply r = run(*client, core::scripts::rw_read_acquire,
                        {name, core::read_lease_prefix(name, who)}, {"30000", who, who + ":write"});
    ASSERT_EQ(r.elements.at(0).integer, 1) << r.str;
  }
  EXPECT_EQ(run(*client, core::scripts::rw_read_undo_acquire, keys, {owner, "3"}).integer, 0);
  EXPECT_EQ(redis.hgetall(name).at(owner), "2");
  EXPECT_EQ(run(*client, core::scripts::rw_read_undo_acquire, keys, {owner, "2"}).integer, 1);
  EXPECT_EQ(redis.hgetall(name).at(owner), "1");
  EXPECT_FALSE(redis.exists(core::read_lease_prefix(name, owner) + ":2"));
  EXPECT_TRUE(redis.exists(core::read_lease_prefix(name, owner) + ":1"));
  EXPECT_EQ(run(*client, core::scripts::rw_read_undo_acquire, keys, {owner, "1"}).integer, 1);
  EXPECT_EQ(redis.hgetall(name),
            (std::map<std::string, std::string>{{"mode", "read"}, {other, "1"}}));
  EXPECT_FALSE(redis.exists(core::read_lease_prefix(name, owner) + ":1"));

  listener.subscribe(channel);
  const core::Args other_keys{name, channel, other_prefix, tagged};
  EXPECT_EQ(run(*client, core::scripts::rw_read_undo_acquire, other_keys, {other, "1"}).integer, 1);
  EXPECT_FALSE(redis.exists(name));
  std::string got_channel, payload;
  ASSERT_TRUE(listener.next_message(2000, &got_channel, &payload));
  EXPECT_EQ(got_channel, channel);
  EXPECT_EQ(payload, "0");
}

// The write undo takes back one write hold; the last one frees the lock and wakes everyone.
TEST(Scripts, WriteUndoTakesBackOnlyTheAppliedHold) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  const std::string name = rlock_test::unique_name("undo-write");
  LockKeys cleanup(name);
  const std::string owner = client->owner(23);
  const std::string writer = owner + ":write";
  const std::string channel = core::rw_channel(name);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(run(*client, core::scripts::rw_write_acquire, {name}, {"30000", writer, owner})
                  .elements.at(0)
                  .integer,
              1);
  }
  EXPECT_EQ(
      run(*client, core::scripts::rw_write_undo_acquire, {name, channel}, {writer, "3", "30000"})
          .integer,
      0);
  EXPECT_EQ(redis.hgetall(name).at(writer), "2");
  EXPECT_EQ(
      run(*client, core::scripts::rw_write_undo_acquire, {name, channel}, {writer, "2", "30000"})
          .integer,
      1);
  EXPECT_EQ(redis.hgetall(name).at(writer), "1");
  listener.subscribe(channel);
  EXPECT_EQ(
      run(*client, core::scripts::rw_write_undo_acquire, {name, channel}, {writer, "1", "30000"})
          .integer,
      1);
  EXPECT_FALSE(redis.exists(name));
  std::string got_channel, payload;
  ASSERT_TRUE(listener.next_message(2000, &got_channel, &payload));
  EXPECT_EQ(payload, "1");
}

// The fair undo wakes the queue's head on the head's own channel, as a fair release does.
TEST(Scripts, FairUndoWakesTheQueueHead) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  const std::string name = rlock_test::unique_name("undo-fair");
  LockKeys cleanup(name);
  const std::string owner = client->owner(25), waiter = client->owner(26);
  const std::string prefix = core::lock_channel(name);
  const std::string queue = core::fair_queue(name), deadlines = core::fair_deadlines(name);
  const core::Args keys{name, queue, deadlines, prefix};
  const core::Args acquire_keys{name, queue, deadlines};
  const std::string now = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
  ASSERT_EQ(
      run(*client, core::scripts::fair_acquire, acquire_keys, {"30000", owner, "60000", now, "0"})
          .elements.at(0)
          .integer,
      1);
  ASSERT_EQ(
      run(*client, core::scripts::fair_acquire, acquire_keys, {"30000", waiter, "60000", now, "1"})
          .elements.at(0)
          .integer,
      0);
  listener.psubscribe(prefix + "*");
  EXPECT_EQ(
      run(*client, core::scripts::fair_undo_acquire, keys, {owner, "2", "30000", now}).integer, 0);
  EXPECT_TRUE(redis.exists(name));
  EXPECT_EQ(
      run(*client, core::scripts::fair_undo_acquire, keys, {owner, "1", "30000", now}).integer, 1);
  EXPECT_FALSE(redis.exists(name));
  std::string got_channel, payload;
  ASSERT_TRUE(listener.next_message(2000, &got_channel, &payload));
  EXPECT_EQ(got_channel, prefix + ":" + waiter) << "the undo must wake the head on its channel";
  EXPECT_EQ(payload, "0");
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
