#include "raw_redis.hpp"

#include <hiredis/hiredis.h>

#include <cstdlib>
#include <fstream>

namespace rlock_capi_test {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

RawReply convert(const redisReply* r) {
  RawReply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = RawReply::Integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      out.type = RawReply::String;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RawReply::Status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RawReply::Error;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RawReply::Array;
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      out.type = RawReply::Nil;
  }
  return out;
}

}  // namespace

FixtureServer fixture_server(std::string* why) {
  FixtureServer s;
  const char* url = std::getenv("RLOCK_TEST_REDIS_URL");
  const char* dir = std::getenv("RLOCK_TEST_REDIS_DIR");
  if (url == nullptr || dir == nullptr) {
    *why = "RLOCK_TEST_REDIS_URL and RLOCK_TEST_REDIS_DIR are not set (run through ctest)";
    return FixtureServer{};
  }
  s.unix_url = url;
  const std::string scheme = "unix://";
  if (s.unix_url.compare(0, scheme.size(), scheme) != 0) {
    *why = "RLOCK_TEST_REDIS_URL is not a unix:// URL: " + s.unix_url;
    return FixtureServer{};
  }
  s.unix_path = s.unix_url.substr(scheme.size());
  std::ifstream url_file(std::string(dir) + "/url");
  std::ifstream port_file(std::string(dir) + "/port");
  std::string tcp, port;
  std::getline(url_file, tcp);
  std::getline(port_file, port);
  s.tcp_url = trim(tcp);
  s.port = std::atoi(trim(port).c_str());
  if (s.tcp_url.empty() || s.port <= 0) {
    *why = std::string("cannot read the TCP URL and port from ") + dir;
    return FixtureServer{};
  }
  return s;
}

RawRedis::RawRedis(const std::string& unix_path) {
  timeval tv{5, 0};
  ctx_ = redisConnectUnixWithTimeout(unix_path.c_str(), tv);
  if (ctx_ == nullptr || ctx_->err) {
    error_ = ctx_ == nullptr ? "out of memory" : ctx_->errstr;
    if (ctx_ != nullptr) redisFree(ctx_);
    ctx_ = nullptr;
    return;
  }
  redisSetTimeout(ctx_, tv);
}

RawRedis::~RawRedis() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

RawReply RawRedis::cmd(const std::vector<std::string>& args) {
  RawReply out;
  if (ctx_ == nullptr) {
    out.type = RawReply::Error;
    out.str = "not connected: " + error_;
    return out;
  }
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  void* raw = redisCommandArgv(ctx_, static_cast<int>(args.size()), argv.data(), lens.data());
  if (raw == nullptr) {
    out.type = RawReply::Error;
    out.str = std::string("I/O error: ") + ctx_->errstr;
    return out;
  }
  out = convert(static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return out;
}

}  // namespace rlock_capi_test
