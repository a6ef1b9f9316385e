// Redis for tests: where the fixture server is, a raw synchronous connection to look at (and
// disturb) what the library stores, unique lock names, and private redis-server instances.
//
// Failures of the helpers themselves (cannot connect, I/O error, bad reply shape) throw
// std::runtime_error, which GoogleTest reports as a failed test.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test_process.hpp"

struct redisContext;

namespace rlock_test {

// The shared fixture server as a unix:// URL (env RLOCK_TEST_REDIS_URL).
std::string test_redis_url();
// The same server over TCP, redis://127.0.0.1:PORT (read from $RLOCK_TEST_REDIS_DIR/url).
std::string test_redis_tcp_url();
// The PORT of that URL, for clients configured by host and port ($RLOCK_TEST_REDIS_DIR/port).
int test_redis_tcp_port();

// A lock name no other test uses, in this process or another one running in parallel:
// "rlock-test:<tag>:<pid>:<counter>:<random>".
std::string unique_name(const std::string& tag);

// The wake-up channel of a lock (protocol: "redisson_lock__channel:{N}", or with N unchanged
// when N already contains '{').
std::string lock_channel(const std::string& name);

// A fair lock's queue of waiting owners ("redisson_lock_queue:{N}") and their deadlines, a sorted
// set of owner -> wall-clock ms ("redisson_lock_timeout:{N}"); N unchanged if it has a '{'.
std::string fair_queue_key(const std::string& name);
std::string fair_timeout_key(const std::string& name);

struct Reply {
  enum class Type { Nil, Integer, String, Status, Error, Array };
  Type type = Type::Nil;
  long long integer = 0;
  std::string str;
  std::vector<Reply> elements;

  bool is_error() const { return type == Type::Error; }
  bool is_nil() const { return type == Type::Nil; }
  bool is_status() const { return type == Type::Status; }
  bool is_array() const { return type == Type::Array; }
  std::string describe() const;
};

// One blocking connection. URLs: unix:///path or redis://[[user]:password@]host:port.
class RedisConn {
 public:
  explicit RedisConn(const std::string& url, int64_t timeout_ms = 5000);
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  // Runs a command with binary-safe arguments. Error replies are returned, not thrown.
  Reply command(const std::vector<std::string>& args);
  // Runs a command that must answer with an integer.
  long long integer(const std::vector<std::string>& args);
  // Runs a command that must not answer with an error.
  Reply ok(const std::vector<std::string>& args);

  // The server's version as major * 10000 + minor * 100 + patch (INFO's redis_version; Valkey
  // reports the Redis version it is compatible with, 7.2.4).
  int server_version();
  // ACL SETUSER user rules...; drops what an older server does not know: the channel rule "&*"
  // before 6.2 (every user may use every channel there), and rules on EVAL_RO, EVALSHA_RO,
  // FCALL, FCALL_RO, FUNCTION and the sharded pub/sub commands before 7.0.
  Reply acl_setuser(const std::string& user, std::vector<std::string> rules);

  bool exists(const std::string& key);
  long long pttl(const std::string& key);
  std::map<std::string, std::string> hgetall(const std::string& key);
  long long del(const std::string& key);
  // Subscriber count of a channel (PUBSUB NUMSUB).
  long long numsub(const std::string& channel);
  // Waits until a channel has at least `count` subscribers; false on timeout.
  bool wait_numsub(const std::string& channel, long long count, int64_t timeout_ms);
  // Deletes a lock key, the unlock latches the library keeps next to it, and a fair lock's
  // queue and deadlines (which have no expiry of their own).
  void delete_lock_keys(const std::string& name);

  // Turns this connection into a subscriber of `channel` (waits for the confirmation).
  void subscribe(const std::string& channel);
  // The same for a glob pattern of channels (PSUBSCRIBE).
  void psubscribe(const std::string& pattern);
  // The same for sharded pub/sub (SSUBSCRIBE, Redis 7+; a standalone server serves it too).
  void ssubscribe(const std::string& channel);
  // Waits for the next published message (of a channel, sharded or not, or a pattern
  // subscription: `channel` is the channel it was published on); false on timeout (the
  // connection is then unusable).
  bool next_message(int64_t timeout_ms, std::string* channel, std::string* payload);

 private:
  Reply read_reply();
  redisContext* ctx_ = nullptr;
  std::string where_;
  int64_t timeout_ms_;
};

// Deletes a lock's keys on the fixture server (or `url`) when the scope ends, also when an
// assertion leaves the test early.
class LockKeys {
 public:
  explicit LockKeys(std::string name, std::string url = test_redis_url())
      : name_(std::move(name)), url_(std::move(url)) {}
  ~LockKeys();
  LockKeys(const LockKeys&) = delete;
  LockKeys& operator=(const LockKeys&) = delete;

 private:
  std::string name_;
  std::string url_;
};

// The test certificates of tests/fixtures/tls-certs.sh (ca.crt, server.crt, client.crt,
// wrong-name.crt, expired.crt, other-ca.crt and their keys), made on first use in a directory
// of the build shared by every suite (the script is idempotent and takes a lock). Env
// RLOCK_TEST_TLS_CERTS_SCRIPT and RLOCK_TEST_TLS_CERT_DIR override the paths the build gives.
std::string tls_cert_dir();

// How a PrivateRedis speaks TLS. Its TCP port is then TLS only (--port 0 --tls-port P); the
// unix socket stays plaintext, for the admin connection (hiredis 0.14 has no TLS).
struct TlsServer {
  // Not an aggregate, so that PrivateRedis({"--requirepass", "x"}) stays unambiguous.
  TlsServer() {}
  std::string cert = "server";  // the certificate it presents: server, wrong-name or expired
  bool auth_clients = false;    // --tls-auth-clients yes: clients need a certificate of the CA
  int port = 0;                 // the TLS port; 0: a free one (another server's, once it is gone)
  bool tls12_only = false;      // --tls-protocols TLSv1.2
};

// The version of a redis-server binary (its --version) as major * 10000 + minor * 100 + patch;
// 0 when it does not say.
int server_binary_version(const std::string& server = "");

// A redis-server of the test's own, on a free loopback port and a unix socket in a private
// directory, for tests that disturb the server (SCRIPT FLUSH, CLIENT KILL, ACL, requirepass).
// The binary comes from env RLOCK_TEST_REDIS_SERVER (else "redis-server" in PATH). Options a
// server before 7.0 does not know are translated for it (--busy-reply-threshold is its
// --lua-time-limit; --enable-debug-command goes, DEBUG is always on there). The destructor
// stops the server and removes the directory.
class PrivateRedis {
 public:
  // extra_args are appended to the command line, e.g. {"--requirepass", "secret"}.
  explicit PrivateRedis(const std::vector<std::string>& extra_args = {});
  // A TLS server with the certificates of tls_cert_dir().
  explicit PrivateRedis(const TlsServer& tls, const std::vector<std::string>& extra_args = {});
  ~PrivateRedis();
  PrivateRedis(const PrivateRedis&) = delete;
  PrivateRedis& operator=(const PrivateRedis&) = delete;

  // The TCP port: the TLS port of a TLS server.
  int port() const { return port_; }
  std::string unix_url() const { return "unix://" + socket_; }
  // redis://127.0.0.1:PORT (for a TLS server: the wrong scheme for its port, on purpose).
  std::string tcp_url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  // rediss://127.0.0.1:PORT?tls_ca_file=<cert dir>/ca.crt (a TLS server's URL).
  std::string tls_url() const;
  // A URL for the admin connection: with `password` when the server requires one.
  std::string admin_url() const;
  // The version of its binary (server_binary_version).
  int version() const { return version_; }

 private:
  void start(const std::vector<std::string>& extra_args, const TlsServer* tls);
  std::string dir_;
  std::string socket_;
  std::string password_;
  std::string cert_dir_;  // TLS servers: tls_cert_dir()
  int port_ = 0;
  int version_ = 0;
  std::unique_ptr<Process> process_;
};

}  // namespace rlock_test
