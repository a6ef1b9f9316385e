// The semaphore and count-down latch scripts (Redisson RSemaphore, RPermitExpirableSemaphore and
// RCountDownLatch layouts), run through the core against the fixture server: what each does
// to the keys, what it answers, what it publishes, that bad input changes nothing, that expired
// permits come back, and that both semaphore kinds share the count and the channel.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "rlock/core/client.hpp"
#include "rlock/core/cluster.hpp"
#include "rlock/core/config.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/scripts.hpp"
#include "rlock/core/semaphore.hpp"
#include "rlock/core/stats.hpp"
#include "test_redis.hpp"

namespace core = rlock::core;
using rlock_test::RedisConn;

namespace {

constexpr int64_t kNever = 922337203685477;  // Redisson's deadline of a permit without lease

std::shared_ptr<core::Client> make_client() {
  core::ClientConfig config;
  config.endpoint = core::parse_url(rlock_test::test_redis_url());
  return core::Client::create(config);
}

core::Reply run(core::Client& client, const core::Script& script, const core::Args& keys,
                const core::Args& argv) {
  return core::eval_script(client.transport(), script, keys, argv, core::Retry::No);
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A permit id as Redisson makes one: 16 random bytes (NUL and high bytes included, so the
// scripts and the transport must be binary-safe).
std::string new_permit_id() {
  static std::mt19937_64 random{std::random_device{}()};
  std::string id(16, '\0');
  for (char& c : id) c = static_cast<char>(random() & 0xff);
  id[3] = '\0';
  return id;
}

// The keys of one semaphore or latch, deleted when the test ends.
struct SemKeys {
  explicit SemKeys(const std::string& tag)
      : name(rlock_test::unique_name(tag)),
        channel(core::semaphore_channel(name)),
        deadlines(core::permit_deadlines(name)),
        latch_channel(core::latch_channel(name)) {}
  ~SemKeys() {
    try {
      RedisConn redis(rlock_test::test_redis_url());
      redis.del(name);
      redis.del(deadlines);
    } catch (...) {
    }
  }
  std::string name, channel, deadlines, latch_channel;
};

// Everything a key holds (DUMP) and whether it has an expiry, to show that nothing changed.
std::string snapshot(RedisConn& redis, const std::string& key) {
  rlock_test::Reply dump = redis.command({"DUMP", key});
  return (dump.is_nil() ? std::string("(none)") : dump.str) + (redis.pttl(key) > 0 ? "+ttl" : "");
}

// Shows that nothing was published on `channel` so far: a marker published now must be the
// next message the listener gets.
void expect_no_message(RedisConn& listener, RedisConn& redis, const std::string& channel) {
  redis.integer({"PUBLISH", channel, "marker"});
  std::string got_channel, payload;
  ASSERT_TRUE(listener.next_message(2000, &got_channel, &payload));
  EXPECT_EQ(payload, "marker") << "a message was published that should not have been";
}

std::string next_payload(RedisConn& listener, const std::string& channel) {
  std::string got_channel, payload;
  if (!listener.next_message(2000, &got_channel, &payload)) return "(no message)";
  EXPECT_EQ(got_channel, channel);
  return payload;
}

bool refused(const core::Reply& r) { return r.is_error() && r.str.rfind("ERR rlock:", 0) == 0; }

TEST(SemScripts, NamesAreRedissons) {
  EXPECT_EQ(core::semaphore_channel("jobs"), "redisson_sc:{jobs}");
  EXPECT_EQ(core::semaphore_channel("a{t}b"), "redisson_sc:a{t}b");
  EXPECT_EQ(core::permit_deadlines("jobs"), "{jobs}:timeout");
  EXPECT_EQ(core::permit_deadlines("a{t}b"), "a{t}b:timeout");
  EXPECT_EQ(core::latch_channel("done"), "redisson_countdownlatch__channel__{done}");
  EXPECT_EQ(core::latch_channel("a{t}b"), "redisson_countdownlatch__channel__{a{t}b}");
  // Semaphore names follow the name's own tag; the latch channel's forced braces do not.
  for (const std::string name : {"jobs", "a{t}b", "{t}"}) {
    EXPECT_EQ(core::key_slot(name), core::key_slot(core::semaphore_channel(name))) << name;
    EXPECT_EQ(core::key_slot(name), core::key_slot(core::permit_deadlines(name))) << name;
  }
  EXPECT_EQ(core::key_slot("done"), core::key_slot(core::latch_channel("done")));
  EXPECT_EQ(core::key_slot("no{close"), core::key_slot(core::latch_channel("no{close")));
  EXPECT_NE(core::key_slot("a{t}b"), core::key_slot(core::latch_channel("a{t}b")))
      << "a tagged latch name splits its key and channel (a cluster must refuse it)";
}

TEST(SemScripts, OnlyPublishingScriptsHaveShardedTwins) {
  for (const core::Script* s :
       {&core::scripts::sem_try_set, &core::scripts::sem_release, &core::scripts::sem_add,
        &core::scripts::psem_acquire, &core::scripts::psem_release,
        &core::scripts::psem_update_lease, &core::scripts::psem_available,
        &core::scripts::psem_set_permits, &core::scripts::psem_lease_time,
        &core::scripts::sem_undo_acquire, &core::scripts::psem_undo_acquire,
        &core::scripts::latch_try_set, &core::scripts::latch_count_down}) {
    ASSERT_NE(s->sharded, nullptr) << s->name;
    EXPECT_NE(s->sharded->source.find("redis.call('spublish'"), std::string_view::npos);
    EXPECT_EQ(s->sharded->source.find("redis.call('publish'"), std::string_view::npos);
  }
  EXPECT_EQ(core::scripts::sem_try_acquire.sharded, nullptr);
  EXPECT_EQ(core::scripts::sem_drain.sharded, nullptr);
}

// The SPUBLISH twins (sharded pub/sub on a cluster) run on the fixture server too (Redis 7
// serves sharded pub/sub standalone): their messages reach SSUBSCRIBE listeners.
TEST(SemScripts, ShardedTwinsPublishToShardedListeners) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  if (redis.server_version() < 70000) GTEST_SKIP() << "sharded pub/sub: Redis 7+";
  RedisConn listener(rlock_test::test_redis_url());
  RedisConn latch_listener(rlock_test::test_redis_url());
  SemKeys k("sem-sharded");
  listener.ssubscribe(k.channel);
  latch_listener.ssubscribe(k.latch_channel);
  const std::string deadlines = k.deadlines;
  ASSERT_EQ(run(*client, *core::scripts::sem_try_set.sharded, {k.name, k.channel}, {"0"}).integer,
            1);
  EXPECT_EQ(next_payload(listener, k.channel), "0");
  EXPECT_EQ(run(*client, *core::scripts::sem_release.sharded, {k.name, k.channel}, {"2"}).integer,
            2);
  EXPECT_EQ(next_payload(listener, k.channel), "2");
  EXPECT_EQ(run(*client, *core::scripts::sem_add.sharded, {k.name, k.channel}, {"1"}).integer, 3);
  EXPECT_EQ(next_payload(listener, k.channel), "3");
  const int64_t t0 = now_ms();
  const std::string id = new_permit_id();
  ASSERT_EQ(run(*client, *core::scripts::psem_acquire.sharded, {k.name, deadlines, k.channel},
                {std::to_string(t0), std::to_string(t0 + 100), id})
                .elements.at(0)
                .integer,
            1);
  core::Reply r = run(*client, *core::scripts::psem_available.sharded,
                      {k.name, deadlines, k.channel}, {std::to_string(t0 + 200)});
  EXPECT_EQ(r.elements.at(0).integer, 3);
  EXPECT_EQ(next_payload(listener, k.channel), "3") << "the reclaim's message";
  redis.del(k.name);
  const core::Args latch_keys{k.name, k.latch_channel};
  EXPECT_EQ(run(*client, *core::scripts::latch_try_set.sharded, latch_keys, {"1"}).integer, 1);
  EXPECT_EQ(next_payload(latch_listener, k.latch_channel), "1");
  EXPECT_EQ(run(*client, *core::scripts::latch_count_down.sharded, latch_keys, {}).integer, 0);
  EXPECT_EQ(next_payload(latch_listener, k.latch_channel), "0");
}

TEST(SemScripts, TrySetSetsOnceAndPublishesTheCount) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("sem-set");
  listener.subscribe(k.channel);
  core::Reply r = run(*client, core::scripts::sem_try_set, {k.name, k.channel}, {"3"});
  ASSERT_EQ(r.type, core::Reply::Type::Integer) << r.str;
  EXPECT_EQ(r.integer, 1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  EXPECT_EQ(redis.pttl(k.name), -1);
  EXPECT_EQ(next_payload(listener, k.channel), "3");
  EXPECT_EQ(run(*client, core::scripts::sem_try_set, {k.name, k.channel}, {"5"}).integer, 0);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  expect_no_message(listener, redis, k.channel);

  // With an expiry (Redisson's trySetPermits(n, ttl)); 0 permits is a valid closed semaphore.
  SemKeys t("sem-set-ttl");
  EXPECT_EQ(run(*client, core::scripts::sem_try_set, {t.name, t.channel}, {"0", "60000"}).integer,
            1);
  EXPECT_EQ(redis.ok({"GET", t.name}).str, "0");
  EXPECT_GT(redis.pttl(t.name), 50000);
}

TEST(SemScripts, TryAcquireTakesPermitsKeepsTheExpiryAndPublishesNothing) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("sem-acquire");
  redis.ok({"SET", k.name, "3", "PX", "60000"});
  listener.subscribe(k.channel);
  EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name}, {"2"}).integer, 1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1");
  EXPECT_GT(redis.pttl(k.name), 50000) << "DECRBY must keep the semaphore's expiry";
  EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name}, {"2"}).integer, 0);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1");
  EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name}, {"1"}).integer, 1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "0");
  expect_no_message(listener, redis, k.channel);

  // A negative count (Redisson's reducePermits can leave one) is read, not refused.
  redis.ok({"SET", k.name, "-2"});
  EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name}, {"1"}).integer, 0);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "-2");

  SemKeys missing("sem-acquire-missing");
  EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {missing.name}, {"1"}).integer, -1);
  EXPECT_FALSE(redis.exists(missing.name));
}

TEST(SemScripts, ReleaseAddsAndPublishesThePositiveCount) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("sem-release");
  redis.ok({"SET", k.name, "1", "PX", "60000"});
  listener.subscribe(k.channel);
  core::Reply r = run(*client, core::scripts::sem_release, {k.name, k.channel}, {"2"});
  ASSERT_EQ(r.type, core::Reply::Type::Integer) << r.str;
  EXPECT_EQ(r.integer, 3);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  EXPECT_GT(redis.pttl(k.name), 50000) << "INCRBY must keep the semaphore's expiry";
  EXPECT_EQ(next_payload(listener, k.channel), "3");

  // A count still at or below 0 afterwards wakes nobody: no message (a negative one would fail
  // Redisson's listener).
  redis.ok({"SET", k.name, "-3"});
  EXPECT_EQ(run(*client, core::scripts::sem_release, {k.name, k.channel}, {"2"}).integer, -1);
  EXPECT_EQ(run(*client, core::scripts::sem_release, {k.name, k.channel}, {"1"}).integer, 0);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "0");
  expect_no_message(listener, redis, k.channel);

  // Permits given back to a semaphore that is gone do not bring it back.
  SemKeys missing("sem-release-missing");
  EXPECT_EQ(
      run(*client, core::scripts::sem_release, {missing.name, missing.channel}, {"1"}).integer, -1);
  EXPECT_FALSE(redis.exists(missing.name));
}

TEST(SemScripts, RetriedRequestsWithTheSameLatchAreAppliedOnce) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  SemKeys k("sem-latch");
  redis.ok({"SET", k.name, "2"});
  const std::string acquire_latch = core::unlock_latch(k.name, "acquire-1");
  const std::string release_latch = core::unlock_latch(k.name, "release-1");
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name, acquire_latch}, {"1", "5000"})
                  .integer,
              1);
    EXPECT_EQ(redis.ok({"GET", k.name}).str, "1") << "try " << i;
  }
  EXPECT_GT(redis.pttl(acquire_latch), 0) << "the latch must expire by itself";
  // A refusal is not remembered: a waiter's refused attempts write nothing.
  redis.ok({"SET", k.name, "0"});
  const std::string refused_latch = core::unlock_latch(k.name, "acquire-2");
  EXPECT_EQ(
      run(*client, core::scripts::sem_try_acquire, {k.name, refused_latch}, {"1", "5000"}).integer,
      0);
  EXPECT_FALSE(redis.exists(refused_latch));
  redis.ok({"SET", k.name, "1"});
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(
        run(*client, core::scripts::sem_release, {k.name, k.channel, release_latch}, {"1", "5000"})
            .integer,
        2);
    EXPECT_EQ(redis.ok({"GET", k.name}).str, "2") << "try " << i;
  }
  redis.del(acquire_latch);
  redis.del(release_latch);
}

TEST(SemScripts, AddMayGoNegativeAndDrainResets) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("sem-add");
  listener.subscribe(k.channel);
  // A missing semaphore counts as 0.
  EXPECT_EQ(run(*client, core::scripts::sem_add, {k.name, k.channel}, {"2"}).integer, 2);
  EXPECT_EQ(next_payload(listener, k.channel), "2");
  redis.ok({"PEXPIRE", k.name, "60000"});
  EXPECT_EQ(run(*client, core::scripts::sem_add, {k.name, k.channel}, {"-5"}).integer, -3);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "-3");
  EXPECT_EQ(redis.pttl(k.name), -1) << "SET drops the expiry, as Redisson's addPermits does";
  expect_no_message(listener, redis, k.channel);

  EXPECT_EQ(run(*client, core::scripts::sem_drain, {k.name}, {}).integer, -3);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "0");
  redis.ok({"SET", k.name, "4"});
  EXPECT_EQ(run(*client, core::scripts::sem_drain, {k.name}, {}).integer, 4);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "0");
  expect_no_message(listener, redis, k.channel);

  SemKeys missing("sem-drain-missing");
  EXPECT_EQ(run(*client, core::scripts::sem_drain, {missing.name}, {}).integer, 0);
  EXPECT_FALSE(redis.exists(missing.name));
}

TEST(SemScripts, BadInputIsRefusedAndChangesNothing) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  SemKeys k("sem-bad");
  redis.ok({"SET", k.name, "5", "PX", "60000"});
  const std::string before = snapshot(redis, k.name);
  const std::string latch = core::unlock_latch(k.name, "bad-1");
  for (const char* bad : {"0", "-1", "1.5", "abc", "", "007", "-0", "1e3", " 5", "2147483648"}) {
    EXPECT_TRUE(refused(run(*client, core::scripts::sem_try_acquire, {k.name}, {bad}))) << bad;
    EXPECT_TRUE(refused(run(*client, core::scripts::sem_release, {k.name, k.channel}, {bad})))
        << bad;
    if (std::string(bad) != "-1") {  // a negative change is how permits are taken away
      EXPECT_TRUE(refused(run(*client, core::scripts::sem_add, {k.name, k.channel}, {bad}))) << bad;
    }
    EXPECT_EQ(snapshot(redis, k.name), before) << bad;
  }
  // A latch expiry that makes no sense, with a latch key.
  EXPECT_TRUE(
      refused(run(*client, core::scripts::sem_release, {k.name, k.channel, latch}, {"1", "0"})));
  EXPECT_FALSE(redis.exists(latch));
  // The count would leave a Java int (Redisson reads it as one).
  redis.ok({"SET", k.name, "2147483647"});
  EXPECT_TRUE(refused(run(*client, core::scripts::sem_release, {k.name, k.channel}, {"1"})));
  EXPECT_TRUE(refused(run(*client, core::scripts::sem_add, {k.name, k.channel}, {"1"})));
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "2147483647");

  SemKeys fresh("sem-bad-set");
  for (const char* bad : {"-1", "x", "2147483648"}) {
    EXPECT_TRUE(
        refused(run(*client, core::scripts::sem_try_set, {fresh.name, fresh.channel}, {bad})))
        << bad;
  }
  EXPECT_TRUE(
      refused(run(*client, core::scripts::sem_try_set, {fresh.name, fresh.channel}, {"3", "0"})));
  EXPECT_FALSE(redis.exists(fresh.name));

  // Keys of another type, or strings that are not counts, are refused by every script.
  SemKeys hash("sem-bad-hash"), text("sem-bad-text");
  redis.ok({"HSET", hash.name, "f", "1"});
  redis.ok({"SET", text.name, "three"});
  for (const SemKeys* w : {&hash, &text}) {
    const std::string was = snapshot(redis, w->name);
    EXPECT_TRUE(refused(run(*client, core::scripts::sem_try_set, {w->name, w->channel}, {"1"})));
    EXPECT_TRUE(refused(run(*client, core::scripts::sem_try_acquire, {w->name}, {"1"})));
    EXPECT_TRUE(refused(run(*client, core::scripts::sem_release, {w->name, w->channel}, {"1"})));
    EXPECT_TRUE(refused(run(*client, core::scripts::sem_add, {w->name, w->channel}, {"1"})));
    EXPECT_TRUE(refused(run(*client, core::scripts::sem_drain, {w->name}, {})));
    EXPECT_TRUE(
        refused(run(*client, core::scripts::latch_try_set, {w->name, w->latch_channel}, {"1"})));
    EXPECT_TRUE(
        refused(run(*client, core::scripts::latch_count_down, {w->name, w->latch_channel}, {})));
    const std::string now = std::to_string(now_ms());
    const std::string id = new_permit_id();
    EXPECT_TRUE(refused(
        run(*client, core::scripts::psem_available, {w->name, w->deadlines, w->channel}, {now})));
    EXPECT_TRUE(refused(run(*client, core::scripts::psem_acquire,
                            {w->name, w->deadlines, w->channel}, {now, "922337203685477", id})));
    EXPECT_EQ(snapshot(redis, w->name), was) << w->name;
  }
}

// --- permit-expirable semaphore ---

TEST(PsemScripts, AcquireAddsIdsWithDeadlinesAndSharesTheExpiry) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("psem-acquire");
  const core::Args keys{k.name, k.deadlines, k.channel};
  redis.ok({"SET", k.name, "3", "PX", "60000"});
  listener.subscribe(k.channel);
  const int64_t now = now_ms();
  const std::string now_text = std::to_string(now), deadline = std::to_string(now + 10000);
  const std::string a = new_permit_id(), b = new_permit_id();
  core::Reply r = run(*client, core::scripts::psem_acquire, keys, {now_text, deadline, a, b});
  ASSERT_EQ(r.type, core::Reply::Type::Array) << r.str;
  EXPECT_EQ(r.elements.at(0).integer, 1);
  EXPECT_EQ(r.elements.at(2).integer, 1) << "permits left";
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1");
  EXPECT_EQ(redis.ok({"ZSCORE", k.deadlines, a}).str, deadline);
  EXPECT_EQ(redis.ok({"ZSCORE", k.deadlines, b}).str, deadline);
  EXPECT_GT(redis.pttl(k.deadlines), 50000) << "the deadline set must expire with the count";
  EXPECT_GT(redis.pttl(k.name), 50000);

  // The retry of that acquire (its reply lost) answers granted and takes nothing more.
  const std::string before = snapshot(redis, k.name) + snapshot(redis, k.deadlines);
  r = run(*client, core::scripts::psem_acquire, keys, {now_text, deadline, a, b});
  EXPECT_EQ(r.elements.at(0).integer, 1);
  EXPECT_EQ(snapshot(redis, k.name) + snapshot(redis, k.deadlines), before);
  // Ids that are partly in use are not a retry: refused.
  EXPECT_TRUE(refused(
      run(*client, core::scripts::psem_acquire, keys, {now_text, deadline, a, new_permit_id()})));
  EXPECT_EQ(snapshot(redis, k.name) + snapshot(redis, k.deadlines), before);

  // Too few: the answer carries the earliest deadline, for the waiter's timer.
  const std::string c = new_permit_id(), d = new_permit_id();
  r = run(*client, core::scripts::psem_acquire, keys, {now_text, deadline, c, d});
  EXPECT_EQ(r.elements.at(0).integer, 0);
  EXPECT_EQ(r.elements.at(1).integer, now + 10000);
  EXPECT_EQ(r.elements.at(2).integer, 1);
  EXPECT_EQ(snapshot(redis, k.name) + snapshot(redis, k.deadlines), before);
  expect_no_message(listener, redis, k.channel);
}

TEST(PsemScripts, PermitsWithoutLeaseNeverExpireAndGiveNoDeadline) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  SemKeys k("psem-nolease");
  const core::Args keys{k.name, k.deadlines, k.channel};
  redis.ok({"SET", k.name, "1"});
  const std::string id = new_permit_id();
  ASSERT_EQ(run(*client, core::scripts::psem_acquire, keys,
                {std::to_string(now_ms()), std::to_string(kNever), id})
                .elements.at(0)
                .integer,
            1);
  EXPECT_EQ(redis.ok({"ZSCORE", k.deadlines, id}).str, std::to_string(kNever));
  EXPECT_EQ(redis.pttl(k.deadlines), -1);
  // Even far in the future it is not reclaimed, and a refusal names no deadline.
  core::Reply r = run(*client, core::scripts::psem_acquire, keys,
                      {std::to_string(kNever - 1), std::to_string(kNever), new_permit_id()});
  EXPECT_EQ(r.elements.at(0).integer, 0);
  EXPECT_EQ(r.elements.at(1).integer, 0);
  EXPECT_EQ(redis.integer({"ZCARD", k.deadlines}), 1);

  SemKeys missing("psem-missing");
  r = run(*client, core::scripts::psem_acquire, {missing.name, missing.deadlines, missing.channel},
          {std::to_string(now_ms()), std::to_string(kNever), new_permit_id()});
  EXPECT_EQ(r.elements.at(0).integer, 0);
  EXPECT_EQ(r.elements.at(2).integer, -1);
  EXPECT_FALSE(redis.exists(missing.name));
  EXPECT_FALSE(redis.exists(missing.deadlines));
}

TEST(PsemScripts, AcquireReclaimsExpiredPermitsFirst) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("psem-reclaim");
  const core::Args keys{k.name, k.deadlines, k.channel};
  redis.ok({"SET", k.name, "2"});
  const int64_t t0 = now_ms();
  const std::string dead1 = new_permit_id(), dead2 = new_permit_id();
  ASSERT_EQ(run(*client, core::scripts::psem_acquire, keys,
                {std::to_string(t0), std::to_string(t0 + 100), dead1, dead2})
                .elements.at(0)
                .integer,
            1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "0");
  listener.subscribe(k.channel);
  // "Later" (the clock is an argument): both leases ran out, a deadline equal to now included.
  // One permit asked for: one expired permit is reclaimed (published), then taken.
  const std::string later = std::to_string(t0 + 100), fresh = new_permit_id();
  core::Reply r =
      run(*client, core::scripts::psem_acquire, keys, {later, std::to_string(t0 + 10000), fresh});
  EXPECT_EQ(r.elements.at(0).integer, 1);
  EXPECT_EQ(next_payload(listener, k.channel), "1");
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "0");
  EXPECT_EQ(redis.integer({"ZCARD", k.deadlines}), 2) << "one dead permit reclaimed, one taken";
  // The other dead permit comes back through psem_available, which publishes too.
  r = run(*client, core::scripts::psem_available, keys, {later});
  ASSERT_EQ(r.type, core::Reply::Type::Array) << r.str;
  EXPECT_EQ(r.elements.at(0).integer, 1);
  EXPECT_EQ(r.elements.at(1).integer, 1);
  EXPECT_EQ(r.elements.at(2).integer, 1);
  EXPECT_EQ(next_payload(listener, k.channel), "1");
  EXPECT_TRUE(redis.ok({"ZSCORE", k.deadlines, dead1}).is_nil());
  EXPECT_TRUE(redis.ok({"ZSCORE", k.deadlines, dead2}).is_nil());
  EXPECT_FALSE(redis.ok({"ZSCORE", k.deadlines, fresh}).is_nil());
  // Nothing left to reclaim: no write, no message.
  r = run(*client, core::scripts::psem_available, keys, {later});
  EXPECT_EQ(r.elements.at(0).integer, 1);
  expect_no_message(listener, redis, k.channel);

  SemKeys missing("psem-available-missing");
  r = run(*client, core::scripts::psem_available,
          {missing.name, missing.deadlines, missing.channel}, {later});
  EXPECT_EQ(r.elements.at(0).integer, 0);
  EXPECT_EQ(r.elements.at(2).integer, 0);
  EXPECT_FALSE(redis.exists(missing.name));
}

TEST(PsemScripts, ReleaseIsAllOrNothing) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("psem-release");
  const core::Args keys{k.name, k.deadlines, k.channel};
  redis.ok({"SET", k.name, "3"});
  const int64_t t0 = now_ms();
  const std::string a = new_permit_id(), b = new_permit_id(), short_lived = new_permit_id();
  ASSERT_EQ(run(*client, core::scripts::psem_acquire, keys,
                {std::to_string(t0), std::to_string(t0 + 60000), a, b})
                .elements.at(0)
                .integer,
            1);
  ASSERT_EQ(run(*client, core::scripts::psem_acquire, keys,
                {std::to_string(t0), std::to_string(t0 + 100), short_lived})
                .elements.at(0)
                .integer,
            1);
  listener.subscribe(k.channel);
  const std::string now = std::to_string(t0 + 1000);  // short_lived has expired by then
  const std::string before = snapshot(redis, k.name) + snapshot(redis, k.deadlines);
  // An unknown id: nothing released, not even the good one.
  EXPECT_EQ(run(*client, core::scripts::psem_release, keys, {now, a, new_permit_id()}).integer, -1);
  // An expired id: refused too; the reclaim will give it back.
  EXPECT_EQ(run(*client, core::scripts::psem_release, keys, {now, a, short_lived}).integer, -2);
  EXPECT_EQ(snapshot(redis, k.name) + snapshot(redis, k.deadlines), before);
  expect_no_message(listener, redis, k.channel);

  // Both held: released; the expired permit of another holder is reclaimed on the way.
  EXPECT_EQ(run(*client, core::scripts::psem_release, keys, {now, a, b}).integer, 2);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  EXPECT_EQ(redis.integer({"EXISTS", k.deadlines}), 0);
  EXPECT_EQ(next_payload(listener, k.channel), "1") << "the reclaim's count";
  EXPECT_EQ(next_payload(listener, k.channel), "3") << "the release's count";
  // Released already: not held.
  EXPECT_EQ(run(*client, core::scripts::psem_release, keys, {now, a}).integer, -1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
}

TEST(PsemScripts, UpdateLeaseRenewsHeldPermitsOnly) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  SemKeys k("psem-lease");
  const core::Args keys{k.name, k.deadlines, k.channel};
  redis.ok({"SET", k.name, "2"});
  const int64_t t0 = now_ms();
  const std::string held = new_permit_id(), dying = new_permit_id();
  ASSERT_EQ(run(*client, core::scripts::psem_acquire, keys,
                {std::to_string(t0), std::to_string(t0 + 5000), held})
                .elements.at(0)
                .integer,
            1);
  ASSERT_EQ(run(*client, core::scripts::psem_acquire, keys,
                {std::to_string(t0), std::to_string(t0 + 100), dying})
                .elements.at(0)
                .integer,
            1);
  const std::string now = std::to_string(t0 + 1000), renewed = std::to_string(t0 + 31000);
  core::Reply r = run(*client, core::scripts::psem_update_lease, keys,
                      {now, renewed, held, dying, new_permit_id()});
  ASSERT_EQ(r.type, core::Reply::Type::Array) << r.str;
  ASSERT_EQ(r.elements.size(), 3u);
  EXPECT_EQ(r.elements[0].integer, 1);
  EXPECT_EQ(r.elements[1].integer, 0) << "an expired permit must not be revived";
  EXPECT_EQ(r.elements[2].integer, 0);
  EXPECT_EQ(redis.ok({"ZSCORE", k.deadlines, held}).str, renewed);
  EXPECT_TRUE(redis.ok({"ZSCORE", k.deadlines, dying}).is_nil());
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1") << "the expired permit was given back";
  // To "no lease" and back.
  r = run(*client, core::scripts::psem_update_lease, keys, {now, std::to_string(kNever), held});
  EXPECT_EQ(r.elements.at(0).integer, 1);
  EXPECT_EQ(redis.ok({"ZSCORE", k.deadlines, held}).str, std::to_string(kNever));
}

TEST(PsemScripts, BadInputIsRefusedAndChangesNothing) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  SemKeys k("psem-bad");
  const core::Args keys{k.name, k.deadlines, k.channel};
  redis.ok({"SET", k.name, "2"});
  const int64_t t0 = now_ms();
  const std::string now = std::to_string(t0), later = std::to_string(t0 + 1000);
  const std::string held = new_permit_id(), id = new_permit_id();
  ASSERT_EQ(
      run(*client, core::scripts::psem_acquire, keys, {now, later, held}).elements.at(0).integer,
      1);
  auto state = [&] { return snapshot(redis, k.name) + snapshot(redis, k.deadlines); };
  const std::string before = state();
  const std::string far = std::to_string(t0 + 5000);  // held has expired by then
  const std::vector<std::vector<std::string>> bad_acquires{
      {"0", later, id},                             // now
      {"x", later, id},                             //
      {now, now, id},                               // deadline not after now
      {now, std::to_string(kNever + 1), id},        // beyond "never"
      {far, std::to_string(t0 + 9000)},             // no ids
      {far, std::to_string(t0 + 9000), "short"},    // not 16 bytes
      {far, std::to_string(t0 + 9000), id, id},     // twice
      {far, std::to_string(t0 + 9000), held, id}};  // in use (and expired): not a retry
  for (size_t i = 0; i < bad_acquires.size(); ++i) {
    const core::Args args(bad_acquires[i].begin(), bad_acquires[i].end());
    EXPECT_TRUE(refused(run(*client, core::scripts::psem_acquire, keys, args))) << "case " << i;
    // The same arguments are bad for a lease update too, but for the last (ids in use are
    // what an update names).
    if (i + 1 < bad_acquires.size()) {
      EXPECT_TRUE(refused(run(*client, core::scripts::psem_update_lease, keys, args)))
          << "case " << i;
    }
    EXPECT_EQ(state(), before) << "case " << i;
  }
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{now}, {"-5", held}, {far, held, held}, {far, "x"}}) {
    const core::Args args(argv.begin(), argv.end());
    EXPECT_TRUE(refused(run(*client, core::scripts::psem_release, keys, args))) << argv[0];
    EXPECT_EQ(state(), before);
  }
  EXPECT_TRUE(refused(run(*client, core::scripts::psem_update_lease, keys, {far, far, held})));
  EXPECT_TRUE(refused(run(*client, core::scripts::psem_available, keys, {"soon"})));
  EXPECT_EQ(state(), before);
  // A total out of range, or a bad clock, is refused before the reclaim (held has expired at
  // `far`, so a reclaim would show).
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {far, "-1"}, {far, "2147483648"}, {far, "1.5"}, {far}, {"0", "3"}, {"x", "3"}}) {
    const core::Args args(argv.begin(), argv.end());
    EXPECT_TRUE(refused(run(*client, core::scripts::psem_set_permits, keys, args))) << argv[0];
    EXPECT_EQ(state(), before);
  }
  // The lease time: one 16-byte id and a good clock, or a refusal before the reclaim.
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {far}, {far, "short"}, {far, held, id}, {"-5", held}, {"soon", held}}) {
    const core::Args args(argv.begin(), argv.end());
    EXPECT_TRUE(refused(run(*client, core::scripts::psem_lease_time, keys, args))) << argv[0];
    EXPECT_EQ(state(), before);
  }
  EXPECT_EQ(run(*client, core::scripts::psem_lease_time, keys, {now, held}).integer, 1000);
  EXPECT_EQ(state(), before) << "nothing had expired yet";

  // The deadline set of another type: refused before the reclaim could write.
  SemKeys wrong("psem-bad-set");
  redis.ok({"SET", wrong.name, "1"});
  redis.ok({"SET", wrong.deadlines, "not a zset"});
  EXPECT_TRUE(refused(run(*client, core::scripts::psem_acquire,
                          {wrong.name, wrong.deadlines, wrong.channel}, {now, later, id})));
  EXPECT_EQ(redis.ok({"GET", wrong.name}).str, "1");
}

// Both semaphore kinds share the count "N" and the channel "redisson_sc:{N}": a plain release
// wakes the expirable semaphore's waiters, whose next acquire then succeeds.
TEST(PsemScripts, PlainReleaseWakesTheExpirableSemaphoresWaiters) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn waiter(rlock_test::test_redis_url());
  SemKeys k("psem-mixed");
  const core::Args keys{k.name, k.deadlines, k.channel};
  ASSERT_EQ(run(*client, core::scripts::sem_try_set, {k.name, k.channel}, {"1"}).integer, 1);
  ASSERT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name}, {"1"}).integer, 1);
  const int64_t t0 = now_ms();
  const std::string now = std::to_string(t0), deadline = std::to_string(t0 + 30000);
  const std::string id = new_permit_id();
  core::Reply r = run(*client, core::scripts::psem_acquire, keys, {now, deadline, id});
  ASSERT_EQ(r.elements.at(0).integer, 0);
  waiter.subscribe(k.channel);  // the channel an expirable waiter listens on
  ASSERT_EQ(run(*client, core::scripts::sem_release, {k.name, k.channel}, {"1"}).integer, 1);
  EXPECT_EQ(next_payload(waiter, k.channel), "1");
  r = run(*client, core::scripts::psem_acquire, keys, {now, deadline, id});
  EXPECT_EQ(r.elements.at(0).integer, 1);
  // And the other way: the expirable release wakes plain waiters on the same channel.
  EXPECT_EQ(run(*client, core::scripts::psem_release, keys, {now, id}).integer, 1);
  EXPECT_EQ(next_payload(waiter, k.channel), "1");
  EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name}, {"1"}).integer, 1);
}

// --- count-down latch ---

TEST(LatchScripts, TrySetClosesCountDownOpensAtZero) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("latch");
  const core::Args keys{k.name, k.latch_channel};
  listener.subscribe(k.latch_channel);
  EXPECT_EQ(run(*client, core::scripts::latch_try_set, keys, {"2"}).integer, 1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "2");
  EXPECT_EQ(next_payload(listener, k.latch_channel), "1") << "NEW_COUNT";
  EXPECT_EQ(run(*client, core::scripts::latch_try_set, keys, {"5"}).integer, 0);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "2");
  EXPECT_EQ(run(*client, core::scripts::latch_count_down, keys, {}).integer, 1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1");
  expect_no_message(listener, redis, k.latch_channel);
  EXPECT_EQ(run(*client, core::scripts::latch_count_down, keys, {}).integer, 0);
  EXPECT_FALSE(redis.exists(k.name));
  EXPECT_EQ(next_payload(listener, k.latch_channel), "0") << "ZERO_COUNT";
  // An open latch stays open: nothing created, nothing published.
  EXPECT_EQ(run(*client, core::scripts::latch_count_down, keys, {}).integer, -1);
  EXPECT_FALSE(redis.exists(k.name));
  expect_no_message(listener, redis, k.latch_channel);
  // Counts Redisson's trySetCount may store (0, negative): deleted without a message.
  for (const char* stored : {"0", "-4"}) {
    redis.ok({"SET", k.name, stored});
    EXPECT_EQ(run(*client, core::scripts::latch_count_down, keys, {}).integer, 0) << stored;
    EXPECT_FALSE(redis.exists(k.name)) << stored;
  }
  expect_no_message(listener, redis, k.latch_channel);
}

TEST(LatchScripts, BadCountIsRefusedAndChangesNothing) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  SemKeys k("latch-bad");
  const core::Args keys{k.name, k.latch_channel};
  for (const char* bad : {"0", "-1", "", "2.5", "1000000000000000"}) {
    EXPECT_TRUE(refused(run(*client, core::scripts::latch_try_set, keys, {bad}))) << bad;
  }
  EXPECT_FALSE(redis.exists(k.name));
}

// ---- Requests whose replies were lost ---------------------------------------------------

TEST(SemScripts, UndoAcquireGivesAGrantBackOnceAndRefusesALateRequest) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("sem-undo");
  listener.subscribe(k.channel);
  redis.ok({"SET", k.name, "3"});
  const std::string granted = core::unlock_latch(k.name, "undo-1");
  ASSERT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name, granted}, {"2", "5000"}).integer,
            1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1");
  const core::Args undo_keys{k.name, k.channel, granted};
  EXPECT_EQ(run(*client, core::scripts::sem_undo_acquire, undo_keys, {"2", "5000"}).integer, 1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  EXPECT_EQ(next_payload(listener, k.channel), "3");
  // A repeat of the clean-up, or a late copy of the request, changes nothing.
  EXPECT_EQ(run(*client, core::scripts::sem_undo_acquire, undo_keys, {"2", "5000"}).integer, -1);
  EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name, granted}, {"2", "5000"}).integer,
            0);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  expect_no_message(listener, redis, k.channel);
  // Never applied: the tombstone refuses the request should it still arrive.
  const std::string unseen = core::unlock_latch(k.name, "undo-2");
  EXPECT_EQ(
      run(*client, core::scripts::sem_undo_acquire, {k.name, k.channel, unseen}, {"2", "5000"})
          .integer,
      0);
  EXPECT_GT(redis.pttl(unseen), 0) << "the tombstone must expire by itself";
  EXPECT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name, unseen}, {"2", "5000"}).integer,
            0);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3") << "a late request took permits";
  // A grant whose semaphore is gone since: nothing comes back to life.
  const std::string orphan = core::unlock_latch(k.name, "undo-3");
  ASSERT_EQ(run(*client, core::scripts::sem_try_acquire, {k.name, orphan}, {"1", "5000"}).integer,
            1);
  redis.del(k.name);
  EXPECT_EQ(
      run(*client, core::scripts::sem_undo_acquire, {k.name, k.channel, orphan}, {"1", "5000"})
          .integer,
      1);
  EXPECT_FALSE(redis.exists(k.name));
  for (const std::string& latch : {granted, unseen, orphan}) redis.del(latch);
}

TEST(SemScripts, AReleaseFindingNoSemaphoreIsRemembered) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  SemKeys k("sem-release-gone");
  const std::string latch = core::unlock_latch(k.name, "release-gone");
  const core::Args keys{k.name, k.channel, latch};
  EXPECT_EQ(run(*client, core::scripts::sem_release, keys, {"2", "5000"}).integer, -1);
  redis.ok({"SET", k.name, "1"});  // set up again meanwhile
  EXPECT_EQ(run(*client, core::scripts::sem_release, keys, {"2", "5000"}).integer, -1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1") << "a late release gave permits to a new one";
  redis.del(latch);
}

TEST(PsemScripts, UndoAcquireFreesTheIdsAndRefusesALateRequest) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  RedisConn listener(rlock_test::test_redis_url());
  SemKeys k("psem-undo");
  listener.subscribe(k.channel);
  redis.ok({"SET", k.name, "3"});
  const std::string a = new_permit_id(), b = new_permit_id();
  const std::string tomb = core::unlock_latch(k.name, core::permit_id_hex(a));
  const core::Args keys{k.name, k.deadlines, k.channel, tomb};
  const std::string t0 = std::to_string(now_ms()), never = std::to_string(kNever);
  const core::Args acquire{t0, never, a, b};
  ASSERT_EQ(run(*client, core::scripts::psem_acquire, keys, acquire).elements.at(0).integer, 1);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1");
  EXPECT_EQ(run(*client, core::scripts::psem_undo_acquire, keys, {"5000", a, b}).integer, 2);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  EXPECT_FALSE(redis.exists(k.deadlines));
  EXPECT_EQ(next_payload(listener, k.channel), "3");
  EXPECT_GT(redis.pttl(tomb), 0) << "the tombstone must expire by itself";
  // A late copy of the request is refused; a repeat of the clean-up gives nothing back.
  core::Reply late = run(*client, core::scripts::psem_acquire, keys, acquire);
  ASSERT_EQ(late.elements.size(), 3u) << late.str;
  EXPECT_EQ(late.elements[0].integer, 0);
  EXPECT_EQ(run(*client, core::scripts::psem_undo_acquire, keys, {"5000", a, b}).integer, 0);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  EXPECT_FALSE(redis.exists(k.deadlines));
  expect_no_message(listener, redis, k.channel);
  redis.del(tomb);
}

// A client whose commands time out fast, so a busy server loses their replies. These cases
// stall their server, so each has one of its own: the shared one serves cases running beside.
std::shared_ptr<core::Client> make_fast_client(const rlock_test::PrivateRedis& server) {
  core::ClientConfig config;
  config.endpoint = core::parse_url(server.tcp_url());
  config.command_timeout_ms = 200;
  return core::Client::create(config);
}

// Keeps the server running one script for `ms`: meanwhile every other client's commands wait
// unanswered, and they run when it ends (their replies lost if the client gave up).
std::thread busy_server(const rlock_test::PrivateRedis& server, int64_t ms) {
  // Connected here, so only the send is left to the thread.
  auto admin = std::make_shared<RedisConn>(server.admin_url(), ms + 10000);
  std::thread t([admin, ms] {
    admin->command({"EVAL",
                    "local t = redis.call('time') "
                    "local stop = t[1] * 1000000 + t[2] + tonumber(ARGV[1]) * 1000 "
                    "repeat t = redis.call('time') until t[1] * 1000000 + t[2] >= stop "
                    "return 0",
                    "0", std::to_string(ms)});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the script runs by then
  return t;
}

// Waits up to 15 s for the client's clean-ups to be done; whether they are.
bool settled(core::Client& client) {
  for (int i = 0; i < 300 && client.holds().cleanups_pending() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return client.holds().cleanups_pending() == 0;
}

TEST(SemLostReplies, AGrantWhoseRepliesWereLostIsGivenBack) {
  rlock_test::PrivateRedis server;
  auto client = make_fast_client(server);
  RedisConn redis(server.admin_url());
  const SemKeys k("sem-lost-acquire");
  redis.ok({"SET", k.name, "3"});
  auto sem = std::make_shared<core::Semaphore>(client, k.name, core::SemaphoreOptions{});
  core::PermitArgs two;
  two.permits = 2;
  two.wait_ms = 0;
  ASSERT_EQ(sem->acquire(two, nullptr), core::kOk);  // the script is loaded: no NOSCRIPT later
  ASSERT_EQ(sem->release(2), core::kOk);
  std::thread busy = busy_server(server, 2500);
  EXPECT_NE(sem->acquire(two, nullptr), core::kOk) << "the reply came in time";
  busy.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the lost request ran by then
  // Run when the server was free again, the acquire took 2; the clean-up gives them back.
  ASSERT_TRUE(settled(*client));
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3") << "given back twice";
}

TEST(SemLostReplies, AReleaseWhoseRepliesWereLostIsAppliedOnce) {
  rlock_test::PrivateRedis server;
  auto client = make_fast_client(server);
  RedisConn redis(server.admin_url());
  const SemKeys k("sem-lost-release");
  redis.ok({"SET", k.name, "3"});
  auto sem = std::make_shared<core::Semaphore>(client, k.name, core::SemaphoreOptions{});
  core::PermitArgs two;
  two.permits = 2;
  two.wait_ms = 0;
  ASSERT_EQ(sem->acquire(two, nullptr), core::kOk);
  ASSERT_EQ(sem->release(1), core::kOk);  // the script is loaded
  ASSERT_EQ(sem->acquire(two, nullptr), core::kOk);
  ASSERT_EQ(redis.ok({"GET", k.name}).str, "0");
  const auto paused = std::chrono::steady_clock::now();
  redis.ok({"CLIENT", "PAUSE", "1500", "ALL"});
  EXPECT_NE(sem->release(2), core::kOk) << "the reply came in time";
  std::this_thread::sleep_until(paused + std::chrono::milliseconds(1800));
  ASSERT_TRUE(settled(*client));
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "2");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "2") << "applied twice";
}

TEST(SemLostReplies, ExpirableIdsOfALostAcquireAreFreed) {
  rlock_test::PrivateRedis server;
  auto client = make_fast_client(server);
  RedisConn redis(server.admin_url());
  const SemKeys k("psem-lost-acquire");
  redis.ok({"SET", k.name, "3"});
  core::SemaphoreOptions options;
  options.kind = core::SemaphoreKind::Expirable;
  options.lease_ms = core::kLeaseNone;
  auto sem = std::make_shared<core::Semaphore>(client, k.name, options);
  core::PermitArgs two;
  two.permits = 2;
  two.wait_ms = 0;
  std::vector<std::string> ids;
  ASSERT_EQ(sem->acquire(two, &ids), core::kOk);  // the script is loaded
  ASSERT_EQ(sem->release_ids(ids), core::kOk);
  std::thread busy = busy_server(server, 2500);
  EXPECT_NE(sem->acquire(two, &ids), core::kOk) << "the reply came in time";
  busy.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the lost request ran by then
  // Without a lease, ids nobody knows would be held for good.
  ASSERT_TRUE(settled(*client));
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "3");
  EXPECT_FALSE(redis.exists(k.deadlines));
}

TEST(SemLostReplies, ACleanUpPastItsGiveUpTimeIsDroppedAndCounted) {
  auto client = make_client();
  RedisConn redis(rlock_test::test_redis_url());
  SemKeys k("sem-give-up");
  redis.ok({"SET", k.name, "0"});
  const auto now = core::Holds::Clock::now();
  core::Holds::Cleanup late{&core::scripts::sem_release,
                            {k.name, k.channel, core::unlock_latch(k.name, "give-up-1")},
                            {"1", "5000"}};
  late.give_up = now - std::chrono::milliseconds(1);
  core::Holds::Cleanup due{&core::scripts::sem_release,
                           {k.name, k.channel, core::unlock_latch(k.name, "give-up-2")},
                           {"1", "5000"}};
  due.give_up = now + std::chrono::seconds(30);
  client->holds().add_cleanup(k.name, "", late);
  client->holds().add_cleanup(k.name, "", due);
  for (int i = 0; i < 200 && client->holds().cleanups_pending() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(client->holds().cleanups_pending(), 0u);
  EXPECT_EQ(redis.ok({"GET", k.name}).str, "1") << "only the clean-up still due runs";
  EXPECT_FALSE(redis.exists(core::unlock_latch(k.name, "give-up-1")));
  EXPECT_EQ(client->config().telemetry.stats->cleanups_dropped.load(), 1u);
  redis.del(core::unlock_latch(k.name, "give-up-2"));
}

}  // namespace
