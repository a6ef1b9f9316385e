// Status codes and the error type of the core. The values equal the C ABI's rlock_error_code
// (capi checks this at compile time), so no translation table is needed at the boundary.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

namespace rlock::core {

enum Code : int {
  kOk = 0,
  kError = -1,
  kTimedOut = -2,
  kNotHeld = -3,
  kCanceled = -4,
  kConn = -5,
  kInvalid = -6,
  kNoMemory = -7,
  kVersion = -8,
  kInternal = -9,
  kUser = -10,
  kLost = -11,
  kNotOwner = -12,
  kAuth = -13,
  kNoPerm = -14,
  kUnsupported = -15,
  kRedis = -16,
  kRedisOom = -17,
  kRedisBusy = -18,
  kReadOnly = -19,
  kClosed = -20,
  kDeadlock = -21,
  kBadHandle = -22,
  kNotSynced = -23,
  kForked = -24,
  kTls = -25,
};

// The most recently added (lowest) code. tests/capi/header_facts_test.cpp checks that rlock.h
// has no code below it, so a code added to the header alone fails there.
constexpr int kLowestCode = kTls;

// Failures with these codes pass by themselves (a lost connection, a script that ends), so
// they are transient whatever their message: see RedisError::transient for error replies.
inline bool transient_code(int code) { return code == kConn || code == kRedisBusy; }

// Whether a failed acquire attempt is worth another within the caller's wait: the lock is held
// by another owner (kTimedOut), or the failure is transient. Single locks and lock groups both
// decide by this.
inline bool worth_retrying(int code, bool transient) { return code == kTimedOut || transient; }

// The error replies the core acts on, named after their leading word.
enum class RedisErrorKind : uint8_t {
  kNone,             // not an error reply
  kOther,            // any other error reply
  kOom,              // OOM: maxmemory reached
  kBusy,             // BUSY: a script or function runs too long
  kLoading,          // LOADING: the server is loading its data
  kTryAgain,         // TRYAGAIN: a cluster slot is being migrated
  kClusterDown,      // CLUSTERDOWN: the cluster cannot serve the slot now
  kMasterDown,       // MASTERDOWN: a replica lost its master
  kMoved,            // MOVED <slot> <host>:<port>
  kAsk,              // ASK <slot> <host>:<port>
  kReadOnly,         // READONLY: a replica refused a write
  kNoReplicas,       // NOREPLICAS: a master short of min-replicas-to-write refused a write
  kNoScript,         // NOSCRIPT: EVALSHA of a script the server does not have
  kWrongType,        // WRONGTYPE: the key exists and is not of the script's type
  kNoPerm,           // NOPERM: the ACL user may not do this
  kNoAuth,           // NOAUTH: the server wants credentials
  kBadCredentials,   // WRONGPASS and older servers' password refusals
  kUnknownCommand,   // ERR unknown command (renamed away or absent)
  kClusterDisabled,  // a cluster command sent to a server that is not a cluster node
};

// Where a MOVED or ASK reply sends the command (an IPv6 host keeps its colons).
struct Redirect {
  enum class Kind : uint8_t { kNone, kMoved, kAsk };
  Kind kind = Kind::kNone;
  int slot = -1;
  std::string host;
  int port = 0;
};

// What an error reply means to the core; decisions read this, never the reply's text.
struct RedisError {
  RedisErrorKind kind = RedisErrorKind::kNone;
  int code = kOk;          // the status code to report it with (kRedis for most)
  bool transient = false;  // worth retrying within a wait: LOADING, TRYAGAIN, CLUSTERDOWN, BUSY
  Redirect redirect;       // for kMoved and kAsk
};

// Classifies the text of a Redis error reply (without the leading '-').
RedisError classify_redis_error(std::string_view reply);

// Which code a Redis error reply ("OOM ...", "NOPERM ...") maps to.
inline int code_for_redis_error(std::string_view reply) { return classify_redis_error(reply).code; }

// Thrown inside the core for failures that carry a code and a message. Expected outcomes of
// lock operations (timed out, not held, ...) are returned as codes instead.
class Error : public std::exception {
 public:
  Error(int code, std::string message) : Error(code, std::move(message), transient_code(code)) {}
  Error(int code, std::string message, bool transient)
      : code_(code), transient_(transient), message_(std::move(message)) {}
  int code() const noexcept { return code_; }
  // Worth retrying within a wait (see RedisError::transient and transient_code).
  bool transient() const noexcept { return transient_; }
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const noexcept { return message_; }

 private:
  int code_;
  bool transient_;
  std::string message_;
};

// kConn from a connection the server cut while its TLS handshake ran (closed or reset after
// accepting it): nothing was sent on it, so another connection may be tried whatever the
// command's retry policy.
class ConnectionCut : public Error {
 public:
  using Error::Error;
};

// The longest message set_last_error() keeps, in bytes: a longer one (quoting a huge host, user
// name or reply) keeps its start and its end with the middle elided (capped_message()).
constexpr size_t kMaxErrorMessageLen = 1024;

// `message` cut to kMaxErrorMessageLen bytes: its start, a marker giving the bytes elided, and
// its end, cut between UTF-8 characters. Shorter messages are returned as they are.
std::string capped_message(std::string message);

// The calling thread's last error: what rlock_last_error() shows (capped_message() of it), and
// whether it is transient (recorded with it so that callers of functions returning only a code
// can decide on retries).
void set_last_error(int code, std::string message, bool transient);
inline void set_last_error(int code, std::string message) {
  set_last_error(code, std::move(message), transient_code(code));
}
int last_error_code() noexcept;
const std::string& last_error_message() noexcept;
bool last_error_transient() noexcept;

// Records the error for the calling thread and returns its code, for `return fail(...)`.
inline int fail(int code, std::string message, bool transient) {
  set_last_error(code, std::move(message), transient);
  return code;
}
inline int fail(int code, std::string message) {
  return fail(code, std::move(message), transient_code(code));
}

// A printable form of a binary name for messages: quoted, escaped, cut after `limit` bytes.
std::string printable(const std::string& bytes, size_t limit = 64);

}  // namespace rlock::core
