// Auxiliary key and channel names of docs/protocol.md. A lock's own key is its name unchanged;
// every other name wraps it in a cluster hash tag so all of a lock's keys share one slot, unless
// the name already contains '{', in which case the user's own tag decides the slot. As in Redisson,
// the keys of a name with a '}' but no '{', or with a '{' and no non-empty "{tag}" after it, do
// not share one slot (tests/fuzz/fuzz_names checks every other name).
#pragma once

#include <string>

namespace rlock::core {

inline std::string hash_tagged(const std::string& name) {
  if (name.find('{') != std::string::npos) return name;
  return "{" + name + "}";
}

// "prefix:{N}"
inline std::string prefixed_name(const char* prefix, const std::string& name) {
  return std::string(prefix) + ":" + hash_tagged(name);
}

inline std::string lock_channel(const std::string& name) {
  return prefixed_name("redisson_lock__channel", name);
}

inline std::string fair_queue(const std::string& name) {
  return prefixed_name("redisson_lock_queue", name);
}

inline std::string fair_deadlines(const std::string& name) {
  return prefixed_name("redisson_lock_timeout", name);
}

inline std::string token_counter(const std::string& name) {
  return prefixed_name("redisson_lock_token", name);
}

// The highest fencing token a resource guarded by rlock_fenced_write has seen.
inline std::string fence_mark(const std::string& resource) {
  return prefixed_name("rlock_fence", resource);
}

inline std::string rw_channel(const std::string& name) {
  return prefixed_name("redisson_rwlock", name);
}

// Read hold k of `owner` has its own lease key "<this>:k" (Redisson: "{N}:<owner>:rwlock_timeout").
inline std::string read_lease_prefix(const std::string& name, const std::string& owner) {
  return hash_tagged(name) + ":" + owner + ":rwlock_timeout";
}

// "{N}:suffix" (Redisson's suffixName): N unchanged before ":suffix" when it has a '{'.
inline std::string suffixed_name(const std::string& name, const char* suffix) {
  return hash_tagged(name) + ":" + suffix;
}

// Semaphores (Redisson RSemaphore and RPermitExpirableSemaphore): the count of available
// permits is the key N itself; both kinds wake their waiters on this one channel, so a release
// of either wakes the other's waiters.
inline std::string semaphore_channel(const std::string& name) {
  return prefixed_name("redisson_sc", name);
}

// A permit-expirable semaphore's held permits: a sorted set of permit id (16 raw bytes) ->
// deadline (epoch ms).
inline std::string permit_deadlines(const std::string& name) {
  return suffixed_name(name, "timeout");
}

// A count-down latch's channel. Unlike every other name here, Redisson always adds the braces,
// even when N has a '{' of its own: then the channel's hash tag is N's text up to its first '}'
// (all of N if it has no '}': the key's slot then), not N's own tag, so for a name with a "{tag}"
// the channel and the latch key are in different slots and a cluster must refuse the name (as
// it does a lock name whose braces split its keys: compare key_slot of the two).
inline std::string latch_channel(const std::string& name) {
  return "redisson_countdownlatch__channel__{" + name + "}";
}

// The latch of one release (or semaphore acquire) request: its stored result answers a retry.
inline std::string unlock_latch(const std::string& name, const std::string& request_id) {
  return prefixed_name("redisson_unlock_latch", name) + ":" + request_id;
}

// The namespace of owner ids' UUIDs (a constant of the protocol: changing it changes every
// caller-given owner's field).
constexpr const char* kOwnerIdNamespace = "582a18c8-c685-423e-bc63-c2b861deff6c";

// The client-id half of the owner field of a caller-given owner id: its version-5 UUID in
// kOwnerIdNamespace, lower-case hex with dashes.
std::string owner_id_prefix(const std::string& owner_id);

}  // namespace rlock::core
