#include "rlock/core/engine.hpp"

namespace rlock::core {

namespace {
thread_local const Engine* current_engine = nullptr;
}  // namespace

// A blocked caller running its own task (run_here): woken through its own condition variable.
struct Runner {
  std::condition_variable wake;
};

Engine::~Engine() {
  // The last reference may be dropped by a worker itself (see work()): it cannot join itself.
  for (std::thread& t : workers_) {
    if (!t.joinable()) continue;
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
}

bool Engine::on_engine_thread() { return current_engine != nullptr; }

bool Engine::start(const std::shared_ptr<Task>& task) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) return false;
  tasks_.emplace(task.get(), task);
  make_ready_locked(*task);
  return true;
}

bool Engine::run_here(const std::shared_ptr<Task>& task) {
  Runner runner;
  Task& t = *task;
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_) return false;
  tasks_.emplace(&t, task);
  t.runner_ = &runner;
  t.queued_ = true;  // the first step runs at once
  for (;;) {
    while (!t.queued_ && !t.retired_) {
      if (!t.has_timer_) {
        runner.wake.wait(lock);
      } else if (runner.wake.wait_until(lock, t.timer_) == std::cv_status::timeout && !t.queued_ &&
                 Clock::now() >= t.timer_) {
        t.has_timer_ = false;
        t.queued_ = true;
      }
    }
    if (t.retired_) break;
    t.queued_ = false;
    t.running_ = true;
    lock.unlock();
    t.step();
    lock.lock();
    after_step_locked(t);
  }
  t.runner_ = nullptr;
  return true;
}

void Engine::arm(Task* task, Clock::time_point when) {
  std::lock_guard<std::mutex> lock(mutex_);
  Task& t = *task;
  if (t.retired_) return;
  disarm_locked(t);
  t.has_timer_ = true;
  t.timer_ = when;
  if (t.runner_ != nullptr) return;  // its runner waits for it (run_here)
  auto owner = tasks_.find(task);
  if (owner == tasks_.end()) return;
  t.timer_entry_ = timers_.emplace(when, owner->second);
  if (workers_.empty()) add_worker_locked();
  if (t.timer_entry_ == timers_.begin()) work_.notify_one();  // sooner than a worker sleeps
}

void Engine::disarm_locked(Task& t) {
  if (!t.has_timer_) return;
  t.has_timer_ = false;
  if (t.runner_ == nullptr) timers_.erase(t.timer_entry_);
}

void Engine::retire(Task* task) {
  std::lock_guard<std::mutex> lock(mutex_);
  Task& t = *task;
  if (t.retired_) return;
  t.retired_ = true;
  disarm_locked(t);
  // Not the last reference: the thread running this step holds one.
  tasks_.erase(task);
  if (tasks_.empty() && stopping_) {
    quiet_.notify_all();
    work_.notify_all();
  }
}

void Engine::wake(Task* task) {
  std::lock_guard<std::mutex> lock(mutex_);
  make_ready_locked(*task);
}

void Engine::make_ready_locked(Task& t) {
  if (t.retired_ || t.queued_) return;
  if (t.running_) {
    t.woken_while_running_ = true;
    return;
  }
  disarm_locked(t);
  t.queued_ = true;
  if (t.runner_ != nullptr) {
    t.runner_->wake.notify_one();
    return;
  }
  auto owner = tasks_.find(&t);
  if (owner == tasks_.end()) {
    t.queued_ = false;
    return;
  }
  ready_.push_back(owner->second);
  if (idle_workers_ == 0 && static_cast<int>(workers_.size()) < kMaxWorkers) {
    add_worker_locked();
  } else {
    work_.notify_one();
  }
}

void Engine::after_step_locked(Task& t) {
  t.running_ = false;
  if (t.woken_while_running_) {
    t.woken_while_running_ = false;
    make_ready_locked(t);
  }
}

Engine::Clock::time_point Engine::fire_timers_locked(Clock::time_point now) {
  while (!timers_.empty() && timers_.begin()->first <= now) {
    std::shared_ptr<Task> task = timers_.begin()->second;
    task->has_timer_ = false;
    timers_.erase(timers_.begin());
    make_ready_locked(*task);
  }
  return timers_.empty() ? Clock::time_point::max() : timers_.begin()->first;
}

void Engine::add_worker_locked() {
  // Each worker keeps the engine alive: the client (and with it its reference) may be
  // destroyed by a step running on a worker.
  workers_.emplace_back([self = shared_from_this()] { self->work(); });
}

void Engine::work() {
  current_engine = this;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const Clock::time_point next = fire_timers_locked(Clock::now());
    if (!ready_.empty()) {
      std::shared_ptr<Task> task = std::move(ready_.front());
      ready_.pop_front();
      task->queued_ = false;
      task->running_ = true;
      lock.unlock();
      task->step();
      lock.lock();
      after_step_locked(*task);
      lock.unlock();
      task.reset();  // may be the last reference: destroyed with no engine lock held
      lock.lock();
      continue;
    }
    if (stopping_ && tasks_.empty()) break;
    ++idle_workers_;
    if (next == Clock::time_point::max()) {
      work_.wait(lock);
    } else {
      work_.wait_until(lock, next);
    }
    --idle_workers_;
  }
  quiet_.notify_all();
  current_engine = nullptr;
}

void Engine::stop() {
  std::vector<std::shared_ptr<Task>> open;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      for (auto& entry : tasks_) open.push_back(entry.second);
    }
  }
  for (auto& task : open) task->close();
  open.clear();
  std::unique_lock<std::mutex> lock(mutex_);
  work_.notify_all();
  if (current_engine != nullptr) return;  // called by a step: the tasks end after it
  quiet_.wait(lock, [&] { return tasks_.empty(); });
  work_.notify_all();
  std::vector<std::thread> workers = std::move(workers_);
  workers_.clear();
  lock.unlock();
  for (std::thread& t : workers) t.join();
}

int Engine::worker_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(workers_.size());
}

size_t Engine::task_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return tasks_.size();
}

}  // namespace rlock::core
