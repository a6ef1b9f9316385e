// A tiny direct hiredis connection for the C API tests: to look at keys byte for byte, manage
// ACL users and read the ACL log, independently of rlock. Plus where the fixture server is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct redisContext;

namespace rlock_capi_test {

// The fixture server (tests/fixtures/redis.sh), from RLOCK_TEST_REDIS_URL / RLOCK_TEST_REDIS_DIR.
struct FixtureServer {
  std::string unix_url;   // unix:///.../redis.sock
  std::string unix_path;  // /.../redis.sock
  std::string tcp_url;    // redis://127.0.0.1:PORT
  int port = 0;
};
// Empty fields (and a message in *why) when the environment does not describe a server.
FixtureServer fixture_server(std::string* why);

struct RawReply {
  enum Type { Nil, Integer, String, Status, Error, Array } type = Nil;
  long long integer = 0;
  std::string str;
  std::vector<RawReply> elements;
};

class RawRedis {
 public:
  explicit RawRedis(const std::string& unix_path);
  ~RawRedis();
  RawRedis(const RawRedis&) = delete;
  RawRedis& operator=(const RawRedis&) = delete;

  bool ok() const { return ctx_ != nullptr; }
  const std::string& error() const { return error_; }
  // Runs one command (arguments are binary-safe); an I/O failure gives an Error reply.
  RawReply cmd(const std::vector<std::string>& args);

 private:
  redisContext* ctx_ = nullptr;
  std::string error_;
};

}  // namespace rlock_capi_test
