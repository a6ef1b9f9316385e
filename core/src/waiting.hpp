// A waiting acquire (lock, semaphore) or latch await, as a task of the client's waiting engine:
// tries, and while the try says "not yet" (kTimedOut) sleeps until a message on its channel, a
// retry time the try gave (a holder's lease or a permit's lease running out), the channel's
// periodic retry (one waiter per channel polls), a fair waiter's revisit or its deadline; ends
// early when cancelled or when the client closes. Blocking calls run the steps on the caller's
// thread (Engine::run_here), asynchronous ones on a library thread.
//
// What differs per primitive (the attempt, which channel wakes it, what a grant and a failure
// mean, giving back a grant that came too late) is its Waiting::Rule: Lock::Wait (lock_wait.cpp)
// and PermitWait (below).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "rlock/core/cancel.hpp"
#include "rlock/core/client.hpp"
#include "rlock/core/engine.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/semaphore.hpp"
#include "rlock/core/subscriber.hpp"
#include "rlock/core/timing.hpp"

namespace rlock::core {

class Waiting final : public Engine::Task, public Cancellable, public Subscriber::WakeTarget {
 public:
  using Clock = std::chrono::steady_clock;

  // One attempt's result, as the wait reads it.
  struct Try {
    int code;                       // kOk, kTimedOut (not yet) or a failure
    int64_t retry_ms = -1;          // come back after this long (-1: no need)
    bool retry_polls_only = false;  // retry_ms is for the channel's poller only
    bool transient = false;
    bool free = false;  // not granted though nobody holds it (a fair queue: another's turn)
  };

  class Rule {
   public:
    virtual ~Rule() = default;
    virtual Client& client() = 0;
    // "acquiring lock 'a'", for messages.
    virtual const std::string& what() const = 0;
    virtual Clock::time_point deadline() const = 0;
    virtual CancelSet* handle_waits() = 0;  // the object's waits (freed handle, cancel_waits)
    virtual CancelSet* token() = 0;         // the call's cancel token, or null
    virtual int64_t poll_cap_ms() const = 0;
    // The call's first attempt: true when it must wait, with the subscription mark taken before
    // it; else false with the outcome.
    virtual bool first(Try* at, uint64_t* mark, int* outcome) = 0;
    virtual Try attempt() = 0;
    // The subscriber and channel whose messages wake this waiter.
    virtual Subscriber& subscriber() = 0;
    virtual std::string wake_channel() const = 0;
    // How it listens there: shared mode, poll group (Subscriber::Place).
    virtual Subscriber::Place place() const { return {}; }
    // Retries by its own backoff instead of listening (the spin lock), pausing spin_pause().
    virtual bool spins() const { return false; }
    virtual std::chrono::milliseconds spin_pause() { return std::chrono::milliseconds(0); }
    // A waiter must try again at least this often (a fair lock's place; 0: no such need).
    virtual int64_t revisit_ms() const { return 0; }
    virtual int closed_code() = 0;  // the client was closed: records why, returns kClosed
    virtual int timed_out(const Try& last) = 0;  // the deadline passed after `last`
    // Called once when the wait starts waiting (after a first attempt that said "not yet").
    virtual void waiting() {}
    // Granted: the call's outcome. `woken_at`: when the message that woke this attempt came
    // (min: none did).
    virtual int granted(Clock::time_point /*woken_at*/) { return kOk; }
    // The wait ends with `code` (`waited`: it took part in waiting): gives back a grant nobody
    // can use, leaves a queue; returns the outcome. The failure's message is kept.
    virtual int settle(int code, bool /*waited*/) { return code; }
    // Before the task is done: counts the outcome.
    virtual void ended(int /*code*/) {}
    // After: hands the outcome to an asynchronous call's completion (see deliver).
    virtual void complete(int /*code*/, const std::string& /*message*/, bool /*transient*/) {}
  };

  explicit Waiting(std::unique_ptr<Rule> rule);

  // A blocking call whose first attempt (made after taking `mark`) said "not yet".
  void after_first(const Try& first, uint64_t mark);
  int outcome() const { return outcome_; }
  Rule& rule() { return *rule_; }

  void step() override;
  void close() override {
    closed_.store(true);
    wake();
  }
  void cancel() override {  // Cancellable: a cancel token, cancel_waits, the handle freed
    cancelled_.store(true);
    wake();
  }
  void wake_up() override { wake(); }  // the subscriber: a message, confirmation, move

 private:
  enum class Phase { Start, Join, Subscribing, Sleeping };
  void next_step();
  void start();
  bool attach_cancels();
  void join();
  void await_subscription();
  void subscribing();
  void sleeping();
  // Attempts until one succeeds, fails for good, or the waiter must sleep.
  void attempt_loop();
  // After a failed attempt: sleeps (true), or false when a wake-up is already there.
  bool go_to_sleep(const Try& at);
  // Sets the timer from the last attempt; `polls`: this waiter keeps the periodic retry.
  void arm_timer(bool polls);
  void listen_again();  // the channel's slot moved (sharded pub/sub)
  int cancelled_code();
  void end(int code);

  const std::unique_ptr<Rule> rule_;
  const Clock::time_point deadline_;
  Phase phase_ = Phase::Start;
  Try last_{kTimedOut};
  uint64_t mark_ = 0;
  std::unique_ptr<Subscriber::Waiter> waiter_;
  CancelRegistration by_handle_;
  CancelRegistration by_token_;
  bool cancels_attached_ = false;
  bool waiting_ = false;       // took part in waiting (Rule::waiting ran)
  Backoff backoff_{20, 1000};  // after transient failures
  Clock::time_point wake_at_ = Clock::time_point::max();
  // When the message behind the current attempt arrived (min: none), for the handoff histogram.
  Clock::time_point woken_by_message_ = Clock::time_point::min();
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> closed_{false};
  bool finished_ = false;
  int outcome_ = kOk;
};

// A semaphore acquire or latch await: simpler than a lock's wait (no queue, no owner, no
// fencing).
class PermitWait {
 public:
  using Attempt = Semaphore::Attempt;
  struct Setup {
    std::shared_ptr<Client> client;
    std::shared_ptr<void> keep_alive;  // the semaphore or latch, for an asynchronous call
    std::string channel;
    std::string what;  // "acquiring 2 permits of semaphore 'jobs'", for messages
    SteadyClock::time_point deadline;
    int64_t wait_ms;
    CancelSet* handle_waits;  // the object's cancel_waits/close_waits
    CancelSet* token;         // optional
    std::shared_ptr<CancelSet> keep_token;
    std::function<Attempt()> attempt;
    // Runs once when the wait ends (kOk, kTimedOut, kCanceled, kClosed or a failure), after
    // the task is done, with the failure's message as the thread's last error.
    std::function<void(int code)> finish;
  };

  // Runs a whole wait: the first attempt on the calling thread, then (if it must wait and
  // setup.wait_ms allows) the task on this thread. Returns the outcome; `finish` is not used.
  static int run_blocking(Setup setup);
  // Starts the wait on a library thread; kOk when started (finish then runs exactly once).
  static int start_async(Setup setup);
};

}  // namespace rlock::core
