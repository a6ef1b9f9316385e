// Reentrant, fenced, spin and non-reentrant locks: hash N, field "<client-id>:<thread-id>" = hold
// count, wake-ups on redisson_lock__channel:{N}; a fenced acquire also advances
// redisson_lock_token:{N}. They differ only in how they wait, whether every acquire is fenced,
// and whether a holder may acquire again (the non-reentrant lock's count stays 1).
#include "kind.hpp"
#include "rlock/core/names.hpp"

namespace rlock::core::kinds {
namespace {

class Plain : public Kind {
 public:
  Plain(LockKind kind, const std::string& name, bool may_reenter)
      : Kind(name, lock_channel(name)),
        kind_(kind),
        once_(kind == LockKind::NonReentrant || !may_reenter),
        token_counter_(token_counter(name)) {}

  bool always_fenced() const override { return kind_ == LockKind::Fenced; }
  bool spins() const override { return kind_ == LockKind::Spin; }
  // A spin lock has no channel to sleep on.
  bool yields_to_local_waiters() const override { return kind_ != LockKind::Spin; }
  const char* refusal() const override { return kNotReentrant; }

  Call acquire(const AcquireRequest& q) const override {
    Strings keys{name_};
    if (q.fenced) keys.push_back(token_counter_);
    Strings argv{q.lease_ms, q.owner};
    if (once_) argv.emplace_back("1");
    return {&scripts::acquire, std::move(keys), std::move(argv)};
  }

  Call release(const ReleaseRequest& q) const override {
    return {
        &scripts::release, {name_, channel_, q.latch}, {q.lease_ms, q.owner, q.holds, q.latch_ttl}};
  }

  Call force_unlock() const override { return {&scripts::force_unlock, {name_, channel_}, {}}; }

 private:
  const LockKind kind_;
  const bool once_;  // a holder may not acquire again
  const std::string token_counter_;
};

}  // namespace

std::unique_ptr<const Kind> make_plain(LockKind kind, const std::string& name, bool may_reenter) {
  return std::make_unique<Plain>(kind, name, may_reenter);
}

}  // namespace rlock::core::kinds
