#include "rlock/core/holds.hpp"

#include <algorithm>

#include "rlock/core/cluster.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/scripts.hpp"
#include "rlock/core/stats.hpp"
#include "rlock/core/timing.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {
namespace {

constexpr size_t kRenewBatch = 1000;
// A lost hold is remembered (so release can say "lost" rather than "not held") this long.
constexpr auto kLostRetention = std::chrono::minutes(10);
// How soon the renewer tries pending cleanups again after one failed.
constexpr auto kCleanupRetry = std::chrono::seconds(1);
// Since fields waiting to be deleted at most: beyond, a record that cannot be written (an ACL
// refusing its key) stops collecting them.
constexpr size_t kMaxHolderDrops = 4096;
// How old a hold must be to be listed in the holder record.
constexpr auto kHolderMinAge = std::chrono::seconds(1);

std::chrono::milliseconds ms(int64_t v) { return std::chrono::milliseconds(v); }

}  // namespace

// ---- LostListener ---------------------------------------------------------------------------

void LostListener::set(Fn fn) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (running_on_ != std::this_thread::get_id()) idle_.wait(lock, [&] { return running_ == 0; });
  fn_ = std::move(fn);
}

void LostListener::notify(const std::string& name, int64_t thread_id, int reason) {
  Fn fn;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fn_) return;
    fn = fn_;
    ++running_;
    running_on_ = std::this_thread::get_id();
  }
  try {
    fn(name, thread_id, reason);
  } catch (...) {
    // A callback must not take the watchdog down; bindings report their own failures.
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (--running_ == 0) running_on_ = std::thread::id();
  idle_.notify_all();
}

// ---- Holds ----------------------------------------------------------------------------------

Holds::Holds(const ClientConfig& config, Transport& transport)
    : config_(config), transport_(transport) {}

Holds::~Holds() { stop(); }

void Holds::start_locked() {
  if (!thread_.joinable() && !stop_) thread_ = std::thread([this] { run(); });
}

void Holds::wake_if_sooner_locked(const Hold& h) {
  if (h.due < watchdog_wakes_at_) wake_.notify_all();
}

void Holds::unindex_locked(const Key& key, Hold& h) {
  if (h.indexed) index_.erase({h.due, &key});
  h.indexed = false;
}

void Holds::reindex_locked(const Key& key, Hold& h) {
  unindex_locked(key, h);
  if (h.lost) {
    h.due = Clock::now() + kLostRetention;
  } else if (h.watchdog && !h.renewing) {
    h.due = std::min(h.next_renew, h.valid_until);
  } else {
    h.due = h.valid_until;
  }
  index_.insert({h.due, &key});
  h.indexed = true;
}

void Holds::acquired(const std::string& name, const std::string& owner, int64_t thread_id,
                     int64_t count, int64_t lease_ms, bool watchdog, Clock::time_point sent,
                     std::shared_ptr<LostListener> listener, int64_t token, HoldLayout layout) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = holds_.try_emplace(Key{name, owner});
  Hold& h = it->second;
  if (inserted || h.lost || count == 1) {
    h.held_since = sent;
    h.since_unix_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(
            (std::chrono::system_clock::now() - (Clock::now() - sent)).time_since_epoch())
            .count();
    h.recorded = false;
    if (!holder_key_.empty()) schedule_holder_locked(owner, sent);
    h.generation = next_generation_++;
    h.watchdog = false;
    h.renewing = false;
    h.lost = false;
    h.token = 0;
    h.handles.clear();
  }
  if (std::find(h.handles.begin(), h.handles.end(), listener) == h.handles.end()) {
    h.handles.push_back(listener);
  }
  h.thread_id = thread_id;
  h.layout = layout;
  h.count = count;
  h.lease_ms = lease_ms;
  if (token > 0) h.token = token;
  h.watchdog = h.watchdog || watchdog;
  h.valid_until = saturating_after(sent, lease_ms - drift_ms(lease_ms));
  h.next_renew = saturating_after(sent, lease_ms / 3);
  h.listener = std::move(listener);
  reindex_locked(it->first, h);
  start_locked();
  wake_if_sooner_locked(h);
}

void Holds::begin_release(const std::string& name, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  if (it != holds_.end()) ++it->second.releasing;
}

void Holds::end_release(const std::string& name, const std::string& owner, Released outcome) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  if (it == holds_.end()) return;
  Hold& h = it->second;
  if (h.releasing > 0) --h.releasing;
  if (h.releasing > 0 || h.lost) return;
  int reason = h.deferred_reason;
  h.deferred_reason = 0;
  if (outcome == Released::Held) return;
  // Every loss is reported once: also one the watchdog had no time to notice before the
  // release found it.
  if (reason == 0 && outcome == Released::NotHeld) {
    reason =
        Clock::now() >= h.valid_until ? (h.watchdog ? kLostUnreachable : kLostExpired) : kLostGone;
  }
  if (reason == 0) return;
  mark_lost_locked(it->first, h, reason, &pending_);
  wake_.notify_all();
}

void Holds::released(const std::string& name, const std::string& owner, int64_t left,
                     int64_t lease_ms, Clock::time_point sent) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  if (it == holds_.end()) return;
  Hold& h = it->second;
  if (left <= 0) {
    const Clock::duration held = Clock::now() - h.held_since;
    if (Stats* stats = config_.telemetry.stats.get()) stats->hold.record(held);
    Events& events = *config_.telemetry.events;
    if (events.on()) {
      Event e;
      e.kind = Event::Released;
      e.name = name;
      e.owner = owner;
      e.thread_id = h.thread_id;
      e.duration_us = std::chrono::duration_cast<std::chrono::microseconds>(held).count();
      events.emit(std::move(e));
    }
    drop_recorded_locked(it->first, h);
    unindex_locked(it->first, h);
    holds_.erase(it);
    return;
  }
  h.count = left;
  h.lost = false;
  h.lease_ms = lease_ms;
  h.valid_until = saturating_after(sent, lease_ms - drift_ms(lease_ms));
  h.next_renew = saturating_after(sent, lease_ms / 3);
  reindex_locked(it->first, h);
  wake_if_sooner_locked(h);
}

void Holds::extended(const std::string& name, const std::string& owner, int64_t lease_ms,
                     Clock::time_point sent) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  if (it == holds_.end() || it->second.lost) return;
  Hold& h = it->second;
  h.lease_ms = lease_ms;
  h.valid_until = saturating_after(sent, lease_ms - drift_ms(lease_ms));
  h.next_renew = saturating_after(sent, lease_ms / 3);
  reindex_locked(it->first, h);
  wake_if_sooner_locked(h);
}

void Holds::abandon(const LostListener* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = holds_.begin(); it != holds_.end();) {
    Hold& h = it->second;
    h.handles.erase(std::remove_if(h.handles.begin(), h.handles.end(),
                                   [handle](const auto& l) { return l.get() == handle; }),
                    h.handles.end());
    if (h.handles.empty()) {
      drop_recorded_locked(it->first, h);
      unindex_locked(it->first, h);
      it = holds_.erase(it);
      continue;
    }
    if (h.listener.get() == handle) h.listener = h.handles.back();
    ++it;
  }
}

bool Holds::forget(const std::string& name, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  if (it == holds_.end()) return false;
  bool had = it->second.count > 0 || it->second.lost;
  drop_recorded_locked(it->first, it->second);
  unindex_locked(it->first, it->second);
  holds_.erase(it);
  return had;
}

int64_t Holds::count(const std::string& name, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  return it == holds_.end() || it->second.lost ? 0 : it->second.count;
}

int64_t Holds::lease(const std::string& name, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  if (it == holds_.end()) return 0;
  return it->second.watchdog ? config_.watchdog_lease_ms : it->second.lease_ms;
}

int64_t Holds::token(const std::string& name, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  return it == holds_.end() || it->second.lost ? 0 : it->second.token;
}

bool Holds::is_held(const std::string& name, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  return it != holds_.end() && !it->second.lost && it->second.count > 0 &&
         Clock::now() < it->second.valid_until;
}

int Holds::lost_reason(const std::string& name, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  if (it == holds_.end()) return 0;
  const Hold& h = it->second;
  if (h.lost) return h.lost_reason;
  // What the watchdog thread will call it when it gets there (run()).
  if (h.count > 0 && Clock::now() >= h.valid_until) {
    return h.watchdog ? kLostUnreachable : kLostExpired;
  }
  return 0;
}

bool Holds::is_lost(const std::string& name, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  if (it == holds_.end()) return false;
  return it->second.lost || (it->second.count > 0 && Clock::now() >= it->second.valid_until);
}

bool Holds::is_watchdog(const std::string& name, const std::string& owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = holds_.find(Key{name, owner});
  return it != holds_.end() && it->second.count > 0 && it->second.watchdog;
}

int64_t Holds::live_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t n = 0;
  for (const auto& [key, h] : holds_) n += !h.lost && h.count > 0 ? 1 : 0;
  return n;
}

std::vector<Holds::Active> Holds::active() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Active> out;
  for (const auto& [key, h] : holds_) {
    if (!h.lost && h.count > 0) out.push_back({key.first, key.second, h.count, h.layout});
  }
  return out;
}

void Holds::mark_lost_locked(const Key& key, Hold& h, int reason, std::vector<Notice>* notices) {
  h.lost = true;
  h.lost_reason = reason;
  h.renewing = false;
  reindex_locked(key, h);
  if (Stats* stats = config_.telemetry.stats.get()) stats->lost(reason);
  Events& events = *config_.telemetry.events;
  if (events.on()) {
    Event e;
    e.kind = Event::Lost;
    e.name = key.first;
    e.owner = key.second;
    e.thread_id = h.thread_id;
    e.reason = reason;
    events.emit(std::move(e));
  }
  if (h.listener) notices->push_back({h.listener, key.first, h.thread_id, reason});
}

void Holds::lose_or_defer_locked(const Key& key, Hold& h, int reason,
                                 std::vector<Notice>* notices) {
  if (h.releasing == 0) {
    mark_lost_locked(key, h, reason, notices);
    return;
  }
  // The release's answer decides (end_release): out of the index until then.
  h.deferred_reason = reason;
  h.renewing = false;
  unindex_locked(key, h);
}

void Holds::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    wake_.notify_all();
    renew_wake_.notify_all();
  }
  for (std::thread* t : {&thread_, &renewer_}) {
    if (t->joinable() && t->get_id() != std::this_thread::get_id()) t->join();
  }
}

void Holds::start_cleanup_round_locked(Clock::time_point now) {
  if (cleanup_due_ > now) return;
  cleanup_due_ = Clock::time_point::max();
  cleanup_round_ = true;
  if (!renewer_.joinable()) renewer_ = std::thread([this] { renew_loop(); });
  renew_wake_.notify_one();
}

void Holds::set_holder_record(std::string key, std::string owner_prefix,
                              std::vector<std::string> fields) {
  std::lock_guard<std::mutex> lock(mutex_);
  holder_key_ = std::move(key);
  holder_owner_prefix_ = std::move(owner_prefix);
  holder_fields_ = std::move(fields);
}

bool Holds::holder_written() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return holder_written_;
}

std::string Holds::since_field(const std::string& owner_suffix, const std::string& key_name) {
  return "since:" + owner_suffix + "|" + key_name;
}

bool Holds::mine_locked(const std::string& owner) const {
  return owner.compare(0, holder_owner_prefix_.size(), holder_owner_prefix_) == 0;
}

void Holds::schedule_holder_locked(const std::string& owner, Clock::time_point sent) {
  if (!mine_locked(owner)) return;
  // A hold is listed once it is a second old: shorter ones cost Redis nothing.
  const Clock::time_point due = sent + kHolderMinAge;
  if (due >= holder_due_) return;  // a round comes sooner
  holder_due_ = due;
  if (holder_due_ < watchdog_wakes_at_) wake_.notify_all();
}

void Holds::drop_recorded_locked(const Key& key, const Hold& h) {
  if (holder_key_.empty() || !(h.recorded || h.recording) || !mine_locked(key.second)) return;
  if (holder_drops_.size() >= kMaxHolderDrops) return;
  holder_drops_.push_back(since_field(key.second.substr(holder_owner_prefix_.size()), key.first));
  // Soon: until then the record would give a later hold of this owner the old time.
  holder_due_ = Clock::now();
  if (holder_due_ < watchdog_wakes_at_) wake_.notify_all();
}

void Holds::start_holder_round_locked(Clock::time_point now) {
  if (holder_due_ > now || holder_writing_ || holder_round_) return;
  holder_due_ = Clock::time_point::max();
  holder_round_ = true;
  if (!renewer_.joinable()) renewer_ = std::thread([this] { renew_loop(); });
  renew_wake_.notify_one();
}

// A round of the holder record: the lines of holds that reached kHolderMinAge since the last
// one and the deletions of released ones; a third of a lease apart, a new expiry (which also
// finds a record Redis lost: the next round writes it whole again).
void Holds::write_holder_record() {
  const Clock::time_point start = Clock::now();
  HolderRound round;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    take_holder_round_locked(start, &round);
  }
  const std::string lease_text = std::to_string(config_.watchdog_lease_ms);
  const Args expire{"PEXPIRE", holder_key_, lease_text};
  std::vector<Args> commands;
  // Asked first, so that the answer tells whether the record was still there.
  const bool probe = round.full && !round.whole;
  if (probe) commands.push_back(expire);
  if (!round.drops.empty()) {
    Args del{"HDEL", holder_key_};
    del.insert(del.end(), round.drops.begin(), round.drops.end());
    commands.push_back(std::move(del));
  }
  // Every write carries the client's fields and an expiry: a record Redis lost since the
  // last round is never made again without them.
  const bool writes = !round.listed.empty();
  if (writes) commands.push_back(round.set);
  if (writes || round.full) commands.push_back(expire);
  bool ok = true;
  bool missing = false;
  if (!commands.empty()) {
    try {
      const std::vector<Reply> replies =
          transport_.run_batch(commands, start + ms(config_.command_timeout_ms));
      for (const Reply& r : replies) ok = ok && !r.is_error();
      missing = probe && ok && replies.front().integer == 0;
    } catch (const Error&) {
      ok = false;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  end_holder_round_locked(start, round, ok, missing);
}

void Holds::take_holder_round_locked(Clock::time_point start, HolderRound* round) {
  round->drops.swap(holder_drops_);
  round->whole = holder_whole_;
  round->full = round->whole || start >= holder_refresh_at_;
  round->set = {"HSET", holder_key_};
  round->set.insert(round->set.end(), holder_fields_.begin(), holder_fields_.end());
  for (auto& [key, h] : holds_) {
    if (h.lost || !mine_locked(key.second) || start - h.held_since < kHolderMinAge) continue;
    if (h.recorded && !round->whole) continue;
    round->set.push_back(round->texts.emplace_back(
        since_field(key.second.substr(holder_owner_prefix_.size()), key.first)));
    round->set.push_back(round->texts.emplace_back(std::to_string(h.since_unix_ms)));
    h.recording = true;
    round->listed.emplace_back(key, h.generation);
  }
  // A whole round with no hold to list writes nothing: there is nobody to name.
  if (round->whole && round->listed.empty()) round->whole = round->full = false;
}

void Holds::end_holder_round_locked(Clock::time_point start, const HolderRound& round, bool ok,
                                    bool missing) {
  holder_writing_ = false;
  for (const auto& [key, generation] : round.listed) {
    auto it = holds_.find(key);
    if (it == holds_.end() || it->second.generation != generation) continue;
    it->second.recording = false;
    if (ok) it->second.recorded = true;
  }
  if (ok && round.whole) {
    holder_written_ = true;
    holder_whole_ = false;
  }
  if (ok && round.full) holder_refresh_at_ = saturating_after(start, config_.watchdog_lease_ms / 3);
  if (!ok || missing) {
    // The record may be gone (Redis restarted, failed over, evicted it): all of it again.
    holder_whole_ = true;
    holder_refresh_at_ = Clock::time_point::min();
    for (auto& [key, h] : holds_) h.recorded = false;
  }
  if (!ok && holder_drops_.size() + round.drops.size() <= kMaxHolderDrops) {
    holder_drops_.insert(holder_drops_.begin(), round.drops.begin(), round.drops.end());
  }
  // The next round: the refresh while anything is listed, a hold reaching its minimum age,
  // or (after a failure) a retry.
  const Clock::time_point now = Clock::now();
  Clock::time_point next = Clock::time_point::max();
  for (const auto& [key, h] : holds_) {
    if (h.lost || !mine_locked(key.second)) continue;
    next = std::min(next, h.recorded ? holder_refresh_at_ : h.held_since + kHolderMinAge);
  }
  if (!holder_drops_.empty()) next = now;
  if (!ok && next != Clock::time_point::max()) next = std::max(next, now + kCleanupRetry);
  holder_due_ = std::min(holder_due_, next);
  if (holder_due_ < watchdog_wakes_at_) wake_.notify_all();
}

void Holds::run() {
  const int64_t lease = config_.watchdog_lease_ms;
  // Renewals due within lease/6 are sent together, so holds taken at different moments
  // converge on a few batched script calls per period.
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (!pending_.empty()) {
      std::vector<Notice> notices;
      notices.swap(pending_);
      lock.unlock();
      dispatch(&notices);
      lock.lock();
      continue;
    }
    Clock::time_point now = Clock::now();
    start_cleanup_round_locked(now);
    start_holder_round_locked(now);
    // (A holder round already running is not due again until it ends.)
    const Clock::time_point side_due = std::min(
        cleanup_due_, holder_writing_ || holder_round_ ? Clock::time_point::max() : holder_due_);
    // A copy: the entry may go away.
    const Clock::time_point next =
        std::min(index_.empty() ? Clock::time_point::max() : index_.begin()->first, side_due);
    if (next > now) {
      watchdog_wakes_at_ = next;
      if (next == Clock::time_point::max()) {
        wake_.wait(lock);
      } else {
        wake_.wait_until(lock, next);
      }
      watchdog_wakes_at_ = Clock::time_point::min();
      continue;
    }
    std::vector<const Key*> due;
    const Clock::time_point horizon = saturating_after(now, lease / 6);
    for (auto it = index_.begin(); it != index_.end() && it->first <= horizon; ++it) {
      due.push_back(it->second);
    }
    std::vector<Notice> notices;
    std::vector<Renewal> batch;
    for (const Key* key : due) {
      auto it = holds_.find(*key);
      if (it == holds_.end()) continue;
      Hold& h = it->second;
      if (h.lost) {
        if (h.due <= now) {
          drop_recorded_locked(it->first, h);
          unindex_locked(it->first, h);
          holds_.erase(it);
        }
      } else if (h.valid_until <= now) {
        lose_or_defer_locked(it->first, h, h.watchdog ? kLostUnreachable : kLostExpired, &notices);
      } else if (h.watchdog && !h.renewing && h.next_renew <= horizon) {
        h.renewing = true;
        reindex_locked(it->first, h);
        batch.push_back({it->first, h.generation, h.layout == HoldLayout::Read, h.valid_until});
      }
    }
    // Read holds renew their per-hold lease keys too, with a script of their own. In a
    // cluster one script call may only touch one slot: renewals go in batches per slot.
    const bool per_slot = config_.topology == Topology::Cluster;
    std::map<std::pair<bool, int>, std::vector<Renewal>> groups;
    for (Renewal& r : batch) {
      groups[{r.read, per_slot ? key_slot(r.key.first) : 0}].push_back(std::move(r));
    }
    for (auto& [kind, group] : groups) {
      for (size_t i = 0; i < group.size(); i += kRenewBatch) {
        auto end = group.begin() + static_cast<long>(std::min(group.size(), i + kRenewBatch));
        renew_queue_.emplace_back(group.begin() + static_cast<long>(i), end);
      }
    }
    if (!renew_queue_.empty()) {
      if (!renewer_.joinable()) renewer_ = std::thread([this] { renew_loop(); });
      renew_wake_.notify_one();
    }
    lock.unlock();
    dispatch(&notices);
    lock.lock();
  }
}

void Holds::renew_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (cleanup_round_) {
      cleanup_round_ = false;
      lock.unlock();
      run_cleanups(Clock::now() + ms(config_.command_timeout_ms));
      lock.lock();
      continue;
    }
    if (holder_round_) {
      holder_round_ = false;
      holder_writing_ = true;
      lock.unlock();
      write_holder_record();
      lock.lock();
      continue;
    }
    if (renew_queue_.empty()) {
      renew_wake_.wait(lock);
      continue;
    }
    std::vector<Renewal> batch = std::move(renew_queue_.front());
    renew_queue_.pop_front();
    lock.unlock();
    std::vector<Notice> notices;
    renew(batch, &notices);
    dispatch(&notices);
    lock.lock();
  }
}

void Holds::dispatch(std::vector<Notice>* notices) {
  if (notices->empty()) return;
  std::shared_ptr<void> keep = keep_alive_ ? keep_alive_() : nullptr;
  for (Notice& n : *notices) n.listener->notify(n.name, n.thread_id, n.reason);
  notices->clear();
  // If a callback dropped the last other reference, the client must be destroyed elsewhere:
  // its destructor joins this thread.
  if (keep) std::thread([k = std::move(keep)]() mutable { k.reset(); }).detach();
}

void Holds::renew(const std::vector<Renewal>& batch, std::vector<Notice>* notices) {
  const int64_t lease = config_.watchdog_lease_ms;
  std::string lease_text = std::to_string(lease);
  const bool read = batch.front().read;
  std::vector<std::string> prefixes;  // keeps the read lease prefixes alive for `keys`
  prefixes.reserve(batch.size());
  Args keys, argv{lease_text};
  for (const Renewal& r : batch) {
    keys.push_back(r.key.first);
    if (read) {
      prefixes.push_back(read_lease_prefix(r.key.first, r.key.second));
      keys.push_back(prefixes.back());
    }
    argv.push_back(r.key.second);
  }
  Clock::time_point sent = Clock::now();
  // No longer than the first of their validity deadlines: by then that hold is reported lost
  // anyway, and a renewal still waiting would hold up the others behind it on this thread.
  Clock::time_point deadline = sent + ms(config_.command_timeout_ms);
  for (const Renewal& r : batch) deadline = std::min(deadline, r.valid_until);
  Reply reply;
  bool ok = false;
  int failure = kOk;  // when not ok: the code and message a renewal-failed event carries
  std::string why;
  try {
    reply = eval_script(transport_, read ? scripts::rw_read_renew : scripts::renew, keys, argv,
                        Retry::Once, Send::Sha, std::max(deadline, sent + ms(1)));
    ok = reply.type == Reply::Type::Array && reply.elements.size() == batch.size();
    if (!ok) {
      failure = reply.is_error() ? reply.error.code : kRedis;
      why = reply.is_error() ? "Redis replied: " + reply.str : "unexpected reply";
    }
  } catch (const Error& e) {
    ok = false;
    failure = e.code();
    why = e.message();
  }
  Stats* stats = config_.telemetry.stats.get();
  if (stats != nullptr) {
    Stats::add(stats->renewals_sent, batch.size());
    if (!ok) Stats::add(stats->renewals_failed, batch.size());
  }
  Events& events = *config_.telemetry.events;
  std::lock_guard<std::mutex> lock(mutex_);
  Clock::time_point now = Clock::now();
  const auto retry_after = ms(std::min<int64_t>(1000, std::max<int64_t>(lease / 10, 10)));
  for (size_t i = 0; i < batch.size(); ++i) {
    auto it = holds_.find(batch[i].key);
    if (it == holds_.end()) continue;  // released meanwhile: the unlock wins
    Hold& h = it->second;
    if (h.generation != batch[i].generation || h.lost || !h.renewing) continue;
    h.renewing = false;
    if (!ok) {
      if (events.on()) {
        Event e;
        e.kind = Event::RenewalFailed;
        e.name = it->first.first;
        e.owner = it->first.second;
        e.thread_id = h.thread_id;
        e.reason = failure;
        e.detail = why;
        events.emit(std::move(e));
      }
      h.next_renew = now + retry_after;  // lost only when the validity deadline passes
      reindex_locked(it->first, h);
      wake_if_sooner_locked(h);  // the watchdog sleeps until the deadline of the renewal
    } else if (reply.elements[i].integer == 1) {
      h.lease_ms = lease;
      h.valid_until = saturating_after(sent, lease - drift_ms(lease));
      h.next_renew = saturating_after(sent, lease / 3);
      reindex_locked(it->first, h);
      wake_if_sooner_locked(h);
    } else {
      lose_or_defer_locked(it->first, h, kLostGone, notices);
    }
  }
}

// ---- Cleanups ----------------------------------------------------------------------------

namespace {

// The EVAL command of a cleanup (with its source: see Holds::Cleanup). Views `c` and
// `key_count`, which must outlive it.
Args eval_command(const Transport& transport, const Holds::Cleanup& c, std::string* key_count) {
  const Script& script =
      transport.sharded_pubsub() && c.script->sharded != nullptr ? *c.script->sharded : *c.script;
  *key_count = std::to_string(c.keys.size());
  Args cmd{"EVAL", script.source, *key_count};
  cmd.insert(cmd.end(), c.keys.begin(), c.keys.end());
  cmd.insert(cmd.end(), c.argv.begin(), c.argv.end());
  return cmd;
}

// Whether a cleanup is over: answered, or refused for good (an error that passes by itself,
// LOADING, BUSY, a failover, is tried again; any other means the script cannot run there, and
// then it cannot have run the first time either).
bool cleanup_over(const Reply& r) { return !(r.is_error() && r.error.transient); }

}  // namespace

void Holds::add_cleanup(const std::string& name, const std::string& owner, Cleanup cleanup) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Key key{name, owner};
  auto& queue = cleanups_[key];
  // Not while a caller or a round runs the queue: they count what they ran from its front.
  if (cleanup.releases_all && settling_.count(key) == 0) {
    while (!queue.empty() && queue.back().releases_all && queue.back().script == cleanup.script) {
      queue.pop_back();
      cleanup_count_.fetch_sub(1);
    }
  }
  queue.push_back(std::move(cleanup));
  cleanup_count_.fetch_add(1);
  // A round at once on the renewer thread, which comes back to what it could not finish. (Not
  // on the engine's threads: a process whose waits all block would start them just for this.)
  cleanup_due_ = Clock::now();
  start_locked();
  wake_.notify_all();
}

void Holds::settle(const std::string& name, const std::string& owner, Clock::time_point deadline) {
  if (cleanup_count_.load() == 0) return;
  const Key key{name, owner};
  {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      if (cleanups_.find(key) == cleanups_.end()) return;
      if (settling_.count(key) == 0) break;
      if (settled_.wait_until(lock, deadline) == std::cv_status::timeout &&
          settling_.count(key) != 0) {
        throw Error(kConn,
                    "a clean-up of an earlier call on this lock, whose outcome is unknown, "
                    "is still waiting for Redis");
      }
    }
    settling_.insert(key);
  }
  if (!run_cleanups_of(key, deadline)) {
    throw Error(kConn,
                "an earlier call on this lock got no answer, and Redis did not answer its "
                "clean-up in time either");
  }
}

bool Holds::run_cleanups_of(const Key& key, Clock::time_point deadline) {
  for (;;) {
    Cleanup c;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      drop_expired_locked(key, Clock::now());
      auto it = cleanups_.find(key);
      if (it == cleanups_.end()) {
        end_settling_locked(key, 0);
        return true;
      }
      c = it->second.front();
    }
    bool over = false;
    try {
      std::string key_count;
      over = cleanup_over(transport_.run(eval_command(transport_, c, &key_count), deadline));
    } catch (const Error&) {
      over = false;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    end_settling_locked(key, over ? 1 : 0);
    if (!over) return false;
    settling_.insert(key);
  }
}

void Holds::end_settling_locked(const Key& key, size_t done) {
  auto it = cleanups_.find(key);
  for (size_t i = 0; i < done && it != cleanups_.end() && !it->second.empty(); ++i) {
    it->second.pop_front();
    cleanup_count_.fetch_sub(1);
  }
  if (it != cleanups_.end() && it->second.empty()) cleanups_.erase(it);
  settling_.erase(key);
  settled_.notify_all();
  if (cleanups_.count(key) != 0 && !stop_) {
    cleanup_due_ = std::min(cleanup_due_, Clock::now() + kCleanupRetry);
    wake_.notify_all();
  }
}

void Holds::drop_expired_locked(const Key& key, Clock::time_point now) {
  auto it = cleanups_.find(key);
  if (it == cleanups_.end()) return;
  auto& queue = it->second;
  const size_t before = queue.size();
  queue.erase(std::remove_if(queue.begin(), queue.end(),
                             [now](const Cleanup& c) { return c.give_up <= now; }),
              queue.end());
  const size_t dropped = before - queue.size();
  if (dropped == 0) return;
  cleanup_count_.fetch_sub(dropped);
  if (Stats* stats = config_.telemetry.stats.get()) Stats::add(stats->cleanups_dropped, dropped);
  if (queue.empty()) cleanups_.erase(it);
}

void Holds::run_cleanups(Clock::time_point deadline) {
  struct Batch {
    std::vector<std::pair<Key, size_t>> keys;  // each key with how many of its cleanups
    std::vector<Cleanup> cleanups;
  };
  std::map<int, Batch> batches;  // by slot in a cluster: one script call may touch one slot
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Not a queue a caller is settling: it counts what it ran from the front.
    std::vector<Key> idle;
    for (const auto& entry : cleanups_) {
      if (settling_.count(entry.first) == 0) idle.push_back(entry.first);
    }
    const Clock::time_point now = Clock::now();
    for (const Key& key : idle) drop_expired_locked(key, now);
    for (const auto& [key, queue] : cleanups_) {
      if (!settling_.insert(key).second) continue;  // a caller is settling it
      Batch& b = batches[config_.topology == Topology::Cluster ? key_slot(key.first) : 0];
      b.keys.emplace_back(key, queue.size());
      b.cleanups.insert(b.cleanups.end(), queue.begin(), queue.end());
    }
  }
  bool failed = false;  // when one batch fails Redis is likely unreachable: the rest wait
  for (auto& [slot, b] : batches) {
    std::vector<Reply> replies;
    if (!failed) {
      try {
        std::vector<std::string> key_counts(b.cleanups.size());
        std::vector<Args> commands;
        for (size_t i = 0; i < b.cleanups.size(); ++i) {
          commands.push_back(eval_command(transport_, b.cleanups[i], &key_counts[i]));
        }
        replies = transport_.run_batch(commands, deadline);
      } catch (const Error&) {
        failed = true;
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    size_t at = 0;
    for (const auto& [key, n] : b.keys) {
      size_t done = 0;  // a key's cleanups count in order: up to the first one not over
      while (done < n && at + done < replies.size() && cleanup_over(replies[at + done])) ++done;
      at += n;
      end_settling_locked(key, done);
    }
  }
}

}  // namespace rlock::core
