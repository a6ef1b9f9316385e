// The reentrant lock of PROTOCOL.md: hash N, field "<client-id>:<thread-id>" = hold count.
//
// All operations return a status code (kOk or a negative Code) and record a message for the
// calling thread on failure; unexpected failures (out of memory, bugs) throw.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "rlock/core/cancel.hpp"
#include "rlock/core/client.hpp"
#include "rlock/core/holds.hpp"

namespace rlock::core {

constexpr int64_t kWaitForever = -1;
constexpr int64_t kLeaseWatchdog = -1;

struct AcquireArgs {
  int64_t wait_ms = kWaitForever;  // 0 = try once
  int64_t lease_ms = 0;            // 0 = the lock's default, kLeaseWatchdog, or > 0
  int64_t thread_id = 0;           // 0 = calling thread
  CancelSet* cancel = nullptr;     // optional sticky token
};

struct LockState {
  bool locked = false;
  bool held_by_me = false;
  int64_t hold_count = 0;
  int64_t ttl_ms = -2;
  int64_t owner_count = 0;
  std::string owner;  // first owner field, empty if none
  int64_t owner_hold_count = 0;
};

class Lock {
 public:
  // Throws Error(kInvalid) for an empty or too long name or a bad default lease.
  Lock(std::shared_ptr<Client> client, std::string name, int64_t default_lease_ms);
  ~Lock();

  int acquire(const AcquireArgs& args);
  int release(int64_t thread_id);
  int extend(int64_t lease_ms, int64_t thread_id);
  int force_unlock(bool* deleted);
  int query(int64_t thread_id, LockState* out);
  bool is_held(int64_t thread_id) const;
  bool is_lost(int64_t thread_id) const;
  // Wakes every acquire in progress on this object with kCanceled.
  void cancel_waits() { waits_.cancel_all(false); }
  void set_lost_callback(LostListener::Fn fn) { listener_->set(std::move(fn)); }

  const std::string& name() const { return name_; }
  Client& client() { return *client_; }

 private:
  struct Attempt {
    int code;       // kOk = acquired, kTimedOut = held by another owner, else an error
    int64_t pttl;   // when held by another owner
  };
  Attempt try_acquire(const std::string& owner, int64_t thread_id, int64_t lease_ms,
                      bool watchdog);
  void undo_acquire(const std::string& owner, int64_t expected_count, int64_t lease_ms);
  int check_open() const;
  // The outcome of a release/extend the server refused because `owner` holds no field.
  int not_held(const std::string& owner, bool other_owner, bool known_lost, const char* doing);
  int redis_failure(const std::string& doing, const Reply& reply) const;
  int64_t resolve_thread(int64_t thread_id) const;

  std::shared_ptr<Client> client_;
  const std::string name_;
  const std::string channel_;
  const int64_t default_lease_ms_;
  CancelSet waits_;
  std::shared_ptr<LostListener> listener_ = std::make_shared<LostListener>();
};

}  // namespace rlock::core
