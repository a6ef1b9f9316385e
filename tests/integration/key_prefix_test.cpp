// The client option key_prefix (Redisson's NameMapper as a prefix): every key and channel of
// a name N is that of prefix + N, for each kind of lock, semaphores, latches and fenced writes;
// names come back without the prefix in events, lost callbacks and listings; a client without
// the prefix naming prefix + N meets the same lock; bad prefixes are refused with a message.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

namespace {

using rlock_test::RedisConn;

it::Client prefixed_client(const std::string& prefix, int64_t watchdog_lease_ms = 0) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  const std::string url = it::server_url();
  opts.url = url.c_str();
  opts.key_prefix = prefix.c_str();
  opts.watchdog_lease_ms = watchdog_lease_ms;
  rlock_client* c = nullptr;
  if (rlock_client_new(&c, &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_client_new failed: " + it::last_error());
  }
  return it::Client(c);
}

it::Lock kind_lock(rlock_client* client, const std::string& name, rlock_lock_kind kind) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = kind;
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n failed: " + it::last_error());
  }
  return it::Lock(l);
}

int new_client_with(const char* url, const char* prefix, std::string* message) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url;
  opts.key_prefix = prefix;
  rlock_client* c = nullptr;
  const int rc = rlock_client_new(&c, &opts);
  if (rc == RLOCK_OK) rlock_client_free(c);
  *message = rlock_last_error()->message;
  return rc;
}

TEST(KeyPrefix, EveryKindKeepsItsKeysBehindThePrefix) {
  RedisConn redis(it::server_url());
  const std::string name = "kp-kinds";
  it::Client client = prefixed_client("svc-a:");
  struct Case {
    rlock_lock_kind kind;
    std::string lock_key;
  };
  for (const Case& c :
       {Case{RLOCK_LOCK_REENTRANT, "svc-a:kp-kinds"}, Case{RLOCK_LOCK_FAIR, "svc-a:kp-kinds"},
        Case{RLOCK_LOCK_NON_REENTRANT, "svc-a:kp-kinds"},
        Case{RLOCK_LOCK_WRITE, "svc-a:kp-kinds"}}) {
    SCOPED_TRACE(static_cast<int>(c.kind));
    it::Lock lock = kind_lock(client.get(), name, c.kind);
    ASSERT_EQ(it::acquire(lock.get(), 0, 30000), RLOCK_OK) << it::last_error();
    EXPECT_TRUE(redis.exists(c.lock_key));
    EXPECT_FALSE(redis.exists(name)) << "the name without the prefix must stay untouched";
    ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
    EXPECT_FALSE(redis.exists(c.lock_key));
  }
  // A fenced lock's token counter, Redisson's "redisson_lock_token:{N}" of the mapped name.
  it::Lock fenced = kind_lock(client.get(), name, RLOCK_LOCK_FENCED);
  ASSERT_EQ(it::acquire(fenced.get(), 0, 30000), RLOCK_OK) << it::last_error();
  EXPECT_TRUE(redis.exists("redisson_lock_token:{svc-a:kp-kinds}"));
  ASSERT_EQ(rlock_release(fenced.get()), RLOCK_OK);
  redis.del("redisson_lock_token:{svc-a:kp-kinds}");
}

TEST(KeyPrefix, WaitersListenOnTheChannelOfThePrefixedName) {
  RedisConn redis(it::server_url());
  it::Client client = prefixed_client("svc-b:");
  it::Client other = it::make_client();
  it::Lock held = it::make_lock(other.get(), "svc-b:kp-chan", 30000);
  ASSERT_EQ(it::acquire(held.get(), 0, 30000), RLOCK_OK);
  it::Lock waiter = it::make_lock(client.get(), "kp-chan", 30000);
  std::atomic<int> rc{-1000};
  std::thread t([&] { rc = it::acquire(waiter.get(), 10000, 30000, 7); });
  EXPECT_TRUE(redis.wait_numsub("redisson_lock__channel:{svc-b:kp-chan}", 1, 5000))
      << "the waiter must subscribe to the channel of prefix + name";
  // The unprefixed holder's release wakes the prefixed waiter: one lock, two spellings.
  ASSERT_EQ(rlock_release(held.get()), RLOCK_OK);
  t.join();
  ASSERT_EQ(rc.load(), RLOCK_OK) << it::last_error();
  EXPECT_EQ(it::query(waiter.get(), 7).owner, it::owner_of(client.get(), 7));
  EXPECT_TRUE(it::query(held.get()).locked) << "the unprefixed handle sees the same key held";
  ASSERT_EQ(rlock_release_for(waiter.get(), 7), RLOCK_OK);
}

TEST(KeyPrefix, ClientsWithDifferentPrefixesDoNotMeet) {
  it::Client a = prefixed_client("tenant-1:");
  it::Client b = prefixed_client("tenant-2:");
  it::Lock la = it::make_lock(a.get(), "kp-apart", 30000);
  it::Lock lb = it::make_lock(b.get(), "kp-apart", 30000);
  ASSERT_EQ(it::acquire(la.get(), 0, 30000), RLOCK_OK);
  EXPECT_EQ(it::acquire(lb.get(), 0, 30000), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_release(la.get()), RLOCK_OK);
  EXPECT_EQ(rlock_release(lb.get()), RLOCK_OK);
}

TEST(KeyPrefix, SemaphoresAndLatchesUseThePrefixedKeys) {
  RedisConn redis(it::server_url());
  it::Client client = prefixed_client("svc-c:");
  rlock_semaphore* sem = nullptr;
  ASSERT_EQ(rlock_semaphore_new(&sem, client.get(), "kp-sem", nullptr), RLOCK_OK);
  int set = 0;
  ASSERT_EQ(rlock_semaphore_try_set_permits(&set, sem, 3, 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(set, 1);
  EXPECT_EQ(redis.command({"GET", "svc-c:kp-sem"}).str, "3");
  EXPECT_FALSE(redis.exists("kp-sem"));
  int deleted = 0;
  ASSERT_EQ(rlock_semaphore_delete(&deleted, sem), RLOCK_OK);
  rlock_semaphore_free(sem);

  rlock_latch* latch = nullptr;
  ASSERT_EQ(rlock_latch_new(&latch, client.get(), "kp-latch"), RLOCK_OK);
  ASSERT_EQ(rlock_latch_try_set_count(&set, latch, 2), RLOCK_OK) << it::last_error();
  EXPECT_EQ(set, 1);
  EXPECT_EQ(redis.command({"GET", "svc-c:kp-latch"}).str, "2");
  EXPECT_FALSE(redis.exists("kp-latch"));
  ASSERT_EQ(rlock_latch_delete(&deleted, latch), RLOCK_OK);
  rlock_latch_free(latch);
}

TEST(KeyPrefix, FencedWritesGoToThePrefixedResource) {
  RedisConn redis(it::server_url());
  it::Client client = prefixed_client("svc-d:");
  int accepted = 0;
  const std::string key = "kp-resource";
  ASSERT_EQ(rlock_fenced_write(&accepted, client.get(), key.data(), key.size(), "v", 1, 5),
            RLOCK_OK)
      << it::last_error();
  EXPECT_EQ(accepted, 1);
  EXPECT_EQ(redis.command({"GET", "svc-d:kp-resource"}).str, "v");
  EXPECT_FALSE(redis.exists(key));
  redis.del("svc-d:kp-resource");
  redis.del("rlock_fence:{svc-d:kp-resource}");
}

TEST(KeyPrefix, ListingsAndInspectionGiveNamesWithoutThePrefix) {
  it::Client prefixed = prefixed_client("svc-e:");
  it::Client plain = it::make_client();
  it::Lock mine = it::make_lock(prefixed.get(), "kp-list-mine", 30000);
  it::Lock theirs = it::make_lock(plain.get(), "kp-list-theirs", 30000);
  ASSERT_EQ(it::acquire(mine.get(), 0, 30000), RLOCK_OK);
  ASSERT_EQ(it::acquire(theirs.get(), 0, 30000), RLOCK_OK);

  rlock_lock_info* info = nullptr;
  ASSERT_EQ(rlock_inspect(&info, prefixed.get(), "kp-list-mine", 12), RLOCK_OK) << it::last_error();
  EXPECT_EQ(std::string(info->name, info->name_len), "kp-list-mine");
  EXPECT_TRUE(info->locked != 0) << "inspect must read the prefixed key";
  rlock_lock_info_free(info);

  std::set<std::string> seen;
  std::string cursor = "0";
  do {
    rlock_scan_options opts = RLOCK_SCAN_OPTIONS_INIT;
    opts.cursor = cursor.c_str();
    opts.match = "kp-list-*";
    opts.match_len = 9;
    rlock_lock_page* page = nullptr;
    ASSERT_EQ(rlock_scan_locks(&page, prefixed.get(), &opts), RLOCK_OK) << it::last_error();
    for (size_t i = 0; i < page->count; ++i) {
      seen.insert(std::string(page->locks[i]->name, page->locks[i]->name_len));
    }
    cursor = page->next_cursor;
    rlock_lock_page_free(page);
  } while (cursor != "0");
  EXPECT_EQ(seen, std::set<std::string>{"kp-list-mine"})
      << "a prefixed client lists its own names only, without the prefix";
  EXPECT_EQ(rlock_release(mine.get()), RLOCK_OK);
  EXPECT_EQ(rlock_release(theirs.get()), RLOCK_OK);
}

struct Seen {
  std::mutex mu;
  std::vector<std::string> names;
  void add(const char* name, size_t len) {
    std::lock_guard<std::mutex> guard(mu);
    names.emplace_back(name, len);
  }
  bool wait_for(const std::string& name, int64_t timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard<std::mutex> guard(mu);
        for (const std::string& n : names) {
          if (n == name) return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
};

TEST(KeyPrefix, EventsAndLostCallbacksNameTheLockWithoutThePrefix) {
  RedisConn redis(it::server_url());
  it::Client client = prefixed_client("svc-f:", 600);
  Seen events;
  ASSERT_EQ(rlock_client_set_event_callback(
                client.get(),
                [](const rlock_event* e, void* p) {
                  static_cast<Seen*>(p)->add(e->name == nullptr ? "" : e->name, e->name_len);
                },
                &events),
            RLOCK_OK);
  Seen lost;
  it::Lock lock = it::make_lock(client.get(), "kp-events");
  ASSERT_EQ(rlock_lock_set_lost_callback(
                lock.get(),
                [](rlock_lock*, const char* name, size_t len, int64_t, rlock_lost_reason, void* p) {
                  static_cast<Seen*>(p)->add(name, len);
                },
                &lost),
            RLOCK_OK);
  ASSERT_EQ(it::acquire(lock.get(), 0), RLOCK_OK);  // watchdog: renewed every 200 ms
  EXPECT_TRUE(events.wait_for("kp-events", 5000));
  redis.del("svc-f:kp-events");  // the watchdog's next renewal finds the hold gone
  EXPECT_TRUE(lost.wait_for("kp-events", 5000)) << "the lost callback names the lock as given";
  rlock_release(lock.get());  // lost: answers RLOCK_ELOST, nothing to check
  rlock_client_set_event_callback(client.get(), nullptr, nullptr);
}

TEST(KeyPrefix, BadPrefixesAndNamesAreRefusedWithAMessage) {
  const std::string url = it::server_url();
  std::string message;
  EXPECT_EQ(new_client_with(url.c_str(), "", &message), RLOCK_EINVAL);
  EXPECT_NE(message.find("key_prefix must not be empty"), std::string::npos) << message;
  const std::string long_prefix(1025, 'p');
  EXPECT_EQ(new_client_with(url.c_str(), long_prefix.c_str(), &message), RLOCK_EINVAL);
  EXPECT_NE(message.find("key_prefix is 1025 bytes"), std::string::npos) << message;
  // Given both ways: they must agree.
  const std::string with_query = url + "?key_prefix=one%3A";
  EXPECT_EQ(new_client_with(with_query.c_str(), "two:", &message), RLOCK_EINVAL);
  EXPECT_NE(message.find("different values"), std::string::npos) << message;
  EXPECT_EQ(new_client_with(with_query.c_str(), "one:", &message), RLOCK_OK) << message;
  const std::string empty_query = url + "?key_prefix=";
  EXPECT_EQ(new_client_with(empty_query.c_str(), nullptr, &message), RLOCK_EINVAL);
  EXPECT_NE(message.find("key_prefix is empty"), std::string::npos) << message;

  // max_name_len bounds prefix + name, and an empty name stays refused.
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.key_prefix = "12345:";
  opts.max_name_len = 10;
  rlock_client* c = nullptr;
  ASSERT_EQ(rlock_client_new(&c, &opts), RLOCK_OK) << it::last_error();
  it::Client client(c);
  rlock_lock* l = nullptr;
  EXPECT_EQ(rlock_lock_new(&l, client.get(), "abcd", nullptr), RLOCK_OK) << it::last_error();
  rlock_lock_free(l);
  EXPECT_EQ(rlock_lock_new(&l, client.get(), "abcde", nullptr), RLOCK_EINVAL);
  EXPECT_NE(std::string(rlock_last_error()->message).find("11 with the key_prefix"),
            std::string::npos)
      << rlock_last_error()->message;
  EXPECT_EQ(rlock_lock_new(&l, client.get(), "", nullptr), RLOCK_EINVAL);
}

TEST(KeyPrefix, TheUrlOptionSetsThePrefix) {
  RedisConn redis(it::server_url());
  it::Client client = it::make_client(it::server_url() + "?key_prefix=from%20url%3A");
  it::Lock lock = it::make_lock(client.get(), "kp-url", 30000);
  ASSERT_EQ(it::acquire(lock.get(), 0, 30000), RLOCK_OK);
  EXPECT_TRUE(redis.exists("from url:kp-url"));
  EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK);
}

}  // namespace

// ---- Key events (rlock_client_watch_key_events) ---------------------------------------------

namespace {

struct KeyEventLog {
  std::mutex mu;
  std::vector<std::pair<int, std::string>> seen;
  static void record(const rlock_event* e, void* p) {
    auto* log = static_cast<KeyEventLog*>(p);
    std::lock_guard<std::mutex> guard(log->mu);
    log->seen.emplace_back(e->kind, std::string(e->name == nullptr ? "" : e->name, e->name_len));
  }
  bool wait_for(int kind, const std::string& name, int64_t timeout_ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      {
        std::lock_guard<std::mutex> guard(mu);
        for (const auto& [k, n] : seen) {
          if (k == kind && n == name) return true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  bool any_named(const std::string& name) {
    std::lock_guard<std::mutex> guard(mu);
    for (const auto& [k, n] : seen) {
      if (n == name) return true;
    }
    return false;
  }
};

// Restores the server's notify-keyspace-events after a test.
struct Notifications {
  RedisConn redis{it::server_url()};
  std::string before;
  Notifications() {
    before = redis.ok({"CONFIG", "GET", "notify-keyspace-events"}).elements[1].str;
  }
  ~Notifications() { redis.command({"CONFIG", "SET", "notify-keyspace-events", before}); }
  void set(const std::string& flags) {
    redis.ok({"CONFIG", "SET", "notify-keyspace-events", flags});
  }
};

}  // namespace

TEST(KeyEvents, ExpiredAndDeletedKeysOfTheClientsNamesAreReported) {
  Notifications notifications;
  notifications.set("Egx");
  it::Client client = prefixed_client("svc-k:");
  KeyEventLog log;
  ASSERT_EQ(rlock_client_set_event_callback(client.get(), KeyEventLog::record, &log), RLOCK_OK);
  ASSERT_EQ(rlock_client_watch_key_events(client.get(), RLOCK_KEY_EXPIRED | RLOCK_KEY_DELETED),
            RLOCK_OK)
      << it::last_error();
  ASSERT_TRUE(notifications.redis.wait_numsub("__keyevent@0__:expired", 1, 5000));
  ASSERT_TRUE(notifications.redis.wait_numsub("__keyevent@0__:del", 1, 5000));

  it::Lock leased = it::make_lock(client.get(), "ke-expires", 100);
  ASSERT_EQ(it::acquire(leased.get(), 0, 100), RLOCK_OK);
  bool expired = false;
  for (int i = 0; i < 50 && !expired; ++i) {
    // Redis expires a key when it is read or when its expiry scan reaches it; on the server the
    // tests share, with other tests' many expiring keys, the scan alone may take longer than
    // this wait. The read makes the expiry, and its event, happen now.
    notifications.redis.command({"EXISTS", "svc-k:ke-expires"});
    expired = log.wait_for(RLOCK_EVENT_KEY_EXPIRED, "ke-expires", 100);
  }
  EXPECT_TRUE(expired) << "the lease's end is reported, named without the prefix";

  it::Lock released = it::make_lock(client.get(), "ke-deleted", 30000);
  ASSERT_EQ(it::acquire(released.get(), 0, 30000), RLOCK_OK);
  ASSERT_EQ(rlock_release(released.get()), RLOCK_OK);
  EXPECT_TRUE(log.wait_for(RLOCK_EVENT_KEY_DELETED, "ke-deleted", 5000));

  // A key outside the prefix is not this client's: never reported.
  notifications.redis.ok({"SET", "ke-other", "x"});
  notifications.redis.del("ke-other");
  notifications.redis.ok({"SET", "svc-k:ke-mark", "x"});
  notifications.redis.del("svc-k:ke-mark");  // reported after ke-other's delete, if it was
  EXPECT_TRUE(log.wait_for(RLOCK_EVENT_KEY_DELETED, "ke-mark", 5000));
  EXPECT_FALSE(log.any_named("ke-other"));
  EXPECT_FALSE(log.any_named("svc-k:ke-other"));

  // 0 stops: the channels are given up.
  ASSERT_EQ(rlock_client_watch_key_events(client.get(), 0), RLOCK_OK);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (notifications.redis.numsub("__keyevent@0__:del") > 0 &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(notifications.redis.numsub("__keyevent@0__:del"), 0);
  rlock_client_set_event_callback(client.get(), nullptr, nullptr);
}

TEST(KeyEvents, AServerThatDoesNotPublishThemIsNamedInTheError) {
  Notifications notifications;
  notifications.set("");
  it::Client client = it::make_client();
  EXPECT_EQ(rlock_client_watch_key_events(client.get(), RLOCK_KEY_EXPIRED), RLOCK_EUNSUPPORTED);
  EXPECT_NE(it::last_error().find("notify-keyspace-events is \"\", without Ex"), std::string::npos)
      << it::last_error();
  notifications.set("Ex");
  EXPECT_EQ(rlock_client_watch_key_events(client.get(), RLOCK_KEY_EXPIRED | RLOCK_KEY_DELETED),
            RLOCK_EUNSUPPORTED);
  EXPECT_NE(it::last_error().find("without g"), std::string::npos) << it::last_error();
  EXPECT_EQ(rlock_client_watch_key_events(client.get(), RLOCK_KEY_EXPIRED), RLOCK_OK)
      << it::last_error();
  EXPECT_EQ(rlock_client_watch_key_events(client.get(), 4), RLOCK_EINVAL);
  EXPECT_EQ(rlock_client_watch_key_events(nullptr, 1), RLOCK_EINVAL);
}
