#include "rlock/core/tls.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>

#include "rlock/core/error.hpp"
#include "rlock/core/stats.hpp"

namespace rlock::core {

// Sessions of earlier connections, to resume instead of a full handshake. One is offered only to
// the endpoint it came from (host:port and the name verified and sent as SNI); the context that
// holds them fixes the trust store, client certificate and verification mode.
class TlsSessions {
 public:
  TlsSessions() = default;
  TlsSessions(const TlsSessions&) = delete;
  TlsSessions& operator=(const TlsSessions&) = delete;
  ~TlsSessions() {
    for (auto& entry : by_key_) {
      for (SSL_SESSION* s : entry.second) SSL_SESSION_free(s);
    }
  }

  // Keeps `session` (its reference is now ours) for `key`. It is a copy: the connection that
  // received it goes on using the original, and sharing one session object between threads
  // rests on OpenSSL's reference counts, which thread sanitizers cannot see.
  void keep(const std::string& key, SSL_SESSION* session) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = by_key_.find(key);
    if (found == by_key_.end() && by_key_.size() >= kEndpoints) {
      // Addresses come and go in a cluster or behind sentinels: stay bounded.
      for (SSL_SESSION* s : by_key_.begin()->second) SSL_SESSION_free(s);
      by_key_.erase(by_key_.begin());
    }
    std::deque<SSL_SESSION*>& list = by_key_[key];
    if (find_same(list, session) != list.end()) {
      SSL_SESSION_free(session);  // a TLS 1.2 session announced again on its resumption
      return;
    }
    list.push_back(session);
    if (list.size() > kPerEndpoint) {
      SSL_SESSION_free(list.front());
      list.pop_front();
    }
  }

  // The newest session for `key`, the caller's own, or null. A TLS 1.3 ticket is taken out:
  // RFC 8446 asks clients to use each one once (the server sends new ones). A TLS 1.2 session
  // stays for others and the caller gets a copy.
  SSL_SESSION* take(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = by_key_.find(key);
    if (found == by_key_.end()) return nullptr;
    std::deque<SSL_SESSION*>& list = found->second;
    while (!list.empty() && SSL_SESSION_is_resumable(list.back()) != 1) {
      SSL_SESSION_free(list.back());
      list.pop_back();
    }
    if (list.empty()) return nullptr;
    SSL_SESSION* s = list.back();
    if (SSL_SESSION_get_protocol_version(s) == TLS1_3_VERSION) {
      list.pop_back();
      return s;
    }
    return SSL_SESSION_dup(s);
  }

  // The server would not resume `session`: not offered again.
  void forget(const std::string& key, SSL_SESSION* session) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = by_key_.find(key);
    if (found == by_key_.end()) return;
    std::deque<SSL_SESSION*>& list = found->second;
    auto at = find_same(list, session);
    if (at == list.end()) return;
    SSL_SESSION_free(*at);
    list.erase(at);
  }

 private:
  // The entry for the same session as `session` (copies included: same session ID).
  static std::deque<SSL_SESSION*>::iterator find_same(std::deque<SSL_SESSION*>& list,
                                                      const SSL_SESSION* session) {
    unsigned int length = 0;
    const unsigned char* id = SSL_SESSION_get_id(session, &length);
    return std::find_if(list.begin(), list.end(), [&](const SSL_SESSION* s) {
      if (s == session) return true;
      unsigned int other_length = 0;
      const unsigned char* other = SSL_SESSION_get_id(s, &other_length);
      return length > 0 && other_length == length && std::memcmp(id, other, length) == 0;
    });
  }

  // A pool's connections reconnecting together each want a ticket of their own.
  static constexpr size_t kPerEndpoint = 4;
  static constexpr size_t kEndpoints = 64;
  std::mutex mutex_;
  std::map<std::string, std::deque<SSL_SESSION*>> by_key_;
};

// Where the sessions a connection's server sends go (the SSL's app data).
struct TlsSessionSlot {
  std::shared_ptr<TlsSessions> sessions;
  std::string key;
  bool verify = true;
  SSL_SESSION* offered = nullptr;  // our reference to the session offered, until the handshake
};

namespace {

SSL* as_ssl(void* p) { return static_cast<SSL*>(p); }

// OpenSSL's reason for the latest failure of this thread ("certificate verify failed"), and
// clears the queue so the next call starts clean.
std::string openssl_reason() {
  unsigned long code = ERR_peek_last_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  std::string out = reason != nullptr ? reason : "unknown TLS error";
  ERR_clear_error();
  return out;
}

int reason_code() { return ERR_GET_REASON(ERR_peek_last_error()); }

bool is_ip_address(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

[[noreturn]] void bad_file(const char* what, const std::string& path) {
  std::string reason = openssl_reason();
  throw Error(kInvalid, std::string("cannot load the TLS ") + what + " " + printable(path, 200) +
                            ": " + reason);
}

// A file or directory the settings name must be there and readable: OpenSSL's own reason for a
// missing file is "system lib", and a CA directory is only looked into when a certificate is
// checked, which would turn a typo into a verification failure at each connect.
void check_readable(const char* what, const std::string& path, bool directory) {
  struct stat st {};
  const char* problem = nullptr;
  const bool reachable = ::stat(path.c_str(), &st) == 0 &&
                         ::access(path.c_str(), directory ? (R_OK | X_OK) : R_OK) == 0;
  if (!reachable) {
    problem = std::strerror(errno);
  } else if (directory != S_ISDIR(st.st_mode)) {
    problem = directory ? "not a directory" : "a directory, not a file";
  }
  if (problem != nullptr) {
    throw Error(kInvalid, std::string("cannot load the TLS ") + what + " " + printable(path, 200) +
                              ": " + problem);
  }
}

bool is_file(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

// The system's CA certificates. OpenSSL looks where it was configured to (OPENSSLDIR, or the
// SSL_CERT_FILE and SSL_CERT_DIR variables). A copy linked into the released wheel or jar was
// configured for Debian's layout, so on other distributions the usual bundle files are tried too.
void load_system_trust(SSL_CTX* ctx) {
  if (SSL_CTX_set_default_verify_paths(ctx) != 1) bad_file("system trust store", "(default)");
  if (std::getenv("SSL_CERT_FILE") != nullptr || std::getenv("SSL_CERT_DIR") != nullptr ||
      is_file(X509_get_default_cert_file())) {
    return;
  }
  static const char* const bundles[] = {
      "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Arch
      "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL, Fedora
      "/etc/pki/tls/certs/ca-bundle.crt",                   // older RHEL, CentOS
      "/etc/ssl/ca-bundle.pem",                             // openSUSE
      "/etc/ssl/cert.pem",                                  // Alpine
  };
  for (const char* bundle : bundles) {
    if (is_file(bundle)) {
      if (SSL_CTX_load_verify_locations(ctx, bundle, nullptr) != 1) bad_file("CA file", bundle);
      return;
    }
  }
}

void load_trust(SSL_CTX* ctx, const TlsConfig& config) {
  if (config.ca_file.empty() && config.ca_dir.empty()) {
    load_system_trust(ctx);
    return;
  }
  if (!config.ca_file.empty()) {
    check_readable("CA file", config.ca_file, false);
    if (SSL_CTX_load_verify_locations(ctx, config.ca_file.c_str(), nullptr) != 1) {
      bad_file("CA file", config.ca_file);
    }
  }
  if (!config.ca_dir.empty()) {
    check_readable("CA directory", config.ca_dir, true);
    if (SSL_CTX_load_verify_locations(ctx, nullptr, config.ca_dir.c_str()) != 1) {
      bad_file("CA directory", config.ca_dir);
    }
  }
}

void load_client_certificate(SSL_CTX* ctx, const TlsConfig& config) {
  if (config.cert_file.empty()) return;
  const std::string& key = config.key_file.empty() ? config.cert_file : config.key_file;
  check_readable("client certificate", config.cert_file, false);
  check_readable("client key", key, false);
  if (SSL_CTX_use_certificate_chain_file(ctx, config.cert_file.c_str()) != 1) {
    bad_file("client certificate", config.cert_file);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    bad_file("client key", key);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    std::string reason = openssl_reason();
    throw Error(kInvalid, "the TLS client key " + printable(key, 200) +
                              " does not belong to the certificate " +
                              printable(config.cert_file, 200) + ": " + reason);
  }
}

// What a refusal of the client's certificate means, or "" for other reasons.
std::string client_certificate_hint(int reason) {
  switch (reason) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return " (the server wants a client certificate: tls_cert_file and tls_key_file)";
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
      return " (the server refused the client certificate of tls_cert_file)";
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
      return " (the server refused the handshake: does it want a client certificate "
             "(tls_cert_file), or share no TLS version with tls_min_version?)";
    default:
      return "";
  }
}

// Why a handshake was refused, in words a user can act on.
std::string handshake_failure(SSL* ssl, const std::string& name, int port_hint_reason) {
  const long verify = SSL_get_verify_result(ssl);
  if (port_hint_reason == SSL_R_CERTIFICATE_VERIFY_FAILED && verify != X509_V_OK) {
    std::string out =
        std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      out += " (the certificate does not name " + printable(name, 100) +
             "; tls_server_name sets the name checked, tls_verify=ca checks the chain only)";
    } else if (verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
               verify == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT ||
               verify == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN) {
      out += " (the CA that signed the server's certificate is not trusted: tls_ca_file)";
    }
    ERR_clear_error();
    return out;
  }
  std::string reason = openssl_reason();
  if (port_hint_reason == SSL_R_WRONG_VERSION_NUMBER ||
      port_hint_reason == SSL_R_PACKET_LENGTH_TOO_LONG) {
    return "the server does not answer in TLS (" + reason +
           "): is this a plaintext port? (plaintext Redis URLs are redis://)";
  }
  return reason + client_certificate_hint(port_hint_reason);
}

// The socket under a TLS session. OpenSSL's own socket BIO writes with write(2), which raises
// SIGPIPE on a connection the server closed, and a library must not kill its process or change
// its signal handling; this one sends with MSG_NOSIGNAL, and never blocks (MSG_DONTWAIT), so
// the socket itself can stay as hiredis made it.
int socket_of(BIO* bio) { return *static_cast<const int*>(BIO_get_data(bio)); }

bool would_block(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == EINTR; }

int bio_write(BIO* bio, const char* buf, int len) {
  BIO_clear_retry_flags(bio);
  const ssize_t n =
      ::send(socket_of(bio), buf, static_cast<size_t>(len), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n < 0 && would_block(errno)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}

int bio_read(BIO* bio, char* buf, int len) {
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::recv(socket_of(bio), buf, static_cast<size_t>(len), MSG_DONTWAIT);
  if (n < 0 && would_block(errno)) BIO_set_retry_read(bio);
  return static_cast<int>(n);  // 0: the server closed the connection
}

long bio_ctrl(BIO*, int cmd, long, void*) {
  // Nothing is buffered here: a flush is done at once; every other query gets "no".
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

const BIO_METHOD* socket_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "rlock socket");
    if (m == nullptr) return m;
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    return m;
  }();
  return method;
}

// OpenSSL's new-session callback: TLS 1.2 at the end of the handshake, TLS 1.3 whenever a
// ticket arrives (after the handshake, in a read). Returns 0: the cache keeps a copy.
int on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* slot = static_cast<TlsSessionSlot*>(SSL_get_app_data(ssl));
  if (slot == nullptr || SSL_SESSION_is_resumable(session) != 1) return 0;
  // A resumed session skips certificate checks: only one of a server that passed them.
  if (slot->verify && SSL_get_verify_result(ssl) != X509_V_OK) return 0;
  SSL_SESSION* copy = SSL_SESSION_dup(session);
  if (copy != nullptr) slot->sessions->keep(slot->key, copy);
  return 0;  // the connection keeps the original
}

}  // namespace

bool tls_available() { return true; }

std::shared_ptr<const TlsContext> TlsContext::create(const TlsConfig& config,
                                                     std::shared_ptr<Stats> stats) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) throw Error(kNoMemory, "cannot create a TLS context: " + openssl_reason());
  try {
    SSL_CTX_set_min_proto_version(
        ctx, config.min_version == TlsVersion::V1_3 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // Client-side sessions go to our own cache (TlsSessions), keyed by endpoint; OpenSSL's
    // internal store is a server's.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    if (config.verify == TlsVerify::None) {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      static std::once_flag logged;
      std::call_once(logged, [] {
        std::fprintf(stderr,
                     "rlock: TLS certificate verification is off (tls_verify=none): the Redis "
                     "servers are not authenticated\n");
      });
    } else {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      load_trust(ctx, config);
    }
    load_client_certificate(ctx, config);
  } catch (...) {
    SSL_CTX_free(ctx);
    throw;
  }
  return std::shared_ptr<const TlsContext>(new TlsContext(config, ctx, std::move(stats)));
}

TlsContext::TlsContext(const TlsConfig& config, void* ctx, std::shared_ptr<Stats> stats)
    : config_(config),
      ctx_(ctx),
      sessions_(std::make_shared<TlsSessions>()),
      stats_(std::move(stats)) {}

TlsContext::~TlsContext() { SSL_CTX_free(static_cast<SSL_CTX*>(ctx_)); }

TlsStream::TlsStream(const TlsContext& context, int fd, const std::string& host,
                     const std::string& where, std::chrono::steady_clock::time_point deadline,
                     int64_t timeout_ms)
    : ssl_(SSL_new(static_cast<SSL_CTX*>(context.native()))), fd_(fd) {
  if (ssl_ == nullptr) throw Error(kNoMemory, "cannot create a TLS session: " + openssl_reason());
  SSL* ssl = as_ssl(ssl_);
  const TlsConfig& config = context.config();
  const std::string& name = config.server_name.empty() ? host : config.server_name;
  name_ = name;
  const bool ip = is_ip_address(name);
  // SNI carries host names only (RFC 6066).
  if (!ip && !name.empty()) SSL_set_tlsext_host_name(ssl, name.c_str());
  if (config.verify == TlsVerify::Full) {
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str())
                      : SSL_set1_host(ssl, name.c_str());
    if (ok != 1) {
      SSL_free(ssl);
      throw Error(kInvalid, "cannot verify TLS certificates for the name " + printable(name, 100));
    }
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  }
  BIO* bio = socket_method() != nullptr ? BIO_new(socket_method()) : nullptr;
  if (bio == nullptr) {
    SSL_free(ssl);
    throw Error(kNoMemory, "cannot create a TLS socket: " + openssl_reason());
  }
  BIO_set_data(bio, &fd_);     // lives as long as the session
  SSL_set_bio(ssl, bio, bio);  // the session owns it now
  // One recv takes all the socket has, rather than a record's header and then its body.
  SSL_set_read_ahead(ssl, 1);
  try {
    offer_session(context, where);
    handshake(where, timeout_ms, deadline);
  } catch (...) {
    SSL_free(ssl);
    if (slot_ && slot_->offered != nullptr) SSL_SESSION_free(slot_->offered);
    throw;
  }
  settle_session(context);
}

TlsStream::~TlsStream() {
  // A connection that ends without a TLS close (killed, cut, replaced) leaves its session
  // resumable, as RFC 5246 and 8446 allow; SSL_free would mark it spent otherwise. A fatal
  // alert has already made OpenSSL drop it.
  SSL_set_shutdown(as_ssl(ssl_), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_free(as_ssl(ssl_));
}

void TlsStream::offer_session(const TlsContext& context, const std::string& where) {
  SSL* ssl = as_ssl(ssl_);
  slot_ = std::make_unique<TlsSessionSlot>();
  slot_->sessions = context.sessions();
  slot_->key = where + " " + name_;
  slot_->verify = context.config().verify != TlsVerify::None;
  SSL_set_app_data(ssl, slot_.get());
  slot_->offered = slot_->sessions->take(slot_->key);
  if (slot_->offered != nullptr && SSL_set_session(ssl, slot_->offered) == 1) offered_ = true;
}

void TlsStream::settle_session(const TlsContext& context) {
  SSL* ssl = as_ssl(ssl_);
  resumed_ = SSL_session_reused(ssl) == 1;
  if (slot_->offered != nullptr) {
    if (!resumed_) slot_->sessions->forget(slot_->key, slot_->offered);
    SSL_SESSION_free(slot_->offered);
    slot_->offered = nullptr;
  }
  if (Stats* stats = context.stats()) {
    Stats::add(stats->tls_handshakes);
    if (resumed_) Stats::add(stats->tls_resumed);
  }
}

void TlsStream::handshake(const std::string& where, int64_t timeout_ms,
                          std::chrono::steady_clock::time_point deadline) {
  SSL* ssl = as_ssl(ssl_);
  const std::string failed = "TLS handshake with Redis at " + where + " failed: ";
  for (;;) {
    ERR_clear_error();
    errno = 0;
    const int r = SSL_connect(ssl);
    if (r == 1) return;
    const int e = SSL_get_error(ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) {
        throw Error(kConn, failed + "no answer within " + std::to_string(timeout_ms) +
                               " ms: is this a plaintext port? (TLS needs the server's "
                               "tls-port)");
      }
      pollfd p{fd_, static_cast<short>(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
      if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left + 1, 1 << 30))) < 0 &&
          errno != EINTR) {
        throw Error(kConn, failed + "poll: " + std::strerror(errno));
      }
      continue;
    }
    if (e == SSL_ERROR_SSL) {
      const int reason = reason_code();
      if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        throw ConnectionCut(kConn, failed + "the server closed the connection");
      }
      throw Error(kTls, failed + handshake_failure(ssl, name_, reason));
    }
    const int saved = errno;
    ERR_clear_error();
    throw ConnectionCut(kConn,
                        failed + (saved != 0 ? std::strerror(saved)
                                             : std::string("the server closed the connection")));
  }
}

TlsStream::Io TlsStream::result(int n, size_t* moved, std::string* why) {
  if (n > 0) {
    *moved = static_cast<size_t>(n);
    return Io::kDone;
  }
  const int saved = errno;
  switch (SSL_get_error(as_ssl(ssl_), n)) {
    case SSL_ERROR_WANT_READ:
      return Io::kWantRead;
    case SSL_ERROR_WANT_WRITE:
      return Io::kWantWrite;
    case SSL_ERROR_ZERO_RETURN:
      return Io::kClosed;
    case SSL_ERROR_SSL: {
      if (reason_code() == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        ERR_clear_error();
        return Io::kClosed;
      }
      const std::string hint = client_certificate_hint(reason_code());
      *why = "TLS: " + openssl_reason() + hint;
      return Io::kTlsFailed;
    }
    default:  // SSL_ERROR_SYSCALL
      ERR_clear_error();
      if (saved == 0) return Io::kClosed;
      *why = std::strerror(saved);
      return Io::kFailed;
  }
}

TlsStream::Io TlsStream::read(char* buf, size_t size, size_t* got, std::string* why) {
  std::lock_guard<std::mutex> lock(mutex_);
  ERR_clear_error();
  errno = 0;
  const int n = SSL_read(as_ssl(ssl_), buf, static_cast<int>(std::min<size_t>(size, 1 << 30)));
  return result(n, got, why);
}

TlsStream::Io TlsStream::write(const char* buf, size_t size, size_t* put, std::string* why) {
  std::lock_guard<std::mutex> lock(mutex_);
  ERR_clear_error();
  errno = 0;
  const int n = SSL_write(as_ssl(ssl_), buf, static_cast<int>(std::min<size_t>(size, 1 << 30)));
  return result(n, put, why);
}

bool TlsStream::closed_by_peer() {
  std::lock_guard<std::mutex> lock(mutex_);
  ERR_clear_error();
  errno = 0;
  char byte;
  const int n = SSL_peek(as_ssl(ssl_), &byte, 1);
  if (n > 0) return true;  // unasked data on an idle request connection: unusable
  const int e = SSL_get_error(as_ssl(ssl_), n);
  ERR_clear_error();
  return !(e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE);
}

}  // namespace rlock::core
