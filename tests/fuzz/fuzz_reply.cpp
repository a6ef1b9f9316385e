// Fuzzes what a server sends back: RESP bytes through the hiredis reader and
// reply_from_hiredis (as Connection reads them), then the lock code's reading of its scripts'
// replies, over a transport that answers with those replies in order.
//
// Input: byte 0 picks the lock kind, bytes 1 and 2 two operations to run one after the other
// (acquire without waiting, release, extend, query, force_unlock, fenced write, or none), the
// rest is the server's byte stream. When the replies run out, or the stream is not valid RESP,
// the connection counts as dropped (kConn), as it does for a real one.
//
// Checked:
// - Each parsed reply, written back as canonical RESP and parsed again, is the same reply.
// - code_for_redis_error puts every error text in one of its codes, by the documented prefixes.
// - Each operation returns one of the codes it documents, with a message when not kOk.
// - In each thread's commands, a script is reloaded (SCRIPT LOAD and the same EVALSHA) only
//   after an EVALSHA answered NOSCRIPT or to retry a dropped try, and sent by EVAL only when
//   the EVALSHA after its SCRIPT LOAD answered NOSCRIPT again (the load refused) or to retry a
//   dropped EVAL, each time with the same script, keys and arguments (clean-ups, such as the
//   undo of a lost acquire, may be sent in a later operation); a NOSCRIPT is always followed
//   by the next form.
// - kOk only for a reply of the shape the script returns on success; kTimedOut, kDeadlock,
//   kNotHeld and kNotOwner only for replies of the shape that says so; a Redis error code only
//   for an error reply classified so (or kRedis for an unexpected shape); kConn only when a
//   reply was dropped.
// - A granted acquire is held afterwards, a release that leaves 0 holds is not.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rlock/core/client.hpp"
#include "rlock/core/connection.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"
#include "scripted_transport.hpp"

namespace core = rlock::core;
using core::Reply;
using Type = core::Reply::Type;

namespace {

std::string g_input;

[[noreturn]] void failed(const std::string& what) {
  std::fprintf(stderr, "fuzz_reply: %s\n  input: %s\n", what.c_str(),
               core::printable(g_input, 600).c_str());
  std::abort();
}

void expect(bool ok, const std::string& what) {
  if (!ok) failed(what);
}

void encode(const Reply& r, std::string* out) {
  switch (r.type) {
    case Type::Nil:
      *out += "$-1\r\n";
      break;
    case Type::Integer:
      *out += ":" + std::to_string(r.integer) + "\r\n";
      break;
    case Type::String:
      *out += "$" + std::to_string(r.str.size()) + "\r\n" + r.str + "\r\n";
      break;
    case Type::Status:
      *out += "+" + r.str + "\r\n";
      break;
    case Type::Error:
      *out += "-" + r.str + "\r\n";
      break;
    case Type::Array:
      *out += "*" + std::to_string(r.elements.size()) + "\r\n";
      for (const Reply& e : r.elements) encode(e, out);
      break;
  }
}

bool equal(const Reply& a, const Reply& b) {
  if (a.type != b.type || a.integer != b.integer || a.str != b.str) return false;
  if (a.elements.size() != b.elements.size()) return false;
  for (size_t i = 0; i < a.elements.size(); ++i) {
    if (!equal(a.elements[i], b.elements[i])) return false;
  }
  return true;
}

// Parses as Connection does; stops at the first protocol error or incomplete reply.
std::vector<Reply> parse(const std::string& bytes) {
  std::vector<Reply> out;
  redisReader* reader = redisReaderCreate();
  if (reader == nullptr) failed("redisReaderCreate");
  if (redisReaderFeed(reader, bytes.data(), bytes.size()) == REDIS_OK) {
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader, &raw) != REDIS_OK || raw == nullptr) break;
      out.push_back(core::reply_from_hiredis(static_cast<redisReply*>(raw)));
      freeReplyObject(raw);
    }
  }
  redisReaderFree(reader);
  return out;
}

// hiredis 0.14 allocates an array's element table as soon as it reads "*N": a huge N is an
// allocation as large as the server says (see docs/testing.md). Inputs announcing more
// than a million elements are skipped, so libFuzzer's malloc limit does not report hiredis.
bool announces_huge_array(const std::string& bytes) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != '*') continue;
    size_t j = i + 1;
    if (j < bytes.size() && (bytes[j] == '+' || bytes[j] == '-')) ++j;
    size_t digits = 0;
    while (j < bytes.size() && bytes[j] >= '0' && bytes[j] <= '9') ++j, ++digits;
    if (digits > 6) return true;
  }
  return false;
}

void check_error_codes(const std::string& text) {
  int code = core::code_for_redis_error(text);
  auto starts = [&](const char* prefix) {
    return text.compare(0, std::char_traits<char>::length(prefix), prefix) == 0;
  };
  int want = starts("OOM")                             ? core::kRedisOom
             : starts("BUSY")                          ? core::kRedisBusy
             : starts("READONLY")                      ? core::kReadOnly
             : starts("NOREPLICAS")                    ? core::kReadOnly
             : starts("NOPERM")                        ? core::kNoPerm
             : starts("WRONGPASS") || starts("NOAUTH") ? core::kAuth
                                                       : 0;
  if (want != 0) {
    expect(code == want, "error reply classified against its prefix: " + text);
  } else {
    // NOREPLICAS inside a text (a script's wrapped error) also means "takes no writes now".
    bool no_replicas = text.find("NOREPLICAS") != std::string::npos;
    expect(code == core::kAuth || code == core::kUnsupported || code == core::kRedis ||
               (no_replicas && code == core::kReadOnly),
           "error reply classified outside the known codes: " + text);
  }
}

enum Op { kAcquire, kRelease, kExtend, kQuery, kForceUnlock, kFencedWrite, kExtendBy, kNone };
constexpr int kOpCount = kNone + 1;
const char* const kOpNames[] = {"acquire",      "release",      "extend",    "query",
                                "force_unlock", "fenced_write", "extend_by", "none"};

bool is_int(const Reply& r) { return r.type == Type::Integer; }
bool is_text_or_nil(const Reply& r) { return r.type == Type::String || r.type == Type::Nil; }

// The script reply shapes of core/scripts/*.lua.
bool granted(const Reply& r) {
  return r.type == Type::Array && r.elements.size() == 3 && is_int(r.elements[0]) &&
         is_int(r.elements[1]) && is_int(r.elements[2]) && r.elements[0].integer == 1 &&
         r.elements[1].integer >= 1;
}
bool refused(const Reply& r, int64_t first) {
  return r.type == Type::Array && r.elements.size() == 2 && is_int(r.elements[0]) &&
         is_int(r.elements[1]) && r.elements[0].integer == first;
}
bool status_shape(const Reply& r) {
  if (r.type != Type::Array || r.elements.size() != 6) return false;
  const auto& e = r.elements;
  return is_int(e[0]) && is_int(e[1]) && is_int(e[2]) && is_text_or_nil(e[3]) && is_int(e[4]) &&
         is_text_or_nil(e[5]);
}
// Read locks renew through a script returning {1} (renewed) or {0}.
bool read_extend_shape(const Reply& r) {
  return r.type == Type::Array && r.elements.size() == 1 && is_int(r.elements[0]);
}

bool is_cleanup_script(const rlock::core::Script* script) {
  namespace s = rlock::core::scripts;
  for (const rlock::core::Script* cleanup :
       {&s::undo_acquire, &s::fair_undo_acquire, &s::rw_read_undo_acquire,
        &s::rw_write_undo_acquire, &s::fair_leave, &s::release, &s::fair_release,
        &s::rw_read_release, &s::rw_write_release}) {
    if (script == cleanup || script == cleanup->sharded) return true;
  }
  return false;
}

struct Run {
  Op op;
  core::LockKind kind;
  int rc;
  std::string message;
  std::vector<fuzz::ScriptedTransport::Exchange> log;  // this operation's exchanges
};

bool answered_noscript(const fuzz::ScriptedTransport::Exchange& e) {
  return !e.dropped && e.reply.type == Type::Error && e.reply.str.compare(0, 8, "NOSCRIPT") == 0;
}

bool same_call(const fuzz::ScriptedTransport::Command& a,
               const fuzz::ScriptedTransport::Command& b) {
  return fuzz::script_of(a) == fuzz::script_of(b) &&
         std::equal(a.begin() + 2, a.end(), b.begin() + 2, b.end());
}

// The reload protocol (core/src/scripts.cpp): EVALSHA first; on NOSCRIPT, SCRIPT LOAD and the
// same EVALSHA; on NOSCRIPT again (the load refused), EVAL. A dropped try is sent once more,
// with the source (SCRIPT LOAD and EVALSHA, or EVAL once it came to that).
void check_eval_protocol(const Run& run) {
  const auto& log = run.log;
  for (size_t i = 0; i < log.size(); ++i) {
    const auto& c = log[i].command;
    const core::Script* loaded = fuzz::script_loaded_by(c);
    expect(fuzz::script_of(c) != nullptr || loaded != nullptr,
           "a command that runs or loads no known script");
    const bool after_load = i > 0 && fuzz::script_loaded_by(log[i - 1].command) != nullptr;
    if (c[0] == "EVALSHA" && answered_noscript(log[i])) {
      const bool reloads = i + 1 < log.size() &&
                           (after_load ? log[i + 1].command[0] == "EVAL"
                                       : fuzz::script_loaded_by(log[i + 1].command) != nullptr);
      expect(reloads, after_load ? "NOSCRIPT after SCRIPT LOAD not followed by EVAL"
                                 : "NOSCRIPT not followed by SCRIPT LOAD");
    }
    if (loaded != nullptr && !log[i].dropped) {
      expect(i + 1 < log.size() && log[i + 1].command[0] == "EVALSHA" &&
                 fuzz::script_of(log[i + 1].command) == loaded,
             "SCRIPT LOAD not followed by its script's EVALSHA");
    }
    // Clean-ups of calls whose reply was lost (undos, a release or a queue leave sent again)
    // may go in this operation or a later one (docs/errors.md): no try before them to match.
    const core::Script* script = loaded != nullptr ? loaded : fuzz::script_of(c);
    if (is_cleanup_script(script)) continue;
    if (loaded != nullptr) {
      expect(i > 0, "SCRIPT LOAD sent first");
      const auto& prev = log[i - 1];
      expect((prev.command[0] == "EVALSHA" && answered_noscript(prev)) || prev.dropped,
             "SCRIPT LOAD without a NOSCRIPT or a dropped try before it");
      const core::Script* before = fuzz::script_of(prev.command);
      expect((before != nullptr ? before : fuzz::script_loaded_by(prev.command)) == loaded,
             "SCRIPT LOAD of another script");
      // The call it reloads for: the last EVALSHA or EVAL before it (a dropped load may come
      // between them).
      size_t call = i;
      while (call > 0 && fuzz::script_of(log[call - 1].command) == nullptr) --call;
      if (call > 0 && !log[i].dropped && i + 1 < log.size()) {
        expect(same_call(log[call - 1].command, log[i + 1].command),
               "the EVALSHA after SCRIPT LOAD has other keys or arguments");
      }
      continue;
    }
    if (c[0] != "EVAL") continue;
    expect(i > 0, "EVAL sent first");
    const auto& prev = log[i - 1];
    const bool load_refused = prev.command[0] == "EVALSHA" && answered_noscript(prev) && i > 1 &&
                              fuzz::script_loaded_by(log[i - 2].command) != nullptr;
    expect(load_refused || prev.dropped, "EVAL without a refused load or a dropped try before it");
    expect(same_call(prev.command, c), "EVAL with another script, keys or arguments");
  }
}

void check_outcome(const Run& run) {
  const std::string what = std::string(kOpNames[run.op]) + " returned " + std::to_string(run.rc);
  const int rc = run.rc;
  const bool any_dropped = [&] {
    for (const auto& e : run.log) {
      if (e.dropped) return true;
    }
    return false;
  }();
  const bool answered = !run.log.empty() && !run.log.back().dropped;
  const Reply last = answered ? run.log.back().reply : Reply::nil();

  switch (rc) {
    case core::kOk:
    case core::kConn:
    case core::kRedis:
    case core::kRedisOom:
    case core::kRedisBusy:
    case core::kReadOnly:
    case core::kNoPerm:
    case core::kAuth:
    case core::kUnsupported:
      break;
    case core::kTimedOut:
    case core::kDeadlock:
      expect(run.op == kAcquire, what + ": a code only acquire returns");
      break;
    case core::kNotHeld:
    case core::kNotOwner:
    case core::kLost:
      expect(run.op == kRelease || run.op == kExtend || run.op == kExtendBy,
             what + ": only release and extend return it");
      break;
    case core::kInvalid:
      expect(run.op == kExtendBy, what + ": only extend_by returns it (a key without expiry)");
      break;
    default:
      failed(what + ": not a code this operation returns");
  }
  if (rc != core::kOk) expect(!run.message.empty(), what + " without a message");
  if (rc == core::kConn) expect(any_dropped, what + " with no reply dropped");

  if (rc == core::kRedisOom || rc == core::kRedisBusy || rc == core::kReadOnly ||
      rc == core::kNoPerm || rc == core::kAuth || rc == core::kUnsupported ||
      (rc == core::kRedis && last.type == Type::Error)) {
    expect(answered && last.type == Type::Error && core::code_for_redis_error(last.str) == rc,
           what + " for a reply that is not an error classified so");
  }

  // The outcome `code`, when returned, must come from a reply for which `shaped` holds.
  auto from_reply = [&](int code, bool shaped, const char* why) {
    if (rc == code) expect(answered && shaped, what + " for a reply that " + why);
  };
  const bool read_lock = run.kind == core::LockKind::Read;
  const bool not_held = rc == core::kNotHeld || rc == core::kNotOwner;
  switch (run.op) {
    case kAcquire:
      from_reply(core::kOk, granted(last), "grants nothing");
      from_reply(core::kTimedOut, refused(last, 0), "is no refusal");
      from_reply(core::kDeadlock, refused(last, -1), "is no upgrade refusal");
      break;
    case kRelease:
      from_reply(core::kOk, is_int(last) && last.integer >= 0, "releases nothing");
      if (not_held) expect(answered && is_int(last) && last.integer < 0, what + ": not said so");
      break;
    case kExtend: {
      const bool shaped = read_lock ? read_extend_shape(last) : is_int(last);
      const int64_t verdict = !shaped ? 0 : read_lock ? last.elements[0].integer : last.integer;
      from_reply(core::kOk, shaped && verdict == 1, "extends nothing");
      if (not_held) expect(answered && shaped && verdict != 1, what + ": not said so");
      break;
    }
    case kExtendBy:
      // extend_by.lua: the new lease (> 0), -1 or -2 not held, -3 no expiry to add to.
      from_reply(core::kOk, is_int(last) && last.integer > 0, "adds nothing");
      from_reply(core::kInvalid, is_int(last) && last.integer == -3, "is no refusal");
      if (not_held) {
        expect(answered && is_int(last) && (last.integer == -1 || last.integer == -2),
               what + ": not said so");
      }
      break;
    case kQuery:
      from_reply(core::kOk, status_shape(last), "is not of the status shape");
      break;
    case kForceUnlock:
    case kFencedWrite:
      from_reply(core::kOk, is_int(last), "is no count");
      break;
    case kNone:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  g_input.assign(reinterpret_cast<const char*>(data), size);
  const std::string stream = g_input.substr(3);
  if (announces_huge_array(stream)) return 0;

  std::vector<Reply> replies = parse(stream);
  for (const Reply& r : replies) {
    std::string canonical;
    encode(r, &canonical);
    std::vector<Reply> again = parse(canonical);
    expect(again.size() == 1 && equal(again[0], r), "reply changed through canonical RESP");
  }
  std::vector<const Reply*> pending{};
  for (const Reply& r : replies) pending.push_back(&r);
  while (!pending.empty()) {
    const Reply* r = pending.back();
    pending.pop_back();
    if (r->type == Type::Error) check_error_codes(r->str);
    for (const Reply& e : r->elements) pending.push_back(&e);
  }

  const auto kind = static_cast<core::LockKind>(data[0] % 8);
  const Op ops[] = {static_cast<Op>(data[1] % kOpCount), static_cast<Op>(data[2] % kOpCount)};

  auto owned = std::make_unique<fuzz::ScriptedTransport>();
  fuzz::ScriptedTransport& transport = *owned;
  for (Reply& r : replies) transport.replies.push_back(std::move(r));
  auto client = std::make_shared<core::Client>(core::ClientConfig{}, std::move(owned));
  core::LockOptions options;
  options.kind = kind;
  options.lease_ms = 600000;  // no watchdog renewals during the run
  auto lock = std::make_unique<core::Lock>(client, "fuzz", options);

  for (Op op : ops) {
    const size_t before = transport.log().size();
    core::set_last_error(core::kOk, "");
    int rc = core::kOk;
    bool deleted = false, accepted = false;
    core::LockState state;
    core::AcquireArgs args;
    args.wait_ms = 0;
    int64_t token = 0;
    if (kind == core::LockKind::Fenced) args.token = &token;
    switch (op) {
      case kAcquire:
        rc = lock->acquire(args);
        break;
      case kRelease:
        rc = lock->release(0);
        break;
      case kExtend:
        rc = lock->extend(60000, 0);
        break;
      case kExtendBy:
        rc = lock->extend_by(1000, 0);
        break;
      case kQuery:
        rc = lock->query(0, &state);
        break;
      case kForceUnlock:
        rc = lock->force_unlock(&deleted);
        break;
      case kFencedWrite:
        rc = core::fenced_write(*client, "fuzz", "v", 7, &accepted);
        break;
      case kNone:
        continue;
    }
    auto log = transport.log();
    log.erase(log.begin(), log.begin() + static_cast<long>(before));
    // A clean-up round on the watchdog's thread may interleave with the call's commands: each
    // thread's commands are checked as a sequence of their own.
    const auto caller = std::this_thread::get_id();
    std::vector<fuzz::ScriptedTransport::Exchange> background;
    auto moved = std::stable_partition(log.begin(), log.end(),
                                       [&](const auto& e) { return e.thread == caller; });
    background.assign(moved, log.end());
    log.erase(moved, log.end());
    check_eval_protocol(Run{op, kind, rc, {}, std::move(background)});
    Run run{op, kind, rc, core::last_error_message(), std::move(log)};
    check_eval_protocol(run);
    check_outcome(run);
    if (op == kAcquire && rc == core::kOk) expect(lock->is_held(0), "granted but not held");
    if (op == kRelease && rc == core::kOk && run.log.back().reply.integer == 0) {
      expect(!lock->is_held(0), "released to 0 but still held");
    }
  }
  lock.reset();
  client->close();
  return 0;
}
