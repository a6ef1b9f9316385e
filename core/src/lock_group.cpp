#include "rlock/core/lock_group.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <set>
#include <string>
#include <utility>

#include "rlock/core/error.hpp"
#include "rlock/core/holds.hpp"
#include "rlock/core/timing.hpp"

namespace rlock::core {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kFirstBackoffMs = 5;
constexpr int64_t kMaxBackoffMs = 200;

struct Outcome {
  int code;
  bool transient;  // as the member recorded it with its failure (see worth_retrying)
  std::string message;
};

// Runs `attempt(i)` for every member at once and collects each result with the failure the
// member recorded on the thread it ran on.
template <class F>
std::vector<Outcome> in_parallel(size_t count, F attempt) {
  std::vector<std::future<Outcome>> running;
  running.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    running.push_back(std::async(std::launch::async, [&attempt, i] {
      int code = attempt(i);
      if (code == kOk) return Outcome{kOk, false, std::string()};
      return Outcome{code, last_error_transient(), last_error_message()};
    }));
  }
  std::vector<Outcome> out;
  out.reserve(count);
  for (auto& r : running) out.push_back(r.get());
  return out;
}

}  // namespace

LockGroup::LockGroup(std::vector<std::shared_ptr<Lock>> members, Policy policy)
    : members_(std::move(members)), policy_(policy) {
  if (members_.empty()) throw Error(kInvalid, "a lock group needs at least one member");
  std::set<std::pair<const Client*, std::string>> seen;
  for (const auto& m : members_) {
    if (!m) throw Error(kInvalid, "a lock group member is NULL");
    if (!seen.insert({&m->client(), m->name()}).second) {
      throw Error(kInvalid,
                  "lock " + printable(m->name()) + " is in the group twice (same client and name)");
    }
  }
  quorum_ = policy == Policy::All ? members_.size() : members_.size() / 2 + 1;
}

void LockGroup::release_all(int64_t thread_id) {
  in_parallel(members_.size(), [&](size_t i) { return members_[i]->release(thread_id); });
}

// One try of every member, and what it came to.
struct LockGroup::Round {
  std::vector<Outcome> outcomes;
  size_t granted = 0;
  const Outcome* worst = nullptr;  // the failure to report if the round falls short
  int64_t spent_ms = 0;
  int64_t validity_ms = 0;  // how long the group is sure to be held, if granted
};

int LockGroup::check_acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id,
                             CancelSet* cancel) const {
  if (int rc = check_wait(wait_ms)) return rc;
  if (int rc = check_lease(lease_ms)) return rc;
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 (calling thread) or positive");
  if (cancel != nullptr && cancel->cancelled()) return fail(kCanceled, "lock group: cancelled");
  return kOk;
}

// The lease every member gets: a watchdog lease is each member client's own.
int64_t LockGroup::shortest_lease(int64_t lease_ms) const {
  if (lease_ms != kLeaseWatchdog) return lease_ms;
  int64_t shortest = kMaxDurationMs;
  for (const auto& m : members_) {
    shortest = std::min(shortest, m->client().config().watchdog_lease_ms);
  }
  return shortest;
}

void LockGroup::try_round(const AcquireArgs& args, int64_t lease_ms, Round* round) {
  const Clock::time_point start = Clock::now();
  round->outcomes =
      in_parallel(members_.size(), [&](size_t i) { return members_[i]->acquire(args); });
  for (const Outcome& r : round->outcomes) {
    if (r.code == kOk) {
      ++round->granted;
    } else if (round->worst == nullptr ||
               (round->worst->code == kTimedOut && r.code != kTimedOut)) {
      round->worst = &r;
    }
  }
  round->spent_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  round->validity_ms = lease_ms - round->spent_ms - Holds::drift_ms(lease_ms);
}

int LockGroup::after_shortfall(const Round& round, bool out_of_time) const {
  const Outcome* worst = round.worst;
  const std::string why =
      round.granted >= quorum_
          ? "acquiring took " + std::to_string(round.spent_ms) + " ms, longer than the lease"
          : std::to_string(round.granted) + " of " + std::to_string(members_.size()) +
                " members granted, " + std::to_string(quorum_) + " needed" +
                (worst != nullptr ? "; " + worst->message : "");
  // Retried as a single lock retries: held by another owner, or a failure that passes.
  const bool retry = worst == nullptr || worth_retrying(worst->code, worst->transient);
  if (!retry && policy_ == Policy::All) return fail(worst->code, "lock group: " + why, false);
  if (!out_of_time) return kOk;
  // A RedLock reports a member's lasting failure as not acquired: the others may be fine.
  if (!retry || worst == nullptr || worst->code == kTimedOut) {
    return fail(kTimedOut, "lock group not acquired: " + why);
  }
  return fail(worst->code, "lock group not acquired: " + why, worst->transient);
}

int LockGroup::acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, CancelSet* cancel,
                       int64_t* validity_ms) {
  if (lease_ms == 0) lease_ms = kLeaseWatchdog;
  if (int rc = check_acquire(wait_ms, lease_ms, thread_id, cancel)) return rc;
  AcquireArgs args;
  args.wait_ms = 0;
  args.lease_ms = lease_ms;
  // Members run on other threads: they must all act for the caller's owner.
  args.thread_id = thread_id == 0 ? current_thread_id() : thread_id;
  args.undo_lost_reply = false;  // a failed round releases every member below
  const int64_t lease_applied = shortest_lease(lease_ms);
  const Clock::time_point deadline = deadline_after(wait_ms);

  Sleeper sleeper;
  CancelRegistration by_group, by_token;
  if (!by_group.attach(&waits_, &sleeper))
    return fail(kCanceled, "lock group: its handle was freed");
  if (!by_token.attach(cancel, &sleeper)) return fail(kCanceled, "lock group: cancelled");
  Backoff backoff(kFirstBackoffMs, kMaxBackoffMs);
  for (;;) {
    Round round;
    try_round(args, lease_applied, &round);
    if (round.granted >= quorum_ && round.validity_ms > 0) {
      if (validity_ms != nullptr) *validity_ms = round.validity_ms;
      return kOk;
    }
    release_all(args.thread_id);  // all of them: a member whose reply was lost may hold it anyway
    const Clock::time_point now = Clock::now();
    if (int rc = after_shortfall(round, wait_ms == 0 || now >= deadline)) return rc;
    // Back off with jitter so competing callers do not collide round after round.
    Clock::time_point until = wake_time(now, jittered(backoff.next()), deadline);
    if (!sleeper.sleep_until(until)) return fail(kCanceled, "lock group: cancelled");
  }
}

int LockGroup::release(int64_t thread_id) {
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 (calling thread) or positive");
  const int64_t tid = thread_id == 0 ? current_thread_id() : thread_id;
  std::vector<Outcome> results =
      in_parallel(members_.size(), [&](size_t i) { return members_[i]->release(tid); });
  size_t released = 0;
  const Outcome* first_failure = nullptr;
  for (const Outcome& r : results) {
    if (r.code == kOk) {
      ++released;
    } else if (first_failure == nullptr ||
               (first_failure->code == kNotHeld && r.code != kNotHeld)) {
      // A member never granted says "not held"; a failure to reach one says more.
      first_failure = &r;
    }
  }
  // A RedLock member that was down, or never granted, fails its release: that is expected.
  if (released >= quorum_) return kOk;
  if (first_failure == nullptr) return kOk;
  return fail(first_failure->code, "lock group release: " + std::to_string(released) + " of " +
                                       std::to_string(members_.size()) + " members released; " +
                                       first_failure->message);
}

bool LockGroup::is_held(int64_t thread_id) const {
  if (thread_id < 0) return false;
  const int64_t tid = thread_id == 0 ? current_thread_id() : thread_id;
  size_t held = 0;
  for (const auto& m : members_) held += m->is_held(tid) ? 1 : 0;
  return held >= quorum_;
}

}  // namespace rlock::core
