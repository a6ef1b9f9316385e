#include "rlock/core/error.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "rlock/core/parse.hpp"

namespace rlock::core {
namespace {
struct LastError {
  int code = kOk;
  bool transient = false;
  std::string message;
};
thread_local LastError t_last;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

struct Known {
  std::string_view text;
  RedisErrorKind kind;
  int code;
  bool transient;
};

// Error replies recognized by their leading word.
constexpr Known kLeading[] = {
    {"OOM", RedisErrorKind::kOom, kRedisOom, false},
    // Also BUSYKEY and BUSYGROUP, as before: no script of rlock's meets those.
    {"BUSY", RedisErrorKind::kBusy, kRedisBusy, true},
    {"READONLY", RedisErrorKind::kReadOnly, kReadOnly, false},
    // min-replicas-to-write not met: like READONLY, this server takes no writes now (it may be
    // the minority side of a partition, being failed over).
    {"NOREPLICAS", RedisErrorKind::kNoReplicas, kReadOnly, false},
    {"NOPERM", RedisErrorKind::kNoPerm, kNoPerm, false},
    {"WRONGPASS", RedisErrorKind::kBadCredentials, kAuth, false},
    {"NOAUTH", RedisErrorKind::kNoAuth, kAuth, false},
    {"ERR unknown command", RedisErrorKind::kUnknownCommand, kUnsupported, false},
    // The server is loading its data (a restart, a replica's full sync): ready soon.
    {"LOADING", RedisErrorKind::kLoading, kRedis, true},
    // A slot is half-migrated or the cluster is failing over: both pass within seconds.
    {"TRYAGAIN", RedisErrorKind::kTryAgain, kRedis, true},
    {"CLUSTERDOWN", RedisErrorKind::kClusterDown, kRedis, true},
    // Only a replica answers this, and rlock never sends to one on purpose: not retried.
    {"MASTERDOWN", RedisErrorKind::kMasterDown, kRedis, false},
    {"NOSCRIPT", RedisErrorKind::kNoScript, kRedis, false},
    {"WRONGTYPE", RedisErrorKind::kWrongType, kRedis, false},
};

// Password refusals of servers before ACLs (Redis < 6) and of AUTH without a password set.
bool password_refusal(std::string_view reply) {
  return contains(reply, "invalid password") ||
         contains(reply, "without any password configured") ||
         contains(reply, "invalid username-password") || contains(reply, "but no password is set");
}

// `text` is a whole decimal number from 0 to max.
bool parse_bounded(std::string_view text, int max, int* out) {
  int64_t value = 0;
  if (parse_int(text, 0, max, &value) != ParseStatus::kOk) return false;
  *out = static_cast<int>(value);
  return true;
}

// "<slot> <host>:<port>", the rest of a MOVED or ASK reply. The host is everything before the
// last colon, so an IPv6 address keeps its own.
bool parse_redirect(std::string_view rest, Redirect::Kind kind, Redirect* out) {
  const size_t space = rest.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view where = rest.substr(space + 1);
  const size_t colon = where.rfind(':');
  Redirect r;
  r.kind = kind;
  if (!parse_bounded(rest.substr(0, space), 16383, &r.slot) || colon == std::string_view::npos ||
      colon == 0 || !parse_bounded(where.substr(colon + 1), 65535, &r.port) || r.port == 0) {
    return false;
  }
  r.host = std::string(where.substr(0, colon));
  *out = std::move(r);
  return true;
}

// MOVED and ASK with an address that parses; anything else stays unrecognized.
bool classify_redirect(std::string_view reply, RedisError* out) {
  Redirect redirect;
  const bool parsed = starts_with(reply, "MOVED ")
                          ? parse_redirect(reply.substr(6), Redirect::Kind::kMoved, &redirect)
                          : starts_with(reply, "ASK ") &&
                                parse_redirect(reply.substr(4), Redirect::Kind::kAsk, &redirect);
  if (!parsed) return false;
  out->kind = redirect.kind == Redirect::Kind::kAsk ? RedisErrorKind::kAsk : RedisErrorKind::kMoved;
  out->code = kRedis;
  out->transient = false;
  out->redirect = std::move(redirect);
  return true;
}

// Redis < 7 wraps an error met inside a script: "ERR Error running script (call to f_...):
// @user_script:31: @user_script: 31: -OOM command not allowed ..." (or, from redis.call's
// raised error, "@user_script:1: WRONGTYPE ..."). The wrapped error, else empty.
std::string_view wrapped_script_error(std::string_view reply) {
  if (!starts_with(reply, "ERR Error running script")) return {};
  const std::string_view marker = "@user_script";
  size_t at = reply.rfind(marker);
  if (at == std::string_view::npos) return {};
  at = reply.find_first_not_of(": 0123456789", at + marker.size());
  if (at == std::string_view::npos) return {};
  if (reply[at] == '-') ++at;
  return reply.substr(at);
}

// An error reply without a leading word the core knows, by what it says within.
RedisErrorKind kind_within(std::string_view reply) {
  if (password_refusal(reply)) return RedisErrorKind::kBadCredentials;
  // "ERR This instance has cluster support disabled"
  if (contains(reply, "cluster support disabled")) return RedisErrorKind::kClusterDisabled;
  // Redis < 7 wraps an error met inside a script: "ERR Error running script (call to f_...):
  // @user_script:1: WRONGTYPE Operation against a key holding the wrong kind of value".
  if (contains(reply, "WRONGTYPE")) return RedisErrorKind::kWrongType;
  if (contains(reply, "NOREPLICAS")) return RedisErrorKind::kNoReplicas;
  return RedisErrorKind::kOther;
}

}  // namespace

std::string capped_message(std::string message) {
  if (message.size() <= kMaxErrorMessageLen) return message;
  // The end usually says why (a reply, an errno text); the start says what failed.
  constexpr size_t kTail = 256;
  constexpr size_t kMarkerRoom = 48;  // " [... N bytes elided ...] " with N up to 20 digits
  auto continuation = [&](size_t i) {
    return (static_cast<unsigned char>(message[i]) & 0xc0) == 0x80;
  };
  size_t head = kMaxErrorMessageLen - kTail - kMarkerRoom;
  while (head > 0 && continuation(head)) --head;
  size_t tail = message.size() - kTail;
  while (tail < message.size() && continuation(tail)) ++tail;
  std::string out = message.substr(0, head);
  out += " [... " + std::to_string(tail - head) + " bytes elided ...] ";
  out.append(message, tail, std::string::npos);
  return out;
}

void set_last_error(int code, std::string message, bool transient) {
  t_last.code = code;
  t_last.transient = transient;
  t_last.message = capped_message(std::move(message));
}

int last_error_code() noexcept { return t_last.code; }
const std::string& last_error_message() noexcept { return t_last.message; }
bool last_error_transient() noexcept { return t_last.transient; }

RedisError classify_redis_error(std::string_view reply) {
  RedisError out{RedisErrorKind::kOther, kRedis, false, {}};
  const std::string_view wrapped = wrapped_script_error(reply);
  const std::string_view own = wrapped.empty() ? reply : wrapped;
  const auto leading = std::find_if(std::begin(kLeading), std::end(kLeading),
                                    [&](const Known& k) { return starts_with(own, k.text); });
  if (leading != std::end(kLeading)) {
    out = {leading->kind, leading->code, leading->transient, {}};
  } else if (!classify_redirect(reply, &out)) {
    out.kind = kind_within(reply);
    if (out.kind == RedisErrorKind::kNoReplicas) out.code = kReadOnly;
  }
  // The codes keep the precedence of the earlier code_for_redis_error: a password refusal
  // anywhere in the text outranks kRedis and kUnsupported.
  if ((out.code == kRedis || out.code == kUnsupported) && password_refusal(reply)) out.code = kAuth;
  return out;
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
