// TLS to a standalone server through the C ABI: private redis-servers with --port 0 and a TLS
// port only (their unix socket stays plaintext for the admin connection), certificates from
// tests/fixtures/tls-certs.sh. Locking over TLS (wake-ups, watchdog, pipelined load, killed
// connections), mutual TLS, each verification mode and failure, plaintext/TLS mix-ups, and how
// the options struct and the URL combine.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "it_support.hpp"

using namespace rlock_test;

namespace {

const char kPassword[] = "S3CRET";

// A server presenting DIR/<cert_name>.crt, asking clients for certificates or not.
TlsServer tls_server(const std::string& cert_name, bool auth_clients = false) {
  TlsServer tls;
  tls.cert = cert_name;
  tls.auth_clients = auth_clients;
  return tls;
}

std::string cert(const std::string& file) { return tls_cert_dir() + "/" + file; }

// rediss://[:S3CRET@]HOST:PORT?QUERY
std::string rediss(const PrivateRedis& server, const std::string& host, const std::string& query,
                   bool with_password = false) {
  return std::string("rediss://") + (with_password ? ":" + std::string(kPassword) + "@" : "") +
         host + ":" + std::to_string(server.port()) + (query.empty() ? "" : "?" + query);
}

std::string ca_query() { return "tls_ca_file=" + cert("ca.crt"); }

// The outcome of one rlock_client_new.
struct Attempt {
  int rc = RLOCK_ERROR;
  std::string message;
  int64_t elapsed_ms = 0;
  it::Client client;
};

Attempt try_client(const rlock_client_options& opts) {
  Attempt a;
  rlock_client* c = nullptr;
  const int64_t start = mono_ms();
  a.rc = rlock_client_new(&c, &opts);
  a.elapsed_ms = mono_ms() - start;
  a.client.reset(c);
  if (a.rc != RLOCK_OK) a.message = rlock_last_error()->message;
  return a;
}

Attempt try_url(const std::string& url, int64_t connect_timeout_ms = 0) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.connect_timeout_ms = connect_timeout_ms;
  return try_client(opts);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The client works: one acquire and release of a fresh lock, seen on the server.
void expect_locks(rlock_client* client, const PrivateRedis& server) {
  RedisConn admin(server.admin_url());
  const std::string name = unique_name("tls");
  it::Lock lock = it::make_lock(client, name);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(
      admin.hgetall(name),
      (std::map<std::string, std::string>{{it::owner_of(client, rlock_current_thread_id()), "1"}}));
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(admin.exists(name));
}

void expect_works(const Attempt& a, const PrivateRedis& server) {
  ASSERT_EQ(a.rc, RLOCK_OK) << a.message;
  expect_locks(a.client.get(), server);
}

// Failed with `code`, a message containing `part`, and never the password.
void expect_fails(const Attempt& a, int code, const std::string& part) {
  EXPECT_EQ(a.rc, code) << rlock_strerror(a.rc) << ": " << a.message;
  EXPECT_TRUE(contains(a.message, part)) << "no '" << part << "' in: " << a.message;
  EXPECT_FALSE(contains(a.message, kPassword)) << "the password leaked: " << a.message;
  EXPECT_TRUE(a.client == nullptr);
}

// ---- Locking over TLS -----------------------------------------------------------------------

TEST(Tls, AcquireAndReleaseExcludeAnotherClient) {
  PrivateRedis server(TlsServer{});
  RedisConn admin(server.admin_url());
  it::Client a = it::make_client(server.tls_url());
  it::Client b = it::make_client(server.tls_url());
  const std::string name = unique_name("tls-basic");
  it::Lock la = it::make_lock(a.get(), name);
  it::Lock lb = it::make_lock(b.get(), name);
  ASSERT_EQ(rlock_acquire(la.get(), 0), RLOCK_OK) << it::last_error();
  EXPECT_EQ(admin.hgetall(name), (std::map<std::string, std::string>{
                                     {it::owner_of(a.get(), rlock_current_thread_id()), "1"}}));
  EXPECT_EQ(rlock_acquire(lb.get(), 0), RLOCK_ETIMEDOUT);
  it::State st = it::query(lb.get());
  EXPECT_TRUE(st.locked);
  EXPECT_EQ(st.owner, it::owner_of(a.get(), rlock_current_thread_id()));
  ASSERT_EQ(rlock_release(la.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(admin.exists(name));
  ASSERT_EQ(rlock_acquire(lb.get(), 0), RLOCK_OK) << it::last_error();
  ASSERT_EQ(rlock_release(lb.get()), RLOCK_OK) << it::last_error();
}

// The waiter polls once a minute and gives up after 20 s: only the unlock message, received on
// its subscriber connection (TLS like every TCP connection to this server), can wake it in time.
TEST(Tls, WaiterIsWokenByPubSubOverTls) {
  PrivateRedis server(TlsServer{});
  RedisConn admin(server.admin_url());
  const std::string name = unique_name("tls-wake");
  it::Client holder_client = it::make_client(server.tls_url());
  it::Client waiter_client = it::make_client(server.tls_url(), it::ClientSettings{0, 60000, 0});
  it::Lock holder = it::make_lock(holder_client.get(), name);
  it::Lock waiter = it::make_lock(waiter_client.get(), name);
  ASSERT_EQ(it::acquire(holder.get(), 0, 120000), RLOCK_OK) << it::last_error();

  std::atomic<int> rc{-100};
  std::thread t([&] { rc = it::acquire(waiter.get(), 20000, 0, 77); });
  const bool subscribed = admin.wait_numsub(lock_channel(name), 1, 10000);
  const Reply pubsub_clients = admin.ok({"CLIENT", "LIST", "TYPE", "pubsub"});
  ASSERT_EQ(rlock_release(holder.get()), RLOCK_OK) << it::last_error();
  t.join();
  EXPECT_TRUE(subscribed) << "the waiter never subscribed";
  EXPECT_TRUE(contains(pubsub_clients.str, "addr=127.0.0.1:"))
      << "the subscriber is not a TCP (so TLS) connection: " << pubsub_clients.str;
  ASSERT_EQ(rc.load(), RLOCK_OK) << "the waiter was not woken: " << rlock_strerror(rc.load());
  EXPECT_EQ(admin.hgetall(name),
            (std::map<std::string, std::string>{{it::owner_of(waiter_client.get(), 77), "1"}}));
  EXPECT_EQ(rlock_release_for(waiter.get(), 77), RLOCK_OK) << it::last_error();
}

TEST(Tls, WatchdogRenewsPastTheLease) {
  PrivateRedis server(TlsServer{});
  RedisConn admin(server.admin_url());
  const std::string name = unique_name("tls-watchdog");
  it::Client client = it::make_client(server.tls_url(), it::ClientSettings{1000, 0, 0});
  it::Lock lock = it::make_lock(client.get(), name);
  ASSERT_EQ(rlock_acquire(lock.get(), 0), RLOCK_OK) << it::last_error();
  const auto fields = admin.hgetall(name);
  ASSERT_EQ(fields.size(), 1u);
  // Four leases long: without renewals over TLS the key would be gone after the first.
  const int64_t until = mono_ms() + 4000;
  while (mono_ms() < until) {
    sleep_ms(100);
    ASSERT_GT(admin.pttl(name), 0) << "the key expired: the watchdog did not renew it";
    ASSERT_EQ(admin.hgetall(name), fields);
  }
  EXPECT_EQ(rlock_is_held(lock.get()), 1);
  EXPECT_EQ(rlock_is_lost_for(lock.get(), RLOCK_THREAD_CURRENT), 0);
  ASSERT_EQ(rlock_release(lock.get()), RLOCK_OK) << it::last_error();
  EXPECT_FALSE(admin.exists(name));
}

// Per lock name: who is inside, and a counter read and written back (not incremented
// atomically) inside the lock, so an overlap can lose an update. Atomic loads and stores only
// keep TSan from reporting the race that the lock, unseen by it, prevents.
struct Section {
  std::atomic<int> inside{0};
  std::atomic<int64_t> counter{0};
};

// Runs `rounds` acquire/release pairs of `name` with waits, on a shared client. A reply lost or
// given to the wrong caller shows as an error, a double entry, or a lost counter update.
void hammer(rlock_client* client, const std::string& name, Section* section, int rounds,
            std::atomic<int>* overlaps, std::atomic<int>* errors, std::atomic<int>* done) {
  it::Lock lock = it::make_lock(client, name);
  for (int i = 0; i < rounds; ++i) {
    const int rc = rlock_acquire(lock.get(), 30000);
    if (rc != RLOCK_OK) {
      ++*errors;
      continue;
    }
    if (section->inside.fetch_add(1) != 0) ++*overlaps;
    const int64_t seen = section->counter.load(std::memory_order_relaxed);
    std::this_thread::yield();
    section->counter.store(seen + 1, std::memory_order_relaxed);
    section->inside.fetch_sub(1);
    if (rlock_release(lock.get()) != RLOCK_OK) ++*errors;
    ++*done;
  }
}

// Eight threads on three names through two pipelined TLS connections: each connection is
// written by several threads while its reader thread reads it.
TEST(Tls, PipelinedLoadOnTwoConnections) {
  PrivateRedis server(TlsServer{});
  it::Client client = it::make_client(server.tls_url(), it::ClientSettings{0, 0, 2});
  const std::vector<std::string> names = {unique_name("tls-load"), unique_name("tls-load"),
                                          unique_name("tls-load")};
  Section sections[3];
  constexpr int kThreads = 8;
  constexpr int kRounds = 150;
  std::atomic<int> overlaps{0}, errors{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(hammer, client.get(), names[t % 3], &sections[t % 3], kRounds, &overlaps,
                         &errors, &done);
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0) << "last: " << it::last_error();
  EXPECT_EQ(overlaps.load(), 0) << "two owners were inside one lock at once";
  EXPECT_EQ(done.load(), kThreads * kRounds);
  int64_t total = 0;
  for (const Section& s : sections) total += s.counter.load();
  EXPECT_EQ(total, kThreads * kRounds) << "an update was lost: mutual exclusion failed";
  RedisConn admin(server.admin_url());
  for (const std::string& name : names) EXPECT_FALSE(admin.exists(name));
}

// CLIENT KILL (from the plaintext unix socket) drops the TLS connections under load; calls on
// them may fail with RLOCK_ECONN, never otherwise, and the client reconnects over TLS.
TEST(Tls, KilledConnectionsAreReplacedOverTls) {
  PrivateRedis server(TlsServer{});
  RedisConn admin(server.admin_url());
  it::Client client = it::make_client(server.tls_url(), it::ClientSettings{0, 0, 2});
  const std::string name = unique_name("tls-kill");
  std::atomic<bool> stop{false};
  std::atomic<int> good{0}, conn_errors{0}, other_errors{0}, overlaps{0};
  std::atomic<int> inside{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      it::Lock lock = it::make_lock(client.get(), name, 10000);
      while (!stop.load()) {
        const int rc = rlock_acquire(lock.get(), 5000);
        if (rc == RLOCK_OK) {
          if (inside.fetch_add(1) != 0) ++overlaps;
          inside.fetch_sub(1);
          const int rel = rlock_release(lock.get());
          if (rel == RLOCK_OK) {
            ++good;
          } else if (rel == RLOCK_ECONN || rel == RLOCK_ENOTHELD) {
            ++conn_errors;  // the release's reply was lost with its connection; the lease frees it
          } else {
            ++other_errors;
          }
        } else if (rc == RLOCK_ECONN || rc == RLOCK_ETIMEDOUT) {
          ++conn_errors;
        } else {
          ++other_errors;
        }
      }
    });
  }
  long long kills = 0;
  for (int k = 0; k < 10; ++k) {
    sleep_ms(100);
    kills += admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  }
  kills += admin.integer({"CLIENT", "KILL", "TYPE", "pubsub"});
  sleep_ms(200);
  stop = true;
  for (auto& th : threads) th.join();
  EXPECT_GT(kills, 0) << "no connection was killed";
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(good.load(), 0);
  // Afterwards the same client works again (a release lost above leaves the key to its lease).
  admin.del(name);
  expect_locks(client.get(), server);
}

// ---- Session resumption ----------------------------------------------------------------------

// A connection killed by the server comes back with an abbreviated handshake: the session of the
// first one (a TLS 1.3 ticket) is resumed, and the client's stats say so.
TEST(TlsResume, ReconnectAfterClientKillResumes) {
  PrivateRedis server(TlsServer{});
  RedisConn admin(server.admin_url());
  it::Client client = it::make_client(server.tls_url());
  expect_locks(client.get(), server);
  const rlock_stats before = it::read_stats(client.get());
  EXPECT_GE(before.tls_handshakes, 1u);
  EXPECT_EQ(before.tls_sessions_resumed, 0u);
  for (int round = 1; round <= 3; ++round) {
    ASSERT_GT(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}), 0);
    expect_locks(client.get(), server);
    const rlock_stats after = it::read_stats(client.get());
    EXPECT_EQ(after.reconnects, before.reconnects + round);
    EXPECT_EQ(after.tls_handshakes, before.tls_handshakes + round);
    EXPECT_EQ(after.tls_sessions_resumed, static_cast<uint64_t>(round)) << "round " << round;
  }
}

// After a resumed connection, a server with a certificate the client refuses takes the same
// address and port (a restart with the wrong certificate, or an impostor). It cannot resume the
// session offered, so it meets full verification and is refused, as on a first connect.
TEST(TlsResume, RefusedCertificateAfterAResumedSession) {
  for (const char* cert : {"wrong-name", "expired"}) {
    SCOPED_TRACE(cert);
    auto genuine = std::make_unique<PrivateRedis>(TlsServer{});
    const int port = genuine->port();
    it::Client client = it::make_client(genuine->tls_url());
    {
      RedisConn admin(genuine->admin_url());
      ASSERT_GT(admin.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}), 0);
    }
    expect_locks(client.get(), *genuine);
    const rlock_stats resumed = it::read_stats(client.get());
    ASSERT_EQ(resumed.tls_sessions_resumed, 1u) << "the reconnect did not resume its session";
    genuine.reset();
    TlsServer replacement = tls_server(cert);
    replacement.port = port;
    PrivateRedis impostor(replacement);
    it::Lock lock = it::make_lock(client.get(), unique_name("tls-impostor"));
    EXPECT_EQ(rlock_acquire(lock.get(), 0), RLOCK_ETLS) << it::last_error();
    EXPECT_TRUE(contains(it::last_error(), "certificate verify failed")) << it::last_error();
    const rlock_stats after = it::read_stats(client.get());
    EXPECT_EQ(after.tls_handshakes, resumed.tls_handshakes);
    EXPECT_EQ(after.tls_sessions_resumed, 1u);
  }
}

// ---- Mutual TLS ---------------------------------------------------------------------------

// A client certificate refused by the server. With TLS 1.3 the server checks it after the
// client's side of the handshake is done, and its alert and close can meet the client's first
// command: still RLOCK_ETLS with the alert's reason (the alert is read after a failed write).
void expect_refused(const Attempt& a) {
  EXPECT_EQ(a.rc, RLOCK_ETLS) << rlock_strerror(a.rc) << ": " << a.message;
  EXPECT_FALSE(a.message.empty());
  EXPECT_FALSE(contains(a.message, kPassword)) << a.message;
  EXPECT_TRUE(a.client == nullptr);
}

TEST(TlsMutual, ClientCertificateIsRequired) {
  PrivateRedis server(tls_server("server", true));
  {
    SCOPED_TRACE("certificate and key in the URL");
    expect_works(try_url(server.tls_url() + "&tls_cert_file=" + cert("client.crt") +
                         "&tls_key_file=" + cert("client.key")),
                 server);
  }
  {
    SCOPED_TRACE("certificate and key as fields");
    const std::string url = server.tls_url(), crt = cert("client.crt"), key = cert("client.key");
    rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
    opts.url = url.c_str();
    opts.tls_cert_file = crt.c_str();
    opts.tls_key_file = key.c_str();
    expect_works(try_client(opts), server);
  }
  {
    SCOPED_TRACE("no client certificate");
    expect_refused(try_url(server.tls_url()));
  }
  {
    SCOPED_TRACE("a certificate of another CA is refused too");
    expect_refused(try_url(server.tls_url() + "&tls_cert_file=" + cert("other-ca.crt") +
                           "&tls_key_file=" + cert("other-ca.key")));
  }
}

TEST(TlsMutual, BadClientFilesAreInvalidAndNamed) {
  PrivateRedis server(tls_server("server", true));
  {
    SCOPED_TRACE("a key that does not belong to the certificate");
    const Attempt a = try_url(server.tls_url() + "&tls_cert_file=" + cert("client.crt") +
                              "&tls_key_file=" + cert("server.key"));
    expect_fails(a, RLOCK_EINVAL, "server.key");
    EXPECT_FALSE(contains(a.message, "PRIVATE KEY")) << a.message;
  }
  for (const char* option : {"tls_cert_file", "tls_key_file", "tls_ca_file"}) {
    SCOPED_TRACE(std::string("missing file as ") + option);
    const std::string missing = tls_cert_dir() + "/no-such-file.pem";
    std::string query = std::string(option) + "=" + missing;
    if (std::string(option) == "tls_key_file") query += "&tls_cert_file=" + cert("client.crt");
    expect_fails(try_url(rediss(server, "127.0.0.1", query, true)), RLOCK_EINVAL, missing);
  }
  {
    // OpenSSL reads a CA directory lazily, during verification: rlock checks it is there.
    SCOPED_TRACE("a missing CA directory");
    const std::string missing = tls_cert_dir() + "/no-such-dir";
    const Attempt a = try_url(rediss(server, "127.0.0.1", "tls_ca_dir=" + missing, true));
    EXPECT_EQ(a.rc, RLOCK_EINVAL) << rlock_strerror(a.rc);
    EXPECT_TRUE(contains(a.message, "no-such-dir")) << a.message;
    EXPECT_FALSE(contains(a.message, kPassword)) << a.message;
  }
}

// ---- Verification -------------------------------------------------------------------------

// Every case connects with the password in the URL; no message may show it.
class TlsVerify : public ::testing::Test {
 protected:
  PrivateRedis server{TlsServer{}, {"--requirepass", kPassword}};
  Attempt attempt(const std::string& host, const std::string& query) {
    return try_url(rediss(server, host, query, true));
  }
};

TEST_F(TlsVerify, FullByHostNameAndByAddress) {
  expect_works(attempt("localhost", ca_query()), server);
  expect_works(attempt("127.0.0.1", ca_query()), server);
  expect_works(attempt("127.0.0.1", ca_query() + "&tls_verify=full"), server);
  expect_works(attempt("127.0.0.1", ca_query() + "&tls_server_name=localhost"), server);
}

TEST_F(TlsVerify, ServerNameMismatch) {
  const Attempt a = attempt("127.0.0.1", ca_query() + "&tls_server_name=redis.example.com");
  expect_fails(a, RLOCK_ETLS, "mismatch");
  EXPECT_TRUE(contains(a.message, "redis.example.com")) << a.message;
  // The chain alone is still right.
  expect_works(
      attempt("127.0.0.1", ca_query() + "&tls_server_name=redis.example.com&tls_verify=ca"),
      server);
}

TEST_F(TlsVerify, NoneNeedsNoCa) {
  expect_works(attempt("127.0.0.1", "tls_verify=none"), server);
  expect_works(attempt("localhost", "tls_verify=none&tls_server_name=anything.invalid"), server);
}

TEST_F(TlsVerify, UntrustedCaIsRefused) {
  const Attempt wrong = attempt("127.0.0.1", "tls_ca_file=" + cert("other-ca.crt"));
  expect_fails(wrong, RLOCK_ETLS, "certificate verify failed");
  EXPECT_TRUE(contains(wrong.message, "127.0.0.1:" + std::to_string(server.port())))
      << wrong.message;
  // tls_verify=ca checks the chain too.
  expect_fails(attempt("127.0.0.1", "tls_ca_file=" + cert("other-ca.crt") + "&tls_verify=ca"),
               RLOCK_ETLS, "certificate verify failed");
  // The system trust store does not know the test CA.
  expect_fails(attempt("127.0.0.1", ""), RLOCK_ETLS, "certificate verify failed");
}

TEST_F(TlsVerify, MinimumVersion13) {
  expect_works(attempt("127.0.0.1", ca_query() + "&tls_min_version=1.3"), server);
  const std::string url = rediss(server, "127.0.0.1", ca_query(), true);
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.tls_min_version = RLOCK_TLS_1_3;
  expect_works(try_client(opts), server);
}

TEST(TlsVerifyServer, ExpiredCertificateIsRefused) {
  PrivateRedis server(tls_server("expired"));
  expect_fails(try_url(server.tls_url()), RLOCK_ETLS, "expired");
  // Only verification notices it.
  expect_works(try_url(rediss(server, "127.0.0.1", "tls_verify=none")), server);
}

TEST(TlsVerifyServer, WrongNameCertificate) {
  PrivateRedis server(tls_server("wrong-name"));
  expect_fails(try_url(server.tls_url()), RLOCK_ETLS, "mismatch");
  expect_fails(try_url(rediss(server, "localhost", ca_query())), RLOCK_ETLS, "mismatch");
  expect_works(try_url(server.tls_url() + "&tls_verify=ca"), server);
  expect_works(try_url(server.tls_url() + "&tls_server_name=wrong-name.invalid"), server);
}

// ---- Plaintext and TLS mixed up -------------------------------------------------------------

TEST(TlsMixup, PlaintextServerOnATlsUrl) {
  PrivateRedis server({"--requirepass", kPassword});
  const std::string url = "rediss://:" + std::string(kPassword) +
                          "@127.0.0.1:" + std::to_string(server.port()) + "?" + ca_query();
  const Attempt a = try_url(url, 1000);
  EXPECT_NE(a.rc, RLOCK_OK);
  EXPECT_TRUE(a.rc == RLOCK_ETLS || a.rc == RLOCK_ECONN) << rlock_strerror(a.rc);
  EXPECT_TRUE(contains(a.message, "plaintext")) << a.message;
  EXPECT_FALSE(contains(a.message, kPassword)) << a.message;
  EXPECT_LT(a.elapsed_ms, 1000 + 1500) << "not within the connect timeout: " << a.message;
}

TEST(TlsMixup, TlsServerOnAPlaintextUrl) {
  PrivateRedis server(TlsServer{}, {"--requirepass", kPassword});
  const std::string url =
      "redis://:" + std::string(kPassword) + "@127.0.0.1:" + std::to_string(server.port());
  const Attempt a = try_url(url, 1000);
  EXPECT_NE(a.rc, RLOCK_OK);
  EXPECT_TRUE(contains(a.message, "TLS port")) << a.message;
  EXPECT_FALSE(contains(a.message, kPassword)) << a.message;
  EXPECT_LT(a.elapsed_ms, 1000 + 1500) << "not within the connect timeout: " << a.message;
}

// ---- The options struct (version 3) and the URL ---------------------------------------------

TEST(TlsOptions, FieldsAloneWithHostAndPort) {
  PrivateRedis server(TlsServer{});
  const std::string ca = cert("ca.crt");
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  EXPECT_EQ(opts.version, 5u);
  EXPECT_EQ(opts.tls, 0);
  EXPECT_EQ(opts.tls_ca_file, nullptr);
  EXPECT_EQ(opts.tls_verify, RLOCK_TLS_VERIFY_FULL);
  EXPECT_EQ(opts.tls_min_version, RLOCK_TLS_1_2);
  EXPECT_EQ(opts.sentinel_tls, RLOCK_SENTINEL_TLS_AUTO);
  opts.host = "127.0.0.1";
  opts.port = server.port();
  opts.tls = 1;
  opts.tls_ca_file = ca.c_str();
  expect_works(try_client(opts), server);

  opts.host = "localhost";
  opts.tls_server_name = "localhost";
  opts.tls_min_version = RLOCK_TLS_1_3;
  expect_works(try_client(opts), server);

  opts.tls_server_name = "redis.example.com";
  expect_fails(try_client(opts), RLOCK_ETLS, "mismatch");
  opts.tls_verify = RLOCK_TLS_VERIFY_CA;
  expect_works(try_client(opts), server);

  // Without tls = 1 the same server is spoken to in plaintext, and refuses that.
  rlock_client_options plain = RLOCK_CLIENT_OPTIONS_INIT;
  plain.host = "127.0.0.1";
  plain.port = server.port();
  plain.connect_timeout_ms = 1000;
  expect_fails(try_client(plain), RLOCK_ECONN, "TLS port");
}

TEST(TlsOptions, FieldsThatAgreeWithTheUrl) {
  PrivateRedis server(TlsServer{});
  const std::string url = server.tls_url() + "&tls_verify=ca", ca = cert("ca.crt");
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.tls = 1;
  opts.tls_ca_file = ca.c_str();
  opts.tls_verify = RLOCK_TLS_VERIFY_CA;
  expect_works(try_client(opts), server);
}

// Misconfigurations fail at rlock_client_new with RLOCK_EINVAL naming the setting; no server is
// needed for any of them (the port is never reached).
TEST(TlsOptions, ConflictsAndMisuseAreInvalid) {
  const std::string ca = cert("ca.crt"), other = cert("other-ca.crt");
  const std::string tls_url =
      "rediss://:" + std::string(kPassword) + "@127.0.0.1:1?tls_ca_file=" + ca + "&tls_verify=ca";
  const std::string plain_url = "redis://:" + std::string(kPassword) + "@127.0.0.1:1";
  struct Case {
    const char* what;
    const std::string* url;
    void (*set)(rlock_client_options*, const std::string&);
    const char* names;
  };
  const Case cases[] = {
      {"CA file differs from the URL's", &tls_url,
       [](rlock_client_options* o, const std::string& other_ca) {
         o->tls_ca_file = other_ca.c_str();
       },
       "tls_ca_file"},
      {"verification differs from the URL's", &tls_url,
       [](rlock_client_options* o, const std::string&) { o->tls_verify = RLOCK_TLS_VERIFY_NONE; },
       "tls_verify"},
      {"tls = 1 with redis://", &plain_url,
       [](rlock_client_options* o, const std::string&) { o->tls = 1; }, "plaintext"},
      {"a CA file while TLS is off", &plain_url,
       [](rlock_client_options* o, const std::string& other_ca) {
         o->tls_ca_file = other_ca.c_str();
       },
       "TLS is off"},
      {"a verification mode while TLS is off", &plain_url,
       [](rlock_client_options* o, const std::string&) { o->tls_verify = RLOCK_TLS_VERIFY_NONE; },
       "TLS is off"},
      {"an empty server name", &tls_url,
       [](rlock_client_options* o, const std::string&) { o->tls_server_name = ""; },
       "tls_server_name"},
      {"an unknown verification mode", &tls_url,
       [](rlock_client_options* o, const std::string&) { o->tls_verify = 7; }, "tls_verify"},
      {"an unknown minimum version", &tls_url,
       [](rlock_client_options* o, const std::string&) { o->tls_min_version = 5; },
       "tls_min_version"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
    opts.url = c.url->c_str();
    c.set(&opts, other);
    expect_fails(try_client(opts), RLOCK_EINVAL, c.names);
  }
  {
    SCOPED_TRACE("TLS settings with host/port and tls = 0");
    rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
    opts.host = "127.0.0.1";
    opts.port = 1;
    opts.password = kPassword;
    opts.tls_ca_file = ca.c_str();
    expect_fails(try_client(opts), RLOCK_EINVAL, "TLS is off");
  }
  {
    SCOPED_TRACE("a tls_* option on a redis:// URL");
    expect_fails(try_url(plain_url + "?tls_ca_file=" + ca), RLOCK_EINVAL, "needs TLS");
  }
}

}  // namespace
