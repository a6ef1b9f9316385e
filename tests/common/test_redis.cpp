#include "test_redis.hpp"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>

namespace rlock_test {
namespace {

#ifndef RLOCK_TEST_TLS_CERTS_SCRIPT
#  define RLOCK_TEST_TLS_CERTS_SCRIPT "tests/fixtures/tls-certs.sh"
#endif
#ifndef RLOCK_TEST_TLS_CERT_DIR
#  define RLOCK_TEST_TLS_CERT_DIR "test-tls-certs"
#endif
constexpr const char* kTlsCertsScript = RLOCK_TEST_TLS_CERTS_SCRIPT;
constexpr const char* kTlsCertDir = RLOCK_TEST_TLS_CERT_DIR;

std::string env_or_throw(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    throw std::runtime_error(std::string("environment variable ") + name +
                             " is not set (run the test through ctest)");
  }
  return v;
}

timeval to_timeval(int64_t ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

Reply convert(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::Integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::String;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::Status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::Error;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::Array;
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      out.type = Reply::Type::Nil;
  }
  return out;
}

// Escapes glob characters so a lock name can be used in a SCAN MATCH pattern.
std::string glob_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

int free_loopback_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    close(fd);
    throw std::runtime_error(std::string("bind: ") + std::strerror(err));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

std::string test_redis_url() { return env_or_throw("RLOCK_TEST_REDIS_URL"); }

std::string tls_cert_dir() {
  static std::mutex mu;
  static std::string made;
  std::lock_guard<std::mutex> guard(mu);
  if (!made.empty()) return made;
  const char* script = std::getenv("RLOCK_TEST_TLS_CERTS_SCRIPT");
  const char* dir = std::getenv("RLOCK_TEST_TLS_CERT_DIR");
  const std::string script_path = script != nullptr && *script != '\0' ? script : kTlsCertsScript;
  const std::string dir_path = dir != nullptr && *dir != '\0' ? dir : kTlsCertDir;
  Process run({"bash", script_path, dir_path}, false);
  int status = 0;
  if (!run.wait(60000, &status) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("could not make the test certificates: bash " + script_path + " " +
                             dir_path + " (" + describe_status(status) + ")");
  }
  made = dir_path;
  return made;
}

std::string test_redis_tcp_url() {
  std::string path = env_or_throw("RLOCK_TEST_REDIS_DIR") + "/url";
  std::ifstream in(path);
  std::string url;
  if (!std::getline(in, url) || url.empty()) throw std::runtime_error("cannot read " + path);
  return url;
}

int test_redis_tcp_port() {
  std::string path = env_or_throw("RLOCK_TEST_REDIS_DIR") + "/port";
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  char* end = nullptr;
  long port = std::strtol(line.c_str(), &end, 10);
  if (line.empty() || *end != '\0' || port <= 0 || port > 65535) {
    throw std::runtime_error("cannot read a port from " + path + ": \"" + line + "\"");
  }
  return static_cast<int>(port);
}

std::string unique_name(const std::string& tag) {
  static std::atomic<unsigned> counter{0};
  static const unsigned salt = std::random_device{}();
  return "rlock-test:" + tag + ":" + std::to_string(getpid()) + ":" +
         std::to_string(counter.fetch_add(1)) + ":" + std::to_string(salt);
}

std::string lock_channel(const std::string& name) {
  if (name.find('{') != std::string::npos) return "redisson_lock__channel:" + name;
  return "redisson_lock__channel:{" + name + "}";
}

std::string fair_queue_key(const std::string& name) {
  if (name.find('{') != std::string::npos) return "redisson_lock_queue:" + name;
  return "redisson_lock_queue:{" + name + "}";
}

std::string fair_timeout_key(const std::string& name) {
  if (name.find('{') != std::string::npos) return "redisson_lock_timeout:" + name;
  return "redisson_lock_timeout:{" + name + "}";
}

std::string Reply::describe() const {
  switch (type) {
    case Type::Nil:
      return "(nil)";
    case Type::Integer:
      return "(integer) " + std::to_string(integer);
    case Type::String:
      return "\"" + str + "\"";
    case Type::Status:
      return str;
    case Type::Error:
      return "(error) " + str;
    case Type::Array: {
      std::string out = "[";
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i) out += ", ";
        out += elements[i].describe();
      }
      return out + "]";
    }
  }
  return "?";
}

// ---- RedisConn ------------------------------------------------------------------------------

RedisConn::RedisConn(const std::string& url, int64_t timeout_ms)
    : where_(url), timeout_ms_(timeout_ms) {
  std::string user, password;
  bool has_password = false;
  auto take_userinfo = [&](const std::string& info) {
    size_t colon = info.find(':');
    if (colon == std::string::npos) {
      password = info;
    } else {
      user = info.substr(0, colon);
      password = info.substr(colon + 1);
    }
    has_password = true;
  };
  timeval tv = to_timeval(timeout_ms);
  if (url.compare(0, 7, "unix://") == 0) {
    std::string rest = url.substr(7);
    size_t slash = rest.find('/');
    if (slash == std::string::npos) throw std::runtime_error("bad unix URL " + url);
    if (slash > 0) take_userinfo(rest.substr(0, slash - 1));  // strip the '@'
    ctx_ = redisConnectUnixWithTimeout(rest.substr(slash).c_str(), tv);
  } else if (url.compare(0, 8, "redis://") == 0) {
    std::string rest = url.substr(8);
    if (size_t slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
    if (size_t at = rest.rfind('@'); at != std::string::npos) {
      take_userinfo(rest.substr(0, at));
      rest = rest.substr(at + 1);
    }
    int port = 6379;
    if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
      port = std::atoi(rest.c_str() + colon + 1);
      rest = rest.substr(0, colon);
    }
    ctx_ = redisConnectWithTimeout(rest.c_str(), port, tv);
  } else {
    throw std::runtime_error("unsupported URL " + url);
  }
  if (ctx_ == nullptr || ctx_->err) {
    std::string why = ctx_ ? ctx_->errstr : "out of memory";
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
    throw std::runtime_error("cannot connect to " + url + ": " + why);
  }
  redisSetTimeout(ctx_, tv);
  if (has_password) {
    Reply r = user.empty() ? command({"AUTH", password}) : command({"AUTH", user, password});
    if (r.is_error()) {
      redisFree(ctx_);
      ctx_ = nullptr;
      throw std::runtime_error("AUTH on " + url + " failed: " + r.str);
    }
  }
}

RedisConn::~RedisConn() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

Reply RedisConn::command(const std::vector<std::string>& args) {
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  void* raw = redisCommandArgv(ctx_, static_cast<int>(args.size()), ptrs.data(), lens.data());
  if (raw == nullptr) {
    throw std::runtime_error("Redis " + where_ + ": " + (args.empty() ? "" : args[0]) +
                             " failed: " + ctx_->errstr);
  }
  Reply out = convert(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return out;
}

long long RedisConn::integer(const std::vector<std::string>& args) {
  Reply r = command(args);
  if (r.type != Reply::Type::Integer) {
    throw std::runtime_error("Redis " + args[0] + ": expected an integer, got " + r.describe());
  }
  return r.integer;
}

Reply RedisConn::ok(const std::vector<std::string>& args) {
  Reply r = command(args);
  if (r.is_error()) throw std::runtime_error("Redis " + args[0] + " failed: " + r.str);
  return r;
}

bool RedisConn::exists(const std::string& key) { return integer({"EXISTS", key}) == 1; }

long long RedisConn::pttl(const std::string& key) { return integer({"PTTL", key}); }

std::map<std::string, std::string> RedisConn::hgetall(const std::string& key) {
  Reply r = ok({"HGETALL", key});
  std::map<std::string, std::string> out;
  for (size_t i = 0; i + 1 < r.elements.size(); i += 2) {
    out[r.elements[i].str] = r.elements[i + 1].str;
  }
  return out;
}

long long RedisConn::del(const std::string& key) { return integer({"DEL", key}); }

long long RedisConn::numsub(const std::string& channel) {
  Reply r = ok({"PUBSUB", "NUMSUB", channel});
  if (r.elements.size() != 2) throw std::runtime_error("PUBSUB NUMSUB: " + r.describe());
  return r.elements[1].integer;
}

bool RedisConn::wait_numsub(const std::string& channel, long long count, int64_t timeout_ms) {
  const int64_t deadline = mono_ms() + timeout_ms;
  for (;;) {
    if (numsub(channel) >= count) return true;
    if (mono_ms() >= deadline) return false;
    sleep_ms(5);
  }
}

void RedisConn::delete_lock_keys(const std::string& name) {
  del(name);
  del(fair_queue_key(name));
  del(fair_timeout_key(name));
  // Unlock latches: "redisson_unlock_latch:{N}:<request id>" (N unchanged if it has a '{').
  std::string tagged = name.find('{') != std::string::npos ? name : "{" + name + "}";
  std::string pattern = "redisson_unlock_latch:" + glob_escape(tagged) + ":*";
  std::string cursor = "0";
  do {
    Reply r = ok({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (r.elements.size() != 2) throw std::runtime_error("SCAN: " + r.describe());
    cursor = r.elements[0].str;
    for (const Reply& key : r.elements[1].elements) del(key.str);
  } while (cursor != "0");
}

void RedisConn::subscribe(const std::string& channel) {
  Reply r = ok({"SUBSCRIBE", channel});
  if (r.elements.size() != 3 || r.elements[0].str != "subscribe") {
    throw std::runtime_error("SUBSCRIBE: " + r.describe());
  }
}

void RedisConn::psubscribe(const std::string& pattern) {
  Reply r = ok({"PSUBSCRIBE", pattern});
  if (r.elements.size() != 3 || r.elements[0].str != "psubscribe") {
    throw std::runtime_error("PSUBSCRIBE: " + r.describe());
  }
}

void RedisConn::ssubscribe(const std::string& channel) {
  Reply r = ok({"SSUBSCRIBE", channel});
  if (r.elements.size() != 3 || r.elements[0].str != "ssubscribe") {
    throw std::runtime_error("SSUBSCRIBE: " + r.describe());
  }
}

Reply RedisConn::read_reply() {
  void* raw = nullptr;
  if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
    throw std::runtime_error("Redis " + where_ + ": read failed: " + ctx_->errstr);
  }
  Reply out = convert(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return out;
}

bool RedisConn::next_message(int64_t timeout_ms, std::string* channel, std::string* payload) {
  redisSetTimeout(ctx_, to_timeval(timeout_ms));
  void* raw = nullptr;
  int rc = redisGetReply(ctx_, &raw);
  redisSetTimeout(ctx_, to_timeval(timeout_ms_));
  if (rc != REDIS_OK || raw == nullptr) {
    if (ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return false;  // a timeout; hiredis leaves the context failed, so this connection is spent
    }
    throw std::runtime_error("Redis " + where_ + ": read failed: " + ctx_->errstr);
  }
  Reply r = convert(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  if (r.type == Reply::Type::Array && r.elements.size() == 4 && r.elements[0].str == "pmessage") {
    *channel = r.elements[2].str;  // [1] is the pattern it matched
    *payload = r.elements[3].str;
    return true;
  }
  if (r.type != Reply::Type::Array || r.elements.size() != 3 ||
      (r.elements[0].str != "message" && r.elements[0].str != "smessage")) {
    throw std::runtime_error("unexpected pub/sub reply: " + r.describe());
  }
  *channel = r.elements[1].str;
  *payload = r.elements[2].str;
  return true;
}

LockKeys::~LockKeys() {
  try {
    RedisConn(url_).delete_lock_keys(name_);
  } catch (...) {
    // Cleanup must not throw from a destructor; the keys then expire by their lease.
  }
}

// ---- PrivateRedis ---------------------------------------------------------------------------

namespace {

std::string server_binary() {
  const char* env = std::getenv("RLOCK_TEST_REDIS_SERVER");
  return env != nullptr && *env != '\0' ? env : "redis-server";
}

// "6.0.16" -> 60016; 0 when there is no version there.
int parse_version(const std::string& text) {
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(text.c_str(), "%d.%d.%d", &major, &minor, &patch) < 2) return 0;
  return major * 10000 + minor * 100 + patch;
}

// A test's extra options, as a server of `version` spells them.
std::vector<std::string> options_for(int version, const std::vector<std::string>& extra) {
  if (version == 0 || version >= 70000) return extra;
  std::vector<std::string> out;
  for (size_t i = 0; i < extra.size(); ++i) {
    if (extra[i] == "--enable-debug-command" && i + 1 < extra.size()) {
      ++i;  // DEBUG is always enabled before 7.0
    } else if (extra[i] == "--busy-reply-threshold") {
      out.push_back("--lua-time-limit");
    } else {
      out.push_back(extra[i]);
    }
  }
  return out;
}

}  // namespace

int server_binary_version(const std::string& server) {
  static std::mutex mutex;
  static std::map<std::string, int> known;
  const std::string binary = server.empty() ? server_binary() : server;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(binary);
  if (it != known.end()) return it->second;
  Process p({binary, "--version"}, true);
  std::string out;
  (void)p.read_line(&out, 5000);  // "Redis server v=6.0.16 sha=..." (Valkey: "Valkey server")
  const size_t at = out.find(" v=");
  return known[binary] = at == std::string::npos ? 0 : parse_version(out.substr(at + 3));
}

int RedisConn::server_version() {
  const std::string info = ok({"INFO", "server"}).str;
  const std::string field = "redis_version:";
  const size_t at = info.find(field);
  return at == std::string::npos ? 0 : parse_version(info.substr(at + field.size()));
}

Reply RedisConn::acl_setuser(const std::string& user, std::vector<std::string> rules) {
  const int version = server_version();
  auto unknown_there = [version](const std::string& rule) {
    if (rule == "&*") return version < 60200;
    // EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO, FUNCTION and sharded pub/sub came with 7.0.
    const std::string command = rule.size() > 1 ? rule.substr(1) : "";
    return version < 70000 && (rule[0] == '-' || rule[0] == '+') &&
           ((command.size() > 3 && command.compare(command.size() - 3, 3, "_ro") == 0) ||
            command.rfind("fcall", 0) == 0 || command.rfind("function", 0) == 0 ||
            command == "ssubscribe" || command == "sunsubscribe" || command == "spublish");
  };
  rules.erase(std::remove_if(rules.begin(), rules.end(), unknown_there), rules.end());
  std::vector<std::string> args = {"ACL", "SETUSER", user};
  args.insert(args.end(), rules.begin(), rules.end());
  return command(args);
}

PrivateRedis::PrivateRedis(const std::vector<std::string>& extra_args) {
  start(extra_args, nullptr);
}

PrivateRedis::PrivateRedis(const TlsServer& tls, const std::vector<std::string>& extra_args) {
  start(extra_args, &tls);
}

void PrivateRedis::start(const std::vector<std::string>& extra_args, const TlsServer* tls) {
  for (size_t i = 0; i + 1 < extra_args.size(); ++i) {
    if (extra_args[i] == "--requirepass") password_ = extra_args[i + 1];
  }
  const std::string server = server_binary();
  version_ = server_binary_version(server);
  const std::vector<std::string> options = options_for(version_, extra_args);
  if (tls != nullptr) cert_dir_ = tls_cert_dir();
  dir_ = make_temp_dir("rlock-redis");
  socket_ = dir_ + "/redis.sock";
  std::string last_log;
  // The port may be taken between choosing and binding it: try a few.
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = tls != nullptr && tls->port != 0 ? tls->port : free_loopback_port();
    std::vector<std::string> argv = {server, "--port", std::to_string(port_)};
    if (tls != nullptr) {
      argv = {server,
              "--port",
              "0",
              "--tls-port",
              std::to_string(port_),
              "--tls-cert-file",
              cert_dir_ + "/" + tls->cert + ".crt",
              "--tls-key-file",
              cert_dir_ + "/" + tls->cert + ".key",
              "--tls-ca-cert-file",
              cert_dir_ + "/ca.crt",
              "--tls-auth-clients",
              tls->auth_clients ? "yes" : "no"};
      if (tls->tls12_only) argv.insert(argv.end(), {"--tls-protocols", "TLSv1.2"});
    }
    const std::vector<std::string> common = {
        "--bind",           "127.0.0.1", "--unixsocket", socket_,
        "--unixsocketperm", "700",       "--dir",        dir_,
        "--save",           "",          "--appendonly", "no",
        "--daemonize",      "no",        "--logfile",    dir_ + "/redis.log"};
    argv.insert(argv.end(), common.begin(), common.end());
    argv.insert(argv.end(), options.begin(), options.end());
    process_ = std::make_unique<Process>(argv, false);
    const int64_t deadline = mono_ms() + 10000;
    while (process_->running() && mono_ms() < deadline) {
      try {
        RedisConn probe(admin_url(), 1000);
        if (probe.command({"PING"}).str == "PONG") return;
      } catch (const std::runtime_error&) {
        // not listening yet
      }
      sleep_ms(10);
    }
    process_.reset();
    std::ifstream log(dir_ + "/redis.log");
    last_log.assign(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
  }
  remove_tree(dir_);
  throw std::runtime_error("could not start " + server + ":\n" + last_log);
}

PrivateRedis::~PrivateRedis() {
  if (process_) {
    process_->kill(SIGTERM);
    int status;
    if (!process_->wait(5000, &status)) process_->kill(SIGKILL);
    process_.reset();  // reaps
  }
  remove_tree(dir_);
}

std::string PrivateRedis::tls_url() const {
  return "rediss://127.0.0.1:" + std::to_string(port_) + "?tls_ca_file=" + cert_dir_ + "/ca.crt";
}

std::string PrivateRedis::admin_url() const {
  if (password_.empty()) return unix_url();
  return "unix://:" + password_ + "@" + socket_;
}

}  // namespace rlock_test
