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

inline std::string unlock_latch(const std::string& name, const std::string& request_id) {
  return prefixed_name("redisson_unlock_latch", name) + ":" + request_id;
}

}  // namespace rlock::core
