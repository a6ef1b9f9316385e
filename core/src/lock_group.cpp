#include "rlock/core/lock_group.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "one_step.hpp"
#include "rlock/core/engine.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/holds.hpp"
#include "rlock/core/timing.hpp"

namespace rlock::core {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kFirstBackoffMs = 5;
constexpr int64_t kMaxBackoffMs = 200;

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

struct LockGroup::Outcome {
  int code;
  bool transient;  // as the member recorded it with its failure (see worth_retrying)
  std::string message;
};

void LockGroup::for_members(const std::function<int(Lock&)>& op, std::function<void(Outcomes)> then,
                            bool here) {
  struct Gather {
    std::mutex mutex;
    Outcomes outcomes;
    size_t pending;
    std::function<void(Outcomes)> then;
  };
  auto gather = std::make_shared<Gather>();
  gather->outcomes.resize(members_.size(), Outcome{kInternal, false, std::string()});
  gather->pending = members_.size();
  gather->then = std::move(then);
  auto run_one = [gather, op](Lock* member, size_t i) {
    int code = kInternal;
    try {
      code = member != nullptr ? op(*member) : kClosed;  // null: its client was closed
    } catch (const Error& e) {
      code = fail(e.code(), e.message());
    } catch (const std::exception& e) {
      code = fail(kInternal, std::string("internal error: ") + e.what());
    }
    Outcome out{code, code != kOk && last_error_transient(),
                code != kOk ? last_error_message() : std::string()};
    std::unique_lock<std::mutex> lock(gather->mutex);
    gather->outcomes[i] = std::move(out);
    if (--gather->pending > 0) return;
    Outcomes all = std::exchange(gather->outcomes, Outcomes());
    lock.unlock();
    gather->then(std::move(all));
  };
  for (size_t i = 0; i < members_.size(); ++i) {
    std::shared_ptr<Lock> member = members_[i];
    if (here) {
      run_one(member.get(), i);
      continue;
    }
    auto call = std::make_shared<OneStep>(member->client().engine_ptr(),
                                          [run_one, member, i] { run_one(member.get(), i); });
    if (!member->client().engine().start(call)) {
      fail(kClosed, "lock " + printable(member->name()) + ": the client was closed");
      run_one(nullptr, i);
    }
  }
}

LockGroup::Outcomes LockGroup::on_members(const std::function<int(Lock&)>& op) {
  std::mutex mutex;
  std::condition_variable done;
  Outcomes outcomes;
  bool have = false;
  // On an engine's own thread, waiting for other tasks of the engine could wait for ever.
  const bool here = Engine::on_engine_thread() || members_.size() == 1;
  for_members(
      op,
      [&](Outcomes got) {
        std::lock_guard<std::mutex> lock(mutex);
        outcomes = std::move(got);
        have = true;
        done.notify_one();
      },
      here);
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return have; });
  return outcomes;
}

// One try of every member, and what it came to.
struct LockGroup::Round {
  Outcomes outcomes;
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

void LockGroup::count_round(Outcomes outcomes, int64_t lease_ms, Round* round) const {
  round->outcomes = std::move(outcomes);
  for (const Outcome& r : round->outcomes) {
    if (r.code == kOk) {
      ++round->granted;
    } else if (round->worst == nullptr ||
               (round->worst->code == kTimedOut && r.code != kTimedOut)) {
      round->worst = &r;
    }
  }
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

// A group acquire: rounds of one try of every member at once, each followed (when it falls
// short) by the release of every member and a jittered backoff. Each round and release runs
// on the members' engines; this task only sleeps in between.
class LockGroup::Wait final : public Engine::Task, public Cancellable {
 public:
  Wait(LockGroup& group, std::shared_ptr<LockGroup> keep_group, int64_t wait_ms, int64_t lease_ms,
       int64_t thread_id, CancelSet* cancel, std::shared_ptr<CancelSet> keep_cancel,
       Completion done)
      : Task(group.members_.front()->client().engine_ptr()),
        group_(group),
        keep_group_(std::move(keep_group)),
        wait_ms_(wait_ms),
        lease_applied_(group.shortest_lease(lease_ms)),
        deadline_(deadline_after(wait_ms)),
        cancel_(cancel),
        keep_cancel_(std::move(keep_cancel)),
        done_(std::move(done)) {
    args_.wait_ms = 0;
    args_.lease_ms = lease_ms;
    args_.thread_id = thread_id;
    args_.undo_lost_reply = false;  // a failed round takes back what may have landed itself
  }
  int outcome() const { return outcome_; }
  int64_t validity_ms() const { return validity_ms_; }

  void step() override;
  void close() override {
    closed_.store(true);
    wake();
  }
  void cancel() override {
    cancelled_.store(true);
    wake();
  }

 private:
  enum class Phase { Start, Round, Releasing, Sleeping };
  void start_round();
  void after_round();
  void after_release();
  void on_members(const std::function<int(Lock&)>& op);
  void end(int code);

  LockGroup& group_;
  const std::shared_ptr<LockGroup> keep_group_;
  AcquireArgs args_;
  const int64_t wait_ms_;
  const int64_t lease_applied_;
  const Clock::time_point deadline_;
  CancelSet* const cancel_;
  const std::shared_ptr<CancelSet> keep_cancel_;
  Completion done_;
  CancelRegistration by_group_;
  CancelRegistration by_token_;
  Backoff backoff_{kFirstBackoffMs, kMaxBackoffMs};
  Phase phase_ = Phase::Start;
  Clock::time_point round_start_;
  Clock::time_point wake_at_;
  Round round_;
  std::mutex mutex_;  // the members' outcomes, handed in from their threads
  bool have_outcomes_ = false;
  Outcomes outcomes_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> closed_{false};
  bool finished_ = false;
  int outcome_ = kOk;
  int64_t validity_ms_ = 0;
};

void LockGroup::Wait::step() {
  if (finished_) return;
  // A round in progress is always finished (and released if short) before giving up.
  const bool between_rounds = phase_ == Phase::Start || phase_ == Phase::Sleeping;
  if (between_rounds && closed_.load()) return end(fail(kClosed, "lock group: client closed"));
  if (between_rounds && cancelled_.load()) return end(fail(kCanceled, "lock group: cancelled"));
  switch (phase_) {
    case Phase::Start:
      if (!by_group_.attach(&group_.waits_, this)) {
        return end(fail(kCanceled, "lock group: its handle was freed"));
      }
      if (!by_token_.attach(cancel_, this)) return end(fail(kCanceled, "lock group: cancelled"));
      return start_round();
    case Phase::Round:
      return after_round();
    case Phase::Releasing:
      return after_release();
    case Phase::Sleeping:
      if (Clock::now() >= wake_at_) return start_round();
      sleep_until(wake_at_);
      return;
  }
}

void LockGroup::Wait::on_members(const std::function<int(Lock&)>& op) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    have_outcomes_ = false;
  }
  auto self = std::static_pointer_cast<Wait>(shared_from_this());
  // A lone member is tried on this thread (a library thread, or the blocked caller's).
  group_.for_members(
      op,
      [self](Outcomes got) {
        {
          std::lock_guard<std::mutex> lock(self->mutex_);
          self->outcomes_ = std::move(got);
          self->have_outcomes_ = true;
        }
        self->wake();
      },
      group_.members_.size() == 1);
}

void LockGroup::Wait::start_round() {
  phase_ = Phase::Round;
  round_start_ = Clock::now();
  const AcquireArgs args = args_;
  on_members([args](Lock& m) { return m.acquire(args); });
}

void LockGroup::Wait::after_round() {
  Outcomes got;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!have_outcomes_) return;  // woken before every member answered
    got = std::move(outcomes_);
    have_outcomes_ = false;
  }
  round_ = Round();
  round_.spent_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - round_start_).count();
  group_.count_round(std::move(got), lease_applied_, &round_);
  if (round_.granted >= group_.quorum_ && round_.validity_ms > 0) {
    validity_ms_ = round_.validity_ms;
    return end(kOk);
  }
  // One hold of each member that granted it this round, and every hold of a member whose reply
  // was lost where the owner held nothing before (what landed is only this round's; kept and
  // sent again while the member is down, one per owner). No other: a refusal (kDeadlock), a
  // time-out or an error changed nothing; a grant not synced or arriving after its lease was
  // taken back already; and a lost reply where the owner held the member before is left to the
  // owner's last release (which takes every hold the server counts) or to the lease. Releasing
  // those would free a hold the owner had before the group's try.
  const int64_t owner = args_.thread_id;
  std::vector<const Lock*> granted;
  for (size_t i = 0; i < round_.outcomes.size(); ++i) {
    const Lock* m = group_.members_[i].get();
    const int code = round_.outcomes[i].code;
    if (code == kOk || (code == kConn && !m->is_held(owner))) granted.push_back(m);
  }
  phase_ = Phase::Releasing;
  on_members([owner, granted](Lock& m) -> int {
    if (std::find(granted.begin(), granted.end(), &m) == granted.end()) return kOk;
    return m.release(owner);
  });
}

void LockGroup::Wait::after_release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!have_outcomes_) return;
    have_outcomes_ = false;
    outcomes_.clear();
  }
  const Clock::time_point now = Clock::now();
  if (int rc = group_.after_shortfall(round_, wait_ms_ == 0 || now >= deadline_)) return end(rc);
  // Back off with jitter so competing callers do not collide round after round.
  phase_ = Phase::Sleeping;
  wake_at_ = wake_time(now, jittered(backoff_.next()), deadline_);
  sleep_until(wake_at_);
}

void LockGroup::Wait::end(int code) {
  if (finished_) return;
  finished_ = true;
  if (code == kOk && done_ && group_.waits_.cancelled()) {
    // Granted to an asynchronous acquire whose group handle was freed meanwhile: given back.
    const int64_t owner = args_.thread_id;
    for (const auto& m : group_.members_) m->release(owner);
    code = fail(kCanceled, "lock group: its handle was freed");
  }
  const std::string message = code != kOk ? last_error_message() : std::string();
  const bool transient = code != kOk && last_error_transient();
  by_group_.reset();
  by_token_.reset();
  outcome_ = code;
  done();
  if (done_) {
    deliver(code, message, transient, [&] { done_(code, code == kOk ? validity_ms_ : 0); });
    done_ = nullptr;
  }
}

int LockGroup::acquire(int64_t wait_ms, int64_t lease_ms, int64_t thread_id, CancelSet* cancel,
                       int64_t* validity_ms) {
  if (lease_ms == 0) lease_ms = kLeaseWatchdog;
  if (int rc = check_acquire(wait_ms, lease_ms, thread_id, cancel)) return rc;
  // Members run on other threads: they must all act for the caller's owner.
  const int64_t owner = thread_id == 0 ? current_thread_id() : thread_id;
  auto wait =
      std::make_shared<Wait>(*this, nullptr, wait_ms, lease_ms, owner, cancel, nullptr, nullptr);
  if (!members_.front()->client().engine().run_here(wait)) {
    return fail(kClosed, "lock group: client closed");
  }
  if (wait->outcome() == kOk && validity_ms != nullptr) *validity_ms = wait->validity_ms();
  return wait->outcome();
}

int LockGroup::acquire_async(int64_t wait_ms, int64_t lease_ms, int64_t thread_id,
                             std::shared_ptr<CancelSet> keep, Completion done) {
  if (!done) return fail(kInvalid, "lock group: no completion");
  if (lease_ms == 0) lease_ms = kLeaseWatchdog;
  CancelSet* cancel = keep.get();
  if (int rc = check_acquire(wait_ms, lease_ms, thread_id, cancel)) return rc;
  const int64_t owner = thread_id == 0 ? current_thread_id() : thread_id;
  auto wait = std::make_shared<Wait>(*this, shared_from_this(), wait_ms, lease_ms, owner, cancel,
                                     std::move(keep), std::move(done));
  if (!members_.front()->client().engine().start(wait)) {
    return fail(kClosed, "lock group: client closed");
  }
  return kOk;
}

const LockGroup::Outcome* LockGroup::telling_failure(const Outcomes& results) {
  const Outcome* first_failure = nullptr;
  for (const Outcome& r : results) {
    if (r.code != kOk &&
        (first_failure == nullptr || (first_failure->code == kNotHeld && r.code != kNotHeld))) {
      // A member never granted says "not held"; a failure to reach one says more.
      first_failure = &r;
    }
  }
  return first_failure;
}

int LockGroup::released(const Outcomes& results) const {
  size_t count = 0;
  for (const Outcome& r : results) count += r.code == kOk ? 1 : 0;
  const Outcome* first_failure = telling_failure(results);
  // A RedLock member that was down, or never granted, fails its release: that is expected.
  if (count >= quorum_) return kOk;
  if (first_failure == nullptr) return kOk;
  return fail(first_failure->code, "lock group release: " + std::to_string(count) + " of " +
                                       std::to_string(members_.size()) + " members released; " +
                                       first_failure->message);
}

int LockGroup::release(int64_t thread_id) {
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 (calling thread) or positive");
  const int64_t tid = thread_id == 0 ? current_thread_id() : thread_id;
  return released(on_members([tid](Lock& m) { return m.release(tid); }));
}

int LockGroup::release_async(int64_t thread_id, Completion done) {
  if (!done) return fail(kInvalid, "lock group: no completion");
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 (calling thread) or positive");
  const int64_t tid = thread_id == 0 ? current_thread_id() : thread_id;
  if (members_.front()->client().closed()) return fail(kClosed, "lock group: client closed");
  for_members([tid](Lock& m) { return m.release(tid); },
              [self = shared_from_this(), done = std::move(done)](const Outcomes& results) {
                const int code = self->released(results);
                // A failure's message is this thread's last error already.
                deliver(code, last_error_message(), last_error_transient(), [&] { done(code, 0); });
              },
              false);
  return kOk;
}

int LockGroup::extend(int64_t lease_ms, int64_t thread_id, bool reacquire, int64_t* validity_ms) {
  if (lease_ms <= 0 || lease_ms > kMaxDurationMs) {
    return fail(kInvalid, "lease_ms must be from 1 to " + std::to_string(kMaxDurationMs) +
                              " ms, got " + std::to_string(lease_ms));
  }
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 (calling thread) or positive");
  const int64_t tid = thread_id == 0 ? current_thread_id() : thread_id;
  const Clock::time_point start = Clock::now();
  const Outcomes results = on_members([tid, lease_ms, reacquire](Lock& m) {
    const int rc = m.extend(lease_ms, tid);
    if (rc == kOk || !reacquire || (rc != kLost && rc != kNotHeld)) return rc;
    AcquireArgs again;  // one try: a key another owner holds is not taken
    again.wait_ms = 0;
    again.lease_ms = lease_ms;
    again.thread_id = tid;
    return m.acquire(again);
  });
  const int64_t spent_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  size_t count = 0;
  for (const Outcome& r : results) count += r.code == kOk ? 1 : 0;
  if (count < quorum_) {
    const Outcome* failure = telling_failure(results);
    const int code = failure != nullptr ? failure->code : kInternal;
    return fail(code, "lock group extend: " + std::to_string(count) + " of " +
                          std::to_string(members_.size()) + " members extended, " +
                          std::to_string(quorum_) + " needed" +
                          (failure != nullptr ? "; " + failure->message : std::string()));
  }
  const int64_t validity = lease_ms - spent_ms - Holds::drift_ms(lease_ms);
  if (validity <= 0) {
    return fail(kLost, "lock group extend: took " + std::to_string(spent_ms) +
                           " ms, no time left of the " + std::to_string(lease_ms) + " ms lease");
  }
  if (validity_ms != nullptr) *validity_ms = validity;
  return kOk;
}

bool LockGroup::is_held(int64_t thread_id) const {
  if (thread_id < 0) return false;
  const int64_t tid = thread_id == 0 ? current_thread_id() : thread_id;
  size_t held = 0;
  for (const auto& m : members_) held += m->is_held(tid) ? 1 : 0;
  return held >= quorum_;
}

}  // namespace rlock::core
