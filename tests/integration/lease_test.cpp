// Leases: explicit expiry, the watchdog, lost-lock notification and holders killed with SIGKILL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

// What the lost-lock callback saw.
struct LostLog {
  std::mutex mutex;
  int calls = 0;
  rlock_lock* lock = nullptr;
  std::string name;
  int64_t thread_id = 0;
  int reason = 0;
  int64_t at_ms = 0;

  int count() {
    std::lock_guard<std::mutex> g(mutex);
    return calls;
  }
  bool wait_for_call(int64_t timeout_ms) {
    const int64_t deadline = mono_ms() + timeout_ms;
    while (count() == 0 && mono_ms() < deadline) sleep_ms(5);
    return count() > 0;
  }
};

void on_lost(rlock_lock* lock, const char* name, size_t name_len, int64_t thread_id,
             rlock_lost_reason reason, void* payload) {
  LostLog* log = static_cast<LostLog*>(payload);
  std::lock_guard<std::mutex> g(log->mutex);
  ++log->calls;
  log->lock = lock;
  log->name.assign(name, name_len);
  log->thread_id = thread_id;
  log->reason = reason;
  log->at_ms = mono_ms();
}

// ---- Explicit leases ------------------------------------------------------------------------

TEST(LeaseExpiry, H15_OtherClientGetsLockOnlyAfterExpiryAndOldOwnerSeesLost) {
  const std::string name = unique_name("lease");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client a_client = it::make_client();
  it::Client b_client = it::make_client();
  it::Lock a = it::make_lock(a_client.get(), name);
  it::Lock b = it::make_lock(b_client.get(), name);

  const int64_t a_before_us = mono_us();
  ASSERT_EQ(it::acquire(a.get(), 0, 500), RLOCK_OK) << it::last_error();
  const long long a_ttl = redis.pttl(name);
  EXPECT_GT(a_ttl, 0);
  EXPECT_LE(a_ttl, 500);

  EXPECT_EQ(rlock_acquire(b.get(), 0), RLOCK_ETIMEDOUT) << "taken before the lease ran out";

  ASSERT_EQ(it::acquire(b.get(), 3000, 10000), RLOCK_OK) << it::last_error();
  const int64_t b_got_us = mono_us();
  EXPECT_GE(b_got_us - a_before_us, 500 * 1000 - 1000) << "granted before A's lease ran out";
  EXPECT_LT(b_got_us - a_before_us, (500 + 1000) * 1000) << "the waiter slept past the expiry";

  const auto b_fields = redis.hgetall(name);
  EXPECT_EQ(b_fields, (std::map<std::string, std::string>{
                          {it::owner_of(b_client.get(), rlock_current_thread_id()), "1"}}));
  sleep_ms(100);
  const long long b_ttl = redis.pttl(name);

  EXPECT_EQ(rlock_is_held(a.get()), 0) << "A's lease ran out";
  EXPECT_EQ(rlock_release(a.get()), RLOCK_ELOST) << it::last_error();
  EXPECT_EQ(rlock_last_error()->code, RLOCK_ELOST);
  EXPECT_EQ(redis.hgetall(name), b_fields) << "A's release touched B's hold";
  const long long b_ttl_after = redis.pttl(name);
  EXPECT_LE(b_ttl_after, b_ttl) << "A's release reset B's TTL";
  EXPECT_GT(b_ttl_after, 9000) << "A's release shortened B's TTL";

  EXPECT_EQ(rlock_release(b.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

TEST(LeaseExpiry, ExpiredExplicitLeaseIsReportedAsLost) {
  const std::string name = unique_name("lease-cb");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  LostLog log;
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), on_lost, &log), RLOCK_OK);

  const int64_t start = mono_ms();
  ASSERT_EQ(it::acquire(lock.get(), 0, 400), RLOCK_OK) << it::last_error();
  ASSERT_TRUE(log.wait_for_call(3000)) << "no lost-lock callback after the lease ran out";
  {
    std::lock_guard<std::mutex> g(log.mutex);
    EXPECT_EQ(log.reason, RLOCK_LOST_EXPIRED);
    EXPECT_EQ(log.name, name);
    EXPECT_EQ(log.thread_id, rlock_current_thread_id());
    EXPECT_GE(log.at_ms - start, 300) << "reported lost long before the lease ran out";
  }
  EXPECT_EQ(rlock_is_held(lock.get()), 0);
  EXPECT_EQ(rlock_is_lost_for(lock.get(), RLOCK_THREAD_CURRENT), 1);
  // The library declares the loss a little early (drift allowance); release once the server
  // has expired the key too.
  const int64_t deadline = mono_ms() + 2000;
  while (redis.exists(name) && mono_ms() < deadline) sleep_ms(5);
  ASSERT_FALSE(redis.exists(name)) << "the key outlived its 400 ms lease";
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ELOST) << it::last_error();
  EXPECT_EQ(rlock_is_lost_for(lock.get(), RLOCK_THREAD_CURRENT), 0) << "released since";
  EXPECT_EQ(log.count(), 1);
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), nullptr, nullptr), RLOCK_OK);
}

// Once the lost-lock callback has run, the owner's next release must say RLOCK_ELOST
// (docs/threading.md), even if the key has not yet expired on the server: the library reports
// the loss up to lease/100 + 2 ms early, and the work done under the lock was already declared
// unprotected. The release is made from the callback, which may call any rlock function, so it
// lands reliably inside that early window.
struct ReleaseOnLost {
  std::mutex mutex;
  int calls = 0;
  int release_rc = 1;
};

void release_on_lost(rlock_lock* lock, const char*, size_t, int64_t thread_id, rlock_lost_reason,
                     void* payload) {
  auto* r = static_cast<ReleaseOnLost*>(payload);
  int rc = rlock_release_for(lock, thread_id);
  std::lock_guard<std::mutex> g(r->mutex);
  ++r->calls;
  r->release_rc = rc;
}

TEST(LostThenRelease, H20_ReleaseFromLostCallbackReturnsLost) {
  const std::string name = unique_name("lease-cb-release");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  ReleaseOnLost record;
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), release_on_lost, &record), RLOCK_OK);

  ASSERT_EQ(it::acquire(lock.get(), 0, 1000), RLOCK_OK) << it::last_error();
  const int64_t deadline = mono_ms() + 3000;
  for (;;) {
    {
      std::lock_guard<std::mutex> g(record.mutex);
      if (record.calls > 0 || mono_ms() > deadline) break;
    }
    sleep_ms(5);
  }
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), nullptr, nullptr), RLOCK_OK);
  std::lock_guard<std::mutex> g(record.mutex);
  ASSERT_EQ(record.calls, 1) << "no lost-lock callback after the lease ran out";
  EXPECT_EQ(record.release_rc, RLOCK_ELOST)
      << "the callback reported the hold lost, then its release succeeded";
}

// ---- Watchdog -------------------------------------------------------------------------------

TEST(Watchdog, KeepsLockPastItsLeaseAndStopsAfterRelease) {
  const std::string name = unique_name("watchdog");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client(it::ClientSettings{1000, 0, 0});
  it::Lock lock = it::make_lock(client.get(), name);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  const auto fields = redis.hgetall(name);
  ASSERT_EQ(fields, (std::map<std::string, std::string>{
                        {it::owner_of(client.get(), rlock_current_thread_id()), "1"}}));
  EXPECT_LE(redis.pttl(name), 1000) << "the watchdog lease is watchdog_lease_ms";

  // Five leases long, sampled often enough to catch a gap in renewal.
  const int64_t until = mono_ms() + 5000;
  int samples = 0;
  while (mono_ms() < until) {
    sleep_ms(100);
    const long long ttl = redis.pttl(name);
    ASSERT_GT(ttl, 0) << "the key expired or lost its TTL after " << samples << " samples";
    ASSERT_LE(ttl, 1000);
    ASSERT_EQ(redis.hgetall(name), fields) << "the owner changed";
    ASSERT_EQ(rlock_is_held(lock.get()), 1);
    ++samples;
  }
  EXPECT_EQ(rlock_is_lost_for(lock.get(), RLOCK_THREAD_CURRENT), 0);

  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
  const int64_t quiet_until = mono_ms() + 1500;
  while (mono_ms() < quiet_until) {
    ASSERT_FALSE(redis.exists(name)) << "something recreated the key after release";
    sleep_ms(25);
  }
  EXPECT_EQ(rlock_is_held(lock.get()), 0);
  EXPECT_EQ(rlock_is_lost_for(lock.get(), RLOCK_THREAD_CURRENT), 0);
}

// The watchdog renews every lease/3, so the TTL never falls much below two thirds of the lease
// (a watchdog that slept through a renewal once let it drop to a third; found by the fault
// suite's B2 case).
TEST(Watchdog, RenewsEveryThirdOfTheLease) {
  const std::string name = unique_name("cadence");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client(it::ClientSettings{900, 0, 0});
  it::Lock lock = it::make_lock(client.get(), name);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  long long lowest = 900;
  const int64_t until = mono_ms() + 3000;
  while (mono_ms() < until) {
    lowest = std::min(lowest, redis.pttl(name));
    sleep_ms(5);
  }
  // 900 - 300 = 600 at the renewal's due time; 150 ms of slack for a loaded machine.
  EXPECT_GE(lowest, 450) << "the TTL fell to " << lowest << " ms: a renewal came late";
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
}

// FAULTS A5 (iii): a handle freed while held is no longer renewed, so the lock expires by its
// lease. A hold also taken through another live handle of the same owner keeps being renewed
// until that handle goes too.
TEST(Watchdog, H21_StopsRenewingHoldsOfAFreedHandle) {
  const std::string name = unique_name("freed");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client(it::ClientSettings{1000, 0, 0});
  it::Lock first = it::make_lock(client.get(), name);
  it::Lock second = it::make_lock(client.get(), name);
  ASSERT_EQ(rlock_acquire(first.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_acquire(second.get(), 0), RLOCK_OK) << it::last_error();  // re-entry

  first.reset();
  const int64_t kept_until = mono_ms() + 2000;  // two leases: still renewed for `second`
  while (mono_ms() < kept_until) {
    ASSERT_GT(redis.pttl(name), 0) << "renewal stopped while a handle that took it lives";
    sleep_ms(100);
  }

  second.reset();
  const int64_t freed_at = mono_ms();
  long long last = redis.pttl(name);
  while (redis.exists(name)) {
    const long long ttl = redis.pttl(name);
    ASSERT_LE(ttl, last) << "renewed after every handle that took it was freed";
    last = ttl;
    ASSERT_LT(mono_ms() - freed_at, 1000 + 300) << "the key outlived its lease";
    sleep_ms(20);
  }
}

// ---- Lost-lock callback ---------------------------------------------------------------------

TEST(LostCallback, FiresOnceWhenKeyIsDeletedBehindTheHolder) {
  const std::string name = unique_name("lost");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client(it::ClientSettings{1000, 0, 0});
  it::Lock lock = it::make_lock(client.get(), name);
  LostLog log;

  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), on_lost, &log), RLOCK_OK);
  sleep_ms(200);
  ASSERT_EQ(redis.del(name), 1);
  const int64_t deleted_at = mono_ms();

  ASSERT_TRUE(log.wait_for_call(3000)) << "no lost-lock callback after the key was deleted";
  {
    std::lock_guard<std::mutex> g(log.mutex);
    EXPECT_LT(log.at_ms - deleted_at, 1500) << "the next renewal (every ~333 ms) should notice";
    EXPECT_EQ(log.reason, RLOCK_LOST_GONE);
    EXPECT_EQ(log.name, name);
    EXPECT_EQ(log.thread_id, rlock_current_thread_id());
    EXPECT_EQ(log.lock, lock.get());
  }
  EXPECT_EQ(rlock_is_held(lock.get()), 0);
  EXPECT_EQ(rlock_is_lost_for(lock.get(), RLOCK_THREAD_CURRENT), 1);

  sleep_ms(1500);  // several more renewal periods
  EXPECT_EQ(log.count(), 1) << "the callback must fire exactly once";
  EXPECT_FALSE(redis.exists(name)) << "the watchdog recreated a deleted lock";

  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ELOST) << it::last_error();
  EXPECT_EQ(rlock_is_lost_for(lock.get(), RLOCK_THREAD_CURRENT), 0);
  EXPECT_EQ(log.count(), 1);
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), nullptr, nullptr), RLOCK_OK);
}

// A renewal that reaches Redis just after the owner's release finds the key gone. That is the
// release's doing, not a loss: no callback may fire for a lock its owner released (found by
// the fault suite's A3 case). Renewals every 10 ms make the overlap frequent. On a loaded
// machine a renewal can also come too late for the 30 ms lease: that hold is really lost, its
// release says so (RLOCK_ELOST) and its one callback is due; only those may have callbacks.
TEST(LostCallback, NeverFiresForARenewalRacingTheOwnersRelease) {
  const std::string name = unique_name("race");
  LockKeys cleanup(name);
  it::Client client = it::make_client(it::ClientSettings{30, 0, 0});
  it::Lock lock = it::make_lock(client.get(), name);
  LostLog log;
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), on_lost, &log), RLOCK_OK);
  const int64_t deadline = mono_ms() + 4000;
  int cycles = 0, lost = 0;
  while (mono_ms() < deadline) {
    ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
    sleep_ms(cycles % 10);
    const int rc = rlock_release(lock.get());
    if (rc == RLOCK_ELOST) {
      ++lost;
    } else {
      ASSERT_EQ(rc, RLOCK_OK) << it::last_error();
    }
    ++cycles;
  }
  sleep_ms(100);
  EXPECT_LE(lost * 10, cycles) << lost << " of " << cycles << " holds were really lost: the "
                               << "machine is too loaded for this test to show anything";
  EXPECT_EQ(log.count(), lost) << "lost-lock callbacks for released holds in " << cycles
                               << " cycles (" << lost << " really lost), the last with reason "
                               << log.reason;
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), nullptr, nullptr), RLOCK_OK);
}

// A loss the release finds first (an explicit-lease hold is not renewed, so nothing else
// checks the key before its lease ends) is still reported once through the callback, as well
// as by the release's RLOCK_ELOST: every loss is told (found by the fault suite's A2 case).
TEST(LostCallback, FiresWhenTheReleaseIsFirstToFindTheLoss) {
  const std::string name = unique_name("first");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name, 30000);
  LostLog log;
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), on_lost, &log), RLOCK_OK);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(redis.del(name), 1);
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_ELOST) << it::last_error();
  ASSERT_TRUE(log.wait_for_call(2000)) << "no lost-lock callback for a loss the release found";
  sleep_ms(100);
  EXPECT_EQ(log.count(), 1);
  EXPECT_EQ(log.reason, RLOCK_LOST_GONE);
  ASSERT_EQ(rlock_lock_set_lost_callback(lock.get(), nullptr, nullptr), RLOCK_OK);
}

// ---- Holder killed with SIGKILL -------------------------------------------------------------

struct HolderReport {
  int64_t before_us = 0;  // monotonic, before the holder's acquire call
  int64_t after_us = 0;   // when it returned
  std::string owner;
};

HolderReport parse_report(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  HolderReport r;
  in >> word >> r.before_us >> r.after_us >> r.owner;
  if (word != "acquired" || !in) throw std::runtime_error("bad worker report: " + line);
  return r;
}

// A holder process takes the lock and is killed without releasing it. A waiter here must get
// the lock once the server-side TTL runs out: not before (no early grant), and not much after.
void killed_holder(int64_t lease_ms, int64_t watchdog_lease_ms, int64_t hold_before_kill_ms) {
  const std::string name = unique_name("killed");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client waiter_client = it::make_client();
  it::Lock waiter = it::make_lock(waiter_client.get(), name);

  Process holder({RLOCK_IT_WORKER, "hold", it::server_url(), name, std::to_string(lease_ms),
                  std::to_string(watchdog_lease_ms)});
  std::string line;
  ASSERT_TRUE(holder.read_line(&line, 15000)) << "the holder did not report its acquire";
  const HolderReport report = parse_report(line);
  ASSERT_EQ(redis.hgetall(name), (std::map<std::string, std::string>{{report.owner, "1"}}));

  if (hold_before_kill_ms > 0) {
    sleep_ms(hold_before_kill_ms);
    ASSERT_EQ(redis.hgetall(name), (std::map<std::string, std::string>{{report.owner, "1"}}))
        << "the holder's watchdog did not keep the lock past its lease";
  }

  const int64_t kill_us = mono_us();
  holder.kill(SIGKILL);
  int status = 0;
  ASSERT_TRUE(holder.wait(5000, &status));
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << describe_status(status);

  const int64_t ttl_read_us = mono_us();
  const long long ttl = redis.pttl(name);
  ASSERT_GT(ttl, 0) << "the key should outlive a killed holder until its TTL runs out";

  ASSERT_EQ(rlock_acquire(waiter.get(), 5000), RLOCK_OK) << it::last_error();
  const int64_t got_us = mono_us();

  EXPECT_GE(got_us, ttl_read_us + ttl * 1000 - 1000)
      << "granted " << (ttl_read_us + ttl * 1000 - got_us) / 1000 << " ms before the TTL ran out";
  if (lease_ms > 0) {
    EXPECT_GE(got_us, report.before_us + lease_ms * 1000 - 1000) << "granted before the lease";
    EXPECT_LE(got_us - report.after_us, (lease_ms + 200) * 1000)
        << "free " << (got_us - report.after_us) / 1000 << " ms after the holder's acquire";
  } else {
    // Renewed until the kill: the last renewal happened before kill_us.
    EXPECT_LE(got_us - kill_us, (watchdog_lease_ms + 200) * 1000)
        << "free " << (got_us - kill_us) / 1000 << " ms after the kill";
  }
  EXPECT_EQ(redis.hgetall(name),
            (std::map<std::string, std::string>{
                {it::owner_of(waiter_client.get(), rlock_current_thread_id()), "1"}}));
  EXPECT_EQ(rlock_release(waiter.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

TEST(KilledHolder, ExplicitLeaseFreesLockWhenItRunsOut) { killed_holder(1000, 0, 0); }

TEST(KilledHolder, WatchdogLeaseFreesLockWhenRenewalStops) { killed_holder(-1, 1000, 1500); }

}  // namespace

namespace {

// rlock_extend_for sets the remaining lease; rlock_extend_by_for adds to it, and refuses a hold
// under the watchdog, which has no lease to add to.
TEST(ExtendBy, AddsToTheLeaseSetsWithExtendAndRefusesTheWatchdog) {
  const std::string name = unique_name("extend-by");
  LockKeys cleanup(name);
  RedisConn redis(test_redis_url());
  it::Client client = it::make_client();
  it::Client other_client = it::make_client();
  it::Lock lock = it::make_lock(client.get(), name);
  it::Lock other = it::make_lock(other_client.get(), name);

  EXPECT_EQ(rlock_extend_by_for(lock.get(), 0, 1000), RLOCK_ENOTHELD) << it::last_error();
  ASSERT_EQ(it::acquire(lock.get(), 0, 5000), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_extend_by_for(lock.get(), 0, 10000), RLOCK_OK) << it::last_error();
  EXPECT_GT(redis.pttl(name), 13000) << "5 s + 10 s, less the time since the acquire";
  EXPECT_LE(redis.pttl(name), 15000);
  ASSERT_EQ(rlock_extend_for(lock.get(), 0, 2000), RLOCK_OK) << it::last_error();
  EXPECT_LE(redis.pttl(name), 2000) << "rlock_extend sets the remaining lease";
  EXPECT_EQ(rlock_extend_by_for(other.get(), 0, 1000), RLOCK_ENOTOWNER) << it::last_error();
  EXPECT_EQ(rlock_extend_by_for(lock.get(), 0, 0), RLOCK_EINVAL);
  EXPECT_EQ(rlock_extend_by_for(lock.get(), -1, 1000), RLOCK_EINVAL);
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();

  ASSERT_EQ(it::acquire(lock.get(), 0), RLOCK_OK) << it::last_error();  // the watchdog
  EXPECT_EQ(rlock_extend_by_for(lock.get(), 0, 1000), RLOCK_EINVAL);
  EXPECT_NE(it::last_error().find("renewed by the watchdog"), std::string::npos)
      << it::last_error();
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(name));
}

}  // namespace
