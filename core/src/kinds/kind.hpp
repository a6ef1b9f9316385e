// What differs between the lock kinds: their keys, scripts, arguments, reply shapes and a few
// policies. Lock (lock.cpp) keeps the algorithm they share: the plan of an acquire, attempts,
// waiting, the holds bookkeeping and the messages. Each kind family has its own file here.
//
// A new kind: a file defining a Kind subclass and its make_ function (declared below), one line
// in make_kind (kind.cpp), the file in core/CMakeLists.txt, and a LockKind value. A variant of
// an existing kind (the non-reentrant ones) is a flag of that kind's class instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rlock/core/holds.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/scripts.hpp"

namespace rlock::core::kinds {

using Strings = std::vector<std::string>;

// A script with its keys and arguments, ready to run. It owns its strings: Args only views them.
struct Call {
  const Script* script;
  Strings keys;
  Strings argv;
};

// Views of `strings`, as scripts are run with; valid while `strings` lives unchanged.
inline Args views(const Strings& strings) { return Args(strings.begin(), strings.end()); }

// One acquire attempt. Requests, like Lock's Plan they are made from, live only while a Call is
// built from them.
struct AcquireRequest {
  const std::string& owner;       // the hash field (Kind::owner_field)
  const std::string& base_owner;  // "<client-id>:<thread-id>"
  std::string lease_ms;
  bool fenced;                 // advance the fencing token and return it
  int64_t queue_allowance_ms;  // a queueing kind: how long a waiter's place is kept
  bool join_queue;             // a queueing kind: take a place when the lock is taken
};

// One release.
struct ReleaseRequest {
  const std::string& owner;
  std::string lease_ms;   // reset on the holds left
  std::string holds;      // how many holds to release ("1", or a count meaning every one)
  std::string latch;      // the unlock latch key, which makes a retried release answer the same
  std::string latch_ttl;  // ms
};

// What an acquire script answered.
struct AcquireReply {
  enum class Verdict { Granted, Taken, Refused };
  Verdict verdict;
  int64_t count;  // Granted: the holds the server counts for this owner
  int64_t token;  // Granted: the fencing token, 0 when none was asked for
  int64_t pttl;   // Taken: the holder's remaining lease (-1: none)
};

class Kind {
 public:
  Kind(std::string name, std::string channel)
      : name_(std::move(name)), channel_(std::move(channel)) {}
  virtual ~Kind() = default;
  Kind(const Kind&) = delete;
  Kind& operator=(const Kind&) = delete;

  // The channel releases publish on, which waiters listen to.
  const std::string& channel() const { return channel_; }
  // The hash field of the owner "<client-id>:<thread-id>".
  virtual std::string owner_field(const std::string& base_owner) const { return base_owner; }
  // The channel on which one waiter is woken.
  virtual std::string wake_channel(const std::string& /*owner*/) const { return channel_; }
  // How the holds bookkeeping renews and releases this kind's holds.
  virtual HoldLayout layout() const { return HoldLayout::Plain; }

  // Every acquire returns a fencing token, asked for or not.
  virtual bool always_fenced() const { return false; }
  // Why fencing tokens cannot be had, or null when they can.
  virtual const char* fencing_unavailable() const { return nullptr; }
  // Waits by retrying with backoff instead of listening on the channel.
  virtual bool spins() const { return false; }
  // An unbounded wait sleeps behind this client's waiters without an attempt of its own.
  virtual bool yields_to_local_waiters() const { return false; }
  // The release script counts the holds left (answered as its reply) and releases one at a
  // time; otherwise the holds are counted here and the last one releases every hold.
  virtual bool counts_holds_on_server() const { return false; }
  // A waiter must try again at least this often to keep its place (0: no such need).
  virtual int64_t revisit_ms(int64_t /*queue_allowance_ms*/) const { return 0; }
  // Why an acquire answered Refused, said of the owner that asked.
  virtual const char* refusal() const { return "was refused the lock"; }
  // The refusal of a non-reentrant kind (plain and fair layouts).
  static constexpr const char* kNotReentrant =
      "already holds it, and the lock is not reentrant (release it first)";

  virtual Call acquire(const AcquireRequest& request) const = 0;
  virtual Call release(const ReleaseRequest& request) const = 0;
  // By default the reentrant hash's extend (N: owner -> count).
  virtual Call extend(const std::string& owner, const std::string& lease_ms) const;
  // Adds add_ms (at most up to max_lease_ms) to the owner's remaining lease in one script,
  // extend_by.lua, whose reply is the new lease or why not. By default the hash's PTTL.
  virtual Call extend_by(const std::string& owner, const std::string& add_ms,
                         const std::string& max_lease_ms) const;
  virtual Call force_unlock() const = 0;
  // Takes back an acquire whose reply was lost, if it was applied (the owner's count on the
  // server is `expected_count`); none: the key expires by its lease. By default the reentrant
  // hash's undo.
  virtual std::optional<Call> undo_acquire(const std::string& owner, int64_t expected_count,
                                           int64_t lease_ms) const;
  // Leaves the queue of a waiter that gave up; none for a kind without a queue.
  virtual std::optional<Call> leave_queue(const std::string& /*owner*/,
                                          int64_t /*queue_allowance_ms*/) const {
    return std::nullopt;
  }

  // Reads an acquire reply; false if it is not of the script's shape. By default the shape all
  // acquire scripts share: {1, count, token} granted, {0, pttl} taken, {-1, 0} refused.
  virtual bool read_acquire(const Reply& reply, AcquireReply* out) const;
  // Reads an extend reply into 1 (extended), -2 (another owner holds it) or else not held;
  // false if it is not of the script's shape. By default an integer.
  virtual bool read_extend(const Reply& reply, int64_t* out) const;

 protected:
  const std::string name_;
  const std::string channel_;
};

// Throws Error(kInvalid) for a value that is no LockKind.
// may_reenter false: a holder's second acquire is refused whatever the kind (a caller-given
// owner id, which several threads and processes share); refused for read and write locks.
std::unique_ptr<const Kind> make_kind(LockKind kind, const std::string& name,
                                      bool may_reenter = true);

// Reentrant, Fenced, Spin and NonReentrant: one hash and the same scripts.
std::unique_ptr<const Kind> make_plain(LockKind kind, const std::string& name, bool may_reenter);
// Fair and NonReentrantFair.
std::unique_ptr<const Kind> make_fair(LockKind kind, const std::string& name, bool may_reenter);
std::unique_ptr<const Kind> make_read(const std::string& name);
std::unique_ptr<const Kind> make_write(const std::string& name);

}  // namespace rlock::core::kinds
