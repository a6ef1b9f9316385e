// Several locks taken as one: a multi-lock (every member) or a RedLock (a majority of members
// on independent Redis servers, within the lease).
//
// Each round tries every member once, in parallel, and never waits while holding some: a round
// that falls short releases every member (also those whose reply was lost) before backing off
// with jitter and trying again. So two callers locking the same members in opposite orders
// cannot deadlock, and a failed call leaves nothing held.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rlock/core/cancel.hpp"
#include "rlock/core/lock.hpp"

namespace rlock::core {

class LockGroup : public std::enable_shared_from_this<LockGroup> {
 public:
  enum class Policy { All, Majority };
  using Completion = Lock::Completion;

  // Throws Error(kInvalid) for no members or the same lock (client and name) twice.
  LockGroup(std::vector<std::shared_ptr<Lock>> members, Policy policy);

  // wait_ms and lease_ms as for Lock::acquire (lease 0 = the watchdog). On success
  // *validity_ms (optional) is the time the group is sure to hold: the shortest member lease
  // minus the time spent acquiring and the clock drift allowance.
  int acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, CancelSet* cancel,
              int64_t* validity_ms);
  // The same on the first member's client's waiting engine, as Lock::acquire_async; `done`'s
  // value is the validity. `keep` owns `cancel`. Must be called through a shared_ptr.
  int acquire_async(int64_t wait_ms, int64_t lease_ms, int64_t thread_id,
                    std::shared_ptr<CancelSet> keep, Completion done);
  // Releases every member (errors of unreachable members are ignored for a RedLock).
  int release(int64_t thread_id);
  int release_async(int64_t thread_id, Completion done);
  // Sets the lease of every member `thread_id` holds to lease_ms (Lock::extend), all at once.
  // Succeeds when the quorum was extended within the lease; *validity_ms (optional) is then
  // lease_ms minus the time spent and the drift allowance. With `reacquire`, a member whose
  // key is gone (a node that restarted without it) is taken again with one try, never from
  // another owner. Members extended stay so when it fails.
  int extend(int64_t lease_ms, int64_t thread_id, bool reacquire, int64_t* validity_ms);
  bool is_held(int64_t thread_id) const;
  void cancel_waits() { waits_.cancel_all(false); }
  // The handle is gone: wakes the waits in progress and refuses later ones.
  void close_waits() { waits_.cancel_all(true); }
  size_t quorum() const { return quorum_; }

 private:
  class Wait;  // a waiting group acquire, a task of the waiting engine
  struct Round;
  struct Outcome;
  using Outcomes = std::vector<Outcome>;
  int check_acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, CancelSet* cancel) const;
  int64_t shortest_lease(int64_t lease_ms) const;
  // Runs `op` on every member at once, each on its client's waiting engine (or, `here`, one
  // after the other on this thread), and hands the outcomes to `then` on the thread of the
  // last one.
  void for_members(const std::function<int(Lock&)>& op, std::function<void(Outcomes)> then,
                   bool here);
  // The same, waiting for the outcomes (on this thread when it is an engine's own).
  Outcomes on_members(const std::function<int(Lock&)>& op);
  // A round's outcomes counted.
  void count_round(Outcomes outcomes, int64_t lease_ms, Round* round) const;
  // A round that fell short (its members released): the outcome to return, or kOk to back off
  // and try again.
  int after_shortfall(const Round& round, bool out_of_time) const;
  // The outcome of releasing every member.
  int released(const Outcomes& outcomes) const;
  // The failure to report of a call on every member: one that says most (not "not held").
  static const Outcome* telling_failure(const Outcomes& outcomes);

  std::vector<std::shared_ptr<Lock>> members_;
  Policy policy_;
  size_t quorum_;
  CancelSet waits_;
};

}  // namespace rlock::core
