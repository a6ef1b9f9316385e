// The locks of docs/protocol.md, every kind: the reentrant lock's hash N, field
// "<client-id>:<thread-id>" = hold count, and the kinds built on it. Lock holds what all kinds
// share; what differs per kind (keys, scripts, replies) is in core/src/kinds.
//
// All operations return a status code (kOk or a negative Code) and record a message for the
// calling thread on failure; unexpected failures (out of memory, bugs) throw.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>

#include "rlock/core/cancel.hpp"
#include "rlock/core/client.hpp"
#include "rlock/core/holds.hpp"
#include "rlock/core/scripts.hpp"

namespace rlock::core {

namespace kinds {
class Kind;
struct Call;
}  // namespace kinds

constexpr int64_t kWaitForever = -1;
constexpr int64_t kLeaseWatchdog = -1;

// A lock name's checks (not empty; with the key_prefix at most max_name_len bytes); throws
// Error(kInvalid).
// `what` names the object in the message ("semaphore", "latch").
void check_lock_name(const ClientConfig& config, const std::string& name,
                     const char* what = "lock");

// The key name of a name a caller gave: the client's key_prefix + name, after
// check_lock_name. Objects keep this; events, lost callbacks and listings give the caller's
// name back (unmapped_name).
std::string mapped_name(const ClientConfig& config, const std::string& name,
                        const char* what = "lock");

// Argument checks shared by every acquire: kOk, or kInvalid with a message naming the value.
int check_wait(int64_t wait_ms);
int check_lease(int64_t lease_ms);  // kLeaseWatchdog or 1..kMaxDurationMs

struct AcquireArgs {
  int64_t wait_ms = kWaitForever;  // 0 = try once
  int64_t lease_ms = 0;            // 0 = the lock's default, kLeaseWatchdog, or > 0
  int64_t thread_id = 0;           // 0 = calling thread
  CancelSet* cancel = nullptr;     // optional sticky token
  int64_t* token = nullptr;        // receives the fencing token; on a reentrant lock, asking
                                   // for it advances the token sequence too
  bool undo_lost_reply = true;     // take back an acquire whose reply was lost (a lock group
                                   // releases every member itself instead)
  int64_t poll_cap_ms = 0;         // a waiter's longest sleep without retrying; 0 = the client's
};

// Read and Write are the two halves of one read-write lock: handles of both kinds on one name
// share the hash (field 'mode', readers "<owner>", the writer "<owner>:write"). The
// non-reentrant kinds keep the reentrant and fair layouts, but an owner that holds the lock and
// asks again is refused (kDeadlock) instead of counting a second hold.
enum class LockKind {
  Reentrant = 0,
  Fenced = 1,
  Spin = 2,
  Fair = 3,
  Read = 4,
  Write = 5,
  NonReentrant = 6,
  NonReentrantFair = 7,
};

struct LockOptions {
  int64_t lease_ms = kLeaseWatchdog;  // default lease of acquires
  LockKind kind = LockKind::Reentrant;
  int64_t spin_initial_ms = 1;  // spin lock: first backoff, doubled up to spin_max_ms
  int64_t spin_max_ms = 128;
  int64_t fair_wait_ms = 300000;  // fair lock: a queued waiter's allowance (Redisson's default)
  // A caller-given owner: the owner field is "<owner_id_prefix(owner_id)>:1" whatever thread id
  // a call gives, the same in every process that names it. Empty: the client's owners.
  std::string owner_id;
};

struct LockState {
  bool locked = false;
  bool held_by_me = false;
  int64_t hold_count = 0;
  int64_t ttl_ms = -2;
  int64_t owner_count = 0;
  std::string owner;  // first owner field, empty if none
  int64_t owner_hold_count = 0;
  std::string mode;  // read-write lock: "read" or "write"; else empty
};

class Lock : public std::enable_shared_from_this<Lock> {
 public:
  // The outcome of an asynchronous call: a status code and a value (an acquire's fencing token,
  // else 0). Runs exactly once, on a library thread, with no library lock held; a failure's
  // message is the thread's last error while it runs.
  using Completion = std::function<void(int status, int64_t value)>;

  // Throws Error(kInvalid) for an empty or too long name or bad options.
  Lock(std::shared_ptr<Client> client, const std::string& name, const LockOptions& options);
  ~Lock();

  int acquire(const AcquireArgs& args);
  // Starts an acquire on the client's waiting engine and returns at once: kOk when started
  // (`done` then runs exactly once), or a failure code with a message (`done` never runs).
  // `keep` owns args.cancel for the operation's life. args.token, if set, is written before
  // `done` runs. Must be called through a shared_ptr.
  int acquire_async(const AcquireArgs& args, std::shared_ptr<CancelSet> keep, Completion done);
  int release(int64_t thread_id);
  // release and extend on a library thread, as acquire_async.
  int release_async(int64_t thread_id, Completion done);
  int extend_async(int64_t lease_ms, int64_t thread_id, Completion done);
  int extend(int64_t lease_ms, int64_t thread_id);
  // Adds add_ms to the hold's remaining lease (redis-py's extend) in one script (a reader: to
  // its own read lease). Not held: as extend. A hold under the watchdog, or a key without
  // expiry, has no lease to add to: kInvalid, nothing changed. Not retried (kConn instead).
  int extend_by(int64_t add_ms, int64_t thread_id);
  int force_unlock(bool* deleted);
  int query(int64_t thread_id, LockState* out);
  bool is_held(int64_t thread_id) const;
  bool is_lost(int64_t thread_id) const;
  int lost_reason(int64_t thread_id) const;  // Holds::lost_reason of the owner's hold
  // The fencing token of the owner's current hold (local); kNotHeld when it holds none.
  int token(int64_t thread_id, int64_t* out) const;
  // Wakes every acquire in progress on this object with kCanceled.
  void cancel_waits() { waits_.cancel_all(false); }
  // The handle is gone: wakes the waits in progress and refuses later ones (kCanceled). A
  // group's attempts on its members never wait, so groups keep working.
  void close_waits() { waits_.cancel_all(true); }
  void set_lost_callback(LostListener::Fn fn) { listener_->set(std::move(fn)); }

  const std::string& name() const { return name_; }
  Client& client() { return *client_; }
  // The hash field of the owner with this thread id.
  std::string owner_field(int64_t thread_id) const;

 private:
  class Wait;  // a waiting acquire (lock_wait.cpp)
  struct Attempt {
    int code;                // kOk = acquired, kTimedOut = held by another owner, else an error
    int64_t pttl;            // when held by another owner
    bool transient = false;  // an error that passes by itself (see worth_retrying)
  };
  // What one acquire call asks for, worked out once.
  struct Plan {
    std::string owner;  // the hash field: "<client-id>:<thread-id>", plus ":write" for a writer
    std::string base_owner;  // "<client-id>:<thread-id>"
    int64_t thread_id;
    int64_t lease_ms;
    bool watchdog;
    bool fenced;
    int64_t fair_allowance_ms;  // fair lock: how long our place in the queue is kept
    bool undo_lost_reply;
    int64_t poll_cap_ms;  // the client's, or the acquire's own
    // The call's wait ends at wait_end, and the call itself by call_end: one command timeout
    // later, so every request it sends answers by then (docs/errors.md, "How long a call takes").
    std::chrono::steady_clock::time_point wait_end;
    std::chrono::steady_clock::time_point call_end;
  };
  // Checks an acquire's arguments and works out what it asks for.
  int make_plan(const AcquireArgs& a, Plan* plan) const;
  // One attempt; with replica sync, a grant the replicas did not confirm is taken back and
  // tried once more before kNotSynced.
  Attempt try_acquire(const Plan& plan, bool join_queue);
  Attempt try_acquire_once(const Plan& plan, bool join_queue);
  // A grant recorded in the holds, checked against replica sync: kOk, or taken back.
  Attempt confirm_grant(const Plan& plan, std::chrono::steady_clock::time_point sent, int wanted,
                        int64_t acked, std::shared_lock<std::shared_mutex>* in_flight);
  // Runs an acquire or release script, followed by WAIT for `replicas` when that is above 0;
  // `acked` gets the replicas that confirmed (-1: WAIT failed; unchanged without WAIT).
  Reply run_synced(const kinds::Call& call, Retry retry, Deadline deadline, int replicas,
                   int64_t* acked);
  // Runs any other script, retried once on a fresh connection if its reply is lost.
  Reply run_once(const kinds::Call& call, Send send = Send::Sha);
  int release_hold(int64_t thread_id, bool synced);
  // What a release's reply means for the holds and the caller. `left_here`: the holds left as
  // counted here if it released one.
  int finish_release(const std::string& owner, const Reply& r, bool was_lost, int64_t left_here,
                     int64_t lease_ms, std::chrono::steady_clock::time_point sent);
  // An acquire's first attempt. Returns true when the caller must wait, with the attempt and
  // the subscription mark taken before it; else false with the outcome in *outcome.
  bool first_attempt(const AcquireArgs& a, const Plan& plan, Attempt* at, uint64_t* mark,
                     int* outcome);
  std::string wake_channel(const Plan& plan) const;
  int acquired(const AcquireArgs& a, const Plan& plan);
  // An acquire call that started at `start` ended with `code`: counted, and told as an event
  // when granted (`plan` null when the call failed before making one). Returns `code`.
  int ended(const Plan* plan, std::chrono::steady_clock::time_point start, int code);
  // Runs `body` on a library thread and hands its outcome to `done`.
  int run_async(std::function<int()> body, Completion done);
  void leave_queue(const Plan& plan);
  // "<client id or owner id's UUID>:<thread id>", before the kind's suffix.
  std::string base_owner(int64_t resolved_thread_id) const;
  int give_up(int last_code, int64_t wait_ms);
  void undo_acquire(const std::string& owner, int64_t expected_count, int64_t lease_ms);
  // A script whose outcome is unknown (its reply was lost) runs again before this owner's next
  // acquire, and at once in the background (Holds::add_cleanup).
  void clean_up_later(const std::string& owner, const kinds::Call& call, bool releases_all = false);
  int check_open() const;
  // kLost (and forgotten) when `owner`'s hold here was lost; else kOk.
  int lost_before_extend(const std::string& owner);
  // The outcome of a release/extend the server refused because `owner` holds no field.
  int not_held(const std::string& owner, bool other_owner, bool known_lost, const char* doing);
  int redis_failure(const std::string& doing, const Reply& reply) const;
  // A reply not of its script's shape: kRedis.
  int unexpected(const std::string& doing) const;
  int64_t resolve_thread(int64_t thread_id) const;

  std::shared_ptr<Client> client_;
  const std::string name_;
  const std::unique_ptr<const kinds::Kind> kind_;  // what differs per kind (core/src/kinds)
  const std::string channel_;                      // the channel waiters listen on
  const LockOptions options_;
  const std::string owner_prefix_;  // the owner field's first half: the client id or owner_id's
  CancelSet waits_;
  std::shared_ptr<LostListener> listener_ = std::make_shared<LostListener>();
};

}  // namespace rlock::core
