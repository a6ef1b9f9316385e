#include "rlock/core/stats.hpp"

#include <algorithm>

#include "rlock/core/config.hpp"
#include "rlock/core/error.hpp"

namespace rlock::core {

namespace {

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

int64_t unix_time_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const std::array<int64_t, Histogram::kBounds>& Histogram::bounds_us() {
  // From a loopback round trip (tens of microseconds) to a lock held for an hour.
  static const std::array<int64_t, kBounds> bounds = {
      25,      50,       100,      250,      500,       1000,      2500,    5000,
      10000,   25000,    50000,    100000,   250000,    500000,    1000000, 2500000,
      5000000, 10000000, 30000000, 60000000, 300000000, 3600000000};
  return bounds;
}

void Histogram::record(std::chrono::steady_clock::duration d) {
  record_us(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

void Histogram::record_us(int64_t us) {
  if (us < 0) us = 0;
  const auto& b = bounds_us();
  const size_t i = static_cast<size_t>(std::lower_bound(b.begin(), b.end(), us) - b.begin());
  buckets_[i].fetch_add(1, kRelaxed);
  sum_us_.fetch_add(static_cast<uint64_t>(us), kRelaxed);
  count_.fetch_add(1, kRelaxed);
}

Histogram::Snapshot Histogram::read() const {
  Snapshot s;
  // Buckets before the count, so a sample being recorded shows in a bucket before the count:
  // the count never exceeds the sum of the buckets read just after.
  for (size_t i = 0; i < kBuckets; ++i) s.buckets[i] = buckets_[i].load(kRelaxed);
  s.sum_us = sum_us_.load(kRelaxed);
  s.count = count_.load(kRelaxed);
  return s;
}

void Stats::acquire_ended(int code, std::chrono::steady_clock::time_point start) {
  switch (code) {
    case kOk:
      add(acquires_granted);
      acquire_wait.record(std::chrono::steady_clock::now() - start);
      return;
    case kTimedOut:
      add(acquires_timed_out);
      return;
    case kCanceled:
      add(acquires_canceled);
      return;
    default:
      add(acquires_failed);
      if (code < 0 && static_cast<size_t>(-code) < kCodes) add(acquires_failed_by_code[-code]);
      return;
  }
}

void Stats::lost(int reason) {
  switch (reason) {
    case 1:
      add(lost_gone);
      break;
    case 2:
      add(lost_unreachable);
      break;
    default:
      add(lost_expired);
      break;
  }
}

void Stats::elected() {
  add(elections_won);
  leaders.fetch_add(1, kRelaxed);
}

void Stats::revoked(int reason) {
  const size_t i =
      reason > 0 && static_cast<size_t>(reason) < kRevokeReasons ? static_cast<size_t>(reason) : 0;
  add(leaderships_revoked[i]);
  leaders.fetch_sub(1, kRelaxed);
}

void attach_telemetry(ClientConfig* config) {
  Telemetry& t = config->telemetry;
  if (config->keep_stats && !t.stats) t.stats = std::make_shared<Stats>();
  if (!t.events) t.events = std::make_shared<Events>(t.stats);
}

// ---- Events ---------------------------------------------------------------------------------

Events::~Events() {
  stop();
  if (thread_.joinable()) thread_.detach();  // the last reference went on the thread itself
}

void Events::emit(Event event) {
  if (!on()) return;
  event.unix_time_us = unix_time_us();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fn_ || stop_) return;
    if (queue_.size() >= kMaxQueued) {
      if (stats_ != nullptr) Stats::add(stats_->events_dropped);
      return;
    }
    queue_.push_back(std::move(event));
  }
  wake_.notify_one();
}

void Events::set(Fn fn) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_) return;
  fn_ = std::move(fn);
  on_.store(static_cast<bool>(fn_), kRelaxed);
  // The thread keeps the object alive: the callback may free the client that owns it.
  if (fn_ && !thread_.joinable())
    thread_ = std::thread([self = shared_from_this()] { self->run(); });
  // The old callback may be running: wait for it, unless this is that callback itself.
  if (std::this_thread::get_id() != thread_id_) {
    idle_.wait(lock, [&] { return !delivering_; });
  }
}

void Events::stop() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_) return;
  stop_ = true;
  on_.store(false, kRelaxed);
  lock.unlock();
  wake_.notify_one();
  if (thread_.joinable()) {
    if (std::this_thread::get_id() == thread_.get_id()) {
      thread_.detach();  // stopped from the callback: the thread ends after it returns
    } else {
      thread_.join();
    }
  }
}

void Events::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  thread_id_ = std::this_thread::get_id();
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued was delivered
    Event event = std::move(queue_.front());
    queue_.pop_front();
    Fn fn = fn_;
    if (!fn) continue;  // cleared: what was queued for it goes
    delivering_ = true;
    lock.unlock();
    try {
      fn(event);
    } catch (...) {
      // The binding's callback must not throw; there is nobody to tell.
    }
    lock.lock();
    delivering_ = false;
    idle_.notify_all();
  }
}

}  // namespace rlock::core
