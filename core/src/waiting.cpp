#include "waiting.hpp"

#include <algorithm>
#include <new>

#include "one_step.hpp"
#include "rlock/core/error.hpp"

namespace rlock::core {

using Clock = std::chrono::steady_clock;

Waiting::Waiting(std::unique_ptr<Rule> rule)
    : Task(rule->client().engine_ptr()), rule_(std::move(rule)), deadline_(rule_->deadline()) {}

void Waiting::after_first(const Try& first, uint64_t mark) {
  last_ = first;
  mark_ = mark;
  phase_ = Phase::Join;
  waiting_ = true;  // that attempt may have queued (fair lock): any failure now leaves
}

void Waiting::step() {
  try {
    next_step();
  } catch (const Error& e) {
    end(fail(e.code(), rule_->what() + ": " + e.message(), e.transient()));
  } catch (const std::bad_alloc&) {
    end(fail(kNoMemory, rule_->what() + ": out of memory"));
  } catch (const std::exception& e) {
    end(fail(kInternal, std::string("internal error: ") + e.what()));
  }
}

void Waiting::next_step() {
  if (finished_) return;
  if (closed_.load() || rule_->client().closed()) return end(rule_->closed_code());
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

// An asynchronous call's first step: its first attempt, on a library thread.
void Waiting::start() {
  if (!attach_cancels()) return;
  int outcome = kOk;
  if (!rule_->first(&last_, &mark_, &outcome)) return end(outcome);
  waiting_ = true;
  join();
}

bool Waiting::attach_cancels() {
  if (cancels_attached_) return true;
  cancels_attached_ = true;
  if (!by_handle_.attach(rule_->handle_waits(), this)) {
    end(fail(kCanceled, rule_->what() + ": its handle was freed"));
    return false;
  }
  if (!by_token_.attach(rule_->token(), this)) {
    end(fail(kCanceled, rule_->what() + ": cancelled"));
    return false;
  }
  return true;
}

// Starts waiting after a failed first attempt: listens on the wake channel, then tries again at
// once (a message published before the subscription took effect would otherwise be missed),
// unless the subscription was in place before that attempt and no message has come since.
void Waiting::join() {
  if (!attach_cancels()) return;
  rule_->waiting();
  if (rule_->spins()) {
    go_to_sleep(last_);
    return;
  }
  waiter_ = rule_->subscriber().join(rule_->wake_channel(), mark_, this, rule_->place());
  if (last_.code == kTimedOut && waiter_->nothing_missed()) {
    if (!go_to_sleep(last_)) attempt_loop();
    return;
  }
  await_subscription();
}

// Tries again once the subscription is in place, or after the poll cap if it never is.
void Waiting::await_subscription() {
  phase_ = Phase::Subscribing;
  wake_at_ = wake_time(Clock::now(), std::chrono::milliseconds(rule_->poll_cap_ms()), deadline_);
  subscribing();
}

void Waiting::subscribing() {
  if (waiter_->subscribed() || Clock::now() >= wake_at_) return attempt_loop();
  sleep_until(wake_at_);
}

void Waiting::sleeping() {
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
      return end(cancelled_code());
    case Subscriber::Wake::Signalled:
      return attempt_loop();
    case Subscriber::Wake::None:
      arm_timer(polls);  // woken for no message: maybe to take over the periodic retry
      return;
  }
}

void Waiting::attempt_loop() {
  for (;;) {
    const Try at = rule_->attempt();
    if (at.code == kOk) {
      if (waiter_) waiter_->satisfied();
      return end(rule_->granted(woken_by_message_));
    }
    if (!worth_retrying(at.code, at.transient)) return end(at.code);
    if (at.free && waiter_) waiter_->pass_turn();
    if (waiter_ && waiter_->moved()) {
      last_ = at;
      return listen_again();
    }
    if (Clock::now() >= deadline_) return end(rule_->timed_out(at));
    if (go_to_sleep(at)) return;
  }
}

bool Waiting::go_to_sleep(const Try& at) {
  last_ = at;
  phase_ = Phase::Sleeping;
  woken_by_message_ = Clock::time_point::min();  // that message's attempt failed
  wake_at_ = Clock::time_point::max();
  const Clock::time_point now = Clock::now();
  if (!waiter_) {
    wake_at_ = wake_time(now, rule_->spin_pause(), deadline_);
    sleep_until(wake_at_);
    return true;
  }
  bool polls = false;
  switch (waiter_->take_or_sleep(&polls, &woken_by_message_)) {
    case Subscriber::Wake::Signalled:
      return false;
    case Subscriber::Wake::Cancelled:
      end(cancelled_code());
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

void Waiting::arm_timer(bool polls) {
  const Clock::time_point now = Clock::now();
  if (last_.code == kTimedOut) {
    // Sleep until a wake-up message. The waiter that polls comes back after the poll cap (a
    // message may be lost); the others rely on it and on messages. The attempt's retry time
    // (a lease running out: Redis announces no expiry) is for the poller or for everyone, as
    // the attempt says; a queued waiter (fair lock) comes back in time to keep its place.
    auto sleep = std::chrono::milliseconds::max();
    if (polls) sleep = std::chrono::milliseconds(rule_->poll_cap_ms());
    if (last_.retry_ms >= 0 && (polls || !last_.retry_polls_only)) {
      sleep = std::min(sleep, std::chrono::milliseconds(last_.retry_ms));
    }
    if (int64_t revisit_ms = rule_->revisit_ms()) {
      sleep = std::min(sleep, std::chrono::milliseconds(revisit_ms));
    }
    const Clock::time_point until =
        sleep == std::chrono::milliseconds::max() ? deadline_ : wake_time(now, sleep, deadline_);
    wake_at_ = std::min(wake_at_, until);
  }
  if (wake_at_ != Clock::time_point::max()) sleep_until(wake_at_);
}

// Sharded pub/sub: the channel's slot went to another node. Listen there, then try again (a
// message may have been published while nobody listened).
void Waiting::listen_again() {
  waiter_.reset();
  waiter_ = rule_->subscriber().join(rule_->wake_channel(), 0, this, rule_->place());
  await_subscription();
}

int Waiting::cancelled_code() {
  if (rule_->client().closed()) return rule_->closed_code();
  return fail(kCanceled, rule_->what() + ": cancelled");
}

void Waiting::end(int code) {
  if (finished_) return;
  finished_ = true;
  code = rule_->settle(code, waiting_);
  const std::string message = code != kOk ? last_error_message() : std::string();
  const bool transient = code != kOk && last_error_transient();
  waiter_.reset();
  by_handle_.reset();
  by_token_.reset();
  outcome_ = code;
  rule_->ended(code);
  done();
  rule_->complete(code, message, transient);
}

// ---- semaphores and latches -------------------------------------------------------------------

namespace {

class PermitRule final : public Waiting::Rule {
 public:
  explicit PermitRule(PermitWait::Setup setup) : s_(std::move(setup)) {}

  Client& client() override { return *s_.client; }
  const std::string& what() const override { return s_.what; }
  Clock::time_point deadline() const override { return s_.deadline; }
  CancelSet* handle_waits() override { return s_.handle_waits; }
  CancelSet* token() override { return s_.token; }
  int64_t poll_cap_ms() const override { return s_.client->config().poll_cap_ms; }
  Subscriber& subscriber() override { return s_.client->subscriber_for(s_.channel); }
  std::string wake_channel() const override { return s_.channel; }

  bool first(Waiting::Try* at, uint64_t* mark, int* outcome) override {
    *mark = s_.wait_ms != 0 ? subscriber().message_mark(s_.channel) : 0;
    *at = attempt();
    if (at->code == kOk) {
      *outcome = kOk;
      return false;
    }
    if (!worth_retrying(at->code, at->transient)) {
      *outcome = at->code;
      return false;
    }
    if (s_.wait_ms == 0 || Clock::now() >= s_.deadline) {
      *outcome = at->code == kTimedOut ? timed_out(*at) : at->code;
      return false;
    }
    return true;
  }

  // An expirable permit's lease running out wakes every waiter: the next attempt gives it back.
  Waiting::Try attempt() override {
    last_ = s_.attempt();
    return {last_.code, last_.retry_in_ms, false, last_.transient};
  }

  int closed_code() override { return fail(kClosed, s_.what + ": the client was closed"); }
  int timed_out(const Waiting::Try& last) override {
    if (last.code != kTimedOut) return last.code;  // its message is already recorded
    return fail(
        kTimedOut,
        s_.what + ": timed out" +
            (last_.missing ? " (the semaphore does not exist: set its permits first)" : ""));
  }
  void complete(int code, const std::string& message, bool transient) override {
    if (!s_.finish) return;
    deliver(code, message, transient, [&] { s_.finish(code); });
    s_.finish = nullptr;
  }

 private:
  PermitWait::Setup s_;
  PermitWait::Attempt last_{kTimedOut};
};

}  // namespace

int PermitWait::run_blocking(Setup setup) {
  auto rule = std::make_unique<PermitRule>(std::move(setup));
  Waiting::Try first{kTimedOut};
  uint64_t mark = 0;
  int outcome = kOk;
  if (!rule->first(&first, &mark, &outcome)) return outcome;
  Client& client = rule->client();
  auto wait = std::make_shared<Waiting>(std::move(rule));
  wait->after_first(first, mark);
  if (!client.engine().run_here(wait)) return wait->rule().closed_code();
  return wait->outcome();
}

int PermitWait::start_async(Setup setup) {
  auto rule = std::make_unique<PermitRule>(std::move(setup));
  Client& client = rule->client();
  auto wait = std::make_shared<Waiting>(std::move(rule));
  if (!client.engine().start(wait)) return wait->rule().closed_code();
  return kOk;
}

}  // namespace rlock::core
