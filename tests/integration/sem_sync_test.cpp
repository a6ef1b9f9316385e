// Replica sync (sync_replicas) of semaphores and latches, against a real master and replica: a
// grant the replica does not confirm (it is made to sleep) is given back and fails with
// RLOCK_ENOTSYNCED; releases, counts and count-downs are followed by WAIT.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

using it::Latch;
using it::Semaphore;

Semaphore make_semaphore(rlock_client* client, const std::string& name, rlock_semaphore_kind kind) {
  rlock_semaphore_options opts = RLOCK_SEMAPHORE_OPTIONS_INIT;
  opts.kind = kind;
  rlock_semaphore* s = nullptr;
  if (rlock_semaphore_new(&s, client, name.c_str(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_semaphore_new failed: " + it::last_error());
  }
  return Semaphore(s);
}

// A master with one replica online, which DEBUG SLEEP can stop from confirming writes.
struct Pair {
  PrivateRedis master;
  PrivateRedis replica;
  RedisConn admin;
  Pair()
      : replica({"--replicaof", "127.0.0.1", std::to_string(master.port()),
                 "--enable-debug-command", "yes"}),
        admin(master.unix_url()) {
    const int64_t deadline = mono_ms() + 10000;
    while (admin.ok({"INFO", "replication"}).str.find("state=online") == std::string::npos) {
      if (mono_ms() > deadline) throw std::runtime_error("the replica did not come online");
      sleep_ms(20);
    }
    // Online is not yet confirming: wait until a write is acknowledged.
    admin.ok({"SET", "ready", "1"});
    while (admin.ok({"WAIT", "1", "100"}).integer < 1) {
      if (mono_ms() > deadline) throw std::runtime_error("the replica does not confirm writes");
    }
  }
  std::string url() const { return master.tcp_url() + "?sync_replicas=1&sync_timeout_ms=150"; }
};

// The replica sleeps (answers nothing, confirms nothing) for `seconds` from construction; the
// destructor waits until it is awake again.
class Nap {
 public:
  Nap(const PrivateRedis& replica, int seconds)
      : thread_([url = replica.unix_url(), seconds] {
          RedisConn conn(url, (seconds + 5) * 1000);
          conn.command({"DEBUG", "SLEEP", std::to_string(seconds)});
        }) {
    sleep_ms(100);  // the DEBUG SLEEP has reached it
  }
  ~Nap() { thread_.join(); }

 private:
  std::thread thread_;
};

}  // namespace

TEST(SemaphoreReplicaSync, UnconfirmedGrantsAreGivenBackAndFailNotSynced) {
  Pair pair;
  it::Client client = it::make_client(pair.url());
  Semaphore plain = make_semaphore(client.get(), "plain", RLOCK_SEMAPHORE_PLAIN);
  Semaphore expirable = make_semaphore(client.get(), "expirable", RLOCK_SEMAPHORE_EXPIRABLE);
  ASSERT_EQ(rlock_semaphore_try_set_permits(nullptr, plain.get(), 3, 0), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_try_set_permits(nullptr, expirable.get(), 2, 0), RLOCK_OK);
  // Confirmed while the replica is awake: granted as usual.
  ASSERT_EQ(rlock_semaphore_acquire(plain.get(), 2, 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_semaphore_release(plain.get(), 2), RLOCK_OK) << it::last_error();
  rlock_permit_id id;
  ASSERT_EQ(rlock_permit_acquire(&id, expirable.get(), 0, 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_permit_release(expirable.get(), id.hex), RLOCK_OK) << it::last_error();
  {
    Nap nap(pair.replica, 3);
    int64_t start = mono_ms();
    EXPECT_EQ(rlock_semaphore_acquire(plain.get(), 2, 0), RLOCK_ENOTSYNCED);
    const std::string message = it::last_error();
    EXPECT_NE(message.find("0 of 1 replicas confirmed the grant within 150 ms"), std::string::npos)
        << message;
    EXPECT_NE(message.find("given back"), std::string::npos) << message;
    EXPECT_GE(mono_ms() - start, 300) << "not tried twice, each with WAIT";
    EXPECT_EQ(pair.admin.ok({"GET", "plain"}).str, "3") << "the permits were not given back";
    int64_t held = -1;
    ASSERT_EQ(rlock_semaphore_held(&held, plain.get()), RLOCK_OK);
    EXPECT_EQ(held, 0);
    // A waiting acquire fails the same way, without waiting further.
    start = mono_ms();
    EXPECT_EQ(rlock_semaphore_acquire(plain.get(), 1, 5000), RLOCK_ENOTSYNCED) << it::last_error();
    EXPECT_LT(mono_ms() - start, 2000);
    EXPECT_EQ(pair.admin.ok({"GET", "plain"}).str, "3");

    EXPECT_EQ(rlock_permit_acquire(&id, expirable.get(), 0, 0), RLOCK_ENOTSYNCED);
    EXPECT_NE(it::last_error().find("replicas confirmed the grant"), std::string::npos)
        << it::last_error();
    EXPECT_EQ(pair.admin.ok({"GET", "expirable"}).str, "2") << "the permit was not given back";
    EXPECT_EQ(pair.admin.integer({"ZCARD", "{expirable}:timeout"}), 0);
  }
  // Awake again: granted, and on the replica when the call returns.
  ASSERT_EQ(rlock_semaphore_acquire(plain.get(), 1, 0), RLOCK_OK) << it::last_error();
  RedisConn replica(pair.replica.unix_url());
  EXPECT_EQ(replica.ok({"GET", "plain"}).str, "2");
  EXPECT_EQ(rlock_semaphore_release(plain.get(), 1), RLOCK_OK) << it::last_error();
}

// Calls that cannot be taken back wait for the replicas too (so each takes the WAIT's time
// while the replica sleeps) and answer as without sync: their effect is on the master.
TEST(SemaphoreReplicaSync, ReleasesCountsAndCountDownsAreFollowedByWait) {
  Pair pair;
  it::Client client = it::make_client(pair.url());
  Semaphore plain = make_semaphore(client.get(), "plain", RLOCK_SEMAPHORE_PLAIN);
  Semaphore expirable = make_semaphore(client.get(), "expirable", RLOCK_SEMAPHORE_EXPIRABLE);
  rlock_latch* raw_latch = nullptr;
  ASSERT_EQ(rlock_latch_new(&raw_latch, client.get(), "latch"), RLOCK_OK);
  Latch latch(raw_latch);
  ASSERT_EQ(rlock_semaphore_try_set_permits(nullptr, plain.get(), 3, 0), RLOCK_OK);
  ASSERT_EQ(rlock_semaphore_acquire(plain.get(), 1, 0), RLOCK_OK) << it::last_error();
  rlock_permit_id id;
  ASSERT_EQ(rlock_semaphore_try_set_permits(nullptr, expirable.get(), 2, 0), RLOCK_OK);
  ASSERT_EQ(rlock_permit_acquire(&id, expirable.get(), 0, 0), RLOCK_OK) << it::last_error();

  Nap nap(pair.replica, 4);
  auto took_wait = [](const char* what, const std::function<int()>& call) {
    const int64_t start = mono_ms();
    EXPECT_EQ(call(), RLOCK_OK) << what << ": " << it::last_error();
    EXPECT_GE(mono_ms() - start, 140) << what << " was not followed by WAIT";
  };
  took_wait("release", [&] { return rlock_semaphore_release(plain.get(), 1); });
  took_wait("add_permits", [&] { return rlock_semaphore_add_permits(nullptr, plain.get(), 1); });
  took_wait("permit release", [&] { return rlock_permit_release(expirable.get(), id.hex); });
  took_wait("set_permits",
            [&] { return rlock_semaphore_set_permits(nullptr, expirable.get(), 5); });
  took_wait("try_set_permits",
            [&] { return rlock_semaphore_try_set_permits(nullptr, plain.get(), 9, 0); });
  took_wait("latch try_set_count",
            [&] { return rlock_latch_try_set_count(nullptr, latch.get(), 2); });
  int64_t left = -1;
  took_wait("count_down", [&] { return rlock_latch_count_down(&left, latch.get()); });
  EXPECT_EQ(left, 1);
  EXPECT_EQ(pair.admin.ok({"GET", "plain"}).str, "4");
  EXPECT_EQ(pair.admin.ok({"GET", "expirable"}).str, "5");
  EXPECT_EQ(pair.admin.ok({"GET", "latch"}).str, "1");
}
