// Multi-lock (all members or none) and RedLock (a majority of independent servers).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;
using Clock = std::chrono::steady_clock;

namespace {

struct GroupFree {
  void operator()(rlock_multi* g) const { rlock_multi_free(g); }
};
using Group = std::unique_ptr<rlock_multi, GroupFree>;

Group make_group(const std::vector<rlock_lock*>& members, bool redlock) {
  rlock_multi* g = nullptr;
  int rc = redlock ? rlock_redlock_new(&g, members.data(), members.size())
                   : rlock_multi_lock_new(&g, members.data(), members.size());
  if (rc != RLOCK_OK) throw std::runtime_error("group: " + it::last_error());
  return Group(g);
}

int group_acquire(rlock_multi* g, int64_t wait_ms, int64_t lease_ms = 0, int64_t thread_id = 0,
                  int64_t* validity = nullptr) {
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  return rlock_multi_acquire_ex(validity, g, &opts);
}

// FAULTS.md E7: all-or-nothing.
TEST(MultiLock, AllOrNothingLeavesNoPartialHolds) {
  RedisConn redis(test_redis_url());
  const std::string a = unique_name("multi-a"), b = unique_name("multi-b"),
                    c = unique_name("multi-c");
  LockKeys ka(a), kb(b), kc(c);
  it::Client mine = it::make_client(), other = it::make_client();
  it::Lock la = it::make_lock(mine.get(), a), lb = it::make_lock(mine.get(), b),
           lc = it::make_lock(mine.get(), c), held = it::make_lock(other.get(), b);
  Group g = make_group({la.get(), lb.get(), lc.get()}, false);

  ASSERT_EQ(rlock_acquire(held.get(), 0), RLOCK_OK);
  EXPECT_EQ(group_acquire(g.get(), 0), RLOCK_ETIMEDOUT);
  EXPECT_FALSE(redis.exists(a)) << "partial hold left on a";
  EXPECT_FALSE(redis.exists(c)) << "partial hold left on c";
  EXPECT_EQ(rlock_multi_is_held_for(g.get(), RLOCK_THREAD_CURRENT), 0);
  auto start = Clock::now();
  EXPECT_EQ(group_acquire(g.get(), 300), RLOCK_ETIMEDOUT);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(290));
  EXPECT_FALSE(redis.exists(a));
  EXPECT_FALSE(redis.exists(c));

  // Freed in the meantime: the group gets every member.
  const int64_t holder = rlock_current_thread_id();  // the other client's owner is this thread
  std::thread freer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(rlock_release_for(held.get(), holder), RLOCK_OK) << it::last_error();
  });
  EXPECT_EQ(group_acquire(g.get(), 5000), RLOCK_OK) << it::last_error();
  freer.join();
  EXPECT_EQ(rlock_multi_is_held_for(g.get(), RLOCK_THREAD_CURRENT), 1);
  EXPECT_TRUE(redis.exists(a) && redis.exists(b) && redis.exists(c));
  EXPECT_EQ(rlock_multi_release_for(g.get(), RLOCK_THREAD_CURRENT), RLOCK_OK);
  EXPECT_FALSE(redis.exists(a) || redis.exists(b) || redis.exists(c));
}

it::Lock make_kind_lock(rlock_client* client, const std::string& name, rlock_lock_kind kind) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = kind;
  rlock_lock* l = nullptr;
  if (rlock_lock_new_n(&l, client, name.data(), name.size(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new_n: " + it::last_error());
  }
  return it::Lock(l);
}

// A member that refuses the owner (RLOCK_EDEADLK) changed nothing, and the round's clean-up
// leaves it alone: a non-reentrant member the owner holds stays held, a reader keeps reading.
TEST(MultiLock, ARefusingMemberKeepsWhatTheOwnerHeld) {
  RedisConn redis(test_redis_url());
  const std::string plain = unique_name("multi-refuse-plain"),
                    once = unique_name("multi-refuse-once"), rw = unique_name("multi-refuse-rw");
  LockKeys kp(plain), ko(once), kr(rw);
  it::Client mine = it::make_client();
  it::Lock lp = it::make_lock(mine.get(), plain);
  it::Lock lo = make_kind_lock(mine.get(), once, RLOCK_LOCK_NON_REENTRANT);
  it::Lock read = make_kind_lock(mine.get(), rw, RLOCK_LOCK_READ);
  it::Lock write = make_kind_lock(mine.get(), rw, RLOCK_LOCK_WRITE);

  ASSERT_EQ(it::acquire(lo.get(), 0), RLOCK_OK) << it::last_error();
  Group again = make_group({lp.get(), lo.get()}, false);
  EXPECT_EQ(group_acquire(again.get(), 0), RLOCK_EDEADLK) << it::last_error();
  EXPECT_EQ(group_acquire(again.get(), 300), RLOCK_EDEADLK) << it::last_error();
  EXPECT_TRUE(redis.exists(once)) << "the group's clean-up released the owner's own hold";
  EXPECT_EQ(rlock_is_held_for(lo.get(), RLOCK_THREAD_CURRENT), 1);
  EXPECT_FALSE(redis.exists(plain)) << "partial hold left";
  EXPECT_EQ(rlock_release(lo.get()), RLOCK_OK) << it::last_error();

  ASSERT_EQ(it::acquire(read.get(), 0), RLOCK_OK) << it::last_error();
  Group upgrade = make_group({lp.get(), write.get()}, false);
  EXPECT_EQ(group_acquire(upgrade.get(), 0), RLOCK_EDEADLK) << it::last_error();
  EXPECT_FALSE(redis.exists(plain)) << "partial hold left";
  EXPECT_EQ(redis.hgetall(rw).at("mode"), "read");
  EXPECT_EQ(rlock_release(read.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(group_acquire(upgrade.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_multi_release_for(upgrade.get(), RLOCK_THREAD_CURRENT), RLOCK_OK);
  EXPECT_FALSE(redis.exists(plain) || redis.exists(rw));
}

// FAULTS.md E7: callers locking the same members in opposite orders never deadlock, and
// still exclude each other.
TEST(MultiLock, OppositeOrdersFinishAndExclude) {
  const std::string a = unique_name("multi-x"), b = unique_name("multi-y");
  LockKeys ka(a), kb(b);
  it::Client c1 = it::make_client(), c2 = it::make_client();
  it::Lock a1 = it::make_lock(c1.get(), a), b1 = it::make_lock(c1.get(), b);
  it::Lock a2 = it::make_lock(c2.get(), a), b2 = it::make_lock(c2.get(), b);
  Group forward = make_group({a1.get(), b1.get()}, false);
  Group backward = make_group({b2.get(), a2.get()}, false);
  std::atomic<int> inside{0}, overlaps{0}, failures{0};
  volatile int counter = 0;  // lost-update counter: read, sleep, write, only under the group
  constexpr int kRounds = 150;
  auto run = [&](rlock_multi* g) {
    for (int i = 0; i < kRounds; ++i) {
      if (group_acquire(g, 20000) != RLOCK_OK) {
        ++failures;
        continue;
      }
      if (inside.fetch_add(1) != 0) ++overlaps;
      int seen = counter;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      counter = seen + 1;
      inside.fetch_sub(1);
      if (rlock_multi_release_for(g, RLOCK_THREAD_CURRENT) != RLOCK_OK) ++failures;
    }
  };
  auto start = Clock::now();
  std::thread t1(run, forward.get()), t2(run, backward.get());
  t1.join();
  t2.join();
  EXPECT_EQ(failures.load(), 0) << it::last_error();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(counter, 2 * kRounds) << "lost updates";
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(60));
}

// The longest accepted wait must wait (until cancelled), not overflow into an instant timeout.
TEST(MultiLock, LongestWaitIsNotCutShort) {
  const std::string name = unique_name("multi-long");
  LockKeys cleanup(name);
  it::Client mine = it::make_client(), other = it::make_client();
  it::Lock lock = it::make_lock(mine.get(), name), held = it::make_lock(other.get(), name);
  Group g = make_group({lock.get()}, false);
  ASSERT_EQ(rlock_acquire(held.get(), 0), RLOCK_OK);
  int rc = -100;
  std::thread waiter([&] { rc = group_acquire(g.get(), RLOCK_MAX_DURATION_MS); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(rc, -100) << "the wait ended early with " << rc;
  EXPECT_EQ(rlock_multi_cancel(g.get()), RLOCK_OK);
  waiter.join();
  EXPECT_EQ(rc, RLOCK_ECANCELED);
  EXPECT_EQ(rlock_release(held.get()), RLOCK_OK);
}

// The server reloads its data (DEBUG RELOAD, slowed by key-load-delay) on a thread of its own;
// once started, every other connection's commands answer LOADING until the data is back.
class Reloading {
 public:
  explicit Reloading(const PrivateRedis& server) : server_(server) {
    RedisConn admin(server_.admin_url());
    admin.ok({"DEBUG", "POPULATE", "3000", "filler"});
    admin.ok({"CONFIG", "SET", "key-load-delay", "500"});  // microseconds a key: about 1.5 s
    admin.ok({"CONFIG", "SET", "loading-process-events-interval-bytes", "1024"});
    reload_ = std::thread([this] {
      RedisConn runner(server_.admin_url(), 60000);
      runner.ok({"DEBUG", "RELOAD"});
    });
    const auto start = Clock::now();
    while (!loading(admin) && Clock::now() - start < std::chrono::seconds(10)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~Reloading() { reload_.join(); }
  static bool loading(RedisConn& admin) {
    Reply r = admin.command({"PING"});
    return r.is_error() && r.str.rfind("LOADING", 0) == 0;
  }
  // How many LOADING replies the server has sent (INFO errorstats, Redis 7).
  static long long loading_replies(RedisConn& admin) {
    const std::string info = admin.ok({"INFO", "errorstats"}).str;
    const std::string field = "errorstat_LOADING:count=";
    const size_t at = info.find(field);
    return at == std::string::npos ? 0 : std::stoll(info.substr(at + field.size()));
  }

 private:
  const PrivateRedis& server_;
  std::thread reload_;
};

// A multi-lock waits through LOADING as a single lock does (it used to fail at once with
// RLOCK_EREDIS); so does a single lock.
TEST(MultiLock, WaitsThroughLoadingAsASingleLockDoes) {
  PrivateRedis server({"--enable-debug-command", "yes"});
  if (server.version() < 70000) GTEST_SKIP() << "a slowed reload answering LOADING: Redis 7+";
  RedisConn admin(server.admin_url());
  it::Client client = it::make_client(server.tcp_url());
  const std::string a = unique_name("multi-load-a"), b = unique_name("multi-load-b");
  it::Lock la = it::make_lock(client.get(), a), lb = it::make_lock(client.get(), b);
  Group g = make_group({la.get(), lb.get()}, false);
  {
    Reloading reload(server);
    ASSERT_TRUE(Reloading::loading(admin)) << "the server never answered LOADING";
    const long long before = Reloading::loading_replies(admin);
    EXPECT_EQ(group_acquire(g.get(), 20000, 30000), RLOCK_OK) << it::last_error();
    EXPECT_GT(Reloading::loading_replies(admin), before) << "the group never met LOADING";
    EXPECT_FALSE(Reloading::loading(admin)) << "acquired while the server was loading";
  }
  EXPECT_TRUE(admin.exists(a) && admin.exists(b));
  EXPECT_EQ(rlock_multi_release(g.get()), RLOCK_OK) << it::last_error();
  {
    Reloading reload(server);
    ASSERT_TRUE(Reloading::loading(admin)) << "the server never answered LOADING";
    const long long before = Reloading::loading_replies(admin);
    EXPECT_EQ(it::acquire(la.get(), 20000, 30000), RLOCK_OK) << it::last_error();
    EXPECT_GT(Reloading::loading_replies(admin), before) << "the lock never met LOADING";
  }
  EXPECT_EQ(rlock_release(la.get()), RLOCK_OK) << it::last_error();
  // A try-once call still reports LOADING rather than waiting.
  Reloading reload(server);
  ASSERT_TRUE(Reloading::loading(admin)) << "the server never answered LOADING";
  EXPECT_EQ(group_acquire(g.get(), 0, 30000), RLOCK_EREDIS);
  EXPECT_NE(it::last_error().find("LOADING"), std::string::npos) << it::last_error();
}

TEST(MultiLock, BadInput) {
  it::Client c = it::make_client();
  it::Lock l = it::make_lock(c.get(), unique_name("multi-bad"));
  rlock_multi* g = nullptr;
  rlock_lock* twice[2] = {l.get(), l.get()};
  EXPECT_EQ(rlock_multi_lock_new(&g, twice, 2), RLOCK_EINVAL);
  EXPECT_NE(it::last_error().find("twice"), std::string::npos);
  EXPECT_EQ(rlock_multi_lock_new(&g, twice, 0), RLOCK_EINVAL);
  EXPECT_EQ(rlock_multi_lock_new(&g, nullptr, 1), RLOCK_EINVAL);
  rlock_lock* with_null[2] = {l.get(), nullptr};
  EXPECT_EQ(rlock_redlock_new(&g, with_null, 2), RLOCK_EINVAL);
  EXPECT_EQ(rlock_multi_lock_new(nullptr, twice, 1), RLOCK_EINVAL);
  EXPECT_EQ(g, nullptr);
  Group one = make_group({l.get()}, false);
  EXPECT_EQ(group_acquire(one.get(), -2), RLOCK_EINVAL);
  EXPECT_EQ(group_acquire(one.get(), 0, -5), RLOCK_EINVAL);
  int64_t token = 0;
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.token = &token;
  EXPECT_EQ(rlock_multi_acquire_ex(nullptr, one.get(), &opts), RLOCK_EINVAL);
  EXPECT_EQ(rlock_multi_acquire_ex(nullptr, nullptr, nullptr), RLOCK_EINVAL);
  rlock_multi_free(nullptr);
}

// Five independent servers, one client (and lock handle) per server.
class RedLockTest : public ::testing::Test {
 protected:
  static constexpr int kServers = 5;
  void SetUp() override {
    name_ = unique_name("redlock");
    for (int i = 0; i < kServers; ++i) {
      servers_.push_back(std::make_unique<PrivateRedis>());
      admins_.push_back(std::make_unique<RedisConn>(servers_.back()->unix_url()));
      rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
      const std::string url = servers_.back()->tcp_url();
      opts.url = url.c_str();
      opts.command_timeout_ms = 50;  // the per-server timeout
      opts.connect_timeout_ms = 50;
      rlock_client* c = nullptr;
      ASSERT_EQ(rlock_client_new(&c, &opts), RLOCK_OK) << it::last_error();
      clients_.emplace_back(c);
      locks_.push_back(it::make_lock(c, name_));
    }
  }
  std::vector<rlock_lock*> members() {
    std::vector<rlock_lock*> m;
    for (auto& l : locks_) m.push_back(l.get());
    return m;
  }
  int keys_left() {
    int n = 0;
    for (size_t i = 0; i < servers_.size(); ++i) {
      if (servers_[i] && admins_[i]->exists(name_)) ++n;
    }
    return n;
  }
  void stop_server(int i) {
    admins_[i].reset();
    servers_[i].reset();
  }
  std::string name_;
  std::vector<std::unique_ptr<PrivateRedis>> servers_;
  std::vector<std::unique_ptr<RedisConn>> admins_;
  std::vector<it::Client> clients_;
  std::vector<it::Lock> locks_;
};

// FAULTS.md E1: one server down still acquires, with a validity inside the lease.
TEST_F(RedLockTest, OneServerDownStillAcquires) {
  Group g = make_group(members(), true);
  stop_server(4);
  int successes = 0;
  for (int i = 0; i < 100; ++i) {
    int64_t validity = -1;
    if (group_acquire(g.get(), 0, 10000, 0, &validity) == RLOCK_OK) {
      ++successes;
      EXPECT_GT(validity, 0);
      EXPECT_LE(validity, 10000 - 100 - 2);  // lease minus the drift allowance
      EXPECT_EQ(keys_left(), 4);
      EXPECT_EQ(rlock_multi_is_held_for(g.get(), RLOCK_THREAD_CURRENT), 1);
      EXPECT_EQ(rlock_multi_release_for(g.get(), RLOCK_THREAD_CURRENT), RLOCK_OK)
          << it::last_error();
      EXPECT_EQ(keys_left(), 0);
    }
  }
  EXPECT_EQ(successes, 100) << it::last_error();
}

// FAULTS.md E3: three down never acquires and leaves no key on the two that answer.
TEST_F(RedLockTest, ThreeServersDownNeverAcquiresAndLeavesNothing) {
  Group g = make_group(members(), true);
  stop_server(0);
  stop_server(2);
  stop_server(4);
  for (int i = 0; i < 20; ++i) {
    EXPECT_NE(group_acquire(g.get(), 0, 10000), RLOCK_OK);
    EXPECT_EQ(keys_left(), 0) << "partial locks left on reachable servers";
  }
  auto start = Clock::now();
  EXPECT_NE(group_acquire(g.get(), 400, 10000), RLOCK_OK);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(3000));
  EXPECT_EQ(keys_left(), 0);
}

// FAULTS.md E2: a server that stops answering delays an attempt by about the per-server
// timeout (50 ms here), not by its own slowness.
TEST_F(RedLockTest, SlowServerIsBoundedByThePerServerTimeout) {
  if (admins_[3]->server_version() < 60200)
    GTEST_SKIP() << "CLIENT PAUSE ALL and UNPAUSE: Redis 6.2+";
  Group g = make_group(members(), true);
  admins_[3]->ok({"CLIENT", "PAUSE", "4000", "ALL"});
  std::vector<int64_t> took_ms;
  for (int i = 0; i < 10; ++i) {
    auto start = Clock::now();
    int64_t validity = -1;
    int rc = group_acquire(g.get(), 0, 10000, 0, &validity);
    took_ms.push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
    EXPECT_EQ(rc, RLOCK_OK) << it::last_error();
    EXPECT_GT(validity, 0);
    EXPECT_LE(validity, 10000 - 102);
    rlock_multi_release_for(g.get(), RLOCK_THREAD_CURRENT);
  }
  std::sort(took_ms.begin(), took_ms.end());
  // 50 ms timeout plus scheduling on a loaded 2-core machine; far below the 4 s pause.
  EXPECT_LT(took_ms.back(), 1000) << "slowest attempt";
  std::printf("RedLock acquire with a paused server: median %lld ms, max %lld ms\n",
              static_cast<long long>(took_ms[took_ms.size() / 2]),
              static_cast<long long>(took_ms.back()));
  admins_[3]->ok({"CLIENT", "UNPAUSE"});
}

TEST_F(RedLockTest, ContendingRedLocksExcludeEachOther) {
  Group first = make_group(members(), true);
  // A second set of clients on the same servers: a competing process.
  std::vector<it::Client> others;
  std::vector<it::Lock> other_locks;
  std::vector<rlock_lock*> other_members;
  for (auto& s : servers_) {
    others.push_back(it::make_client(s->tcp_url()));
    other_locks.push_back(it::make_lock(others.back().get(), name_));
    other_members.push_back(other_locks.back().get());
  }
  Group second = make_group(other_members, true);
  ASSERT_EQ(group_acquire(first.get(), 0, 10000), RLOCK_OK) << it::last_error();
  EXPECT_EQ(group_acquire(second.get(), 0, 10000), RLOCK_ETIMEDOUT);
  EXPECT_EQ(keys_left(), 5) << "the failed attempt must not remove the holder's keys";
  EXPECT_EQ(rlock_multi_release_for(first.get(), RLOCK_THREAD_CURRENT), RLOCK_OK);
  EXPECT_EQ(group_acquire(second.get(), 1000, 10000), RLOCK_OK) << it::last_error();
  EXPECT_EQ(rlock_multi_release_for(second.get(), RLOCK_THREAD_CURRENT), RLOCK_OK);
  EXPECT_EQ(keys_left(), 0);
}

// Three competitors, each with its own five clients (as three processes would be), take the
// RedLock in turn; a non-atomic counter loses no update.
TEST_F(RedLockTest, CompetitorsLoseNoUpdate) {
  constexpr int kCompetitors = 3, kRounds = 40;
  std::vector<std::vector<it::Client>> clients(kCompetitors);
  std::vector<std::vector<it::Lock>> locks(kCompetitors);
  std::vector<Group> groups;
  for (int c = 0; c < kCompetitors; ++c) {
    std::vector<rlock_lock*> members;
    for (auto& s : servers_) {
      clients[c].push_back(it::make_client(s->tcp_url()));
      locks[c].push_back(it::make_lock(clients[c].back().get(), name_));
      members.push_back(locks[c].back().get());
    }
    groups.push_back(make_group(members, true));
  }
  volatile int counter = 0;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kCompetitors; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < kRounds; ++i) {
        if (group_acquire(groups[c].get(), 20000, 10000) != RLOCK_OK) {
          ++failures;
          continue;
        }
        int seen = counter;
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        counter = seen + 1;
        if (rlock_multi_release_for(groups[c].get(), RLOCK_THREAD_CURRENT) != RLOCK_OK) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << it::last_error();
  EXPECT_EQ(counter, kCompetitors * kRounds - failures.load()) << "lost updates";
  EXPECT_EQ(keys_left(), 0);
}

}  // namespace

// Extend: every member's lease set at once; a majority is enough for a RedLock, and a member
// whose key is gone counts only with RLOCK_EXTEND_REACQUIRE, which never takes another owner's.
TEST_F(RedLockTest, ExtendNeedsAMajorityAndReacquiresOnlyWhenAsked) {
  Group g = make_group(members(), true);
  ASSERT_EQ(group_acquire(g.get(), 0, 2000), RLOCK_OK) << it::last_error();
  int64_t validity = -1;
  ASSERT_EQ(rlock_multi_extend(&validity, g.get(), 20000, 0), RLOCK_OK) << it::last_error();
  EXPECT_GT(validity, 19000);
  EXPECT_LE(validity, 20000 - 200);  // the drift allowance
  for (int i = 0; i < kServers; ++i) EXPECT_GT(admins_[i]->pttl(name_), 15000) << "server " << i;

  // Two keys lost (their nodes restarted empty): 3 of 5 still extend.
  admins_[0]->del(name_);
  admins_[1]->del(name_);
  EXPECT_EQ(rlock_multi_extend(nullptr, g.get(), 20000, 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(keys_left(), 3);
  // A third lost: 2 of 5 is short, unless the lost ones are taken again.
  admins_[2]->del(name_);
  EXPECT_NE(rlock_multi_extend(nullptr, g.get(), 20000, 0), RLOCK_OK);
  EXPECT_NE(it::last_error().find("members extended"), std::string::npos) << it::last_error();
  EXPECT_EQ(keys_left(), 2);
  // Another owner took one of them meanwhile: reacquiring leaves it alone.
  it::Client other = it::make_client(servers_[0]->tcp_url());
  it::Lock theirs = it::make_lock(other.get(), name_);
  ASSERT_EQ(rlock_acquire(theirs.get(), 0), RLOCK_OK) << it::last_error();
  const auto their_fields = admins_[0]->hgetall(name_);
  EXPECT_EQ(rlock_multi_extend(&validity, g.get(), 20000, RLOCK_EXTEND_REACQUIRE), RLOCK_OK)
      << it::last_error();
  EXPECT_EQ(admins_[0]->hgetall(name_), their_fields) << "another owner's key was taken";
  EXPECT_EQ(keys_left(), 5);  // 1 and 2 taken again, 0 still theirs
  EXPECT_GT(admins_[1]->pttl(name_), 15000);
  EXPECT_EQ(rlock_release(theirs.get()), RLOCK_OK);
  EXPECT_EQ(rlock_multi_release(g.get()), RLOCK_OK) << it::last_error();
  EXPECT_EQ(keys_left(), 0);
}

TEST(MultiLock, ExtendNeedsEveryMemberAndChecksItsArguments) {
  RedisConn redis(test_redis_url());
  const std::string a = unique_name("multi-ext-a"), b = unique_name("multi-ext-b");
  LockKeys ka(a), kb(b);
  it::Client mine = it::make_client();
  it::Lock la = it::make_lock(mine.get(), a), lb = it::make_lock(mine.get(), b);
  Group g = make_group({la.get(), lb.get()}, false);
  EXPECT_EQ(rlock_multi_extend(nullptr, g.get(), 5000, 0), RLOCK_ENOTHELD) << it::last_error();
  ASSERT_EQ(group_acquire(g.get(), 0, 1000), RLOCK_OK);
  EXPECT_EQ(rlock_multi_extend(nullptr, g.get(), 0, 0), RLOCK_EINVAL);
  EXPECT_EQ(rlock_multi_extend(nullptr, g.get(), 5000, 4), RLOCK_EINVAL);
  EXPECT_NE(it::last_error().find("flags"), std::string::npos) << it::last_error();
  EXPECT_EQ(rlock_multi_extend(nullptr, nullptr, 5000, 0), RLOCK_EINVAL);
  int64_t validity = -1;
  ASSERT_EQ(rlock_multi_extend(&validity, g.get(), 8000, 0), RLOCK_OK) << it::last_error();
  EXPECT_GT(redis.pttl(a), 6000);
  EXPECT_GT(redis.pttl(b), 6000);
  redis.del(b);  // one member lost: a multi-lock needs them all
  EXPECT_NE(rlock_multi_extend(nullptr, g.get(), 8000, 0), RLOCK_OK);
  EXPECT_NE(it::last_error().find("1 of 2 members extended"), std::string::npos)
      << it::last_error();
  EXPECT_EQ(rlock_multi_extend(nullptr, g.get(), 8000, RLOCK_EXTEND_REACQUIRE), RLOCK_OK)
      << it::last_error();
  EXPECT_TRUE(redis.exists(b));
  EXPECT_EQ(rlock_multi_release(g.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(redis.exists(a) || redis.exists(b));
}
