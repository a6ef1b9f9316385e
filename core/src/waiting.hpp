// A waiting semaphore acquire or latch await, as a task of the client's waiting engine: tries,
// and while the try says "not yet" (kTimedOut) sleeps until a message on its channel, the
// retry time the try gave (an expirable permit's lease running out), the channel's periodic
// retry (one waiter per channel polls) or its deadline. Simpler than a lock's wait: no queue,
// no owner, no fencing. Blocking calls run the steps on the caller's thread (run_here).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "rlock/core/cancel.hpp"
#include "rlock/core/client.hpp"
#include "rlock/core/engine.hpp"
#include "rlock/core/semaphore.hpp"
#include "rlock/core/subscriber.hpp"
#include "rlock/core/timing.hpp"

namespace rlock::core {

class PermitWait final : public Engine::Task, public Cancellable, public Subscriber::WakeTarget {
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
    // Runs once when the wait ends (kOk, kTimedOut, kCanceled, kClosed or a failure), before
    // the task is done, with the failure's message as the thread's last error.
    std::function<void(int code)> finish;
  };

  explicit PermitWait(Setup setup);

  // A blocking call whose first attempt (made after taking `mark`) said "not yet".
  void after_first(const Attempt& first, uint64_t mark);
  int outcome() const { return outcome_; }

  void step() override;
  void close() override {
    closed_.store(true);
    wake();
  }
  void cancel() override {
    cancelled_.store(true);
    wake();
  }
  void wake_up() override { wake(); }

  // Runs a whole wait: the first attempt on the calling thread, then (if it must wait and
  // setup.wait_ms allows) the task on this thread. Returns the outcome; `finish` is not used.
  static int run_blocking(Setup setup);
  // Starts the wait on a library thread; kOk when started (finish then runs exactly once).
  static int start_async(Setup setup);

 private:
  enum class Phase { Start, Subscribing, Sleeping };
  void next_step();
  void join();
  void attempt_loop();
  bool go_to_sleep();
  void arm_timer(bool polls);
  int cancelled_code();
  void end(int code);

  Setup s_;
  Phase phase_ = Phase::Start;
  Attempt last_{kTimedOut};
  uint64_t mark_ = 0;
  std::unique_ptr<Subscriber::Waiter> waiter_;
  CancelRegistration by_handle_;
  CancelRegistration by_token_;
  bool attached_ = false;
  Backoff backoff_{20, 1000};
  SteadyClock::time_point wake_at_ = SteadyClock::time_point::max();
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> closed_{false};
  bool finished_ = false;
  int outcome_ = kOk;
};

}  // namespace rlock::core
