// Time arithmetic shared by every wait in the core: deadlines that saturate instead of
// overflowing (leases and waits go up to 2^53 ms, beyond what the clock can count), sleeps
// that never pass a deadline, and jittered backoff.
#pragma once

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

// A random duration in [backoff_ms / 2, backoff_ms], so competing callers spread out.
inline std::chrono::milliseconds jittered(int64_t backoff_ms) {
  thread_local std::minstd_rand random(std::random_device{}());
  return std::chrono::milliseconds(
      backoff_ms / 2 + static_cast<int64_t>(random() % static_cast<uint64_t>(backoff_ms / 2 + 1)));
}

}  // namespace rlock::core
