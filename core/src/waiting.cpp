#include "waiting.hpp"

#include <new>

#include "one_step.hpp"
#include "rlock/core/error.hpp"

namespace rlock::core {

using Clock = std::chrono::steady_clock;

namespace {
int timed_out(const std::string& what, const PermitWait::Attempt& last) {
  return fail(kTimedOut,
              what + ": timed out" +
                  (last.missing ? " (the semaphore does not exist: set its permits first)" : ""));
}
}  // namespace

PermitWait::PermitWait(Setup setup) : Task(setup.client->engine_ptr()), s_(std::move(setup)) {}

void PermitWait::after_first(const Attempt& first, uint64_t mark) {
  last_ = first;
  mark_ = mark;
  phase_ = Phase::Subscribing;  // join() runs at the first step
}

int PermitWait::run_blocking(Setup setup) {
  Client& client = *setup.client;
  const uint64_t mark =
      setup.wait_ms != 0 ? client.subscriber_for(setup.channel).message_mark(setup.channel) : 0;
  Attempt first = setup.attempt();
  if (first.code == kOk) return kOk;
  if (!worth_retrying(first.code, first.transient)) return first.code;
  if (setup.wait_ms == 0 || Clock::now() >= setup.deadline) {
    return first.code == kTimedOut ? timed_out(setup.what, first) : first.code;
  }
  auto wait = std::make_shared<PermitWait>(std::move(setup));
  wait->after_first(first, mark);
  if (!client.engine().run_here(wait)) {
    return fail(kClosed, wait->s_.what + ": the client was closed");
  }
  return wait->outcome();
}

int PermitWait::start_async(Setup setup) {
  Client& client = *setup.client;
  auto wait = std::make_shared<PermitWait>(std::move(setup));
  if (!client.engine().start(wait)) {
    return fail(kClosed, wait->s_.what + ": the client was closed");
  }
  return kOk;
}

void PermitWait::step() {
  try {
    next_step();
  } catch (const Error& e) {
    end(fail(e.code(), s_.what + ": " + e.message(), e.transient()));
  } catch (const std::bad_alloc&) {
    end(fail(kNoMemory, s_.what + ": out of memory"));
  } catch (const std::exception& e) {
    end(fail(kInternal, std::string("internal error: ") + e.what()));
  }
}

void PermitWait::next_step() {
  if (finished_) return;
  if (closed_.load() || s_.client->closed()) {
    return end(fail(kClosed, s_.what + ": the client was closed"));
  }
  if (cancelled_.load()) return end(cancelled_code());
  if (!attached_) {
    attached_ = true;
    if (!by_handle_.attach(s_.handle_waits, this)) {
      return end(fail(kCanceled, s_.what + ": its handle was freed"));
    }
    if (!by_token_.attach(s_.token, this)) return end(fail(kCanceled, s_.what + ": cancelled"));
  }
  switch (phase_) {
    case Phase::Start: {
      mark_ = s_.wait_ms != 0 ? s_.client->subscriber_for(s_.channel).message_mark(s_.channel) : 0;
      last_ = s_.attempt();
      if (last_.code == kOk) return end(kOk);
      if (!worth_retrying(last_.code, last_.transient)) return end(last_.code);
      if (s_.wait_ms == 0 || Clock::now() >= s_.deadline) {
        return end(last_.code == kTimedOut ? timed_out(s_.what, last_) : last_.code);
      }
      return join();
    }
    case Phase::Subscribing:
      if (!waiter_) return join();
      if (waiter_->subscribed() || Clock::now() >= wake_at_) return attempt_loop();
      sleep_until(wake_at_);
      return;
    case Phase::Sleeping: {
      if (Clock::now() >= wake_at_) {
        waiter_->stop_sleeping();
        return attempt_loop();
      }
      bool polls = false;
      switch (waiter_->take_or_sleep(&polls)) {
        case Subscriber::Wake::Cancelled:
          return end(s_.client->closed() ? fail(kClosed, s_.what + ": the client was closed")
                                         : cancelled_code());
        case Subscriber::Wake::Signalled:
          return attempt_loop();
        case Subscriber::Wake::None:
          arm_timer(polls);
          return;
      }
    }
  }
}

// Listens on the channel, then tries again at once (a message published before the
// subscription took effect would be missed), unless the subscription was in place before the
// last attempt and no message has come since.
void PermitWait::join() {
  waiter_ = s_.client->subscriber_for(s_.channel).join(s_.channel, mark_, this);
  if (last_.code == kTimedOut && waiter_->nothing_missed()) {
    if (!go_to_sleep()) attempt_loop();
    return;
  }
  phase_ = Phase::Subscribing;
  wake_at_ = wake_time(Clock::now(), std::chrono::milliseconds(s_.client->config().poll_cap_ms),
                       s_.deadline);
  if (waiter_->subscribed()) return attempt_loop();
  sleep_until(wake_at_);
}

void PermitWait::attempt_loop() {
  for (;;) {
    last_ = s_.attempt();
    if (last_.code == kOk) {
      waiter_->satisfied();
      return end(kOk);
    }
    if (!worth_retrying(last_.code, last_.transient)) return end(last_.code);
    if (waiter_->moved()) {  // sharded pub/sub: the channel's slot moved; listen there
      waiter_.reset();
      mark_ = 0;
      return join();
    }
    if (Clock::now() >= s_.deadline) {
      return end(last_.code == kTimedOut ? timed_out(s_.what, last_) : last_.code);
    }
    if (go_to_sleep()) return;
  }
}

bool PermitWait::go_to_sleep() {
  phase_ = Phase::Sleeping;
  wake_at_ = Clock::time_point::max();
  bool polls = false;
  switch (waiter_->take_or_sleep(&polls)) {
    case Subscriber::Wake::Signalled:
      return false;
    case Subscriber::Wake::Cancelled:
      end(s_.client->closed() ? fail(kClosed, s_.what + ": the client was closed")
                              : cancelled_code());
      return true;
    case Subscriber::Wake::None:
      break;
  }
  if (last_.code == kTimedOut) {
    backoff_.reset();
  } else {  // transient: come back by itself (it may have used up a wake-up)
    wake_at_ = wake_time(Clock::now(), std::chrono::milliseconds(backoff_.next()), s_.deadline);
  }
  arm_timer(polls);
  return true;
}

void PermitWait::arm_timer(bool polls) {
  const Clock::time_point now = Clock::now();
  if (last_.code == kTimedOut) {
    // Messages wake waiters; the channel's poller also comes back after the poll cap (a
    // message may be lost), and every waiter when a held permit's lease runs out (Redis
    // announces no expiry: the next attempt gives the permit back).
    auto sleep = std::chrono::milliseconds::max();
    if (polls) sleep = std::chrono::milliseconds(s_.client->config().poll_cap_ms);
    if (last_.retry_in_ms >= 0) {
      sleep = std::min(sleep, std::chrono::milliseconds(last_.retry_in_ms));
    }
    const Clock::time_point until = sleep == std::chrono::milliseconds::max()
                                        ? s_.deadline
                                        : wake_time(now, sleep, s_.deadline);
    wake_at_ = std::min(wake_at_, until);
  }
  if (wake_at_ != Clock::time_point::max()) sleep_until(wake_at_);
}

int PermitWait::cancelled_code() {
  if (s_.client->closed()) return fail(kClosed, s_.what + ": the client was closed");
  return fail(kCanceled, s_.what + ": cancelled");
}

void PermitWait::end(int code) {
  if (finished_) return;
  finished_ = true;
  const std::string message = code != kOk ? last_error_message() : std::string();
  const bool transient = code != kOk && last_error_transient();
  waiter_.reset();
  by_handle_.reset();
  by_token_.reset();
  outcome_ = code;
  done();
  if (s_.finish) {
    deliver(code, message, transient, [&] { s_.finish(code); });
    s_.finish = nullptr;
  }
}

}  // namespace rlock::core
