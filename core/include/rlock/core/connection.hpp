// One blocking hiredis connection: connect with a timeout, authenticate, select the database,
// run commands with a per-command timeout. Not thread-safe; the transport and the subscriber
// each give a connection to one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rlock/core/config.hpp"
#include "rlock/core/reply.hpp"

struct redisContext;

namespace rlock::core {

using Args = std::vector<std::string_view>;

class Connection {
 public:
  // Throws Error(kConn) when unreachable, kAuth/kNoPerm when the server refuses us.
  Connection(const Endpoint& endpoint, int64_t connect_timeout_ms, int64_t command_timeout_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and reads its reply. Redis error replies come back as Reply::Type::Error;
  // I/O failures and timeouts throw Error(kConn) and leave the connection broken().
  Reply command(const Args& args);

  // For the subscriber: queue and flush a command without reading, and read what has arrived.
  void send(const Args& args);
  // Reads what the socket has (call when poll() says readable) and returns the complete replies.
  std::vector<Reply> read_available();

  // True if the server closed the connection or sent something unasked while it sat idle.
  bool closed_by_peer() const;
  bool broken() const { return broken_; }
  int fd() const;

 private:
  [[noreturn]] void io_failure(const char* doing);

  redisContext* ctx_ = nullptr;
  std::string where_;
  int64_t command_timeout_ms_;
  bool broken_ = false;
};

}  // namespace rlock::core
