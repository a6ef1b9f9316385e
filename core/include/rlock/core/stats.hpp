// What a client counts (Stats) and tells (Events) about its locks, for metrics and for an event
// hook (docs/metrics.md). Both are reached through ClientConfig, which every part of the client
// copies, so each part records where the thing happens without being handed more.
//
// Stats are relaxed atomic additions: a snapshot may be a few calls apart between fields, never
// torn within one. Events are copied into a queue and delivered on a thread of their own, so
// nothing the library does waits for the user's callback.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace rlock::core {

// Durations in fixed buckets; the bounds are the same for every histogram.
class Histogram {
 public:
  static constexpr size_t kBounds = 22;
  static constexpr size_t kBuckets = kBounds + 1;
  // Upper bounds of the buckets in microseconds (the last bucket is everything above).
  static const std::array<int64_t, kBounds>& bounds_us();

  void record(std::chrono::steady_clock::duration d);
  void record_us(int64_t us);

  struct Snapshot {
    uint64_t count = 0;
    uint64_t sum_us = 0;
    std::array<uint64_t, kBuckets> buckets{};
  };
  Snapshot read() const;

 private:
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_us_{0};
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
};

class Stats {
 public:
  static constexpr size_t kCodes = 32;         // acquire failures by negated status code
  static constexpr size_t kRevokeReasons = 8;  // leaderships revoked by RevokeReason
  using Counter = std::atomic<uint64_t>;

  static void add(Counter& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

  // An acquire call ended with `code` (0 = granted), having started at `start`.
  void acquire_ended(int code, std::chrono::steady_clock::time_point start);
  void release_ended(int code) { add(code == 0 ? releases : releases_failed); }
  void lost(int reason);
  // An election of this client became leader, or its leadership ended for `reason`.
  void elected();
  void revoked(int reason);

  Counter acquires_granted{0};
  Counter acquires_timed_out{0};
  Counter acquires_canceled{0};
  Counter acquires_failed{0};
  std::array<Counter, kCodes> acquires_failed_by_code{};
  Counter releases{0};
  Counter releases_failed{0};
  Counter lost_gone{0};
  Counter lost_unreachable{0};
  Counter lost_expired{0};
  Counter renewals_sent{0};
  Counter renewals_failed{0};
  Counter reconnects{0};
  Counter tls_handshakes{0};  // TLS connections opened, resumed or not
  Counter tls_resumed{0};     // of those, resuming an earlier connection's session
  Counter failovers{0};
  Counter cluster_redirects{0};
  Counter scripts_sent{0};
  Counter events_dropped{0};
  Counter cleanups_dropped{0};  // clean-ups past their give-up time, never run (holds.hpp)
  Counter elections_won{0};
  std::array<Counter, kRevokeReasons> leaderships_revoked{};  // [reason]; [0] other reasons
  std::atomic<int64_t> waiters{0};
  std::atomic<int64_t> leaders{0};

  Histogram acquire_wait;
  Histogram hold;
  Histogram handoff;
  Histogram command_rtt;
};

struct Event {
  enum Kind : int {
    Acquired = 1,
    Released = 2,
    Lost = 3,
    RenewalFailed = 4,
    Failover = 5,
    Redirect = 6,
    KeyExpired = 7,  // Client::watch_key_events: a key of the client's names expired
    KeyDeleted = 8,  // ... or was deleted
    Elected = 9,     // an election of the client became leader: token = the term
    Revoked = 10     // ... its leadership (or campaign: token 0) ended: reason = RevokeReason
  };
  Kind kind = Acquired;
  int64_t unix_time_us = 0;  // filled by Events::emit
  std::string name;
  std::string owner;
  int64_t thread_id = 0;
  int64_t duration_us = 0;
  int64_t token = 0;
  int reason = 0;
  std::string detail;
};

// The client's event hook: off (one relaxed load per would-be event) until a callback is set.
class Events : public std::enable_shared_from_this<Events> {
 public:
  using Fn = std::function<void(const Event&)>;
  static constexpr size_t kMaxQueued = 65536;

  // Made with make_shared. `stats` (may be null) counts what a full queue refused.
  explicit Events(std::shared_ptr<Stats> stats) : stats_(std::move(stats)) {}
  ~Events();
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;

  bool on() const { return on_.load(std::memory_order_relaxed); }
  // Queues the event for the callback (no-op when none is set).
  void emit(Event event);
  // Replaces the callback (null: off). Starts the delivery thread on first use. Returns once a
  // callback running on another thread has returned.
  void set(Fn fn);
  // Delivers what is queued, then stops the thread. Idempotent; later events are dropped.
  void stop();

 private:
  void run();

  const std::shared_ptr<Stats> stats_;
  std::atomic<bool> on_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Event> queue_;
  Fn fn_;
  bool delivering_ = false;
  bool stop_ = false;
  std::thread thread_;
  std::thread::id thread_id_;
};

}  // namespace rlock::core
