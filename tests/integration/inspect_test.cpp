// rlock_inspect and rlock_scan_locks against the fixture server: each kind of lock held, with
// its owners, hold counts, TTL, fair queue, subscribers and fencing token checked exactly; keys
// that are no locks; a walk with a pattern; paging over more keys than one SCAN COUNT.
#include <gtest/gtest.h>

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
  std::vector<std::string> names = walk(c.get(), prefix + "*", 500, &pages);
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

}  // namespace
