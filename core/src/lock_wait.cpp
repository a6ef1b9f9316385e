// A waiting acquire: the lock's rule of the waiting state machine (waiting.hpp). Woken by
// unlock messages (a fair waiter: on a channel of its own), by its timer (a periodic retry, the
// holder's lease running out, a fair waiter's revisit, its deadline) and by cancellation; the
// spin lock only by its timer.
#include <atomic>
#include <chrono>

#include "kinds/kind.hpp"
#include "one_step.hpp"
#include "rlock/core/engine.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/timing.hpp"
#include "waiting.hpp"

namespace rlock::core {

using Clock = std::chrono::steady_clock;

class Lock::Wait final : public Waiting::Rule {
 public:
  // `keep_lock` (async) keeps the lock alive for the wait; a blocking caller holds it anyway.
  // `keep_cancel` owns args.cancel, `done` gets the outcome (async); both empty when blocking.
  Wait(Lock& lock, std::shared_ptr<Lock> keep_lock, const AcquireArgs& args, Plan plan,
       std::shared_ptr<CancelSet> keep_cancel, Completion done)
      : lock_(lock),
        keep_lock_(std::move(keep_lock)),
        args_(args),
        plan_(std::move(plan)),
        keep_cancel_(std::move(keep_cancel)),
        done_(std::move(done)),
        what_("acquiring lock " + printable(lock.name_)),
        spin_backoff_(lock.options_.spin_initial_ms, lock.options_.spin_max_ms) {}

  // The holder's lease (PTTL, whole milliseconds rounded down) ends one more after: the
  // channel's poller comes back then rather than just before it (which would cost another
  // trip, or a poll cap for a fair waiter).
  static Waiting::Try as_try(const Attempt& at) {
    return {at.code, at.pttl >= 0 ? at.pttl + 1 : -1, true, at.transient,
            at.code == kTimedOut && at.pttl < 0};
  }

  // An asynchronous acquire: when the call was made (its outcome is counted at the end).
  void started_at(Clock::time_point start) { started_ = start; }

  Client& client() override { return *lock_.client_; }
  const std::string& what() const override { return what_; }
  Clock::time_point deadline() const override { return plan_.wait_end; }
  CancelSet* handle_waits() override { return &lock_.waits_; }
  CancelSet* token() override { return args_.cancel; }
  int64_t poll_cap_ms() const override { return plan_.poll_cap_ms; }
  Subscriber& subscriber() override { return lock_.client_->subscriber_for(lock_.channel_); }
  std::string wake_channel() const override { return lock_.wake_channel(plan_); }
  // A fair waiter listens on a channel of its own: the client's waiters on the lock share one
  // periodic retry, the oldest's (in queue order, as they queued), so K of them cost one poll.
  Subscriber::Place place() const override {
    Subscriber::Place p;
    p.shared = lock_.kind_->layout() == HoldLayout::Read;
    if (wake_channel() != lock_.channel_) p.group = lock_.channel_;
    return p;
  }
  bool spins() const override { return lock_.kind_->spins(); }
  std::chrono::milliseconds spin_pause() override { return jittered(spin_backoff_.next()); }
  int64_t revisit_ms() const override { return lock_.kind_->revisit_ms(plan_.fair_allowance_ms); }

  bool first(Waiting::Try* at, uint64_t* mark, int* outcome) override {
    Attempt first{kTimedOut, -1};
    if (!lock_.first_attempt(args_, plan_, &first, mark, outcome)) return false;
    *at = as_try(first);
    return true;
  }
  Waiting::Try attempt() override { return as_try(lock_.try_acquire(plan_, true)); }
  int closed_code() override { return lock_.check_open(); }
  int timed_out(const Waiting::Try& last) override {
    return lock_.give_up(last.code, args_.wait_ms);
  }

  void waiting() override {
    if (Stats* stats = lock_.client_->stats(); stats != nullptr && !counted_waiting_) {
      counted_waiting_ = true;
      stats->waiters.fetch_add(1, std::memory_order_relaxed);
    }
  }

  int granted(Clock::time_point woken_at) override {
    Stats* stats = lock_.client_->stats();
    if (stats != nullptr && woken_at != Clock::time_point::min()) {
      stats->handoff.record(Clock::now() - woken_at);
    }
    return lock_.acquired(args_, plan_);
  }

  int settle(int code, bool waited) override {
    if (code == kOk && done_ && lock_.waits_.cancelled()) {
      // Granted to an asynchronous acquire whose handle was freed meanwhile: nobody can use or
      // release it through that handle, so it is given back.
      lock_.release_hold(plan_.thread_id, true);
      code = fail(kCanceled, what_ + ": its handle was freed");
    }
    token_ =
        code == kOk && plan_.fenced ? lock_.client_->holds().token(lock_.name_, plan_.owner) : 0;
    // A waiter that gives up leaves the queue, if any, keeping its failure's message.
    const std::string message = code != kOk ? last_error_message() : std::string();
    const bool transient = code != kOk && last_error_transient();
    if (code != kOk && waited) {
      lock_.leave_queue(plan_);
      set_last_error(code, message, transient);
    }
    return code;
  }

  void ended(int code) override {
    if (counted_waiting_) {
      if (Stats* stats = lock_.client_->stats())
        stats->waiters.fetch_sub(1, std::memory_order_relaxed);
    }
    // An asynchronous acquire is counted here, before its completion (a blocking one by its
    // caller).
    if (started_ != Clock::time_point::min()) lock_.ended(&plan_, started_, code);
  }

  void complete(int code, const std::string& message, bool transient) override {
    if (!done_) return;
    deliver(code, message, transient, [&] { done_(code, token_); });
    done_ = nullptr;
  }

 private:
  Lock& lock_;
  const std::shared_ptr<Lock> keep_lock_;
  const AcquireArgs args_;
  const Plan plan_;
  const std::shared_ptr<CancelSet> keep_cancel_;
  Completion done_;
  const std::string what_;
  Backoff spin_backoff_;  // the spin lock's retries
  int64_t token_ = 0;     // granted: the fencing token, for the completion
  Clock::time_point started_ = Clock::time_point::min();  // async: counted in ended()
  bool counted_waiting_ = false;                          // in Stats::waiters
};

// ---- Lock's entry points ----------------------------------------------------------------------

int Lock::acquire(const AcquireArgs& a) {
  const Clock::time_point start = Clock::now();
  Plan plan;
  if (int rc = make_plan(a, &plan)) return ended(nullptr, start, rc);
  Attempt at{kTimedOut, -1};
  uint64_t mark = 0;
  int outcome = kOk;
  if (!first_attempt(a, plan, &at, &mark, &outcome)) return ended(&plan, start, outcome);
  auto wait =
      std::make_shared<Waiting>(std::make_unique<Wait>(*this, nullptr, a, plan, nullptr, nullptr));
  wait->after_first(Wait::as_try(at), mark);
  if (!client_->engine().run_here(wait)) {  // the client is closing
    const int code = check_open();
    leave_queue(plan);
    return ended(&plan, start, code);
  }
  return ended(&plan, start, wait->outcome());
}

int Lock::acquire_async(const AcquireArgs& a, std::shared_ptr<CancelSet> keep, Completion done) {
  const Clock::time_point start = Clock::now();
  if (!done) return fail(kInvalid, "acquiring lock " + printable(name_) + ": no completion");
  Plan plan;
  if (int rc = make_plan(a, &plan)) return ended(nullptr, start, rc);
  auto rule = std::make_unique<Wait>(*this, shared_from_this(), a, std::move(plan), std::move(keep),
                                     std::move(done));
  rule->started_at(start);
  auto wait = std::make_shared<Waiting>(std::move(rule));
  if (!client_->engine().start(wait)) return ended(nullptr, start, check_open());
  return kOk;
}

int Lock::ended(const Plan* plan, Clock::time_point start, int code) {
  if (Stats* stats = client_->stats()) stats->acquire_ended(code, start);
  Events& events = client_->events();
  if (code == kOk && plan != nullptr && events.on()) {
    Event e;
    e.kind = Event::Acquired;
    e.name = name_;
    e.owner = plan->owner;
    e.thread_id = plan->thread_id;
    e.duration_us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    e.token = plan->fenced ? client_->holds().token(name_, plan->owner) : 0;
    events.emit(std::move(e));
  }
  return code;
}

int Lock::run_async(std::function<int()> body, Completion done) {
  if (!done) return fail(kInvalid, "lock " + printable(name_) + ": no completion");
  if (int c = check_open()) return c;
  auto task = std::make_shared<OneStep>(
      client_->engine_ptr(),
      [self = shared_from_this(), body = std::move(body), done = std::move(done)] {
        int code = kInternal;
        try {
          code = body();
        } catch (const Error& e) {
          code = fail(e.code(), e.message());
        } catch (const std::bad_alloc&) {
          code = fail(kNoMemory, "out of memory");
        } catch (const std::exception& e) {
          code = fail(kInternal, std::string("internal error: ") + e.what());
        }
        const std::string message = code != kOk ? last_error_message() : std::string();
        deliver(code, message, code != kOk && last_error_transient(), [&] { done(code, 0); });
      });
  if (!client_->engine().start(task)) return check_open();
  return kOk;
}

int Lock::release_async(int64_t thread_id, Completion done) {
  const int64_t owner = resolve_thread(thread_id);  // the caller's thread, not the library's
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 or positive");
  return run_async([this, owner] { return release(owner); }, std::move(done));
}

int Lock::extend_async(int64_t lease_ms, int64_t thread_id, Completion done) {
  const int64_t owner = resolve_thread(thread_id);
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 or positive");
  if (lease_ms <= 0 || lease_ms > kMaxDurationMs) {
    return fail(kInvalid, "lease_ms must be from 1 to " + std::to_string(kMaxDurationMs) +
                              " ms, got " + std::to_string(lease_ms));
  }
  return run_async([this, owner, lease_ms] { return extend(lease_ms, owner); }, std::move(done));
}

}  // namespace rlock::core
