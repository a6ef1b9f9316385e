// Clients that reach Redis through a unix socket (unix:// URLs and the unix_socket option).
#include <gtest/gtest.h>

#include <string>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

std::string socket_path() { return test_redis_url().substr(std::string("unix://").size()); }

// Everything a lock does over one connection kind: try, reentrant try, query, wait, release.
void expect_lock_round_trip(rlock_client* client, const std::string& name) {
  RedisConn redis(test_redis_url());
  it::Lock lock = it::make_lock(client, name);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(it::query(lock.get()).hold_count, 2);
  EXPECT_EQ(
      redis.hgetall(name),
      (std::map<std::string, std::string>{{it::owner_of(client, rlock_current_thread_id()), "2"}}));
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));

  // A bounded wait on a lock held by another (TCP) client: needs the subscriber connection.
  it::Client other = it::make_client();
  it::Lock held = it::make_lock(other.get(), name);
  ASSERT_EQ(it::acquire(held.get(), 0, 30000), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_acquire(lock.get(), 200), RLOCK_ETIMEDOUT) << it::last_error();
  EXPECT_EQ(rlock_release(held.get()), RLOCK_OK) << it::last_error();
}

TEST(UnixSocket, UrlClientLocksAndUnlocks) {
  const std::string name = unique_name("unix-url");
  LockKeys cleanup(name);
  it::Client client = it::make_client(test_redis_url());
  expect_lock_round_trip(client.get(), name);
}

TEST(UnixSocket, SocketOptionClientLocksAndUnlocks) {
  const std::string name = unique_name("unix-option");
  LockKeys cleanup(name);
  const std::string path = socket_path();
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.unix_socket = path.c_str();
  rlock_client* c = nullptr;
  ASSERT_EQ(rlock_client_new(&c, &opts), RLOCK_OK) << it::last_error();
  it::Client client(c);
  expect_lock_round_trip(client.get(), name);
}

TEST(UnixSocket, WrongPasswordIsAnAuthError) {
  rlock_client* c = nullptr;
  const std::string url = "unix://:wrong@" + socket_path();
  EXPECT_EQ(rlock_client_new_url(&c, url.c_str()), RLOCK_EAUTH) << it::last_error();
  EXPECT_STRNE(rlock_last_error()->message, "");
  EXPECT_EQ(c, nullptr);
  rlock_client_free(c);
}

}  // namespace
