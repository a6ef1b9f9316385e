// Time arithmetic shared by every wait in the core: deadlines that saturate instead of
// overflowing (leases and waits go up to 2^53 ms, beyond what the clock can count), sleeps
// that never pass a deadline, and (jittered) exponential backoff.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace rlock::core {

using SteadyClock = std::chrono::steady_clock;

// `from` plus `ms` (>= 0), or the clock's end when that is beyond it.
inline SteadyClock::time_point saturating_after(SteadyClock::time_point from, int64_t ms) {
  auto room =
      std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::time_point::max() - from);
  if (ms >= room.count()) return SteadyClock::time_point::max();
  return from + std::chrono::milliseconds(ms);
}

// The end of a wait of `wait_ms` starting now; a negative wait (forever) never ends.
inline SteadyClock::time_point deadline_after(int64_t wait_ms) {
  if (wait_ms < 0) return SteadyClock::time_point::max();
  return saturating_after(SteadyClock::now(), wait_ms);
}

// When to wake from a sleep of `sleep` begun at `now` that must not run past `deadline`.
inline SteadyClock::time_point wake_time(SteadyClock::time_point now,
                                         std::chrono::milliseconds sleep,
                                         SteadyClock::time_point deadline) {
  return deadline - now <= sleep ? deadline : now + sleep;
}

// Whole milliseconds from now until `t`; 0 once it has passed.
inline int64_t ms_until(SteadyClock::time_point t) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - SteadyClock::now());
  return std::max<int64_t>(0, d.count());
}

// Exponential backoff: next() gives `first_ms` (>= 1), then doubles on each call up to `cap_ms`
// (>= first_ms); reset() starts over, as after a success.
class Backoff {
 public:
  Backoff(int64_t first_ms, int64_t cap_ms)
      : first_ms_(first_ms), cap_ms_(cap_ms), current_ms_(first_ms) {}

  int64_t next() {
    const int64_t delay = current_ms_;
    // Doubled without overflow: the cap may be near the top of int64_t.
    current_ms_ = current_ms_ > cap_ms_ - current_ms_ ? cap_ms_ : current_ms_ * 2;
    return delay;
  }
  void reset() { current_ms_ = first_ms_; }

 private:
  int64_t first_ms_;
  int64_t cap_ms_;
  int64_t current_ms_;
};

// A random duration in [backoff_ms / 2, backoff_ms], so competing callers spread out.
inline std::chrono::milliseconds jittered(int64_t backoff_ms) {
  thread_local std::minstd_rand random(std::random_device{}());
  return std::chrono::milliseconds(
      backoff_ms / 2 + static_cast<int64_t>(random() % static_cast<uint64_t>(backoff_ms / 2 + 1)));
}

}  // namespace rlock::core
