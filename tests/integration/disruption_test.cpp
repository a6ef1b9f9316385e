// Server-side disturbances and credentials. These run on private redis-server instances, since
// SCRIPT FLUSH, CLIENT KILL and ACL changes would disturb other tests on the shared server.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

// ---- SCRIPT FLUSH ---------------------------------------------------------------------------

TEST(ScriptFlush, FlushesMidRunAreInvisibleToCallers) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  // A short watchdog lease makes the renewal script run (and meet NOSCRIPT) every 100 ms.
  it::Client client = it::make_client(server.tcp_url(), it::ClientSettings{300, 0, 0});
  it::Lock held = it::make_lock(client.get(), "held-by-watchdog");
  it::Lock shared = it::make_lock(client.get(), "contended");
  it::Lock own = it::make_lock(client.get(), "uncontended");
  ASSERT_EQ(rlock_acquire(held.get(), 0), RLOCK_OK) << it::last_error();

  it::ScriptFlusher flusher(server.unix_url());

  std::mutex failures_mutex;
  std::vector<std::string> failures;
  std::atomic<int> calls{0};
  auto check = [&](int rc, const char* what) {
    ++calls;
    if (rc != RLOCK_OK) {
      std::lock_guard<std::mutex> g(failures_mutex);
      failures.push_back(std::string(what) + ": " + it::last_error());
    }
  };
  auto loop = [&](rlock_lock* lock, int64_t wait_ms) {
    const int64_t until = mono_ms() + 2000;
    while (mono_ms() < until) {
      check(rlock_acquire(lock, wait_ms), "acquire");
      check(rlock_acquire(lock, 0), "reentrant acquire");
      rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
      check(rlock_query_for(&st, lock, RLOCK_THREAD_CURRENT), "query");
      check(rlock_extend(lock, 5000), "extend");
      check(rlock_release(lock), "release");
      check(rlock_release(lock), "release");
    }
  };
  std::vector<std::thread> workers;
  workers.emplace_back(loop, shared.get(), 5000);
  workers.emplace_back(loop, shared.get(), 5000);
  workers.emplace_back(loop, own.get(), 0);
  for (std::thread& t : workers) t.join();
  const int flushes = flusher.stop();

  EXPECT_GT(flushes, 50) << "the flusher did not run";
  EXPECT_GT(calls.load(), 100);
  for (size_t i = 0; i < failures.size() && i < 10; ++i) ADD_FAILURE() << failures[i];
  EXPECT_EQ(failures.size(), 0u) << "calls failed while scripts were flushed";

  EXPECT_EQ(rlock_is_lost_for(held.get(), RLOCK_THREAD_CURRENT), 0) << "renewal failed on NOSCRIPT";
  EXPECT_EQ(rlock_is_held(held.get()), 1);
  EXPECT_GT(admin.pttl("held-by-watchdog"), 0);
  EXPECT_EQ(rlock_release(held.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(admin.exists("held-by-watchdog"));
  EXPECT_FALSE(admin.exists("contended"));
  EXPECT_FALSE(admin.exists("uncontended"));
}

// ---- CLIENT KILL TYPE pubsub ----------------------------------------------------------------

// A waiter whose subscriber connection is killed must still take the lock soon after it is
// released, not when the holder's 30 s lease runs out.
void pubsub_killed_while_waiting(int64_t poll_cap_ms) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  const std::string name = "pubsub-kill";
  it::Client holder_client = it::make_client(server.tcp_url());
  it::Client waiter_client =
      it::make_client(server.tcp_url(), it::ClientSettings{0, poll_cap_ms, 0});
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);
  ASSERT_EQ(it::acquire(holder.get(), 0, 30000), RLOCK_OK) << it::last_error();

  const int64_t tid = 31337;
  std::atomic<int> rc{-100};
  std::atomic<int64_t> got_at{0};
  std::thread t([&] {
    rc = it::acquire(waiter.get(), 20000, 0, tid);
    got_at = mono_ms();
  });
  const bool subscribed = admin.wait_numsub(lock_channel(name), 1, 5000);
  sleep_ms(100);
  const long long killed = admin.integer({"CLIENT", "KILL", "TYPE", "pubsub"});
  sleep_ms(50);
  const int64_t released_at = mono_ms();
  const int release_rc = rlock_release(holder.get());
  t.join();

  EXPECT_TRUE(subscribed) << "the waiter never subscribed";
  EXPECT_GE(killed, 1) << "no pub/sub connection was killed";
  EXPECT_EQ(release_rc, RLOCK_OK);
  EXPECT_EQ(rc.load(), RLOCK_OK) << "the waiter did not get the lock";
  EXPECT_LT(got_at - released_at, 1500) << "the waiter did not recover from the lost subscription";
  EXPECT_EQ(admin.hgetall(name),
            (std::map<std::string, std::string>{{it::owner_of(waiter_client.get(), tid), "1"}}));
  EXPECT_EQ(rlock_release_for(waiter.get(), tid), RLOCK_OK) << it::last_error();
}

TEST(PubsubKill, WaiterAcquiresSoonAfterRelease) { pubsub_killed_while_waiting(0); }

// With a one-minute poll cap, only the subscriber's reconnect and resubscribe can save the wait.
TEST(PubsubKill, WaiterRecoversWithoutRelyingOnPolling) { pubsub_killed_while_waiting(60000); }

// ---- Credentials ----------------------------------------------------------------------------

// rlock_client_new must fail with `expected`, return NULL and explain why.
void expect_client_fails(const std::string& url, int expected) {
  rlock_client* c = reinterpret_cast<rlock_client*>(0x1);
  const int rc = rlock_client_new_url(&c, url.c_str());
  EXPECT_EQ(rc, expected) << url << ": " << it::last_error();
  EXPECT_EQ(rlock_last_error()->code, expected);
  EXPECT_STRNE(rlock_last_error()->message, "") << "no message for " << url;
  EXPECT_EQ(c, nullptr);
  if (rc == RLOCK_OK) rlock_client_free(c);
}

// "redis://:pw@host:port" with the given user (may be empty).
std::string with_credentials(const PrivateRedis& server, const std::string& user,
                             const std::string& password) {
  return "redis://" + user + ":" + password + "@127.0.0.1:" + std::to_string(server.port());
}

// Locks work end to end through a client made from `url`.
void expect_locks_work(const std::string& url, const std::string& name) {
  it::Client client = it::make_client(url);
  it::Lock lock = it::make_lock(client.get(), name);
  EXPECT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
}

TEST(Auth, WrongPasswordOnServerWithoutPassword) {
  // The shared server has no password: AUTH with one is refused.
  const std::string tcp = test_redis_tcp_url();
  expect_client_fails("redis://:wrong@" + tcp.substr(std::string("redis://").size()), RLOCK_EAUTH);
}

TEST(Auth, RequirePassRejectsWrongPasswordAndAcceptsRightOne) {
  PrivateRedis server({"--requirepass", "right-pass"});
  expect_client_fails(with_credentials(server, "", "wrong-pass"), RLOCK_EAUTH);
  expect_client_fails(with_credentials(server, "default", "wrong-pass"), RLOCK_EAUTH);
  expect_locks_work(with_credentials(server, "", "right-pass"), "requirepass-lock");

  // The same credentials through the option fields instead of the URL.
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.host = "127.0.0.1";
  opts.port = server.port();
  opts.password = "wrong-pass";
  rlock_client* c = nullptr;
  EXPECT_EQ(rlock_client_new(&c, &opts), RLOCK_EAUTH) << it::last_error();
  EXPECT_EQ(c, nullptr);
  opts.password = "right-pass";
  EXPECT_EQ(rlock_client_new(&c, &opts), RLOCK_OK) << it::last_error();
  rlock_client_free(c);
}

// The header promises rlock_client_new checks credentials: a server that requires a password
// must fail a client that has none at creation, not at its first lock call.
TEST(AuthAtCreation, RequirePassRejectsMissingPassword) {
  PrivateRedis server({"--requirepass", "right-pass"});
  expect_client_fails(server.tcp_url(), RLOCK_EAUTH);
}

TEST(Auth, AclUserWithWrongAndRightPassword) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  ASSERT_TRUE(admin.acl_setuser("locker", {"on", ">locker-pass", "~*", "&*", "+@all"}).is_status());
  expect_client_fails(with_credentials(server, "locker", "wrong-pass"), RLOCK_EAUTH);
  expect_client_fails(with_credentials(server, "nobody", "locker-pass"), RLOCK_EAUTH);
  expect_locks_work(with_credentials(server, "locker", "locker-pass"), "acl-lock");

  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.host = "127.0.0.1";
  opts.port = server.port();
  opts.username = "locker";
  opts.password = "locker-pass";
  rlock_client* c = nullptr;
  EXPECT_EQ(rlock_client_new(&c, &opts), RLOCK_OK) << it::last_error();
  rlock_client_free(c);
  admin.ok({"ACL", "DELUSER", "locker"});
}

TEST(Auth, H12_AclUserWithoutScriptingIsRefusedAtCreation) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  ASSERT_TRUE(admin.acl_setuser("noscript", {"on", ">pass", "~*", "&*", "+@all", "-@scripting"})
                  .is_status());
  expect_client_fails(with_credentials(server, "noscript", "pass"), RLOCK_ENOPERM);
  admin.ok({"ACL", "DELUSER", "noscript"});
}

// A user who may run EVAL but not EVALSHA (every call's first try) is refused at creation,
// with the command named (Restricted.* has the other ACL restrictions).
TEST(Auth, AclUserWithoutEvalshaIsRefusedAtCreation) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  ASSERT_TRUE(
      admin.acl_setuser("noevalsha", {"on", ">pass", "~*", "&*", "+@all", "-evalsha"}).is_status());
  expect_client_fails(with_credentials(server, "noevalsha", "pass"), RLOCK_ENOPERM);
  EXPECT_NE(std::string(rlock_last_error()->message).find("EVALSHA"), std::string::npos)
      << rlock_last_error()->message;
  admin.ok({"ACL", "DELUSER", "noevalsha"});
}

}  // namespace
