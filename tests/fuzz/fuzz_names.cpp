// Fuzzes lock names: their validation, the key and channel names derived from them
// (names.hpp), and the keys the lock code actually sends for every lock kind.
//
// Input: byte 0 picks the lock kind, the rest is the name (any bytes, NUL included). Checked:
// - Lock and fenced_write refuse an empty name or one over max_name_len with kInvalid, and take
//   every other name byte for byte.
// - Each derived name is "<prefix>:" + the name wrapped in "{...}" (kept as is when it already
//   has a '{'), so it contains the exact name bytes.
// - In every script the lock code runs, KEYS[1] is the name itself, every key contains the name
//   bytes, and all keys hash to the same cluster slot whenever the name is plain (no braces) or
//   carries a proper tag "{...}". Other names (a lone '}', '{' with no tag after it) get
//   Redisson's layout, whose keys do not share a slot; the property is not asked of them.
// - With a server that grants everything, acquire, extend, query, release, force_unlock and a
//   fenced write all succeed.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "rlock/core/client.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/names.hpp"
#include "scripted_transport.hpp"

namespace core = rlock::core;
using core::Reply;

namespace {

constexpr size_t kMaxNameLen = 200;
std::string g_name;  // for messages

[[noreturn]] void failed(const std::string& what) {
  std::fprintf(stderr, "fuzz_names: %s\n  name: %s\n", what.c_str(),
               core::printable(g_name, 400).c_str());
  std::abort();
}

void expect(bool ok, const std::string& what) {
  if (!ok) failed(what);
}

// The part of a key Redis Cluster hashes: the first "{...}" with something inside, else all.
std::string hashed_part(const std::string& key) {
  size_t open = key.find('{');
  if (open == std::string::npos) return key;
  size_t close = key.find('}', open + 1);
  if (close == std::string::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

bool has_tag(const std::string& name) { return hashed_part(name) != name; }

bool shares_slot(const std::string& name) {
  if (name.empty()) return false;  // refused anyway
  if (name.find('{') == std::string::npos) return name.find('}') == std::string::npos;
  return has_tag(name);
}

void check_derived(const std::string& name) {
  const std::string tagged = name.find('{') != std::string::npos ? name : "{" + name + "}";
  expect(core::hash_tagged(name) == tagged, "hash_tagged");
  struct {
    const char* prefix;
    std::string got;
  } derived[] = {
      {"redisson_lock__channel", core::lock_channel(name)},
      {"redisson_lock_queue", core::fair_queue(name)},
      {"redisson_lock_timeout", core::fair_deadlines(name)},
      {"redisson_lock_token", core::token_counter(name)},
      {"rlock_fence", core::fence_mark(name)},
      {"redisson_rwlock", core::rw_channel(name)},
      {"redisson_unlock_latch", core::unlock_latch(name, "0f1e")},
  };
  for (const auto& d : derived) {
    const std::string want = std::string(d.prefix) + ":" + tagged;
    expect(d.got.compare(0, want.size(), want) == 0, std::string("derived name for ") + d.prefix);
  }
  expect(core::unlock_latch(name, "0f1e") == "redisson_unlock_latch:" + tagged + ":0f1e",
         "unlock latch suffix");
  expect(core::read_lease_prefix(name, "o:1") == tagged + ":o:1:rwlock_timeout", "read lease");
  if (shares_slot(name)) {
    const std::string slot = hashed_part(name);
    for (const auto& d : derived) expect(hashed_part(d.got) == slot, "slot of a derived name");
  }
}

// A server on which every lock call succeeds.
Reply grant(const fuzz::ScriptedTransport::Command& c) {
  namespace s = core::scripts;
  const core::Script* script = fuzz::script_of(c);
  if (script == &s::acquire || script == &s::fair_acquire || script == &s::rw_read_acquire ||
      script == &s::rw_write_acquire) {
    return Reply::of_array({Reply::of_int(1), Reply::of_int(1), Reply::of_int(7)});
  }
  if (script == &s::extend || script == &s::force_unlock || script == &s::fenced_write)
    return Reply::of_int(1);
  if (script == &s::extend_by) return Reply::of_int(61000);  // the new remaining lease
  if (script == &s::rw_read_renew) return Reply::of_array({Reply::of_int(1)});
  if (script == &s::status) {
    return Reply::of_array({Reply::of_int(-2), Reply::of_int(0), Reply::of_int(0), Reply::nil(),
                            Reply::of_int(0), Reply::nil()});
  }
  return Reply::of_int(0);  // releases: nothing left held
}

void check_sent_keys(const std::string& name, fuzz::ScriptedTransport& transport) {
  for (const auto& e : transport.log()) {
    expect(fuzz::script_of(e.command) != nullptr, "a command that runs no known script");
    std::vector<std::string> keys = fuzz::keys_of(e.command);
    expect(!keys.empty() && keys[0] == name, "KEYS[1] is not the name");
    for (const std::string& key : keys) {
      expect(key.find(name) != std::string::npos, "a key without the name bytes");
      if (shares_slot(name)) expect(hashed_part(key) == hashed_part(name), "keys in two slots");
    }
  }
}

void check_lock(const std::string& name, core::LockKind kind) {
  core::ClientConfig config;
  config.max_name_len = kMaxNameLen;
  auto owned = std::make_unique<fuzz::ScriptedTransport>();
  fuzz::ScriptedTransport& transport = *owned;
  transport.answer = grant;
  auto client = std::make_shared<core::Client>(config, std::move(owned));

  core::LockOptions options;
  options.kind = kind;
  options.lease_ms = 600000;  // no watchdog renewals during the run
  const bool valid = !name.empty() && name.size() <= kMaxNameLen;
  std::unique_ptr<core::Lock> lock;
  try {
    lock = std::make_unique<core::Lock>(client, name, options);
  } catch (const core::Error& e) {
    expect(!valid, "a valid name refused: " + e.message());
    expect(e.code() == core::kInvalid, "a bad name refused with a code other than kInvalid");
  }
  expect(valid == (lock != nullptr), "an empty or too long name accepted");
  bool accepted = false;
  int rc = core::fenced_write(*client, name, "v", 7, &accepted);
  expect(rc == (valid ? core::kOk : core::kInvalid), "fenced_write on the name");
  if (lock) {
    expect(lock->name() == name, "the lock's name differs from the given bytes");
    core::AcquireArgs args;
    args.wait_ms = 0;
    int64_t token = 0;
    if (kind == core::LockKind::Fenced) args.token = &token;
    expect(lock->acquire(args) == core::kOk, "acquire: " + core::last_error_message());
    expect(lock->extend(60000, 0) == core::kOk, "extend: " + core::last_error_message());
    expect(lock->extend_by(1000, 0) == core::kOk, "extend_by: " + core::last_error_message());
    core::LockState state;
    expect(lock->query(0, &state) == core::kOk, "query: " + core::last_error_message());
    expect(lock->release(0) == core::kOk, "release: " + core::last_error_message());
    bool deleted = false;
    expect(lock->force_unlock(&deleted) == core::kOk, "force: " + core::last_error_message());
  }
  check_sent_keys(name, transport);
  lock.reset();
  client->close();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto kind = static_cast<core::LockKind>(data[0] % 8);
  g_name.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  check_derived(g_name);
  check_lock(g_name, kind);
  return 0;
}
