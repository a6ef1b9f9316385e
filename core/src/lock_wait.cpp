// A waiting acquire, as a task of the client's waiting engine (engine.hpp): woken by unlock
// messages, by its timer (a periodic retry, the holder's lease running out, a fair waiter's
// revisit, its deadline) and by cancellation. Blocking acquires and asynchronous ones run this
// same code; a blocking caller runs the steps on its own thread.
#include <atomic>
#include <chrono>
#include <new>

#include "kinds/kind.hpp"
#include "one_step.hpp"
#include "rlock/core/engine.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/timing.hpp"

namespace rlock::core {
namespace {

using Clock = std::chrono::steady_clock;

// Backoff after transient failures (a connection lost, a server loading).
constexpr int64_t kMinBackoffMs = 20;
constexpr int64_t kMaxBackoffMs = 1000;

}  // namespace

class Lock::Wait final : public Engine::Task, public Cancellable, public Subscriber::WakeTarget {
 public:
  // `keep_lock` (async) keeps the lock alive for the wait; a blocking caller holds it anyway.
  // `keep_cancel` owns args.cancel, `done` gets the outcome (async); both empty when blocking.
  Wait(Lock& lock, std::shared_ptr<Lock> keep_lock, const AcquireArgs& args, Plan plan,
       std::shared_ptr<CancelSet> keep_cancel, Completion done)
      : Task(lock.client_->engine_ptr()),
        lock_(lock),
        keep_lock_(std::move(keep_lock)),
        args_(args),
        plan_(std::move(plan)),
        keep_cancel_(std::move(keep_cancel)),
        done_(std::move(done)),
        deadline_(plan_.wait_end),
        backoff_(kMinBackoffMs, kMaxBackoffMs),
        spin_backoff_(lock.options_.spin_initial_ms, lock.options_.spin_max_ms) {}

  // A blocking acquire: its first attempt `first` (made after taking `mark`) failed; it waits.
  // An asynchronous acquire: when the call was made (its outcome is counted at the end).
  void started_at(Clock::time_point start) { started_ = start; }

  void after_first(Attempt first, uint64_t mark) {
    last_ = first;
    mark_ = mark;
    phase_ = Phase::Join;
    waited_ = true;  // that attempt may have queued (fair lock): any failure now leaves
  }
  int outcome() const { return outcome_; }

  void step() override {
    try {
      next_step();
    } catch (const Error& e) {
      end(fail(e.code(), "acquiring lock " + printable(lock_.name_) + ": " + e.message()));
    } catch (const std::bad_alloc&) {
      end(fail(kNoMemory, "acquiring lock " + printable(lock_.name_) + ": out of memory"));
    } catch (const std::exception& e) {
      end(fail(kInternal, std::string("internal error: ") + e.what()));
    }
  }
  void close() override {
    closed_.store(true);
    wake();
  }
  void cancel() override {  // Cancellable: a cancel token, rlock_cancel, the handle freed
    cancelled_.store(true);
    wake();
  }
  void wake_up() override { wake(); }  // the subscriber: a message, confirmation, move

 private:
  enum class Phase { Start, Join, Subscribing, Sleeping };

  void next_step();
  void start();
  void join();
  void subscribing();
  void sleeping();
  // Attempts until one succeeds, fails for good, or the waiter must sleep.
  void attempt_loop();
  // After a failed attempt: sleeps (true), or false when a wake-up is already there.
  bool go_to_sleep(const Attempt& at);
  // Sets the timer from the last attempt; `polls`: this waiter keeps the periodic retry.
  void arm_timer(bool polls);
  void listen_again();  // the channel's slot moved (sharded pub/sub)
  bool attach_cancels();
  int cancelled_code();
  void end(int code);

  Lock& lock_;
  const std::shared_ptr<Lock> keep_lock_;
  const AcquireArgs args_;
  const Plan plan_;
  const std::shared_ptr<CancelSet> keep_cancel_;
  Completion done_;
  const Clock::time_point deadline_;
  Phase phase_ = Phase::Start;
  Attempt last_{kTimedOut, -1};
  uint64_t mark_ = 0;
  std::unique_ptr<Subscriber::Waiter> waiter_;
  CancelRegistration by_handle_;
  CancelRegistration by_token_;
  bool cancels_attached_ = false;
  Backoff backoff_;       // after transient failures
  Backoff spin_backoff_;  // the spin lock's retries
  Clock::time_point wake_at_ = Clock::time_point::max();
  bool waited_ = false;  // took part in waiting: a failure leaves the fair queue
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> closed_{false};
  bool finished_ = false;
  int outcome_ = kOk;
  Clock::time_point started_ = Clock::time_point::min();  // async: counted in end()
  bool counted_waiting_ = false;                          // in Stats::waiters
  // When the unlock message behind the current attempt arrived (min: the attempt was not
  // woken by one), for the handoff histogram.
  Clock::time_point woken_by_message_ = Clock::time_point::min();
};

void Lock::Wait::next_step() {
  if (finished_) return;
  if (closed_.load() || lock_.client_->closed()) return end(lock_.check_open());
  if (cancelled_.load()) return end(cancelled_code());
  switch (phase_) {
    case Phase::Start:
      return start();
    case Phase::Join:
      return join();
    case Phase::Subscribing:
      return subscribing();
    case Phase::Sleeping:
      return sleeping();
  }
}

// An asynchronous acquire's first step: its first attempt, on a library thread.
void Lock::Wait::start() {
  if (!attach_cancels()) return;
  int outcome = kOk;
  if (!lock_.first_attempt(args_, plan_, &last_, &mark_, &outcome)) return end(outcome);
  waited_ = true;
  join();
}

bool Lock::Wait::attach_cancels() {
  if (cancels_attached_) return true;
  cancels_attached_ = true;
  if (!by_handle_.attach(&lock_.waits_, this)) {
    end(fail(kCanceled, "acquiring lock " + printable(lock_.name_) + ": its handle was freed"));
    return false;
  }
  if (!by_token_.attach(args_.cancel, this)) {
    end(fail(kCanceled, "acquiring lock " + printable(lock_.name_) + ": cancelled"));
    return false;
  }
  return true;
}

// Starts waiting after a failed first attempt: listens on the wake channel, then tries again at
// once (an unlock published before the subscription took effect would otherwise be missed),
// unless the subscription was in place before that attempt and no message has come since.
void Lock::Wait::join() {
  if (!attach_cancels()) return;
  if (Stats* stats = lock_.client_->stats(); stats != nullptr && !counted_waiting_) {
    counted_waiting_ = true;
    stats->waiters.fetch_add(1, std::memory_order_relaxed);
  }
  if (lock_.kind_->spins()) {
    go_to_sleep(last_);
    return;
  }
  waiter_ =
      lock_.client_->subscriber_for(lock_.channel_).join(lock_.wake_channel(plan_), mark_, this);
  if (last_.code == kTimedOut && waiter_->nothing_missed()) {
    if (!go_to_sleep(last_)) attempt_loop();
    return;
  }
  phase_ = Phase::Subscribing;
  const auto poll_cap = std::chrono::milliseconds(plan_.poll_cap_ms);
  wake_at_ = wake_time(Clock::now(), poll_cap, deadline_);
  subscribing();
}

void Lock::Wait::subscribing() {
  if (waiter_->subscribed() || Clock::now() >= wake_at_) return attempt_loop();
  sleep_until(wake_at_);
}

void Lock::Wait::sleeping() {
  const bool due = Clock::now() >= wake_at_;
  if (!waiter_) {  // the spin lock: only its timer matters
    if (due) return attempt_loop();
    sleep_until(wake_at_);
    return;
  }
  if (due) {
    waiter_->stop_sleeping();
    return attempt_loop();
  }
  bool polls = false;
  switch (waiter_->take_or_sleep(&polls, &woken_by_message_)) {
    case Subscriber::Wake::Cancelled:
      return end(lock_.check_open() != kOk ? kClosed : cancelled_code());
    case Subscriber::Wake::Signalled:
      return attempt_loop();
    case Subscriber::Wake::None:
      arm_timer(polls);  // woken for no message: maybe to take over the periodic retry
      return;
  }
}

void Lock::Wait::attempt_loop() {
  for (;;) {
    const Attempt at = lock_.try_acquire(plan_, true);
    if (at.code == kOk) {
      if (waiter_) waiter_->satisfied();
      Stats* stats = lock_.client_->stats();
      if (stats != nullptr && woken_by_message_ != Clock::time_point::min()) {
        stats->handoff.record(Clock::now() - woken_by_message_);
      }
      return end(lock_.acquired(args_, plan_));
    }
    if (!worth_retrying(at.code, at.transient)) return end(at.code);
    if (waiter_ && waiter_->moved()) {
      last_ = at;
      return listen_again();
    }
    if (Clock::now() >= deadline_) return end(lock_.give_up(at.code, args_.wait_ms));
    if (go_to_sleep(at)) return;
  }
}

bool Lock::Wait::go_to_sleep(const Attempt& at) {
  last_ = at;
  phase_ = Phase::Sleeping;
  woken_by_message_ = Clock::time_point::min();  // that message's attempt failed
  wake_at_ = Clock::time_point::max();
  const Clock::time_point now = Clock::now();
  if (!waiter_) {
    wake_at_ = wake_time(now, jittered(spin_backoff_.next()), deadline_);
    sleep_until(wake_at_);
    return true;
  }
  bool polls = false;
  switch (waiter_->take_or_sleep(&polls, &woken_by_message_)) {
    case Subscriber::Wake::Signalled:
      return false;
    case Subscriber::Wake::Cancelled:
      end(lock_.check_open() != kOk ? kClosed : cancelled_code());
      return true;
    case Subscriber::Wake::None:
      break;
  }
  if (at.code == kTimedOut) {
    backoff_.reset();
  } else {
    // A transient failure: every waiter that met one comes back by itself (it may have used
    // up a wake-up message).
    wake_at_ = wake_time(now, std::chrono::milliseconds(backoff_.next()), deadline_);
  }
  arm_timer(polls);
  return true;
}

void Lock::Wait::arm_timer(bool polls) {
  const Clock::time_point now = Clock::now();
  if (last_.code == kTimedOut) {
    // Sleep until a wake-up message. The waiter that polls comes back after the poll cap or
    // when the holder's lease runs out, whichever is first; the others rely on it and on
    // messages. A queued waiter (fair lock) comes back in time to keep its place.
    auto sleep = std::chrono::milliseconds::max();
    if (polls) {
      sleep = std::chrono::milliseconds(plan_.poll_cap_ms);
      // PTTL is whole milliseconds, rounded down: one more lands after the lease, not just
      // before it (which would cost another trip, or a poll cap for a fair waiter).
      if (last_.pttl >= 0) sleep = std::min(sleep, std::chrono::milliseconds(last_.pttl + 1));
    }
    if (int64_t revisit_ms = lock_.kind_->revisit_ms(plan_.fair_allowance_ms)) {
      sleep = std::min(sleep, std::chrono::milliseconds(revisit_ms));
    }
    const Clock::time_point until =
        sleep == std::chrono::milliseconds::max() ? deadline_ : wake_time(now, sleep, deadline_);
    wake_at_ = std::min(wake_at_, until);
  }
  if (wake_at_ != Clock::time_point::max()) sleep_until(wake_at_);
}

// Sharded pub/sub: the channel's slot went to another node. Listen there, then try again (an
// unlock may have been published while nobody listened).
void Lock::Wait::listen_again() {
  waiter_.reset();
  waiter_ = lock_.client_->subscriber_for(lock_.channel_).join(lock_.wake_channel(plan_), 0, this);
  phase_ = Phase::Subscribing;
  const auto poll_cap = std::chrono::milliseconds(plan_.poll_cap_ms);
  wake_at_ = wake_time(Clock::now(), poll_cap, deadline_);
  subscribing();
}

int Lock::Wait::cancelled_code() {
  if (lock_.client_->closed()) return lock_.check_open();
  return fail(kCanceled, "acquiring lock " + printable(lock_.name_) + ": cancelled");
}

void Lock::Wait::end(int code) {
  if (finished_) return;
  finished_ = true;
  if (code == kOk && done_ && lock_.waits_.cancelled()) {
    // Granted to an asynchronous acquire whose handle was freed meanwhile: nobody can use or
    // release it through that handle, so it is given back.
    lock_.release_hold(plan_.thread_id, true);
    code = fail(kCanceled, "acquiring lock " + printable(lock_.name_) + ": its handle was freed");
  }
  const int64_t value =
      code == kOk && plan_.fenced ? lock_.client_->holds().token(lock_.name_, plan_.owner) : 0;
  const std::string message = code != kOk ? last_error_message() : std::string();
  const bool transient = code != kOk && last_error_transient();
  if (code != kOk && waited_) {
    lock_.leave_queue(plan_);
    set_last_error(code, message, transient);
  }
  waiter_.reset();
  by_handle_.reset();
  by_token_.reset();
  outcome_ = code;
  if (counted_waiting_) {
    if (Stats* stats = lock_.client_->stats())
      stats->waiters.fetch_sub(1, std::memory_order_relaxed);
  }
  // An asynchronous acquire is counted here, before its completion (a blocking one by its caller).
  if (started_ != Clock::time_point::min()) lock_.ended(&plan_, started_, code);
  done();
  if (done_) {
    deliver(code, message, transient, [&] { done_(code, value); });
    done_ = nullptr;
  }
}

// ---- Lock's entry points ----------------------------------------------------------------------

int Lock::acquire(const AcquireArgs& a) {
  const Clock::time_point start = Clock::now();
  Plan plan;
  if (int rc = make_plan(a, &plan)) return ended(nullptr, start, rc);
  Attempt at{kTimedOut, -1};
  uint64_t mark = 0;
  int outcome = kOk;
  if (!first_attempt(a, plan, &at, &mark, &outcome)) return ended(&plan, start, outcome);
  auto wait = std::make_shared<Wait>(*this, nullptr, a, plan, nullptr, nullptr);
  wait->after_first(at, mark);
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
  auto wait = std::make_shared<Wait>(*this, shared_from_this(), a, std::move(plan), std::move(keep),
                                     std::move(done));
  wait->started_at(start);
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
