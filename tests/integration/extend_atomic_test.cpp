// Adding to a lease (rlock_extend_by_for) in one script: plain, fair and write locks add to the
// hash's remaining lease, a reader to its own read lease only; not held changes nothing; a key
// without expiry is refused and kept without one. Bounds have margins for a slow machine.
#include <gtest/gtest.h>

#include <string>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

it::Lock make_kind(rlock_client* client, const std::string& name, rlock_lock_kind kind) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = kind;
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n failed: " + it::last_error());
  }
  return it::Lock(l);
}

std::string read_lease_key(const std::string& name, rlock_client* client, int k) {
  return "{" + name + "}:" + it::owner_of(client, rlock_current_thread_id()) +
         ":rwlock_timeout:" + std::to_string(k);
}

TEST(ExtendAtomic, PlainFairAndWriteLocksAddToTheRemainingLease) {
  for (rlock_lock_kind kind : {RLOCK_LOCK_REENTRANT, RLOCK_LOCK_FAIR, RLOCK_LOCK_WRITE}) {
    SCOPED_TRACE("kind " + std::to_string(kind));
    const std::string name = unique_name("extend-atomic");
    LockKeys cleanup(name);
    RedisConn redis(test_redis_url());
    it::Client client = it::make_client();
    it::Lock lock = make_kind(client.get(), name, kind);
    ASSERT_EQ(it::acquire(lock.get(), 0, 5000), RLOCK_OK) << it::last_error();
    ASSERT_EQ(rlock_extend_by_for(lock.get(), 0, 10000), RLOCK_OK) << it::last_error();
    const long long pttl = redis.pttl(name);
    EXPECT_GT(pttl, 12000) << "5 s + 10 s, less the time since the acquire";
    EXPECT_LE(pttl, 15000);
    ASSERT_EQ(rlock_extend_by_for(lock.get(), 0, 1000), RLOCK_OK) << it::last_error();
    EXPECT_GT(redis.pttl(name), pttl) << "each add adds to what is left";
    EXPECT_LE(redis.pttl(name), 16000);
    EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
    EXPECT_FALSE(redis.exists(name));
  }
}

TEST(ExtendAtomic, TheHoldStaysValidHereForTheAddedTime) {
  const std::string name = unique_name("extend-atomic-valid");
  LockKeys cleanup(name);
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  ASSERT_EQ(it::acquire(lock.get(), 0, 1000), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_extend_by_for(lock.get(), 0, 3000), RLOCK_OK) << it::last_error();
  sleep_ms(1500);  // past the first lease, well within the added one
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
}

TEST(ExtendAtomic, AReaderAddsToItsOwnLeaseOnly) {
  const std::string name = unique_name("extend-atomic-read");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client(), b = it::make_client();
  it::Lock read_a = make_kind(a.get(), name, RLOCK_LOCK_READ);
  it::Lock read_b = make_kind(b.get(), name, RLOCK_LOCK_READ);
  ASSERT_EQ(it::acquire(read_a.get(), 0, 2000), RLOCK_OK) << it::last_error();
  ASSERT_EQ(it::acquire(read_a.get(), 0, 2000), RLOCK_OK) << it::last_error();  // 2 holds
  ASSERT_EQ(it::acquire(read_b.get(), 0, 20000), RLOCK_OK) << it::last_error();

  // a's lease is ~2 s; the hash's ~20 s is b's. Adding 3 s gives a ~5 s, not ~23 s.
  ASSERT_EQ(rlock_extend_by_for(read_a.get(), 0, 3000), RLOCK_OK) << it::last_error();
  for (int k = 1; k <= 2; ++k) {
    const long long own = redis.pttl(read_lease_key(name, a.get(), k));
    EXPECT_GT(own, 3500) << "hold " << k;
    EXPECT_LE(own, 5000) << "hold " << k << ": the add went to the longest reader's lease";
  }
  EXPECT_GT(redis.pttl(read_lease_key(name, b.get(), 1)), 18000);
  EXPECT_LE(redis.pttl(read_lease_key(name, b.get(), 1)), 20000) << "b's lease was changed";
  EXPECT_GT(redis.pttl(name), 18000) << "the hash must outlive its longest reader";
  EXPECT_LE(redis.pttl(name), 20000) << "the hash grew past its longest reader";

  // Past the longest reader: the hash follows a's lease.
  ASSERT_EQ(rlock_extend_by_for(read_a.get(), 0, 30000), RLOCK_OK) << it::last_error();
  const long long own = redis.pttl(read_lease_key(name, a.get(), 1));
  EXPECT_GT(own, 32000);
  EXPECT_LE(own, 35000);
  EXPECT_GE(redis.pttl(name), own - 50);
  EXPECT_LE(redis.pttl(name), 35000);

  EXPECT_EQ(rlock_release(read_b.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(read_a.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(read_a.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

TEST(ExtendAtomic, NotHeldChangesNothing) {
  const std::string name = unique_name("extend-atomic-not-held");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a = it::make_client(), b = it::make_client();
  it::Lock lock_a = it::make_lock(a.get(), name), lock_b = it::make_lock(b.get(), name);
  EXPECT_EQ(rlock_extend_by_for(lock_a.get(), 0, 1000), RLOCK_ENOTHELD) << it::last_error();
  EXPECT_FALSE(redis.exists(name)) << "extend-by of a free lock created it";
  ASSERT_EQ(it::acquire(lock_b.get(), 0, 5000), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_extend_by_for(lock_a.get(), 0, 60000), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_LE(redis.pttl(name), 5000) << "another owner's lease was extended";
  EXPECT_EQ(rlock_release(lock_b.get()), RLOCK_OK) << it::last_error();

  // A read lock held by another reader only, and a write lock held by another writer.
  const std::string rw = unique_name("extend-atomic-rw-not-held");
  LockKeys rw_cleanup(rw);
  it::Lock read_a = make_kind(a.get(), rw, RLOCK_LOCK_READ);
  it::Lock read_b = make_kind(b.get(), rw, RLOCK_LOCK_READ);
  it::Lock write_a = make_kind(a.get(), rw, RLOCK_LOCK_WRITE);
  ASSERT_EQ(it::acquire(read_b.get(), 0, 5000), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_extend_by_for(read_a.get(), 0, 60000), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_EQ(rlock_extend_by_for(write_a.get(), 0, 60000), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_LE(redis.pttl(rw), 5000);
  EXPECT_LE(redis.pttl(read_lease_key(rw, b.get(), 1)), 5000);
  EXPECT_FALSE(redis.exists(read_lease_key(rw, a.get(), 1))) << "a lease key was made";
  EXPECT_EQ(rlock_release(read_b.get()), RLOCK_OK) << it::last_error();
}

TEST(ExtendAtomic, AKeyWithoutExpiryIsRefusedAndKeptWithout) {
  const std::string name = unique_name("extend-atomic-persist");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  ASSERT_EQ(it::acquire(lock.get(), 0, 5000), RLOCK_OK) << it::last_error();
  ASSERT_EQ(redis.integer({"PERSIST", name}), 1);
  EXPECT_EQ(rlock_extend_by_for(lock.get(), 0, 1000), RLOCK_EINVAL);
  EXPECT_NE(it::last_error().find("no expiry"), std::string::npos) << it::last_error();
  EXPECT_EQ(redis.pttl(name), -1) << "the refused add gave the key an expiry";
  EXPECT_EQ(rlock_extend_for(lock.get(), 0, 5000), RLOCK_OK) << "setting a lease still works";
  EXPECT_GT(redis.pttl(name), 0);
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();

  // A reader whose own lease key was made persistent.
  const std::string rw = unique_name("extend-atomic-persist-rw");
  LockKeys rw_cleanup(rw);
  it::Lock read = make_kind(client.get(), rw, RLOCK_LOCK_READ);
  ASSERT_EQ(it::acquire(read.get(), 0, 5000), RLOCK_OK) << it::last_error();
  const std::string lease_key = read_lease_key(rw, client.get(), 1);
  ASSERT_EQ(redis.integer({"PERSIST", lease_key}), 1);
  EXPECT_EQ(rlock_extend_by_for(read.get(), 0, 1000), RLOCK_EINVAL);
  EXPECT_EQ(redis.pttl(lease_key), -1);
  EXPECT_LE(redis.pttl(rw), 5000) << "the refused add changed the hash";
  EXPECT_EQ(rlock_release(read.get()), RLOCK_OK) << it::last_error();
  redis.del(lease_key);
}

TEST(ExtendAtomic, TheSumIsCappedAtTheLongestLease) {
  const std::string name = unique_name("extend-atomic-cap");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  ASSERT_EQ(it::acquire(lock.get(), 0, 60000), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_extend_by_for(lock.get(), 0, RLOCK_MAX_DURATION_MS - 1000), RLOCK_OK)
      << it::last_error();
  EXPECT_LE(redis.pttl(name), RLOCK_MAX_DURATION_MS);
  EXPECT_GT(redis.pttl(name), RLOCK_MAX_DURATION_MS - 30000) << "not capped, or not whole ms";
  EXPECT_EQ(rlock_extend_by_for(lock.get(), 0, RLOCK_MAX_DURATION_MS + 1), RLOCK_EINVAL);
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
}

}  // namespace
