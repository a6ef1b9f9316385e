#include "permit_watchdog.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "rlock/core/client.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/scripts.hpp"
#include "rlock/core/semaphore.hpp"

namespace rlock::core {
namespace {

using Clock = std::chrono::steady_clock;

int64_t epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// Renews every watched permit every third of the watchdog lease; ends when none is left or the
// client closes.
class PermitWatchdog::Round final : public Engine::Task {
 public:
  Round(std::shared_ptr<Engine> engine, std::weak_ptr<PermitWatchdog> owner, int64_t period_ms)
      : Task(std::move(engine)), owner_(std::move(owner)), period_ms_(period_ms) {}
  void step() override {
    std::shared_ptr<PermitWatchdog> dog = owner_.lock();
    if (stopped_.load() || !dog) return done();
    if (!first_ && !dog->renew(this)) return done();
    first_ = false;
    sleep_until(Clock::now() + std::chrono::milliseconds(period_ms_));
  }
  // The client closes: end now, not at the next round (the close waits for every task).
  void close() override { stop(); }
  void stop() {
    stopped_.store(true);
    wake();
  }

 private:
  std::weak_ptr<PermitWatchdog> owner_;
  const int64_t period_ms_;
  std::atomic<bool> stopped_{false};
  bool first_ = true;
};

void PermitWatchdog::watch(const std::string& name, const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string>& mine = watched_[name];
  for (const std::string& id : ids) {
    if (std::find(mine.begin(), mine.end(), id) == mine.end()) mine.push_back(id);
  }
  if (mine.empty()) watched_.erase(name);
  if (!round_ && !watched_.empty()) {
    const int64_t period = std::max<int64_t>(1, client_.config().watchdog_lease_ms / 3);
    round_ = std::make_shared<Round>(client_.engine_ptr(), weak_from_this(), period);
    if (!client_.engine().start(round_)) round_.reset();  // closed: nothing to renew for
  }
}

void PermitWatchdog::unwatch(const std::string& name, const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = watched_.find(name);
  if (it == watched_.end()) return;
  for (const std::string& id : ids) {
    it->second.erase(std::remove(it->second.begin(), it->second.end(), id), it->second.end());
  }
  if (it->second.empty()) watched_.erase(it);
}

void PermitWatchdog::forget(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  watched_.erase(name);
}

// One round (on the renewal task): each semaphore's watched permits get now plus the watchdog
// lease, up to kMaxPermitsPerCall per call; those no longer held stop being watched. False
// when none is left (the task ends; the next watchdog acquire starts another).
bool PermitWatchdog::renew(Round* by) {
  std::map<std::string, std::vector<std::string>> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (round_.get() != by) return false;
    if (watched_.empty() || client_.closed()) {
      round_.reset();
      return false;
    }
    ids = watched_;
  }
  for (const auto& [name, mine] : ids) {
    try {
      const int64_t now = epoch_ms();
      const std::string now_text = std::to_string(now);
      const std::string deadline = std::to_string(now + client_.config().watchdog_lease_ms);
      const std::string deadlines = permit_deadlines(name), channel = semaphore_channel(name);
      for (size_t from = 0; from < mine.size(); from += kMaxPermitsPerCall) {
        const size_t to = std::min(mine.size(), from + kMaxPermitsPerCall);
        Args argv{now_text, deadline};
        for (size_t i = from; i < to; ++i) argv.push_back(mine[i]);
        Reply r = eval_script(client_.transport(), scripts::psem_update_lease,
                              {name, deadlines, channel}, argv, Retry::Once);
        if (r.type != Reply::Type::Array || r.elements.size() != to - from) continue;
        std::vector<std::string> gone;
        for (size_t i = from; i < to; ++i) {
          const Reply& e = r.elements[i - from];
          if (e.type == Reply::Type::Integer && e.integer == 0) gone.push_back(mine[i]);
        }
        unwatch(name, gone);
      }
    } catch (const Error&) {
      // Unreachable now: tried again next round, well within the lease.
    }
  }
  return true;
}

bool PermitWatchdog::release_all() {
  std::map<std::string, std::vector<std::string>> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ids.swap(watched_);
    if (round_) round_->stop();
    round_.reset();
  }
  for (const auto& [name, mine] : ids) {
    const std::string deadlines = permit_deadlines(name), channel = semaphore_channel(name);
    for (const std::string& id : mine) {
      try {
        // One id per call: a permit lost meanwhile must not keep the others (all or none).
        eval_script(client_.transport(), scripts::psem_release, {name, deadlines, channel},
                    {std::to_string(epoch_ms()), id}, Retry::Once);
      } catch (const Error&) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace rlock::core
