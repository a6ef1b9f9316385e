// Restricted servers (issue 36): ACL users without commands managed services deny, WAIT renamed
// away, and the script cache flushed. Each runs on private servers: ACLs and SCRIPT FLUSH would
// disturb the shared one. docs/servers.md says what each restriction costs.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

std::string user_url(const PrivateRedis& server, const std::string& user) {
  return "redis://" + user + ":pw@127.0.0.1:" + std::to_string(server.port());
}

// An ACL user with every command and key but `denied` (e.g. {"-client", "-config"}).
void add_user(RedisConn& admin, const std::string& user, const std::vector<std::string>& denied) {
  std::vector<std::string> rules = {"on", ">pw", "~*", "&*", "+@all"};
  rules.insert(rules.end(), denied.begin(), denied.end());
  const Reply r = admin.acl_setuser(user, rules);
  if (!r.is_status()) throw std::runtime_error("ACL SETUSER " + user + ": " + r.describe());
}

// Failures of one exercise, "what: error" each.
struct Failures {
  std::vector<std::string> list;
  void check(int rc, const std::string& what) {
    if (rc != RLOCK_OK) list.push_back(what + ": " + it::last_error());
  }
  void expect(bool ok, const std::string& what) {
    if (!ok) list.push_back(what);
  }
};

it::Lock lock_of(rlock_client* client, const std::string& name, rlock_lock_kind kind) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = kind;
  rlock_lock* l = nullptr;
  if (rlock_lock_new(&l, client, name.c_str(), &opts) != RLOCK_OK) {
    throw std::runtime_error("rlock_lock_new failed: " + it::last_error());
  }
  return it::Lock(l);
}

// A lock of `kind`: taken twice (once for the read-write halves), extended, let go. A second
// client waits for it meanwhile and takes it once released: the wake-up goes by PUBLISH.
void exercise_lock(rlock_client* a, rlock_client* b, const std::string& name, rlock_lock_kind kind,
                   Failures* f) {
  const std::string what = name + " kind " + std::to_string(kind);
  it::Lock mine = lock_of(a, name, kind);
  it::Lock theirs = lock_of(b, name, kind == RLOCK_LOCK_READ ? RLOCK_LOCK_WRITE : kind);
  f->check(rlock_acquire(mine.get(), 0), what + " acquire");
  if (kind != RLOCK_LOCK_READ) f->check(rlock_acquire(mine.get(), 0), what + " re-enter");
  if (kind == RLOCK_LOCK_FENCED) {
    int64_t token = 0;
    f->check(rlock_lock_token(&token, mine.get()), what + " token");
    f->expect(token > 0, what + ": no fencing token");
  }
  f->check(rlock_extend(mine.get(), 20000), what + " extend");
  std::atomic<int> waited{-100};
  std::thread waiter([&] {
    waited = rlock_acquire(theirs.get(), 10000);
    if (waited == RLOCK_OK) waited = rlock_release(theirs.get());
  });
  sleep_ms(100);
  if (kind != RLOCK_LOCK_READ) f->check(rlock_release(mine.get()), what + " release (outer)");
  f->check(rlock_release(mine.get()), what + " release");
  waiter.join();
  f->check(waited.load(), what + " waiter of the other client");
}

void exercise_semaphores(rlock_client* client, const std::string& name, Failures* f) {
  rlock_semaphore* plain = nullptr;
  f->check(rlock_semaphore_new(&plain, client, (name + "-sem").c_str(), nullptr), "semaphore new");
  int set = 0;
  f->check(rlock_semaphore_try_set_permits(&set, plain, 2, 0), "semaphore set");
  f->check(rlock_semaphore_acquire(plain, 2, 0), "semaphore acquire");
  f->check(rlock_semaphore_release(plain, 2), "semaphore release");
  rlock_semaphore_free(plain);

  rlock_semaphore_options opts = RLOCK_SEMAPHORE_OPTIONS_INIT;
  opts.kind = RLOCK_SEMAPHORE_EXPIRABLE;
  rlock_semaphore* expirable = nullptr;
  f->check(rlock_semaphore_new(&expirable, client, (name + "-psem").c_str(), &opts),
           "expirable new");
  f->check(rlock_semaphore_try_set_permits(&set, expirable, 1, 0), "expirable set");
  rlock_permit_id id{};
  f->check(rlock_permit_acquire(&id, expirable, 0, RLOCK_LEASE_WATCHDOG), "expirable acquire");
  f->check(rlock_permit_update_lease(expirable, id.hex, 20000), "expirable update lease");
  f->check(rlock_permit_release(expirable, id.hex), "expirable release");
  rlock_semaphore_free(expirable);

  rlock_latch* latch = nullptr;
  f->check(rlock_latch_new(&latch, client, (name + "-latch").c_str()), "latch new");
  f->check(rlock_latch_try_set_count(&set, latch, 1), "latch set");
  int64_t left = -1;
  f->check(rlock_latch_count_down(&left, latch), "latch count down");
  f->expect(left == 0, "latch: count down left " + std::to_string(left));
  f->check(rlock_latch_await(latch, 1000, nullptr), "latch await");
  rlock_latch_free(latch);
}

const rlock_lock_kind kEveryLockKind[] = {RLOCK_LOCK_REENTRANT, RLOCK_LOCK_FENCED,
                                          RLOCK_LOCK_SPIN,      RLOCK_LOCK_FAIR,
                                          RLOCK_LOCK_READ,      RLOCK_LOCK_NON_REENTRANT_FAIR};

// Every lock kind, semaphore and latch through clients made from `url`; the failures.
std::vector<std::string> exercise_every_kind(const std::string& url, const std::string& tag,
                                             int64_t watchdog_lease_ms = 0) {
  Failures f;
  it::Client a = it::make_client(url, it::ClientSettings{watchdog_lease_ms, 0, 0});
  it::Client b = it::make_client(url, it::ClientSettings{watchdog_lease_ms, 0, 0});
  for (rlock_lock_kind kind : kEveryLockKind) {
    if (kind == RLOCK_LOCK_NON_REENTRANT_FAIR) continue;  // its re-entry is refused by design
    exercise_lock(a.get(), b.get(), tag + "-" + std::to_string(kind), kind, &f);
  }
  exercise_semaphores(a.get(), tag, &f);
  return f.list;
}

// rlock_client_new(url) fails with `code` and a message that contains `needle`.
void expect_refused_at_creation(const std::string& url, int code, const std::string& needle) {
  rlock_client* c = nullptr;
  const int rc = rlock_client_new_url(&c, url.c_str());
  const std::string message = rlock_last_error()->message;
  EXPECT_EQ(rc, code) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << "no '" << needle << "' in: " << message;
  EXPECT_EQ(c, nullptr);
  if (c != nullptr) rlock_client_free(c);
}

// A user denied `denied` on a private server gets no client, told it lacks `command`.
void expect_user_refused_at_creation(const std::vector<std::string>& denied,
                                     const std::string& command) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  add_user(admin, "u", denied);
  expect_refused_at_creation(user_url(server, "u"), RLOCK_ENOPERM, command);
}

// ---- ACL users without commands managed services deny -----------------------------------------

TEST(Restricted, AclWithoutClientConfigInfoEveryKindWorks) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  add_user(admin, "u", {"-client", "-config", "-info", "-hello"});
  for (const std::string& failure : exercise_every_kind(user_url(server, "u"), "cci")) {
    ADD_FAILURE() << failure;
  }
  // The user really is refused those commands.
  RedisConn as_user(user_url(server, "u"));
  EXPECT_TRUE(as_user.command({"INFO", "replication"}).is_error());
  EXPECT_TRUE(as_user.command({"CLIENT", "ID"}).is_error());
  EXPECT_TRUE(as_user.command({"CONFIG", "GET", "maxmemory"}).is_error());
}

TEST(Restricted, AclWithoutPublishIsRefusedAtCreation) {
  expect_user_refused_at_creation({"-publish"}, "PUBLISH");
}

// Redis 7 gives a new user no channels (acl-pubsub-default resetchannels): PUBLISH is refused
// on every lock channel.
TEST(Restricted, AclWithoutChannelsIsRefusedAtCreation) {
  PrivateRedis server;
  if (server.version() < 60200) GTEST_SKIP() << "ACL channel rules: Redis 6.2+";
  RedisConn admin(server.unix_url());
  admin.ok({"ACL", "SETUSER", "u", "on", ">pw", "~*", "resetchannels", "+@all"});
  expect_refused_at_creation(user_url(server, "u"), RLOCK_ENOPERM, "PUBLISH");
}

// Without SUBSCRIBE no message wakes a waiter, yet each still takes the lock well before the
// holder's 30 s lease would have run out (exercise_lock's waiters wait at most 10 s).
TEST(Restricted, AclWithoutSubscribeWaitersStillGetTheLock) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  add_user(admin, "u", {"-subscribe", "-ssubscribe"});
  for (const std::string& failure : exercise_every_kind(user_url(server, "u"), "nosub")) {
    ADD_FAILURE() << failure;
  }
}

TEST(Restricted, AclWithoutEvalIsRefusedAtCreation) {
  expect_user_refused_at_creation({"-eval", "-evalsha"}, "EVAL");
}

TEST(Restricted, AclWithoutEvalshaIsRefusedAtCreation) {
  expect_user_refused_at_creation({"-evalsha"}, "EVALSHA");
}

TEST(Restricted, EvalshaRenamedAwayIsRefusedAtCreation) {
  PrivateRedis server({"--rename-command", "EVALSHA", ""});
  expect_refused_at_creation(server.tcp_url(), RLOCK_EUNSUPPORTED, "EVALSHA");
}

// ---- WAIT renamed away -------------------------------------------------------------------------

TEST(Restricted, NoWaitStandaloneAutoWorksAndExplicitSyncIsRefused) {
  PrivateRedis server({"--rename-command", "WAIT", ""});
  for (const std::string& failure :
       exercise_every_kind(server.tcp_url() + "?sync_replicas=auto", "nowait")) {
    ADD_FAILURE() << failure;
  }
  expect_refused_at_creation(server.tcp_url() + "?sync_replicas=1", RLOCK_EUNSUPPORTED, "WAIT");
}

// ---- Sentinel deployments ---------------------------------------------------------------------

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("no free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// One sentinel watching `master` as "m" (quorum 1).
class Sentinel {
 public:
  explicit Sentinel(const PrivateRedis& master) : dir_(make_temp_dir("rlock-sentinel")) {
    const char* env = std::getenv("RLOCK_TEST_REDIS_SERVER");
    const std::string server = env != nullptr && *env != '\0' ? env : "redis-server";
    port_ = free_port();
    const std::string conf = dir_ + "/sentinel.conf";
    std::ofstream(conf) << "port " << port_ << "\nbind 127.0.0.1\ndir " << dir_ << "\nlogfile "
                        << dir_ << "/sentinel.log\n"
                        << "sentinel monitor m 127.0.0.1 " << master.port() << " 1\n";
    process_ =
        std::make_unique<Process>(std::vector<std::string>{server, conf, "--sentinel"}, false);
    const int64_t deadline = mono_ms() + 10000;
    while (mono_ms() < deadline) {
      try {
        RedisConn probe("redis://127.0.0.1:" + std::to_string(port_), 1000);
        if (probe.command({"SENTINEL", "get-master-addr-by-name", "m"}).is_array()) return;
      } catch (const std::runtime_error&) {
      }
      sleep_ms(20);
    }
    throw std::runtime_error("the sentinel did not start");
  }
  ~Sentinel() {
    process_.reset();  // kills it
    remove_tree(dir_);
  }
  // The sentinel itself, for commands to it.
  std::string url_plain() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  // The master's URL through this sentinel, as `user` (password "pw").
  std::string url(const std::string& user, const std::string& query) const {
    return "redis-sentinel://" + user + ":pw@127.0.0.1:" + std::to_string(port_) + "/m" + query;
  }

 private:
  std::string dir_;
  int port_ = 0;
  std::unique_ptr<Process> process_;
};

// Without INFO, auto sync counts the master's replicas by ROLE: none here, so no WAIT (which
// would time out every acquire).
TEST(Restricted, SentinelAclWithoutInfoEveryKindWorks) {
  PrivateRedis master;
  RedisConn admin(master.unix_url());
  add_user(admin, "u", {"-client", "-config", "-info"});
  Sentinel sentinel(master);
  for (const std::string& failure :
       exercise_every_kind(sentinel.url("u", "?sync_replicas=auto"), "sentinel-noinfo")) {
    ADD_FAILURE() << failure;
  }
}

// With a replica and WAIT renamed away, auto sync runs without WAIT; an explicit count is
// refused at creation.
TEST(Restricted, SentinelNoWaitAutoWorksAndExplicitSyncIsRefused) {
  PrivateRedis master({"--rename-command", "WAIT", ""});
  RedisConn admin(master.unix_url());
  add_user(admin, "u", {});
  PrivateRedis replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  Sentinel sentinel(master);
  for (const std::string& failure :
       exercise_every_kind(sentinel.url("u", "?sync_replicas=auto"), "sentinel-nowait")) {
    ADD_FAILURE() << failure;
  }
  expect_refused_at_creation(sentinel.url("u", "?sync_replicas=1"), RLOCK_EUNSUPPORTED, "WAIT");
}

// ROLE is how a Sentinel client checks it reached the master: refused, no client.
TEST(Restricted, SentinelAclWithoutRoleIsRefusedAtCreation) {
  PrivateRedis master;
  RedisConn admin(master.unix_url());
  add_user(admin, "u", {"-role"});
  Sentinel sentinel(master);
  expect_refused_at_creation(sentinel.url("u", ""), RLOCK_ENOPERM, "ROLE");
}

// WAIT refused after creation (an ACL changed, a failover to a server configured otherwise):
// auto mode keeps granting without it; an explicit count stays strict.
TEST(Restricted, SentinelWaitRefusedLaterAutoGoesOnWithoutIt) {
  PrivateRedis master;
  RedisConn admin(master.unix_url());
  add_user(admin, "u", {});
  PrivateRedis replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  const int64_t deadline = mono_ms() + 10000;
  while (admin.ok({"INFO", "replication"}).str.find("state=online") == std::string::npos) {
    ASSERT_LT(mono_ms(), deadline) << "the replica did not come online";
    sleep_ms(20);
  }
  Sentinel sentinel(master);
  it::Client automatic = it::make_client(sentinel.url("u", "?sync_replicas=auto"));
  it::Client strict = it::make_client(sentinel.url("u", "?sync_replicas=1"));
  it::Lock lock = it::make_lock(automatic.get(), "wait-refused");
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();  // with WAIT
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  admin.ok({"ACL", "SETUSER", "u", "-wait"});
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
    EXPECT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  }
  it::Lock strict_lock = it::make_lock(strict.get(), "wait-refused-strict");
  EXPECT_EQ(rlock_acquire(strict_lock.get(), 0), RLOCK_ENOTSYNCED) << it::last_error();
  EXPECT_NE(it::last_error().find("refuses WAIT, which sync_replicas=1 needs"), std::string::npos)
      << it::last_error();
  EXPECT_FALSE(admin.exists("wait-refused-strict")) << "the refused grant was not taken back";
}

// ---- Cluster -----------------------------------------------------------------------------------

// A one-node cluster holding every slot.
void make_cluster(RedisConn& admin) {
  admin.ok({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
  const int64_t deadline = mono_ms() + 10000;
  while (admin.ok({"CLUSTER", "INFO"}).str.find("cluster_state:ok") == std::string::npos) {
    if (mono_ms() > deadline) throw std::runtime_error("the cluster did not come up");
    sleep_ms(20);
  }
}

// Without INFO a Cluster client still finds Redis 7 (from a script) and waits by sharded pub/sub,
// as Redisson does there; every kind works.
TEST(Restricted, ClusterAclWithoutInfoUsesShardedPubsub) {
  PrivateRedis server({"--cluster-enabled", "yes"});
  if (server.version() < 70000) GTEST_SKIP() << "sharded pub/sub: Redis 7+";
  RedisConn admin(server.unix_url());
  make_cluster(admin);
  add_user(admin, "u", {"-client", "-config", "-info"});
  const std::string url = "redis-cluster://u:pw@127.0.0.1:" + std::to_string(server.port());
  for (const std::string& failure : exercise_every_kind(url, "cluster-noinfo")) {
    ADD_FAILURE() << failure;
  }
  it::Client a = it::make_client(url);
  it::Client b = it::make_client(url);
  it::Lock held = it::make_lock(a.get(), "sharded");
  it::Lock waiting = it::make_lock(b.get(), "sharded");
  ASSERT_EQ(rlock_acquire(held.get(), 0), RLOCK_OK) << it::last_error();
  std::atomic<int> rc{-100};
  std::thread waiter([&] {
    rc = rlock_acquire(waiting.get(), 10000);
    if (rc == RLOCK_OK) rc = rlock_release(waiting.get());
  });
  const std::string channel = lock_channel("sharded");
  long long sharded = 0;
  for (int64_t until = mono_ms() + 5000; sharded == 0 && mono_ms() < until; sleep_ms(10)) {
    sharded = admin.ok({"PUBSUB", "SHARDNUMSUB", channel}).elements.at(1).integer;
  }
  EXPECT_EQ(sharded, 1) << "the waiter did not SSUBSCRIBE " << channel;
  EXPECT_EQ(rlock_release(held.get()), RLOCK_OK) << it::last_error();
  waiter.join();
  EXPECT_EQ(rc.load(), RLOCK_OK) << "the waiter did not take and release the lock";
}

// ---- Script cache flushed ---------------------------------------------------------------------

long long commandstat(RedisConn& admin, const std::string& command) {
  const std::string info = admin.ok({"INFO", "commandstats"}).str;
  const std::string field = "cmdstat_" + command + ":calls=";
  const size_t at = info.find(field);
  return at == std::string::npos ? 0 : std::stoll(info.substr(at + field.size()));
}

// SCRIPT LOAD calls: Redis 7 counts subcommands apart, before every SCRIPT call is "script".
long long script_loads(RedisConn& admin, const PrivateRedis& server) {
  return commandstat(admin, server.version() >= 70000 ? "script|load" : "script");
}

// Client creation runs its probe script by EVAL: one per client, two clients per exercise.
constexpr long long kProbeEvals = 2;

// After SCRIPT FLUSH each script is loaded once (NOSCRIPT, then SCRIPT LOAD and EVALSHA), never
// sent by EVAL; a second round of the same calls loads none.
TEST(Restricted, ScriptFlushCostsOneReloadPerScript) {
  PrivateRedis server;
  RedisConn admin(server.unix_url());
  const std::string url = server.tcp_url();
  for (const std::string& failure : exercise_every_kind(url, "warm")) ADD_FAILURE() << failure;
  admin.ok({"SCRIPT", "FLUSH"});
  const long long evals = commandstat(admin, "eval");
  const long long loads = script_loads(admin, server);
  for (const std::string& failure : exercise_every_kind(url, "flushed")) ADD_FAILURE() << failure;
  EXPECT_GT(script_loads(admin, server) - loads, 0) << "no script was reloaded after SCRIPT FLUSH";
  EXPECT_EQ(commandstat(admin, "eval") - evals, kProbeEvals) << "a script was reloaded by EVAL";
  const long long after = script_loads(admin, server);
  const long long evals_after = commandstat(admin, "eval");
  for (const std::string& failure : exercise_every_kind(url, "again")) ADD_FAILURE() << failure;
  EXPECT_EQ(script_loads(admin, server) - after, 0) << "scripts were loaded again";
  EXPECT_EQ(commandstat(admin, "eval") - evals_after, kProbeEvals)
      << "scripts were sent with their source again";
}

// A user that may not run SCRIPT LOAD (ACL, or SCRIPT renamed away): after SCRIPT FLUSH every
// call still succeeds, the scripts sent by EVAL once the EVALSHA after the refused load answers
// NOSCRIPT again.
TEST(Restricted, ScriptLoadRefusedFallsBackToEval) {
  struct Case {
    std::vector<std::string> server_args;
    std::vector<std::string> denied;
    std::string flush;  // the SCRIPT command's name for the admin
    int min_version;
  };
  const std::vector<Case> cases = {
      {{}, {"-script"}, "SCRIPT", 0},
      {{}, {"-script|load"}, "SCRIPT", 70000},  // subcommand denials: Redis 7+
      {{"--rename-command", "SCRIPT", "rlock-test-script"}, {}, "rlock-test-script", 0},
  };
  for (const Case& c : cases) {
    PrivateRedis server(c.server_args);
    if (server.version() < c.min_version) continue;
    SCOPED_TRACE(c.denied.empty() ? "SCRIPT renamed" : c.denied.front());
    RedisConn admin(server.unix_url());
    add_user(admin, "u", c.denied);
    const std::string url = user_url(server, "u");
    for (const std::string& failure : exercise_every_kind(url, "warm")) ADD_FAILURE() << failure;
    admin.ok({c.flush, "FLUSH"});
    const long long evals = commandstat(admin, "eval");
    for (const std::string& failure : exercise_every_kind(url, "flushed")) {
      ADD_FAILURE() << failure;
    }
    EXPECT_GT(commandstat(admin, "eval") - evals, kProbeEvals)
        << "no script was reloaded by EVAL after SCRIPT FLUSH";
    const long long after = commandstat(admin, "eval");
    for (const std::string& failure : exercise_every_kind(url, "again")) ADD_FAILURE() << failure;
    EXPECT_EQ(commandstat(admin, "eval") - after, kProbeEvals)
        << "scripts were sent with their source again";
  }
}

void wait_replica_online(RedisConn& master) {
  const int64_t deadline = mono_ms() + 10000;
  while (master.ok({"INFO", "replication"}).str.find("state=online") == std::string::npos) {
    if (mono_ms() > deadline) throw std::runtime_error("the replica did not come online");
    sleep_ms(20);
  }
}

std::string role_of(const PrivateRedis& server) {
  RedisConn conn(server.unix_url());
  const Reply role = conn.ok({"ROLE"});
  return role.elements.empty() ? "" : role.elements.front().str;
}

// A failover to a replica without the scripts (issue 36): a lock held before it is still held
// after, every kind's calls succeed, and the new master gets each script by SCRIPT LOAD, none
// by EVAL; a second round of the same calls loads none.
TEST(Restricted, FailoverToAReplicaWithoutScriptsReloadsEachOnce) {
  PrivateRedis master;
  PrivateRedis replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  RedisConn admin(master.unix_url());
  RedisConn promoted(replica.unix_url());
  add_user(admin, "u", {});  // ACL users are not replicated
  add_user(promoted, "u", {});
  wait_replica_online(admin);
  Sentinel sentinel(master);
  const std::string url = sentinel.url("u", "");
  for (const std::string& failure : exercise_every_kind(url, "before")) ADD_FAILURE() << failure;

  it::Client holder = it::make_client(url);
  it::Lock kept = lock_of(holder.get(), "kept", RLOCK_LOCK_REENTRANT);
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = 0;
  opts.lease_ms = 60000;
  ASSERT_EQ(rlock_acquire_ex(kept.get(), &opts), RLOCK_OK) << it::last_error();
  ASSERT_EQ(admin.ok({"WAIT", "1", "5000"}).integer, 1) << "the replica did not take the lock";
  promoted.ok({"SCRIPT", "FLUSH"});  // surely without the scripts, whatever was replicated

  // The sentinel kills the normal clients of both servers when it reconfigures them.
  RedisConn sentinel_conn(sentinel.url_plain(), 1000);
  const int64_t deadline = mono_ms() + 30000;
  // NOGOODSLAVE until the sentinel has found the replica in the master's INFO.
  while (!sentinel_conn.command({"SENTINEL", "FAILOVER", "m"}).is_status()) {
    ASSERT_LT(mono_ms(), deadline) << "the sentinel would not fail over";
    sleep_ms(100);
  }
  // Promoted, and the old master demoted: nothing writes there any more.
  const std::string new_port = std::to_string(replica.port());
  for (;;) {
    const Reply addr = sentinel_conn.command({"SENTINEL", "get-master-addr-by-name", "m"});
    if (role_of(replica) == "master" && role_of(master) == "slave" && addr.is_array() &&
        addr.elements.size() == 2 && addr.elements[1].str == new_port) {
      break;
    }
    ASSERT_LT(mono_ms(), deadline) << "the failover did not complete";
    sleep_ms(50);
  }
  sleep_ms(200);  // the sentinel's CLIENT KILLs come with the demotion
  RedisConn now(replica.unix_url());
  wait_replica_online(now);  // the old master, resynced: WAIT (sync_replicas=auto) counts it

  EXPECT_EQ(now.command({"EXISTS", "kept"}).integer, 1) << "the held lock was lost";
  const long long evals = commandstat(now, "eval");
  const long long loads = script_loads(now, replica);
  for (const std::string& failure : exercise_every_kind(url, "after")) ADD_FAILURE() << failure;
  EXPECT_GT(script_loads(now, replica) - loads, 0) << "no script was loaded on the new master";
  EXPECT_EQ(commandstat(now, "eval") - evals, kProbeEvals) << "a script was sent by EVAL";

  it::Client other = it::make_client(url);
  it::Lock contender = lock_of(other.get(), "kept", RLOCK_LOCK_REENTRANT);
  EXPECT_NE(rlock_acquire(contender.get(), 0), RLOCK_OK) << "the held lock was taken by another";
  const long long again = script_loads(now, replica);
  const long long evals_again = commandstat(now, "eval");
  for (const std::string& failure : exercise_every_kind(url, "again")) ADD_FAILURE() << failure;
  EXPECT_EQ(script_loads(now, replica) - again, 0) << "scripts were loaded again";
  EXPECT_EQ(commandstat(now, "eval") - evals_again, kProbeEvals) << "a script was sent by EVAL";
  // The holder's client finds the new master too and lets its lock go. Its connections to the
  // old master may first meet READONLY (nothing applied) while it asks the sentinel.
  int released = RLOCK_EREADONLY;
  for (int i = 0; i < 20 && released == RLOCK_EREADONLY; ++i) {
    released = rlock_release(kept.get());
    if (released == RLOCK_EREADONLY) sleep_ms(100);
  }
  EXPECT_EQ(released, RLOCK_OK) << it::last_error();
  EXPECT_EQ(now.command({"EXISTS", "kept"}).integer, 0) << "the release did not delete it";
}

// A flusher runs SCRIPT FLUSH every few ms while every kind's acquire, renewal (a 300 ms
// watchdog lease renews every 100 ms), release and semaphore calls run: none fails.
TEST(Restricted, ScriptFlushDuringEveryKindsCalls) {
  PrivateRedis server;
  it::ScriptFlusher flusher(server.unix_url());
  std::vector<std::string> failures;
  for (int round = 0; round < 3 && failures.empty(); ++round) {
    failures = exercise_every_kind(server.tcp_url(), "during-" + std::to_string(round), 300);
  }
  EXPECT_GT(flusher.stop(), 10) << "the flusher did not run";
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
}

}  // namespace
