// Status codes and the error type of the core. The values equal the C ABI's rlock_error_code
// (capi checks this at compile time), so no translation table is needed at the boundary.
#pragma once

#include <exception>
#include <string>

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
};

// The most recently added (lowest) code. tests/capi/header_facts_test.cpp checks that rlock.h
// has no code below it, so a code added to the header alone fails there.
constexpr int kLowestCode = kNotSynced;

// Thrown inside the core for failures that carry a code and a message. Expected outcomes of
// lock operations (timed out, not held, ...) are returned as codes instead.
class Error : public std::exception {
 public:
  Error(int code, std::string message) : code_(code), message_(std::move(message)) {}
  int code() const noexcept { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const noexcept { return message_; }

 private:
  int code_;
  std::string message_;
};

// The calling thread's last error: what rlock_last_error() shows.
void set_last_error(int code, std::string message);
int last_error_code() noexcept;
const std::string& last_error_message() noexcept;

// Records the error for the calling thread and returns its code, for `return fail(...)`.
inline int fail(int code, std::string message) {
  set_last_error(code, std::move(message));
  return code;
}

// Which code a Redis error reply ("OOM ...", "NOPERM ...") maps to.
int code_for_redis_error(const std::string& reply);

// A printable form of a binary name for messages: quoted, escaped, cut after `limit` bytes.
std::string printable(const std::string& bytes, size_t limit = 64);

}  // namespace rlock::core
