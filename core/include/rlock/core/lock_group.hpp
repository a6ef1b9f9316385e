// Several locks taken as one: a multi-lock (every member) or a RedLock (a majority of members
// on independent Redis servers, within the lease).
//
// Each round tries every member once, in parallel, and never waits while holding some: a round
// that falls short releases every member (also those whose reply was lost) before backing off
// with jitter and trying again. So two callers locking the same members in opposite orders
// cannot deadlock, and a failed call leaves nothing held.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rlock/core/cancel.hpp"
#include "rlock/core/lock.hpp"

namespace rlock::core {

class LockGroup {
 public:
  enum class Policy { All, Majority };

  // Throws Error(kInvalid) for no members or the same lock (client and name) twice.
  LockGroup(std::vector<std::shared_ptr<Lock>> members, Policy policy);

  // wait_ms and lease_ms as for Lock::acquire (lease 0 = the watchdog). On success
  // *validity_ms (optional) is the time the group is sure to hold: the shortest member lease
  // minus the time spent acquiring and the clock drift allowance.
  int acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, CancelSet* cancel,
              int64_t* validity_ms);
  // Releases every member (errors of unreachable members are ignored for a RedLock).
  int release(int64_t thread_id);
  bool is_held(int64_t thread_id) const;
  void cancel_waits() { waits_.cancel_all(false); }
  // The handle is gone: wakes the waits in progress and refuses later ones.
  void close_waits() { waits_.cancel_all(true); }
  size_t quorum() const { return quorum_; }

 private:
  struct Round;
  int check_acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, CancelSet* cancel) const;
  int64_t shortest_lease(int64_t lease_ms) const;
  // Tries every member once, at once, without waiting.
  void try_round(const AcquireArgs& args, int64_t lease_ms, Round* round);
  // A round that fell short (its members released): the outcome to return, or kOk to back off
  // and try again.
  int after_shortfall(const Round& round, bool out_of_time) const;
  void release_all(int64_t thread_id);

  std::vector<std::shared_ptr<Lock>> members_;
  Policy policy_;
  size_t quorum_;
  CancelSet waits_;
};

}  // namespace rlock::core
