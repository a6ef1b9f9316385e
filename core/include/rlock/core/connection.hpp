// One hiredis connection: connect with a timeout, authenticate, select the database, run
// commands with a per-command timeout. hiredis connects and parses; the socket I/O for commands
// is ours, so that a reply can be awaited by busy-polling briefly before sleeping (on a loopback
// or LAN round trip, waking a sleeping thread costs more than the round trip itself).
// Not thread-safe, except that one thread may write while another reads (the transport
// pipelines that way).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rlock/core/config.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/reply.hpp"
#include "rlock/core/tls.hpp"

struct redisContext;
struct redisReply;

namespace rlock::core {

using Args = std::vector<std::string_view>;

// hiredis's parsed reply as ours (strings byte for byte, arrays in depth); what every reply read
// from a connection goes through. Public so the reply fuzzer feeds it the same way.
Reply reply_from_hiredis(const redisReply* r);

class Connection {
 public:
  // Throws Error(kConn) when unreachable, kAuth/kNoPerm when the server refuses us, kTls when the
  // TLS handshake fails (endpoint.tls set).
  Connection(const Endpoint& endpoint, int64_t connect_timeout_ms, int64_t command_timeout_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and reads its reply. Redis error replies come back as Reply::Type::Error;
  // I/O failures and timeouts throw Error(kConn) and leave the connection broken().
  Reply command(const Args& args);

  // Pipelining: append a command in the Redis protocol to `out`; write bytes; read the next
  // reply. Failures throw Error(kConn) and leave the connection broken().
  static void append_command(std::string& out, const Args& args);
  void write_all(std::string_view bytes, std::chrono::steady_clock::time_point deadline);
  // Busy-polls up to spin_us for the reply (unless recent replies took longer) before
  // sleeping in poll().
  Reply read_reply(std::chrono::steady_clock::time_point deadline, int64_t spin_us = 0);

  // For the subscriber: queue and flush a command without reading, and read what has arrived.
  void send(const Args& args);
  // Reads all that has arrived (call when poll() says readable) and returns the complete
  // replies. Afterwards nothing is left buffered inside TLS, so poll() on fd() tells again.
  std::vector<Reply> read_available();

  // True if the server closed the connection or sent something unasked while it sat idle.
  bool closed_by_peer() const;
  bool broken() const { return broken_; }
  // TLS: whether the handshake offered an earlier connection's session, and resumed it.
  bool tls_offered_session() const { return tls_ != nullptr && tls_->offered_session(); }
  bool tls_resumed_session() const { return tls_ != nullptr && tls_->resumed_session(); }
  // Shuts the socket down both ways, so a thread blocked reading it returns at once.
  void shutdown();
  int fd() const;

 private:
  using Io = TlsStream::Io;
  // One non-blocking read or write, over TLS or not; `why` says why for kFailed/kTlsFailed.
  Io read_some(char* buf, size_t size, size_t* got, std::string* why);
  Io write_some(const char* buf, size_t size, size_t* put, std::string* why);
  // Throws for the outcomes of read_some/write_some that end the connection.
  [[noreturn]] void io_failed(Io io, const char* doing, const std::string& why);
  [[noreturn]] void fail(const std::string& why, int code = kConn);

  redisContext* ctx_ = nullptr;
  std::unique_ptr<TlsStream> tls_;
  std::atomic<bool> answered_{false};  // a reply has come: failing before that is suspect
  std::string where_;
  int64_t command_timeout_ms_;
  int64_t typical_wait_us_ = 0;      // moving average of read_reply's waits
  std::atomic<bool> broken_{false};  // set by a reader while a writer may check it
};

}  // namespace rlock::core
