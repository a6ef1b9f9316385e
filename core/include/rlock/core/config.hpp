// Where and how a client connects, and its timing defaults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rlock::core {

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path;  // used instead of host/port when not empty
  std::string username;   // empty = default user
  std::string password;
  bool has_password = false;
  int db = 0;

  std::string describe() const;  // "127.0.0.1:6379" or "unix:/path", for messages
};

// Parses redis://[[user]:password@]host[:port][/db][?db=N] and
// unix://[[user]:password@]/path[?db=N]. Throws Error(kInvalid) naming the bad part.
Endpoint parse_url(const std::string& url);

struct ClientConfig {
  Endpoint endpoint;
  int64_t connect_timeout_ms = 2000;
  int64_t command_timeout_ms = 3000;
  int pool_size = 8;
  int64_t watchdog_lease_ms = 30000;
  int64_t poll_cap_ms = 1000;
  size_t max_name_len = 65536;
};

constexpr int64_t kMaxDurationMs = int64_t{1} << 53;

// How long an unlock latch (the result of one release request) is kept: long enough for that
// request's retry to find it.
inline int64_t unlock_latch_ttl_ms(const ClientConfig& config) {
  return config.command_timeout_ms * 2 > 1000 ? config.command_timeout_ms * 2 : 1000;
}

}  // namespace rlock::core
