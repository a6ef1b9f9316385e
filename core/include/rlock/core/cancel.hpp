// Cancellation of blocking waits from other threads.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace rlock::core {

class Cancellable {
 public:
  virtual void cancel() = 0;

 protected:
  ~Cancellable() = default;
};

// A set of waits that can be cancelled together. A lock handle uses one for rlock_cancel (only
// the waits in progress); a cancel token uses one that stays cancelled ("sticky"), so a wait that
// starts after the cancel is refused at once.
class CancelSet {
 public:
  // Returns false, without adding, when the set is already cancelled for good.
  bool add(Cancellable* target) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cancelled_) return false;
    targets_.push_back(target);
    return true;
  }
  void remove(Cancellable* target) {
    std::lock_guard<std::mutex> lock(mutex_);
    targets_.erase(std::remove(targets_.begin(), targets_.end(), target), targets_.end());
  }
  // The mutex is held while targets are cancelled, so remove() cannot return (and a target
  // cannot be destroyed) while its cancel() runs.
  void cancel_all(bool sticky) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sticky) cancelled_ = true;
    for (Cancellable* t : targets_) t->cancel();
  }
  bool cancelled() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cancelled_;
  }

 private:
  mutable std::mutex mutex_;
  bool cancelled_ = false;
  std::vector<Cancellable*> targets_;
};

// A sleep that another thread can cut short.
class Sleeper final : public Cancellable {
 public:
  // Returns false when cancelled (before or during the sleep).
  template <class TimePoint>
  bool sleep_until(TimePoint until) {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait_until(lock, until, [&] { return cancelled_; });
    return !cancelled_;
  }
  void cancel() override {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    wake_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  bool cancelled_ = false;
};

// Keeps a target registered with a set for a scope.
class CancelRegistration {
 public:
  CancelRegistration() = default;
  CancelRegistration(const CancelRegistration&) = delete;
  CancelRegistration& operator=(const CancelRegistration&) = delete;
  ~CancelRegistration() { reset(); }
  bool attach(CancelSet* set, Cancellable* target) {
    reset();
    if (set == nullptr) return true;
    if (!set->add(target)) return false;
    set_ = set;
    target_ = target;
    return true;
  }
  void reset() {
    if (set_ != nullptr) set_->remove(target_);
    set_ = nullptr;
  }

 private:
  CancelSet* set_ = nullptr;
  Cancellable* target_ = nullptr;
};

}  // namespace rlock::core
