// The client's waiting engine. An operation that waits (an acquire waiting for its lock, a lock
// group between rounds) is a task here: a state machine whose steps run when something happens
// to it (a wake-up message, a timer, a cancellation) and which holds no thread in between. Steps
// run on a few library threads per client, started as work needs them and never more than
// kMaxWorkers, however many tasks wait. A blocking call runs its own task's steps on the
// calling thread instead (run_here): the same code path, without a hand-off to a library thread
// and back, so a blocked caller is woken as directly as before.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace rlock::core {

class Engine : public std::enable_shared_from_this<Engine> {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kMaxWorkers = 4;

  class Task : public std::enable_shared_from_this<Task> {
   public:
    virtual ~Task() = default;
    Task(const Task&) = delete;
    Task& operator=(const Task&) = delete;

    // One step, on the thread the engine picked, with no engine lock held. The engine never
    // runs two steps of one task at once. A step ends by calling sleep_until, or by ending the
    // task (done), or neither (it then runs again only when woken).
    virtual void step() = 0;
    // The engine stops (its client closes): the task must end at its next step.
    virtual void close() = 0;

   protected:
    explicit Task(std::shared_ptr<Engine> engine) : engine_(std::move(engine)) {}
    Engine& engine() { return *engine_; }
    // From a step: the next step runs at `when` at the latest (earlier if woken).
    void sleep_until(Clock::time_point when) { engine_->arm(this, when); }
    // From a step: the task is over; the engine drops it once the step returns.
    void done() { engine_->retire(this); }
    // From anywhere (another thread, under other locks): run the next step soon.
    void wake() { engine_->wake(this); }

   private:
    friend class Engine;
    std::shared_ptr<Engine> engine_;
    // The engine's bookkeeping, under its mutex.
    struct Runner* runner_ = nullptr;  // the blocked caller running this task, if any
    bool queued_ = false;              // waiting in the ready queue or for its runner
    bool running_ = false;
    bool woken_while_running_ = false;
    bool retired_ = false;
    bool has_timer_ = false;
    Clock::time_point timer_;
    std::multimap<Clock::time_point, std::shared_ptr<Task>>::iterator timer_entry_;
  };

  Engine() = default;
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs the task's first step soon on a library thread. False once stopped (the task is not
  // taken: the caller ends it itself).
  bool start(const std::shared_ptr<Task>& task);
  // Runs the task's steps on the calling thread until it is done. False once stopped.
  bool run_here(const std::shared_ptr<Task>& task);

  // Closes every task (they end at their next step) and stops the threads once the tasks have
  // ended. Waits for that, unless called on one of the engine's threads. Idempotent.
  void stop();
  // True on one of the engine's threads (of any engine).
  static bool on_engine_thread();

  // For tests and the thread budget: library threads started so far, and tasks alive.
  int worker_count();
  size_t task_count();

 private:
  void arm(Task* task, Clock::time_point when);
  void retire(Task* task);
  void wake(Task* task);
  void make_ready_locked(Task& task);
  void disarm_locked(Task& task);
  void after_step_locked(Task& task);
  void work();
  // Moves due timers' tasks to be run; returns the next timer's time.
  Clock::time_point fire_timers_locked(Clock::time_point now);
  void add_worker_locked();

  std::mutex mutex_;
  std::condition_variable work_;             // workers: ready tasks, timers, stop
  std::condition_variable quiet_;            // stop(): tasks ended, workers gone
  std::deque<std::shared_ptr<Task>> ready_;  // run by workers, oldest first
  std::multimap<Clock::time_point, std::shared_ptr<Task>> timers_;  // of worker-run tasks
  // Every task from start (or run_here) to done: the engine owns them meanwhile, since a task
  // that only waits for a message is referenced by nothing else.
  std::unordered_map<Task*, std::shared_ptr<Task>> tasks_;
  std::vector<std::thread> workers_;
  int idle_workers_ = 0;
  bool stopping_ = false;
};

}  // namespace rlock::core
