// TLS over a connection's socket, with OpenSSL 3 used directly (hiredis 0.14 has none, and the
// connection does its own socket I/O anyway). Built when RLOCK_TLS is on (the default);
// without it, tls_available() is false and a TLS configuration is refused as unsupported.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "rlock/core/config.hpp"

namespace rlock::core {

class TlsSessions;      // sessions to resume, by endpoint (tls.cpp)
struct TlsSessionSlot;  // where a connection's new sessions go (tls.cpp)

bool tls_available();

// The settings shared by every TLS connection of a client: trust, client certificate, versions.
class TlsContext {
 public:
  // Throws kInvalid naming a file that cannot be loaded (with OpenSSL's reason), kUnsupported
  // when the build has no TLS.
  // `stats` (may be null) counts the handshakes, and those that resumed a session.
  static std::shared_ptr<const TlsContext> create(const TlsConfig& config,
                                                  std::shared_ptr<Stats> stats = nullptr);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  const TlsConfig& config() const { return config_; }
  void* native() const { return ctx_; }  // the SSL_CTX
  // The sessions its connections may resume. Shared: a connection keeps them alive.
  const std::shared_ptr<TlsSessions>& sessions() const { return sessions_; }
  Stats* stats() const { return stats_.get(); }

 private:
  TlsContext(const TlsConfig& config, void* ctx, std::shared_ptr<Stats> stats);
  TlsConfig config_;
  void* ctx_;
  std::shared_ptr<TlsSessions> sessions_;
  std::shared_ptr<Stats> stats_;
};

// One TLS session over a connected socket, which it reads and writes without blocking. One
// thread may read while another writes: each OpenSSL call is made under the stream's lock, which is
// never held while waiting for the socket.
class TlsStream {
 public:
  enum class Io {
    kDone,       // some bytes moved
    kWantRead,   // wait until the socket is readable, then call again
    kWantWrite,  // wait until it is writable, then call again
    kClosed,     // the server closed the connection
    kFailed,     // a socket error; `why` says which
    kTlsFailed,  // a TLS protocol failure or an alert from the server; `why` says which
  };

  // Runs the handshake by `deadline` (`timeout_ms` after the connect began, for messages).
  // Throws kTls for a refused certificate (ours or theirs) or a server that does not speak TLS,
  // kConn for a connection lost or silent meanwhile. `host` is the name or address connected
  // to, `where` the server as messages show it.
  TlsStream(const TlsContext& context, int fd, const std::string& host, const std::string& where,
            std::chrono::steady_clock::time_point deadline, int64_t timeout_ms);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  Io read(char* buf, size_t size, size_t* got, std::string* why);
  Io write(const char* buf, size_t size, size_t* put, std::string* why);
  // For an idle connection: true if the server closed it or sent application data unasked.
  // Reads (and so consumes) what TLS itself sends after the handshake, such as session tickets.
  bool closed_by_peer();
  // Whether the handshake offered a session of an earlier connection, and resumed it.
  bool offered_session() const { return offered_; }
  bool resumed_session() const { return resumed_; }

 private:
  Io result(int n, size_t* moved, std::string* why);
  // Before the handshake: offers the newest session of this endpoint, if any. After it: notes
  // whether it resumed, drops a refused one, counts.
  void offer_session(const TlsContext& context, const std::string& where);
  void settle_session(const TlsContext& context);
  void handshake(const std::string& where, int64_t timeout_ms,
                 std::chrono::steady_clock::time_point deadline);

  void* ssl_;  // the SSL
  int fd_;
  std::string name_;  // the name verified and sent as SNI
  std::unique_ptr<TlsSessionSlot> slot_;
  bool offered_ = false;
  bool resumed_ = false;
  std::mutex mutex_;
};

}  // namespace rlock::core
