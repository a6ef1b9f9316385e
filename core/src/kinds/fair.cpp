// The fair lock: the reentrant hash N plus a queue of waiters (list redisson_lock_queue:{N}) and
// their deadlines (sorted set redisson_lock_timeout:{N}). A release wakes only the queue's head,
// on a channel of its own. The non-reentrant fair lock has the same keys; its holder asking again
// is refused.
#include <algorithm>
#include <chrono>

#include "kind.hpp"
#include "rlock/core/names.hpp"

namespace rlock::core::kinds {
namespace {

// Wall-clock milliseconds: the queue deadlines are absolute times, as Redisson keeps them, so
// every client of one lock must agree on the clock (NTP).
std::string epoch_ms() {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}

class Fair : public Kind {
 public:
  Fair(LockKind kind, const std::string& name, bool may_reenter)
      : Kind(name, lock_channel(name)),
        reentrant_(kind == LockKind::Fair && may_reenter),
        token_counter_(token_counter(name)),
        queue_(fair_queue(name)),
        deadlines_(fair_deadlines(name)) {}

  HoldLayout layout() const override { return HoldLayout::Fair; }
  std::string wake_channel(const std::string& owner) const override {
    return channel_ + ":" + owner;
  }
  // A waiter keeps its place by coming back at least every quarter allowance (the script
  // refreshes its deadline in the last half).
  int64_t revisit_ms(int64_t queue_allowance_ms) const override {
    return std::max<int64_t>(1, queue_allowance_ms / 4);
  }
  const char* refusal() const override { return kNotReentrant; }

  Call acquire(const AcquireRequest& q) const override {
    Strings keys{name_, queue_, deadlines_};
    if (q.fenced) keys.push_back(token_counter_);
    Strings argv{q.lease_ms, q.owner, std::to_string(q.queue_allowance_ms), epoch_ms(),
                 q.join_queue ? "1" : "0"};
    if (!reentrant_) argv.emplace_back("1");
    return {&scripts::fair_acquire, std::move(keys), std::move(argv)};
  }

  Call release(const ReleaseRequest& q) const override {
    return {&scripts::fair_release,
            {name_, queue_, deadlines_, channel_, q.latch},
            {q.lease_ms, q.owner, q.holds, q.latch_ttl, epoch_ms()}};
  }

  Call force_unlock() const override {
    return {&scripts::fair_force_unlock, {name_, queue_, deadlines_, channel_}, {epoch_ms()}};
  }

  // As a release does, a lock the undo frees wakes the queue's head on its own channel.
  std::optional<Call> undo_acquire(const std::string& owner, int64_t expected_count,
                                   int64_t lease_ms) const override {
    return Call{&scripts::fair_undo_acquire,
                {name_, queue_, deadlines_, channel_},
                {owner, std::to_string(expected_count), std::to_string(lease_ms), epoch_ms()}};
  }

  // The ones behind need not wait out the place of a waiter that gave up.
  std::optional<Call> leave_queue(const std::string& owner,
                                  int64_t queue_allowance_ms) const override {
    return Call{&scripts::fair_leave,
                {name_, queue_, deadlines_, channel_},
                {owner, std::to_string(queue_allowance_ms)}};
  }

 private:
  const bool reentrant_;
  const std::string token_counter_;
  const std::string queue_;
  const std::string deadlines_;
};

}  // namespace

std::unique_ptr<const Kind> make_fair(LockKind kind, const std::string& name, bool may_reenter) {
  return std::make_unique<Fair>(kind, name, may_reenter);
}

}  // namespace rlock::core::kinds
