// Who holds a lock and how many times: reentrancy, releases by non-owners, handles sharing
// holds, binary names, force unlock and client shutdown.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

// ---- Reentrancy -----------------------------------------------------------------------------

TEST(Reentrancy, ThreeAcquiresNeedThreeReleases) {
  const std::string name = unique_name("reentrant");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  const std::string owner = it::owner_of(client.get(), rlock_current_thread_id());

  for (int i = 1; i <= 3; ++i) {
    ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
    EXPECT_EQ(it::query(lock.get()).hold_count, i);
  }
  it::State st = it::query(lock.get());
  EXPECT_TRUE(st.locked);
  EXPECT_EQ(st.hold_count, 3);
  EXPECT_EQ(st.owner_count, 1);
  EXPECT_EQ(st.owner, owner);
  EXPECT_EQ(st.owner_hold_count, 3);
  EXPECT_EQ(redis.hgetall(name), (std::map<std::string, std::string>{{owner, "3"}}))
      << "Redisson layout: field <client-id>:<thread-id> = hold count";

  for (int left = 2; left >= 0; --left) {
    ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
    EXPECT_EQ(it::query(lock.get()).hold_count, left);
    EXPECT_EQ(redis.exists(name), left > 0) << "after a release leaving " << left << " holds";
  }
  EXPECT_EQ(rlock_is_held(lock.get()), 0);
  EXPECT_EQ(redis.pttl(name), -2);

  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ENOTHELD) << "a 4th release";
  EXPECT_EQ(rlock_last_error()->code, RLOCK_ENOTHELD);
  EXPECT_STRNE(rlock_last_error()->message, "");
  EXPECT_FALSE(redis.exists(name)) << "a failed release must not create the key";
  it::State after = it::query(lock.get());
  EXPECT_FALSE(after.locked);
  EXPECT_EQ(after.ttl_ms, -2);
}

TEST(Reentrancy, TheLastReleaseAlsoTakesHoldsLeftByALostReply) {
  const std::string name = unique_name("phantom");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  const std::string owner = it::owner_of(client.get(), rlock_current_thread_id());
  // What an acquire leaves when it was applied, its reply was lost and its undo failed too
  // (or a release still on its way): a hold of this owner that the library does not know of.
  redis.ok({"HSET", name, owner, "1"});
  redis.ok({"PEXPIRE", name, "30000"});

  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_TRUE(redis.exists(name)) << "the inner release freed the lock the thread still holds";
  EXPECT_EQ(rlock_is_held(lock.get()), 1);
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  // Left with the extra hold, the key would stay locked, and renewed by the watchdog, forever.
  EXPECT_FALSE(redis.exists(name));
  EXPECT_EQ(rlock_is_held(lock.get()), 0);
}

TEST(Reentrancy, DepthOneHundredIsCountedExactly) {
  const std::string name = unique_name("reentrant100");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  const std::string owner = it::owner_of(client.get(), rlock_current_thread_id());

  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(it::query(lock.get()).hold_count, 100);
  EXPECT_EQ(redis.hgetall(name), (std::map<std::string, std::string>{{owner, "100"}}));

  for (int i = 0; i < 99; ++i) ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(it::query(lock.get()).hold_count, 1);
  EXPECT_EQ(redis.hgetall(name), (std::map<std::string, std::string>{{owner, "1"}}));
  EXPECT_EQ(rlock_is_held(lock.get()), 1);

  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ENOTHELD);
}

// ---- Releases by someone else ---------------------------------------------------------------

// Acquires with an explicit lease, so the TTL only falls: a TTL that went back up would show a
// release or extend by a non-owner touching the key.
TEST(NonOwner, H13_OtherClientCannotReleaseOrExtend) {
  const std::string name = unique_name("notowner");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  it::Client b = it::make_client();
  it::Lock lock_a = it::make_lock(a.get(), name);
  it::Lock lock_b = it::make_lock(b.get(), name);

  ASSERT_EQ(it::acquire(lock_a.get(), 0, 20000), RLOCK_OK) << it::last_error();
  const auto fields = redis.hgetall(name);
  ASSERT_EQ(fields.size(), 1u);
  const long long ttl_before = redis.pttl(name);
  sleep_ms(300);

  EXPECT_EQ(rlock_release(lock_b.get()), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_EQ(rlock_last_error()->code, RLOCK_ENOTOWNER);
  EXPECT_EQ(rlock_extend(lock_b.get(), 60000), RLOCK_ENOTOWNER) << it::last_error();

  EXPECT_EQ(redis.hgetall(name), fields) << "owner field or count changed";
  const long long ttl_after = redis.pttl(name);
  EXPECT_GT(ttl_after, 0);
  EXPECT_LE(ttl_after, ttl_before - 250) << "the TTL was reset by a non-owner";
  EXPECT_EQ(rlock_is_held(lock_a.get()), 1);
  EXPECT_EQ(rlock_is_held(lock_b.get()), 0);

  EXPECT_EQ(rlock_release(lock_a.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

TEST(NonOwner, H18_OtherThreadOfSameClientCannotRelease) {
  const std::string name = unique_name("notowner-thread");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);

  ASSERT_EQ(it::acquire(lock.get(), 0, 20000), RLOCK_OK) << it::last_error();
  const auto fields = redis.hgetall(name);
  const long long ttl_before = redis.pttl(name);
  sleep_ms(300);

  int release_rc = 0, extend_rc = 0, held = -1;
  std::string message;
  std::thread other([&] {
    held = rlock_is_held(lock.get());
    release_rc = rlock_release(lock.get());
    message = rlock_last_error()->message;
    extend_rc = rlock_extend(lock.get(), 60000);
  });
  other.join();
  EXPECT_EQ(held, 0) << "another thread must not see the hold as its own";
  EXPECT_EQ(release_rc, RLOCK_ENOTOWNER) << message;
  EXPECT_EQ(extend_rc, RLOCK_ENOTOWNER);
  // The same through an explicit thread id that is not the holder's.
  EXPECT_EQ(rlock_release_for(lock.get(), rlock_current_thread_id() + 100000), RLOCK_ENOTOWNER);

  EXPECT_EQ(redis.hgetall(name), fields);
  const long long ttl_after = redis.pttl(name);
  EXPECT_GT(ttl_after, 0);
  EXPECT_LE(ttl_after, ttl_before - 250) << "the TTL was reset by a non-owner";
  EXPECT_EQ(it::query(lock.get()).hold_count, 1);

  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

// ---- Several handles, explicit thread ids ---------------------------------------------------

TEST(SharedHandles, H18_TwoHandlesOfOneClientShareHolds) {
  const std::string name = unique_name("handles");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Client other = it::make_client();
  it::Lock h1 = it::make_lock(client.get(), name);
  it::Lock h2 = it::make_lock(client.get(), name);
  it::Lock h3 = it::make_lock(other.get(), name);
  const std::string owner = it::owner_of(client.get(), rlock_current_thread_id());

  ASSERT_EQ(rlock_acquire(h1.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_is_held(h2.get()), 1) << "holds are per client and owner, not per handle";
  ASSERT_EQ(rlock_acquire(h2.get(), 0), RLOCK_OK) << "same owner through a second handle";
  it::State st = it::query(h2.get());
  EXPECT_EQ(st.hold_count, 2);
  EXPECT_EQ(st.owner_count, 1);
  EXPECT_EQ(redis.hgetall(name), (std::map<std::string, std::string>{{owner, "2"}}));

  EXPECT_EQ(rlock_acquire(h3.get(), 0), RLOCK_ETIMEDOUT) << "another client is another owner";

  ASSERT_EQ(rlock_release(h2.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(it::query(h1.get()).hold_count, 1);
  ASSERT_EQ(rlock_release(h1.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
  EXPECT_EQ(rlock_is_held(h1.get()), 0);
  EXPECT_EQ(rlock_is_held(h2.get()), 0);
}

TEST(SharedHandles, ExplicitThreadIdIsItsOwnOwner) {
  const std::string name = unique_name("thread-id");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  const int64_t tid = 777000111;

  ASSERT_EQ(it::acquire(lock.get(), 0, 0, tid), RLOCK_OK) << it::last_error();
  EXPECT_EQ(redis.hgetall(name),
            (std::map<std::string, std::string>{{it::owner_of(client.get(), tid), "1"}}));
  EXPECT_EQ(rlock_is_held_for(lock.get(), tid), 1);
  EXPECT_EQ(rlock_is_held(lock.get()), 0) << "the calling thread is a different owner";
  EXPECT_EQ(rlock_acquire(lock.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ENOTOWNER);

  // Work may move between OS threads: release the hold from another thread by its id.
  int rc = -100;
  std::thread([&] { rc = rlock_release_for(lock.get(), tid); }).join();
  EXPECT_EQ(rc, RLOCK_OK);
  EXPECT_FALSE(redis.exists(name));
}

// ---- Names ----------------------------------------------------------------------------------

// A forked child's thread is its own owner: the id is the child thread's, not the parent's
// (which Linux may later give to another thread of the child).
TEST(SharedHandles, ThreadIdAfterForkIsTheChildsOwn) {
  const int64_t parent_id = rlock_current_thread_id();
  ASSERT_EQ(parent_id, static_cast<int64_t>(::syscall(SYS_gettid)));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int64_t id = rlock_current_thread_id();
    _exit(id == static_cast<int64_t>(::syscall(SYS_gettid)) && id != parent_id ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child used the parent's thread id";
}

TEST(Names, NulBytesRoundTripIntoHashAndChannel) {
  const std::string name = unique_name("bin") + std::string(
                                                    "\0mid\xff\x01"
                                                    "end",
                                                    9);
  const std::string prefix = name.substr(0, name.find('\0'));
  ASSERT_LT(prefix.size(), name.size());
  LockKeys cleanup(name);
  LockKeys cleanup_prefix(prefix);
  const std::string channel = "redisson_lock__channel:{" + name + "}";

  RedisConn redis(test_redis_url());
  RedisConn listener(test_redis_url());
  listener.subscribe(channel);
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client(it::ClientSettings{0, 30000, 0});
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);
  it::Lock truncated = it::make_lock(holder_client.get(), prefix);

  ASSERT_EQ(rlock_acquire(holder.get(), 0), RLOCK_OK) << it::last_error();
  const std::string owner = it::owner_of(holder_client.get(), rlock_current_thread_id());
  EXPECT_EQ(redis.hgetall(name), (std::map<std::string, std::string>{{owner, "1"}}))
      << "the key must be the full binary name";
  EXPECT_FALSE(redis.exists(prefix)) << "the name was cut at the NUL byte";
  EXPECT_FALSE(it::query(truncated.get()).locked);
  it::State st = it::query(waiter.get());
  EXPECT_TRUE(st.locked);
  EXPECT_EQ(st.owner, owner);

  // A waiter of another client must subscribe to the same binary channel and be woken on it.
  const int64_t tid = 4242;
  std::atomic<int> rc{-100};
  std::atomic<int64_t> got_at{0};
  std::thread t([&] {
    rc = it::acquire(waiter.get(), 10000, 0, tid);
    got_at = mono_ms();
  });
  const bool subscribed = redis.wait_numsub(channel, 2, 5000);
  sleep_ms(50);
  const int64_t released_at = mono_ms();
  EXPECT_EQ(rlock_release(holder.get()), RLOCK_OK) << it::last_error();
  t.join();
  EXPECT_TRUE(subscribed) << "the library never subscribed to the binary channel";
  EXPECT_EQ(rc.load(), RLOCK_OK);
  EXPECT_LT(got_at - released_at, 1000) << "the waiter was not woken through the channel";

  std::string got_channel, payload;
  ASSERT_TRUE(listener.next_message(2000, &got_channel, &payload)) << "no unlock message";
  EXPECT_EQ(got_channel, channel);
  EXPECT_EQ(payload, "0");

  EXPECT_EQ(redis.hgetall(name),
            (std::map<std::string, std::string>{{it::owner_of(waiter_client.get(), tid), "1"}}));
  EXPECT_EQ(rlock_release_for(waiter.get(), tid), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

TEST(Names, UnlockIsPublishedOnTheHashTaggedChannel) {
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  for (const std::string& name : {unique_name("plain"), "{" + unique_name("tagged") + "}:x"}) {
    SCOPED_TRACE(name);
    LockKeys cleanup(name);
    const std::string expected =
        name[0] == '{' ? "redisson_lock__channel:" + name : "redisson_lock__channel:{" + name + "}";
    RedisConn listener(test_redis_url());
    listener.subscribe(expected);
    it::Lock lock = it::make_lock(client.get(), name);
    ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
    ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
    ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
    std::string channel, payload;
    EXPECT_FALSE(listener.next_message(200, &channel, &payload))
        << "a release that leaves a hold must not publish";
    RedisConn listener2(test_redis_url());  // the timed-out connection is spent
    listener2.subscribe(expected);
    ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
    ASSERT_TRUE(listener2.next_message(2000, &channel, &payload)) << "no unlock message";
    EXPECT_EQ(channel, expected);
    EXPECT_EQ(payload, "0");
    EXPECT_FALSE(redis.exists(name));
  }
}

// ---- Force unlock ---------------------------------------------------------------------------

TEST(ForceUnlock, DeletesAnyHolderAndWakesWaiter) {
  const std::string name = unique_name("force");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client(it::ClientSettings{0, 30000, 0});
  it::Client admin_client = it::make_client();
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);
  it::Lock admin = it::make_lock(admin_client.get(), name);

  ASSERT_EQ(it::acquire(holder.get(), 0, 30000), RLOCK_OK) << it::last_error();
  const int64_t tid = 5151;
  std::atomic<int> rc{-100};
  std::atomic<int64_t> got_at{0};
  std::thread t([&] {
    rc = it::acquire(waiter.get(), 10000, 0, tid);
    got_at = mono_ms();
  });
  const bool subscribed = redis.wait_numsub(lock_channel(name), 1, 5000);
  sleep_ms(100);
  int deleted = -1;
  const int64_t forced_at = mono_ms();
  EXPECT_EQ(rlock_force_unlock(&deleted, admin.get()), RLOCK_OK) << it::last_error();
  t.join();
  EXPECT_TRUE(subscribed);
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(rc.load(), RLOCK_OK);
  EXPECT_LT(got_at - forced_at, 1000) << "force unlock must wake waiters (poll cap is 30 s)";

  EXPECT_EQ(rlock_release(holder.get()), RLOCK_ELOST)
      << "the old holder must learn it lost the lock: " << it::last_error();
  EXPECT_EQ(redis.hgetall(name),
            (std::map<std::string, std::string>{{it::owner_of(waiter_client.get(), tid), "1"}}))
      << "the old holder's release touched the new holder's key";

  EXPECT_EQ(rlock_release_for(waiter.get(), tid), RLOCK_OK) << it::last_error();
  deleted = -1;
  EXPECT_EQ(rlock_force_unlock(&deleted, admin.get()), RLOCK_OK);
  EXPECT_EQ(deleted, 0) << "nothing to delete";
  EXPECT_FALSE(redis.exists(name));
}

// ---- Client shutdown ------------------------------------------------------------------------

TEST(ClientFree, H19_ReleasesHeldLocksAndWakesWaiters) {
  const std::string name = unique_name("client-free");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client(it::ClientSettings{0, 30000, 0});
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);

  ASSERT_EQ(rlock_acquire(holder.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_acquire(holder.get(), 0), RLOCK_OK) << it::last_error();  // two holds
  const int64_t tid = 6161;
  std::atomic<int> rc{-100};
  std::atomic<int64_t> got_at{0};
  std::thread t([&] {
    rc = it::acquire(waiter.get(), 10000, 0, tid);
    got_at = mono_ms();
  });
  redis.wait_numsub(lock_channel(name), 1, 5000);
  sleep_ms(50);
  const int64_t freed_at = mono_ms();
  holder_client.reset();  // the lock handle outlives its client
  t.join();
  EXPECT_EQ(rc.load(), RLOCK_OK);
  EXPECT_LT(got_at - freed_at, 1000) << "freeing the client must release its locks at once";

  EXPECT_EQ(rlock_acquire(holder.get(), 0), RLOCK_ECLOSED);
  EXPECT_EQ(rlock_release(holder.get()), RLOCK_ECLOSED);
  EXPECT_EQ(rlock_is_held(holder.get()), 0);
  holder.reset();

  EXPECT_EQ(rlock_release_for(waiter.get(), tid), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

// ---- Caller-given owners (rlock_lock_options.owner_id) ------------------------------------

it::Lock make_owned_lock(rlock_client* client, const std::string& name, const std::string& id,
                         int64_t lease_ms = 0) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.owner_id = id.data();
  opts.owner_id_len = id.size();
  if (lease_ms != 0) opts.lease_ms = lease_ms;
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n failed: " + it::last_error());
  }
  return it::Lock(l);
}

// The field's first half is the id's version-5 UUID in RLOCK_OWNER_ID_NAMESPACE (the expected
// value comes from Python's uuid.uuid5), so a handle on any client naming the id is the owner.
TEST(CallerOwner, AnyClientNamingTheIdExtendsAndReleases) {
  const std::string name = unique_name("caller-owner");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  it::Client b = it::make_client();
  it::Client c = it::make_client();
  it::Lock taker = make_owned_lock(a.get(), name, "job-42", 20000);
  it::Lock finisher = make_owned_lock(b.get(), name, "job-42");
  it::Lock stranger = make_owned_lock(c.get(), name, "job-43");
  it::Lock plain = it::make_lock(c.get(), name);

  ASSERT_EQ(rlock_acquire(taker.get(), 0), RLOCK_OK) << it::last_error();
  const std::map<std::string, std::string> expected{
      {"bd5e3299-69d1-5f15-b688-738ddd7fa874:1", "1"}};
  EXPECT_EQ(redis.hgetall(name), expected);
  EXPECT_EQ(rlock_acquire(stranger.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(rlock_acquire(plain.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(rlock_release(stranger.get()), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_EQ(rlock_release(plain.get()), RLOCK_ENOTOWNER) << it::last_error();

  EXPECT_EQ(rlock_extend(finisher.get(), 60000), RLOCK_OK) << it::last_error();
  EXPECT_GT(redis.pttl(name), 30000) << "the other client's extend set the lease";
  // Any thread id acts for the one owner of the id, which never re-enters (its holds may be
  // other processes'): a second acquire is refused and changes nothing.
  EXPECT_EQ(it::acquire(finisher.get(), 0, 0, 7), RLOCK_EDEADLK) << it::last_error();
  EXPECT_EQ(it::acquire(taker.get(), 1000), RLOCK_EDEADLK) << it::last_error();
  EXPECT_EQ(redis.hgetall(name), expected);
  EXPECT_EQ(rlock_release_for(finisher.get(), 7), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
  EXPECT_EQ(rlock_release(finisher.get()), RLOCK_ENOTHELD) << it::last_error();
}

// Freeing the client that acquired leaves a caller-given owner's hold to its lease (another
// process may be the one to release it), while it releases the client's own holds.
TEST(CallerOwner, ClientFreeLeavesTheHoldToItsLease) {
  const std::string given = unique_name("caller-owner-free");
  const std::string own = unique_name("caller-owner-own");
  LockKeys c1(given), c2(own);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  it::Lock by_id = make_owned_lock(a.get(), given, "handoff", 20000);
  it::Lock by_thread = it::make_lock(a.get(), own, 20000);
  ASSERT_EQ(rlock_acquire(by_id.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_acquire(by_thread.get(), 0), RLOCK_OK) << it::last_error();
  a.reset();
  EXPECT_TRUE(redis.exists(given));
  EXPECT_FALSE(redis.exists(own));

  it::Client b = it::make_client();
  it::Lock later = make_owned_lock(b.get(), given, "handoff");
  EXPECT_EQ(rlock_release(later.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(given));
}

TEST(CallerOwner, BadIdsAreRefusedAndBytesCount) {
  const std::string name = unique_name("caller-owner-bad");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client();
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  rlock_lock* l = nullptr;
  opts.owner_id = "";
  opts.owner_id_len = 0;
  EXPECT_EQ(rlock_lock_new(&l, a.get(), name.c_str(), &opts), RLOCK_EINVAL);
  EXPECT_NE(it::last_error().find("owner_id must not be empty"), std::string::npos)
      << it::last_error();
  const std::string too_long(1025, 'x');
  opts.owner_id = too_long.data();
  opts.owner_id_len = too_long.size();
  EXPECT_EQ(rlock_lock_new(&l, a.get(), name.c_str(), &opts), RLOCK_EINVAL);
  EXPECT_NE(it::last_error().find("owner_id is 1025 bytes"), std::string::npos) << it::last_error();
  EXPECT_EQ(l, nullptr);
  opts.owner_id = nullptr;
  opts.owner_id_len = 3;
  EXPECT_EQ(rlock_lock_new(&l, a.get(), name.c_str(), &opts), RLOCK_EINVAL);
  opts.owner_id = "job";
  opts.kind = RLOCK_LOCK_READ;
  EXPECT_EQ(rlock_lock_new(&l, a.get(), name.c_str(), &opts), RLOCK_EINVAL);
  EXPECT_NE(it::last_error().find("not available for read and write locks"), std::string::npos)
      << it::last_error();
  EXPECT_EQ(l, nullptr);

  // An id with a NUL byte is its own owner, not its prefix's.
  it::Lock with_nul = make_owned_lock(a.get(), name, std::string("a\0b", 3), 20000);
  it::Lock prefix = make_owned_lock(a.get(), name, "a", 20000);
  ASSERT_EQ(rlock_acquire(with_nul.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_acquire(prefix.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_EQ(rlock_release(with_nul.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

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

std::string read_lease_key(const std::string& name, const std::string& owner, int k) {
  return "{" + name + "}:" + owner + ":rwlock_timeout:" + std::to_string(k);
}

// Read-write holds go like the others' (they were left to expire by their lease): the read
// holds with their lease keys, leaving another reader's alone, and the write holds, waking a
// writer that waits.
TEST(ClientFree, ReleasesReadAndWriteHolds) {
  const std::string read_name = unique_name("client-free-read");
  const std::string write_name = unique_name("client-free-write");
  LockKeys c1(read_name), c2(write_name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Client other_client = it::make_client(it::ClientSettings{0, 30000, 0});
  const int64_t lease = 60000;
  it::Lock reader = make_kind_lock(holder_client.get(), read_name, RLOCK_LOCK_READ, lease);
  it::Lock writer = make_kind_lock(holder_client.get(), write_name, RLOCK_LOCK_WRITE, lease);
  it::Lock other_reader = make_kind_lock(other_client.get(), read_name, RLOCK_LOCK_READ, lease);
  it::Lock waiting_writer = make_kind_lock(other_client.get(), write_name, RLOCK_LOCK_WRITE);
  const std::string owner = it::owner_of(holder_client.get(), rlock_current_thread_id());
  const std::string other = it::owner_of(other_client.get(), rlock_current_thread_id());
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(rlock_acquire(reader.get(), 0), RLOCK_OK) << it::last_error();
    ASSERT_EQ(rlock_acquire(writer.get(), 0), RLOCK_OK) << it::last_error();
  }
  ASSERT_EQ(rlock_acquire(other_reader.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(redis.hgetall(read_name).at(owner), "2");
  ASSERT_EQ(redis.hgetall(write_name).at(owner + ":write"), "2");

  const int64_t tid = 7171;
  std::atomic<int> rc{-100};
  std::atomic<int64_t> got_at{0};
  std::thread t([&] {
    rc = it::acquire(waiting_writer.get(), 20000, 0, tid);
    got_at = mono_ms();
  });
  redis.wait_numsub("redisson_rwlock:{" + write_name + "}", 1, 5000);
  sleep_ms(50);
  const int64_t freed_at = mono_ms();
  holder_client.reset();
  EXPECT_FALSE(redis.exists(read_lease_key(read_name, owner, 1)));
  EXPECT_FALSE(redis.exists(read_lease_key(read_name, owner, 2)));
  EXPECT_EQ(redis.hgetall(read_name),
            (std::map<std::string, std::string>{{"mode", "read"}, {other, "1"}}))
      << "the freed client's read holds must go, the other reader's stay";
  EXPECT_TRUE(redis.exists(read_lease_key(read_name, other, 1)));
  t.join();
  EXPECT_EQ(rc.load(), RLOCK_OK) << "the waiting writer did not get the freed write lock";
  EXPECT_LT(got_at - freed_at, 1000) << "freeing the client must release its write lock at once";
  EXPECT_EQ(redis.hgetall(write_name).count(owner + ":write"), 0u);
  EXPECT_EQ(rlock_release_for(waiting_writer.get(), tid), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(other_reader.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(read_name));
  EXPECT_FALSE(redis.exists(write_name));
}

// A fair hold goes with the fair release, which wakes the queue's head on its own channel (the
// plain release published on the lock channel, which no fair waiter listens to: the head found
// out only when it next polled).
TEST(ClientFree, ReleasesFairHoldsAndWakesTheQueueHead) {
  const std::string name = unique_name("client-free-fair");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client holder_client = it::make_client();
  it::Client waiter_client = it::make_client(it::ClientSettings{0, 30000, 0});
  it::Lock holder = make_kind_lock(holder_client.get(), name, RLOCK_LOCK_FAIR, 60000);
  it::Lock waiter = make_kind_lock(waiter_client.get(), name, RLOCK_LOCK_FAIR);
  ASSERT_EQ(rlock_acquire(holder.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_acquire(holder.get(), 0), RLOCK_OK) << it::last_error();

  const int64_t tid = 7272;
  const std::string waiter_owner = it::owner_of(waiter_client.get(), tid);
  std::atomic<int> rc{-100};
  std::atomic<int64_t> got_at{0};
  std::thread t([&] {
    // A 20 s wait keeps its place by coming back every 5 s: well beyond the bound below.
    rc = it::acquire(waiter.get(), 20000, 0, tid);
    got_at = mono_ms();
  });
  const std::string head_channel = lock_channel(name) + ":" + waiter_owner;
  ASSERT_TRUE(redis.wait_numsub(head_channel, 1, 5000));
  for (int i = 0; i < 200 && redis.integer({"LLEN", fair_queue_key(name)}) == 0; ++i) sleep_ms(5);
  ASSERT_EQ(redis.integer({"LLEN", fair_queue_key(name)}), 1) << "the waiter did not queue";
  sleep_ms(50);
  const int64_t freed_at = mono_ms();
  holder_client.reset();
  t.join();
  EXPECT_EQ(rc.load(), RLOCK_OK) << it::last_error();
  EXPECT_LT(got_at - freed_at, 1000) << "the queue's head was not woken when the client was freed";
  EXPECT_EQ(redis.integer({"LLEN", fair_queue_key(name)}), 0);
  EXPECT_EQ(rlock_release_for(waiter.get(), tid), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

}  // namespace
