// rlock_inspect and rlock_scan_locks against the fixture server: each kind of lock held, with
// its owners, hold counts, TTL, fair queue, subscribers and fencing token checked exactly; keys
// that are no locks; a walk with a pattern; paging over more keys than one SCAN COUNT;
// semaphores and latches (free and held permits, the next lease, waiters) and the walk's
// semaphore pass.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

namespace {

using rlock_test::RedisConn;

int64_t now_epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct InfoFree {
  void operator()(rlock_lock_info* info) const { rlock_lock_info_free(info); }
};
using Info = std::unique_ptr<rlock_lock_info, InfoFree>;
struct PageFree {
  void operator()(rlock_lock_page* page) const { rlock_lock_page_free(page); }
};
using Page = std::unique_ptr<rlock_lock_page, PageFree>;

Info inspect(rlock_client* client, const std::string& name) {
  rlock_lock_info* info = nullptr;
  if (rlock_inspect(&info, client, name.data(), name.size()) != RLOCK_OK) {
    throw std::runtime_error("rlock_inspect failed: " + it::last_error());
  }
  return Info(info);
}

std::string owner_at(const rlock_lock_info& info, size_t i) {
  return std::string(info.owners[i].owner, info.owners[i].owner_len);
}

it::Lock make_kind_lock(rlock_client* client, const std::string& name, rlock_lock_kind kind) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = kind;
  opts.lease_ms = 30000;
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n failed: " + it::last_error());
  }
  return it::Lock(l);
}

// Owners waiting for a lock on threads of their own until the group ends (cancelled then).
class Waiters {
 public:
  explicit Waiters(rlock_lock* lock) : lock_(lock), cancel_(it::make_token()) {}
  ~Waiters() {
    rlock_cancel_token_cancel(cancel_.get());
    for (std::thread& t : threads_) t.join();
  }
  void start(int64_t thread_id) {
    threads_.emplace_back([this, thread_id] {
      if (it::acquire(lock_, RLOCK_WAIT_FOREVER, 0, thread_id, cancel_.get()) == RLOCK_OK) {
        rlock_release_for(lock_, thread_id);
      }
    });
  }

 private:
  rlock_lock* lock_;
  it::Token cancel_;
  std::vector<std::thread> threads_;
};

bool wait_for(const std::function<bool()>& condition, int64_t timeout_ms = 5000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

TEST(Inspect, ReentrantHeldTwiceWithAWaiter) {
  auto c = it::make_client();
  const std::string name = rlock_test::unique_name("inspect-reentrant");
  rlock_test::LockKeys keys(name);
  auto lock = make_kind_lock(c.get(), name, RLOCK_LOCK_REENTRANT);
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 7), RLOCK_OK) << it::last_error();
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 7), RLOCK_OK) << it::last_error();
  RedisConn redis(rlock_test::test_redis_url());
  Waiters waiters(lock.get());
  waiters.start(8);
  ASSERT_TRUE(redis.wait_numsub(rlock_test::lock_channel(name), 1, 5000));

  Info info = inspect(c.get(), name);
  EXPECT_EQ(info->version, RLOCK_LOCK_INFO_VERSION);
  EXPECT_EQ(std::string(info->name, info->name_len), name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_REENTRANT);
  EXPECT_EQ(info->locked, 1);
  EXPECT_GT(info->ttl_ms, 25000);
  EXPECT_LE(info->ttl_ms, 30000);
  EXPECT_EQ(info->mode, RLOCK_MODE_NONE);
  EXPECT_EQ(info->owner_count, 1);
  ASSERT_EQ(info->owners_len, 1u);
  EXPECT_EQ(owner_at(*info, 0), it::owner_of(c.get(), 7));
  EXPECT_EQ(info->owners[0].hold_count, 2);
  EXPECT_EQ(info->owners[0].mode, RLOCK_MODE_NONE);
  EXPECT_EQ(info->queue_length, 0);
  EXPECT_EQ(info->queue_len, 0u);
  EXPECT_EQ(info->subscribers, 1);
  EXPECT_EQ(info->token, 0);
  rlock_release_for(lock.get(), 7);
  rlock_release_for(lock.get(), 7);
}

TEST(Inspect, FencedShowsTheLastToken) {
  auto c = it::make_client();
  const std::string name = rlock_test::unique_name("inspect-fenced");
  rlock_test::LockKeys keys(name);
  RedisConn redis(rlock_test::test_redis_url());
  auto lock = make_kind_lock(c.get(), name, RLOCK_LOCK_FENCED);
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 3), RLOCK_OK) << it::last_error();
  int64_t token = 0;
  ASSERT_EQ(rlock_lock_token_for(&token, lock.get(), 3), RLOCK_OK);
  Info info = inspect(c.get(), name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_FENCED);
  EXPECT_EQ(info->locked, 1);
  EXPECT_EQ(info->token, token);
  ASSERT_EQ(info->owners_len, 1u);
  EXPECT_EQ(owner_at(*info, 0), it::owner_of(c.get(), 3));
  EXPECT_EQ(info->owners[0].hold_count, 1);

  // Free, the counter stays: not locked, still fenced, with the token.
  ASSERT_EQ(rlock_release_for(lock.get(), 3), RLOCK_OK);
  info = inspect(c.get(), name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_FENCED);
  EXPECT_EQ(info->locked, 0);
  EXPECT_EQ(info->ttl_ms, -2);
  EXPECT_EQ(info->owners_len, 0u);
  EXPECT_EQ(info->token, token);
  redis.del(std::string("redisson_lock_token:{") + name + "}");
}

// Who holds: the holder record of the owner's client names its host, pid and command, and the
// hold's first acquire; a release deletes the hold's line at once (a later hold of the same
// owner never shows the old time), an owner with no record is unknown, and freeing the client
// deletes the record.
TEST(Inspect, HolderRecordNamesHostPidCommandAndSince) {
  auto c = it::make_client();
  const std::string name = rlock_test::unique_name("inspect-holder");
  rlock_test::LockKeys keys(name);
  RedisConn redis(rlock_test::test_redis_url());
  const std::string record = std::string("rlock_holder:{") + rlock_client_id(c.get()) + "}";
  auto lock = make_kind_lock(c.get(), name, RLOCK_LOCK_REENTRANT);
  // Holds shorter than a second are never written: they cost Redis nothing.
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(it::acquire(lock.get(), 0, 0, 7), RLOCK_OK) << it::last_error();
    ASSERT_EQ(rlock_release_for(lock.get(), 7), RLOCK_OK);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  EXPECT_FALSE(redis.exists(record)) << "short holds were written to the holder record";
  const int64_t before = now_epoch_ms();
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 7), RLOCK_OK) << it::last_error();
  const int64_t after = now_epoch_ms();
  Info info;
  // Listed once the hold is a second old (by the watchdog's threads).
  ASSERT_TRUE(wait_for([&] {
    info = inspect(c.get(), name);
    return info->holders_len == 1 && info->holders[0].known && info->holders[0].since_ms >= 0;
  })) << "no holder record within 5 s";
  ASSERT_GE(info->version, 3u);
  const rlock_holder_info& h = info->holders[0];
  char host[256] = {0};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_STREQ(h.host, host);
  EXPECT_EQ(h.pid, static_cast<int64_t>(getpid()));
  EXPECT_NE(std::string(h.command).find("rlock_integration_tests"), std::string::npos) << h.command;
  EXPECT_LE(h.started_ms, before);
  EXPECT_GE(h.since_ms, before - 5);
  EXPECT_LE(h.since_ms, after + 5);
  const long long ttl = redis.pttl(record);
  EXPECT_GT(ttl, 0) << "the record must expire with the client";
  EXPECT_LE(ttl, 30000);

  // Released: the hold's line goes soon, not at the next round; re-taken, the new time shows.
  ASSERT_EQ(rlock_release_for(lock.get(), 7), RLOCK_OK);
  const std::string line = "since:7|" + name;
  EXPECT_TRUE(wait_for([&] { return redis.hgetall(record).count(line) == 0; }, 2000))
      << "the released hold is still in the record";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int64_t again = now_epoch_ms();
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 7), RLOCK_OK) << it::last_error();
  info = inspect(c.get(), name);
  ASSERT_EQ(info->holders_len, 1u);
  EXPECT_TRUE(info->holders[0].since_ms == -1 || info->holders[0].since_ms >= again - 5)
      << "a later hold shows the earlier one's time";
  ASSERT_EQ(rlock_release_for(lock.get(), 7), RLOCK_OK);

  // An owner no rlock client recorded (a Redisson JVM, say) is unknown.
  const std::string foreign = rlock_test::unique_name("inspect-holder-foreign");
  rlock_test::LockKeys foreign_keys(foreign);
  redis.ok({"HSET", foreign, "0b7bd3ab-6f41-4d2c-9d3b-0d0f6c1c5a11:1", "1"});
  info = inspect(c.get(), foreign);
  ASSERT_EQ(info->holders_len, 1u);
  EXPECT_EQ(info->holders[0].known, 0);
  EXPECT_EQ(info->holders[0].since_ms, -1);
  redis.del(foreign);

  c.reset();
  EXPECT_FALSE(redis.exists(record)) << "freeing the client leaves its holder record";
}

// A record Redis lost (a restart, a failover, an eviction) is written whole again at the next
// renewal of its expiry, a third of the watchdog lease later, with the hold's first time.
TEST(Inspect, HolderRecordComesBackAfterRedisLostIt) {
  auto c = it::make_client(it::ClientSettings{3000, 0, 0});
  const std::string name = rlock_test::unique_name("inspect-holder-lost");
  rlock_test::LockKeys keys(name);
  RedisConn redis(rlock_test::test_redis_url());
  const std::string record = std::string("rlock_holder:{") + rlock_client_id(c.get()) + "}";
  it::Lock lock = it::make_lock(c.get(), name, 0);  // the watchdog renews it
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  int64_t since = -1;
  ASSERT_TRUE(wait_for([&] {
    Info info = inspect(c.get(), name);
    since = info->holders_len == 1 ? info->holders[0].since_ms : -1;
    return since >= 0;
  }));
  ASSERT_EQ(redis.del(record), 1);
  EXPECT_TRUE(wait_for(
      [&] {
        Info info = inspect(c.get(), name);
        return info->holders_len == 1 && info->holders[0].known &&
               info->holders[0].since_ms == since;
      },
      4000))
      << "the lost record was not written again";
  EXPECT_GT(redis.pttl(record), 0);
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK);
}

TEST(Inspect, FairWithTwoQueuedWaiters) {
  auto c = it::make_client();
  const std::string name = rlock_test::unique_name("inspect-fair");
  rlock_test::LockKeys keys(name);
  RedisConn redis(rlock_test::test_redis_url());
  auto lock = make_kind_lock(c.get(), name, RLOCK_LOCK_FAIR);
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 1), RLOCK_OK) << it::last_error();
  const int64_t before = now_epoch_ms();
  Waiters waiters(lock.get());
  const std::string queue = rlock_test::fair_queue_key(name);
  waiters.start(2);
  ASSERT_TRUE(wait_for([&] { return redis.integer({"LLEN", queue}) == 1; }));
  waiters.start(3);
  ASSERT_TRUE(wait_for([&] { return redis.integer({"LLEN", queue}) == 2; }));
  const std::string channel = rlock_test::lock_channel(name) + ":";
  ASSERT_TRUE(redis.wait_numsub(channel + it::owner_of(c.get(), 2), 1, 5000));
  ASSERT_TRUE(redis.wait_numsub(channel + it::owner_of(c.get(), 3), 1, 5000));

  Info info = inspect(c.get(), name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_FAIR);
  EXPECT_EQ(info->locked, 1);
  ASSERT_EQ(info->owners_len, 1u);
  EXPECT_EQ(owner_at(*info, 0), it::owner_of(c.get(), 1));
  EXPECT_EQ(info->queue_length, 2);
  ASSERT_EQ(info->queue_len, 2u);
  EXPECT_EQ(std::string(info->queue[0].owner, info->queue[0].owner_len), it::owner_of(c.get(), 2));
  EXPECT_EQ(std::string(info->queue[1].owner, info->queue[1].owner_len), it::owner_of(c.get(), 3));
  const auto deadline = [&](int i) {
    return std::stoll(
        redis.ok({"ZSCORE", rlock_test::fair_timeout_key(name), it::owner_of(c.get(), 2 + i)}).str);
  };
  EXPECT_EQ(info->queue[0].deadline_ms, deadline(0));
  EXPECT_EQ(info->queue[1].deadline_ms, deadline(1));
  EXPECT_GT(info->queue[0].deadline_ms, before);
  EXPECT_LT(info->queue[0].deadline_ms, info->queue[1].deadline_ms);
  EXPECT_EQ(info->subscribers, 2);
  EXPECT_EQ(info->token, 0);
  ASSERT_EQ(rlock_release_for(lock.get(), 1), RLOCK_OK);
}

TEST(Inspect, ReadWriteReadersAndWriter) {
  auto c = it::make_client();
  const std::string name = rlock_test::unique_name("inspect-rw");
  rlock_test::LockKeys keys(name);
  auto reads = make_kind_lock(c.get(), name, RLOCK_LOCK_READ);
  ASSERT_EQ(it::acquire(reads.get(), 0, 0, 11), RLOCK_OK) << it::last_error();
  ASSERT_EQ(it::acquire(reads.get(), 0, 0, 12), RLOCK_OK) << it::last_error();
  ASSERT_EQ(it::acquire(reads.get(), 0, 0, 12), RLOCK_OK) << it::last_error();
  Info info = inspect(c.get(), name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_READ_WRITE);
  EXPECT_EQ(info->mode, RLOCK_MODE_READ);
  EXPECT_EQ(info->owner_count, 2);
  ASSERT_EQ(info->owners_len, 2u);
  std::set<std::pair<std::string, int64_t>> owners;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(info->owners[i].mode, RLOCK_MODE_READ);
    owners.insert({owner_at(*info, i), info->owners[i].hold_count});
  }
  EXPECT_EQ(owners, (std::set<std::pair<std::string, int64_t>>{{it::owner_of(c.get(), 11), 1},
                                                               {it::owner_of(c.get(), 12), 2}}));
  EXPECT_GT(info->ttl_ms, 25000);
  EXPECT_EQ(info->token, 0);
  rlock_release_for(reads.get(), 11);
  rlock_release_for(reads.get(), 12);
  rlock_release_for(reads.get(), 12);

  const std::string wname = rlock_test::unique_name("inspect-w");
  rlock_test::LockKeys wkeys(wname);
  auto write = make_kind_lock(c.get(), wname, RLOCK_LOCK_WRITE);
  ASSERT_EQ(it::acquire(write.get(), 0, 0, 13), RLOCK_OK) << it::last_error();
  RedisConn redis(rlock_test::test_redis_url());
  auto wwait = make_kind_lock(c.get(), wname, RLOCK_LOCK_WRITE);
  Waiters waiters(wwait.get());
  waiters.start(14);
  ASSERT_TRUE(redis.wait_numsub(std::string("redisson_rwlock:{") + wname + "}", 1, 5000));
  info = inspect(c.get(), wname);
  EXPECT_EQ(info->kind, RLOCK_FOUND_READ_WRITE);
  EXPECT_EQ(info->mode, RLOCK_MODE_WRITE);
  EXPECT_EQ(info->owner_count, 1);
  ASSERT_EQ(info->owners_len, 1u);
  EXPECT_EQ(owner_at(*info, 0), it::owner_of(c.get(), 13) + ":write");
  EXPECT_EQ(info->owners[0].mode, RLOCK_MODE_WRITE);
  EXPECT_EQ(info->owners[0].hold_count, 1);
  EXPECT_EQ(info->subscribers, 1);
  rlock_release_for(write.get(), 13);
}

TEST(Inspect, FreeNamesAndOtherKeys) {
  auto c = it::make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string free_name = rlock_test::unique_name("inspect-free");
  Info info = inspect(c.get(), free_name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_NOTHING);
  EXPECT_EQ(info->locked, 0);
  EXPECT_EQ(info->ttl_ms, -2);
  EXPECT_EQ(info->owner_count, 0);

  const std::string text = rlock_test::unique_name("inspect-string");
  rlock_test::LockKeys text_keys(text);
  redis.ok({"SET", text, "hello", "PX", "60000"});
  EXPECT_EQ(inspect(c.get(), text)->kind, RLOCK_FOUND_NOT_A_LOCK);

  const std::string hash = rlock_test::unique_name("inspect-hash");
  rlock_test::LockKeys hash_keys(hash);
  redis.ok({"HSET", hash, "field", "1", "0b2c0e9c-6f0e-4d55-9d8a-2a7b3c4d5e6f:1", "1"});
  info = inspect(c.get(), hash);
  EXPECT_EQ(info->kind, RLOCK_FOUND_NOT_A_LOCK);
  EXPECT_EQ(info->owners_len, 0u);

  // A binary name round-trips byte for byte.
  const std::string binary = rlock_test::unique_name("inspect-bin") + std::string("\0\xff{x", 4);
  rlock_test::LockKeys binary_keys(binary);
  auto lock = make_kind_lock(c.get(), binary, RLOCK_LOCK_REENTRANT);
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 5), RLOCK_OK) << it::last_error();
  info = inspect(c.get(), binary);
  EXPECT_EQ(std::string(info->name, info->name_len), binary);
  EXPECT_EQ(info->kind, RLOCK_FOUND_REENTRANT);
  rlock_release_for(lock.get(), 5);
}

TEST(Inspect, BadArguments) {
  auto c = it::make_client();
  rlock_lock_info* info = nullptr;
  EXPECT_EQ(rlock_inspect(nullptr, c.get(), "x", 1), RLOCK_EINVAL);
  EXPECT_EQ(rlock_inspect(&info, nullptr, "x", 1), RLOCK_EINVAL);
  EXPECT_EQ(rlock_inspect(&info, c.get(), nullptr, 1), RLOCK_EINVAL);
  EXPECT_EQ(rlock_inspect(&info, c.get(), "", 0), RLOCK_EINVAL);
  EXPECT_NE(std::string(rlock_last_error()->message).find("empty"), std::string::npos);
  EXPECT_EQ(info, nullptr);

  rlock_lock_page* page = nullptr;
  rlock_scan_options opts = RLOCK_SCAN_OPTIONS_INIT;
  opts.cursor = "12x";
  EXPECT_EQ(rlock_scan_locks(&page, c.get(), &opts), RLOCK_EINVAL);
  EXPECT_NE(std::string(rlock_last_error()->message).find("12x"), std::string::npos)
      << rlock_last_error()->message;
  opts.cursor = nullptr;
  opts.version = 2;
  EXPECT_EQ(rlock_scan_locks(&page, c.get(), &opts), RLOCK_EVERSION);
  opts.version = RLOCK_SCAN_OPTIONS_VERSION;
  opts.count = -1;
  EXPECT_EQ(rlock_scan_locks(&page, c.get(), &opts), RLOCK_EINVAL);
  EXPECT_EQ(page, nullptr);

  rlock_scan_options filled;
  std::memset(&filled, 0xab, sizeof filled);
  ASSERT_EQ(rlock_scan_options_init(&filled, RLOCK_SCAN_OPTIONS_VERSION), RLOCK_OK);
  EXPECT_EQ(filled.version, RLOCK_SCAN_OPTIONS_VERSION);
  EXPECT_EQ(filled.match, nullptr);
  EXPECT_EQ(filled.cursor, nullptr);
  EXPECT_EQ(filled.count, 0);

  // A double free is refused and recorded, not a crash.
  ASSERT_EQ(rlock_inspect(&info, c.get(), "x", 1), RLOCK_OK);
  rlock_lock_info_free(info);
  rlock_lock_info_free(info);
  EXPECT_EQ(rlock_last_error()->code, RLOCK_EINVAL);
  rlock_lock_info_free(nullptr);
  rlock_lock_page_free(nullptr);
}

// Every lock of `pattern`, walking page by page; counts the pages.
std::vector<std::string> walk(rlock_client* client, const std::string& pattern, int64_t count,
                              int* pages, std::vector<int>* kinds = nullptr) {
  std::vector<std::string> names;
  std::string cursor = "0";
  *pages = 0;
  for (;;) {
    rlock_scan_options opts = RLOCK_SCAN_OPTIONS_INIT;
    opts.match = pattern.data();
    opts.match_len = pattern.size();
    opts.cursor = cursor.c_str();
    opts.count = count;
    rlock_lock_page* raw = nullptr;
    if (rlock_scan_locks(&raw, client, &opts) != RLOCK_OK) {
      throw std::runtime_error("rlock_scan_locks failed: " + it::last_error());
    }
    Page page(raw);
    ++*pages;
    EXPECT_EQ(page->version, RLOCK_LOCK_PAGE_VERSION);
    for (size_t i = 0; i < page->count; ++i) {
      names.emplace_back(page->locks[i]->name, page->locks[i]->name_len);
      if (kinds) kinds->push_back(page->locks[i]->kind);
    }
    cursor = page->next_cursor;
    EXPECT_EQ(page->done, cursor == "0" ? 1 : 0);
    if (page->done) break;
  }
  return names;
}

TEST(InspectScan, PatternFindsEachKindAndNoOtherKeys) {
  auto c = it::make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string prefix = rlock_test::unique_name("scan-kinds") + ":";
  rlock_test::LockKeys k1(prefix + "plain"), k2(prefix + "fenced"), k3(prefix + "fair"),
      k4(prefix + "read"), k5(prefix + "text"), k6(prefix + "hash");
  auto plain = make_kind_lock(c.get(), prefix + "plain", RLOCK_LOCK_REENTRANT);
  auto fenced = make_kind_lock(c.get(), prefix + "fenced", RLOCK_LOCK_FENCED);
  auto fair = make_kind_lock(c.get(), prefix + "fair", RLOCK_LOCK_FAIR);
  auto read = make_kind_lock(c.get(), prefix + "read", RLOCK_LOCK_READ);
  for (rlock_lock* l : {plain.get(), fenced.get(), fair.get(), read.get()}) {
    ASSERT_EQ(it::acquire(l, 0, 0, 1), RLOCK_OK) << it::last_error();
  }
  redis.ok({"SET", prefix + "text", "x", "PX", "60000"});
  redis.ok({"HSET", prefix + "hash", "a", "b"});
  redis.ok({"PEXPIRE", prefix + "hash", "60000"});

  int pages = 0;
  std::vector<int> kinds;
  std::vector<std::string> names = walk(c.get(), prefix + "*", 1000, &pages, &kinds);
  std::map<std::string, int> found;
  for (size_t i = 0; i < names.size(); ++i) found[names[i]] = kinds[i];
  EXPECT_EQ(found, (std::map<std::string, int>{{prefix + "plain", RLOCK_FOUND_REENTRANT},
                                               {prefix + "fenced", RLOCK_FOUND_FENCED},
                                               {prefix + "fair", RLOCK_FOUND_REENTRANT},
                                               {prefix + "read", RLOCK_FOUND_READ_WRITE}}));
  // (A fair lock without a queue has the reentrant layout: the keys cannot tell.)
  EXPECT_EQ(names.size(), 4u);
  redis.del(std::string("redisson_lock_token:{") + prefix + "fenced}");
  for (rlock_lock* l : {plain.get(), fenced.get(), fair.get(), read.get()}) {
    rlock_release_for(l, 1);
  }
}

TEST(InspectScan, PagesOverMoreKeysThanOneCount) {
  auto c = it::make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string prefix = rlock_test::unique_name("scan-many") + ":";
  const std::string owner = std::string(rlock_client_id(c.get())) + ":1";
  constexpr int kLocks = 2500;
  for (int i = 0; i < kLocks; ++i) {
    const std::string key = prefix + std::to_string(i);
    redis.ok({"HSET", key, owner, "1"});
    redis.ok({"PEXPIRE", key, "120000"});
  }
  redis.ok({"HSET", prefix + "not-a-lock", "owner", "someone"});
  redis.ok({"PEXPIRE", prefix + "not-a-lock", "120000"});
  redis.ok({"SET", prefix + "a-string", "x", "PX", "120000"});

  int pages = 0;
  // 250 keys a step: a page's reads are one pipelined batch within one command timeout, which
  // a sanitizer build running beside other tests needs room for.
  std::vector<std::string> names = walk(c.get(), prefix + "*", 250, &pages);
  std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(kLocks));
  EXPECT_EQ(unique.count(prefix + "not-a-lock"), 0u);
  EXPECT_EQ(unique.count(prefix + "a-string"), 0u);
  EXPECT_EQ(unique.count(prefix + "0"), 1u);
  EXPECT_EQ(unique.count(prefix + std::to_string(kLocks - 1)), 1u);
  EXPECT_GT(pages, 1);
  for (int i = 0; i < kLocks; ++i) redis.del(prefix + std::to_string(i));
  redis.del(prefix + "not-a-lock");
  redis.del(prefix + "a-string");
}

// ---- Semaphores and latches ----------------------------------------------------------------

using it::Latch;
using it::Semaphore;

Semaphore make_semaphore(rlock_client* client, const std::string& name, rlock_semaphore_kind kind) {
  rlock_semaphore_options opts = RLOCK_SEMAPHORE_OPTIONS_INIT;
  opts.kind = kind;
  rlock_semaphore* s = nullptr;
  if (rlock_semaphore_new_n(&s, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_semaphore_new_n failed: " + it::last_error());
  }
  return Semaphore(s);
}

// An expirable semaphore of `permits` with one permit held per lease in `leases`.
Semaphore held_semaphore(rlock_client* client, const std::string& name, int64_t permits,
                         const std::vector<int64_t>& leases, std::vector<rlock_permit_id>* ids) {
  Semaphore sem = make_semaphore(client, name, RLOCK_SEMAPHORE_EXPIRABLE);
  int set = 0;
  if (rlock_semaphore_try_set_permits(&set, sem.get(), permits, 0) != RLOCK_OK || !set) {
    throw std::runtime_error("try_set_permits failed: " + it::last_error());
  }
  for (int64_t lease : leases) {
    rlock_permit_id id{};
    if (rlock_permit_acquire(&id, sem.get(), 0, lease) != RLOCK_OK) {
      throw std::runtime_error("rlock_permit_acquire failed: " + it::last_error());
    }
    if (ids) ids->push_back(id);
  }
  return sem;
}

// Deletes a semaphore's or latch's keys when the scope ends.
struct SemaphoreKeys {
  explicit SemaphoreKeys(std::string n) : name(std::move(n)) {}
  ~SemaphoreKeys() {
    try {
      RedisConn redis(rlock_test::test_redis_url());
      const std::string tagged = name.find('{') == std::string::npos ? "{" + name + "}" : name;
      redis.command({"DEL", name, tagged + ":timeout"});
    } catch (...) {
    }
  }
  std::string name;
};

// An asynchronous call's end, waited for by the test.
struct Done {
  std::atomic<bool> ended{false};
  std::atomic<int> status{0};
  static void call(void* user, int status, int64_t) {
    auto* done = static_cast<Done*>(user);
    done->status = status;
    done->ended = true;
  }
};

TEST(InspectSemaphore, PermitsHeldTheirLeasesAndAWaiter) {
  auto c = it::make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string name = rlock_test::unique_name("inspect-sem");
  SemaphoreKeys keys(name);
  std::vector<rlock_permit_id> ids;
  const int64_t before = now_epoch_ms();
  Semaphore sem = held_semaphore(c.get(), name, 2, {60000, RLOCK_LEASE_NONE}, &ids);
  const int64_t after = now_epoch_ms();

  // A waiter for a third permit, on the client's engine.
  Done done;
  rlock_permit_id waiting_id{};
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;
  opts.lease_ms = 60000;
  opts.ids = &waiting_id;
  ASSERT_EQ(rlock_semaphore_acquire_async(sem.get(), &opts, Done::call, &done), RLOCK_OK)
      << it::last_error();
  ASSERT_TRUE(redis.wait_numsub("redisson_sc:{" + name + "}", 1, 5000));

  Info info = inspect(c.get(), name);
  EXPECT_EQ(info->version, 3u);
  EXPECT_EQ(info->kind, RLOCK_FOUND_SEMAPHORE);
  EXPECT_EQ(info->locked, 0);
  EXPECT_EQ(info->owner_count, 0);
  EXPECT_EQ(info->permits_available, 0);
  EXPECT_EQ(info->permits_held, 2);
  EXPECT_GE(info->earliest_deadline_ms, before + 60000);
  EXPECT_LE(info->earliest_deadline_ms, after + 60000);
  EXPECT_EQ(info->subscribers, 1);

  ASSERT_EQ(rlock_semaphore_cancel(sem.get()), RLOCK_OK);
  ASSERT_TRUE(wait_for([&] { return done.ended.load(); }));
  EXPECT_EQ(done.status, RLOCK_ECANCELED);

  // Only the permit without a lease left: no deadline.
  ASSERT_EQ(rlock_permit_release(sem.get(), ids[0].hex), RLOCK_OK) << it::last_error();
  info = inspect(c.get(), name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_SEMAPHORE);
  EXPECT_EQ(info->permits_available, 1);
  EXPECT_EQ(info->permits_held, 1);
  EXPECT_EQ(info->earliest_deadline_ms, -1);

  // A lapsed permit not reclaimed yet: its deadline is in the past.
  const std::string lapsed_at = std::to_string(now_epoch_ms() - 5000);
  redis.ok({"ZADD", "{" + name + "}:timeout", lapsed_at, std::string(16, '\x07')});
  info = inspect(c.get(), name);
  EXPECT_EQ(info->permits_held, 2);
  EXPECT_EQ(info->earliest_deadline_ms, std::stoll(lapsed_at));

  // No permit held: the count alone, which the keys cannot tell from a plain semaphore's.
  redis.ok({"ZREM", "{" + name + "}:timeout", std::string(16, '\x07')});
  ASSERT_EQ(rlock_permit_release(sem.get(), ids[1].hex), RLOCK_OK) << it::last_error();
  info = inspect(c.get(), name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_COUNTER);
  EXPECT_EQ(info->permits_available, 2);
  EXPECT_EQ(info->permits_held, 0);
  EXPECT_EQ(info->earliest_deadline_ms, -1);
}

TEST(InspectSemaphore, PlainSemaphoresAndLatchesAreCounters) {
  auto c = it::make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string name = rlock_test::unique_name("inspect-plain");
  SemaphoreKeys keys(name);
  Semaphore sem = make_semaphore(c.get(), name, RLOCK_SEMAPHORE_PLAIN);
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem.get(), 3, 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_semaphore_acquire(sem.get(), 1, 0), RLOCK_OK) << it::last_error();
  Info info = inspect(c.get(), name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_COUNTER);
  EXPECT_EQ(info->permits_available, 2);
  EXPECT_EQ(info->permits_held, 0);
  EXPECT_EQ(info->subscribers, 0);
  ASSERT_EQ(rlock_semaphore_release(sem.get(), 1), RLOCK_OK) << it::last_error();

  const std::string latch_name = rlock_test::unique_name("inspect-latch");
  SemaphoreKeys latch_keys(latch_name);
  rlock_latch* raw = nullptr;
  ASSERT_EQ(rlock_latch_new_n(&raw, c.get(), latch_name.data(), latch_name.size()), RLOCK_OK);
  Latch latch(raw);
  ASSERT_EQ(rlock_latch_try_set_count(&set, latch.get(), 5), RLOCK_OK) << it::last_error();
  Done done;
  ASSERT_EQ(rlock_latch_await_async(latch.get(), RLOCK_WAIT_FOREVER, nullptr, Done::call, &done),
            RLOCK_OK)
      << it::last_error();
  ASSERT_TRUE(redis.wait_numsub("redisson_countdownlatch__channel__{" + latch_name + "}", 1, 5000));
  info = inspect(c.get(), latch_name);
  EXPECT_EQ(info->kind, RLOCK_FOUND_COUNTER);
  EXPECT_EQ(info->permits_available, 5);
  EXPECT_EQ(info->subscribers, 1) << "a latch's waiters count";
  ASSERT_EQ(rlock_latch_cancel(latch.get()), RLOCK_OK);
  ASSERT_TRUE(wait_for([&] { return done.ended.load(); }));

  // A sorted set of the semaphore's name that holds no permit ids is no semaphore.
  const std::string fake = rlock_test::unique_name("inspect-fake");
  SemaphoreKeys fake_keys(fake);
  redis.ok({"ZADD", "{" + fake + "}:timeout", "1", "not-a-permit-id"});
  EXPECT_EQ(inspect(c.get(), fake)->kind, RLOCK_FOUND_NOTHING);
  redis.ok({"SET", fake, "seven"});
  EXPECT_EQ(inspect(c.get(), fake)->kind, RLOCK_FOUND_NOT_A_LOCK);
}

std::map<std::string, int> walk_kinds(rlock_client* client, const std::string& pattern,
                                      int64_t count, int* pages) {
  std::vector<int> kinds;
  std::vector<std::string> names = walk(client, pattern, count, pages, &kinds);
  // (SCAN may return a key twice while Redis resizes its table: a walk may repeat a name.)
  std::map<std::string, int> found;
  for (size_t i = 0; i < names.size(); ++i) found[names[i]] = kinds[i];
  return found;
}

TEST(InspectScan, SemaphorePassFindsHeldPermitsOnly) {
  auto c = it::make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string prefix = rlock_test::unique_name("scan-sem") + ":";
  const std::string a = prefix + "sem-a", b = prefix + "sem-b{t}", idle = prefix + "sem-idle",
                    plain = prefix + "sem-plain", lock_name = prefix + "sem-lock",
                    fake = prefix + "sem-fake";
  SemaphoreKeys ka(a), kb(b), ki(idle), kp(plain), kf(fake);
  rlock_test::LockKeys kl(lock_name);
  Semaphore sa = held_semaphore(c.get(), a, 3, {60000}, nullptr);
  Semaphore sb = held_semaphore(c.get(), b, 2, {RLOCK_LEASE_NONE, 60000}, nullptr);
  Semaphore si = held_semaphore(c.get(), idle, 2, {}, nullptr);
  Semaphore sp = make_semaphore(c.get(), plain, RLOCK_SEMAPHORE_PLAIN);
  ASSERT_EQ(rlock_semaphore_add_permits(nullptr, sp.get(), 4), RLOCK_OK) << it::last_error();
  auto lock = make_kind_lock(c.get(), lock_name, RLOCK_LOCK_REENTRANT);
  ASSERT_EQ(it::acquire(lock.get(), 0, 0, 1), RLOCK_OK) << it::last_error();
  redis.ok({"ZADD", "{" + fake + "}:timeout", "1", "abc"});  // no permit ids
  redis.ok({"ZADD", prefix + "sem-nobraces:timeout", "1", std::string(16, 'x')});

  int pages = 0;
  std::map<std::string, int> found = walk_kinds(c.get(), prefix + "sem-*", 50, &pages);
  EXPECT_EQ(found, (std::map<std::string, int>{{a, RLOCK_FOUND_SEMAPHORE},
                                               {b, RLOCK_FOUND_SEMAPHORE},
                                               {lock_name, RLOCK_FOUND_REENTRANT}}));
  EXPECT_GT(pages, 1) << "the semaphore pass is a step of its own";

  // The pattern is matched against semaphore names as SCAN MATCH would.
  EXPECT_EQ(walk_kinds(c.get(), prefix + "sem-[a]", 1000, &pages),
            (std::map<std::string, int>{{a, RLOCK_FOUND_SEMAPHORE}}));
  EXPECT_EQ(walk_kinds(c.get(), prefix + "sem-?{t}", 1000, &pages),
            (std::map<std::string, int>{{b, RLOCK_FOUND_SEMAPHORE}}));
  EXPECT_EQ(walk_kinds(c.get(), prefix + "sem-[^a-b]*", 1000, &pages),
            (std::map<std::string, int>{{lock_name, RLOCK_FOUND_REENTRANT}}));
  EXPECT_EQ(walk_kinds(c.get(), prefix + "sem-b\\{*", 1000, &pages),
            (std::map<std::string, int>{{b, RLOCK_FOUND_SEMAPHORE}}));

  // A listed semaphore carries what rlock_inspect reads.
  rlock_scan_options opts = RLOCK_SCAN_OPTIONS_INIT;
  const std::string pattern = b;
  opts.match = pattern.data();
  opts.match_len = pattern.size();
  std::vector<Page> kept;  // `listed` points into them
  std::vector<const rlock_lock_info*> listed;
  std::string cursor = "s0";  // the semaphore pass alone
  do {
    opts.cursor = cursor.c_str();
    rlock_lock_page* raw = nullptr;
    ASSERT_EQ(rlock_scan_locks(&raw, c.get(), &opts), RLOCK_OK) << it::last_error();
    kept.emplace_back(raw);
    listed.insert(listed.end(), raw->locks, raw->locks + raw->count);
    cursor = raw->next_cursor;
    EXPECT_TRUE(cursor == "0" || cursor[0] == 's') << cursor;
  } while (cursor != "0");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]->version, 3u);
  EXPECT_EQ(listed[0]->permits_available, 0);
  EXPECT_EQ(listed[0]->permits_held, 2);
  EXPECT_GT(listed[0]->earliest_deadline_ms, now_epoch_ms() + 50000);

  rlock_release_for(lock.get(), 1);
  redis.del(prefix + "sem-nobraces:timeout");
}

// The semaphore pass matches names itself: it must agree with SCAN MATCH, which the lock pass
// uses, on the same names and patterns.
TEST(InspectScan, SemaphoreNamesMatchAsScanMatchWould) {
  auto c = it::make_client();
  RedisConn redis(rlock_test::test_redis_url());
  const std::string prefix = rlock_test::unique_name("scan-glob");
  const std::vector<std::string> names = {"a",    "ab",  "abc",   "b{x}",   "a*b", "a?c", "[x]",
                                          "a\\b", "a]b", "xyz-1", "xyz-22", "A-c", "^q"};
  const std::string owner = std::string(rlock_client_id(c.get())) + ":1";
  std::vector<std::unique_ptr<SemaphoreKeys>> cleanup;
  for (const std::string& n : names) {
    const std::string lock = prefix + ":L:" + n, sem = prefix + ":S:" + n;
    cleanup.push_back(std::make_unique<SemaphoreKeys>(lock));
    cleanup.push_back(std::make_unique<SemaphoreKeys>(sem));
    redis.ok({"HSET", lock, owner, "1"});
    redis.ok({"PEXPIRE", lock, "60000"});
    redis.ok({"SET", sem, "1", "PX", "60000"});
    const std::string permits =
        sem.find('{') == std::string::npos ? "{" + sem + "}:timeout" : sem + ":timeout";
    redis.ok({"ZADD", permits, std::to_string(now_epoch_ms() + 60000), std::string(16, 'p')});
    redis.ok({"PEXPIRE", permits, "60000"});
  }
  for (const std::string pattern :
       {"*",       "a*",      "*b",   "a?c",   "a[bc]*", "[^a]*",  "*\\**",
        "\\[x\\]", "[a-b]*",  "*{x}", "xyz-?", "xyz-*2", "a\\\\b", "a]*",
        "[]]*",    "[A-Z]-?", "\\^*", "[^]*",  "a[",     "*c*"}) {
    int pages = 0;
    std::set<std::string> locks, semaphores;
    for (const auto& [name, kind] : walk_kinds(c.get(), prefix + ":L:" + pattern, 1000, &pages)) {
      EXPECT_EQ(kind, RLOCK_FOUND_REENTRANT);
      locks.insert(name.substr(prefix.size() + 3));
    }
    for (const auto& [name, kind] : walk_kinds(c.get(), prefix + ":S:" + pattern, 1000, &pages)) {
      EXPECT_EQ(kind, RLOCK_FOUND_SEMAPHORE);
      semaphores.insert(name.substr(prefix.size() + 3));
    }
    EXPECT_EQ(semaphores, locks) << "pattern " << pattern;
    if (pattern == "*") {
      EXPECT_EQ(locks.size(), names.size());
    }
  }
}

TEST(InspectScan, CursorsOfTheSemaphorePass) {
  auto c = it::make_client();
  rlock_lock_page* page = nullptr;
  rlock_scan_options opts = RLOCK_SCAN_OPTIONS_INIT;
  for (const char* bad : {"s", "sx", "s-1", "ss0", "0,s0"}) {
    opts.cursor = bad;
    EXPECT_EQ(rlock_scan_locks(&page, c.get(), &opts), RLOCK_EINVAL) << bad;
    EXPECT_EQ(page, nullptr);
  }
}

}  // namespace
