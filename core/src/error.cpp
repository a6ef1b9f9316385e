#include "rlock/core/error.hpp"

#include <cstdio>

namespace rlock::core {
namespace {
struct LastError {
  int code = kOk;
  std::string message;
};
thread_local LastError t_last;

bool starts_with(const std::string& s, const char* prefix) {
  return s.compare(0, std::char_traits<char>::length(prefix), prefix) == 0;
}
}  // namespace

void set_last_error(int code, std::string message) {
  t_last.code = code;
  t_last.message = std::move(message);
}

int last_error_code() noexcept { return t_last.code; }
const std::string& last_error_message() noexcept { return t_last.message; }

int code_for_redis_error(const std::string& reply) {
  if (starts_with(reply, "OOM")) return kRedisOom;
  if (starts_with(reply, "BUSY")) return kRedisBusy;
  if (starts_with(reply, "READONLY")) return kReadOnly;
  if (starts_with(reply, "NOPERM")) return kNoPerm;
  if (starts_with(reply, "WRONGPASS") || starts_with(reply, "NOAUTH") ||
      reply.find("invalid password") != std::string::npos ||
      reply.find("without any password configured") != std::string::npos ||
      reply.find("invalid username-password") != std::string::npos)
    return kAuth;
  if (starts_with(reply, "ERR unknown command")) return kUnsupported;
  return kRedis;
}

std::string printable(const std::string& bytes, size_t limit) {
  std::string out = "'";
  size_t n = 0;
  for (unsigned char c : bytes) {
    if (n++ == limit) {
      out += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  out += "'";
  if (bytes.size() > limit) out += " (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

}  // namespace rlock::core
