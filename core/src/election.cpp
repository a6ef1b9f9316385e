#include "rlock/core/election.hpp"

#include <algorithm>
#include <atomic>

#include "rlock/core/error.hpp"
#include "rlock/core/stats.hpp"

namespace rlock::core {
namespace {

thread_local Election* in_callback_ = nullptr;  // the election whose callback runs here

// Owners of elections: numbers no OS thread id (below 2^22) nor a binding's own task numbers
// (from 2^40) reach, so an election's hold is never re-entered by a caller's acquire.
std::atomic<int64_t> next_election_owner{int64_t{1} << 50};

}  // namespace

std::shared_ptr<Election> Election::create(std::shared_ptr<Client> client, const std::string& name,
                                           const ElectionOptions& options) {
  std::shared_ptr<Election> e(new Election(std::move(client), name, options));
  std::weak_ptr<Election> weak = e;
  e->lock_->set_lost_callback([weak](const std::string&, int64_t, int reason) {
    if (auto self = weak.lock()) self->lost(reason);
  });
  // The hook keeps the lock alive until the client's close has released its hold: the revoked
  // callback may free the election (a binding's close on another thread), and a lock destroyed
  // before those releases would leave its key held until the lease ran out. (While the election
  // lives it keeps the client alive anyway; ~Election removes the hook.)
  e->close_hook_ = e->client_->add_close_hook([weak, lock = e->lock_] {
    if (auto self = weak.lock()) self->client_closing();
  });
  return e;
}

Election::Election(std::shared_ptr<Client> client, const std::string& name,
                   const ElectionOptions& options)
    : client_(std::move(client)),
      options_(options),
      thread_id_(next_election_owner.fetch_add(1, std::memory_order_relaxed)) {
  LockOptions lock_options;
  lock_options.kind = LockKind::Fenced;
  lock_options.lease_ms = kLeaseWatchdog;
  lock_ = std::make_shared<Lock>(client_, name, lock_options);
}

Election::~Election() {
  client_->remove_close_hook(close_hook_);
  lock_->set_lost_callback(nullptr);
  lock_->close_waits();
}

int Election::campaign(Elected elected, Revoked revoked) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_) {
    return fail(kInvalid, "election " + printable(name()) + " is already campaigning or leading");
  }
  if (client_->closed()) return fail(kClosed, "the client is closed");
  elected_ = std::move(elected);
  revoked_ = std::move(revoked);
  const int rc = start_round_locked(++round_);
  if (rc == kOk) active_ = true;
  return rc;
}

int Election::start_round_locked(uint64_t round) {
  cancel_ = std::make_shared<CancelSet>();
  AcquireArgs args;
  args.wait_ms = kWaitForever;
  args.lease_ms = kLeaseWatchdog;
  args.thread_id = thread_id_;
  args.cancel = cancel_.get();
  // A candidate mostly waits for a lock whose lease is renewed: the unlock message or the end
  // of the lease wakes it, so it polls no more often than the leader renews.
  args.poll_cap_ms =
      std::max(client_->config().poll_cap_ms, client_->config().watchdog_lease_ms / 3);
  std::weak_ptr<Election> weak = weak_from_this();
  const int rc = lock_->acquire_async(
      args, cancel_, [weak, round, lock = lock_, owner = thread_id_](int status, int64_t token) {
        if (auto self = weak.lock()) {
          self->granted(round, status, token);
          std::lock_guard<std::mutex> guard(self->mutex_);
          --self->outstanding_;
          self->settled_.notify_all();
        } else if (status == kOk) {
          (void)lock->release(owner);  // granted as the election ended: nobody leads with it
        }
      });
  if (rc == kOk) ++outstanding_;
  return rc;
}

bool Election::stale_locked(uint64_t round) const { return round != round_ || !active_; }

void Election::settle() {
  // On a library thread (a callback of ours, or another completion) the outcome may need this
  // very thread to arrive: its release then happens when it does, without waiting here.
  if (Engine::on_engine_thread() || in_callback_ == this) return;
  std::unique_lock<std::mutex> lock(mutex_);
  const auto bound = std::chrono::milliseconds(client_->config().command_timeout_ms + 1000);
  settled_.wait_for(lock, bound, [this] { return outstanding_ == 0; });
}

void Election::granted(uint64_t round, int status, int64_t token) {
  {
    // A stale outcome needs no callback: checked first, so that a resign holding the callback
    // mutex while it waits for this outcome (settle) is not waited for in turn.
    std::unique_lock<std::mutex> lock(mutex_);
    if (stale_locked(round)) {
      lock.unlock();
      if (status == kOk) (void)lock_->release(thread_id_);  // a grant that raced the cancel
      return;
    }
  }
  std::lock_guard<std::recursive_mutex> serial(callbacks_);
  std::unique_lock<std::mutex> lock(mutex_);
  if (stale_locked(round)) {
    // Resigned or closed meanwhile: a grant that raced the cancel is given back.
    lock.unlock();
    if (status == kOk) (void)lock_->release(thread_id_);
    return;
  }
  if (status == kOk && !lock_->is_held(thread_id_)) {
    // Lost between the grant and now (its loss found no leader to tell): campaign again.
    (void)lock_->release(thread_id_);
    if (start_round_locked(++round_) != kOk) {
      active_ = false;
      Revoked revoked = revoked_;
      lock.unlock();
      tell_revoked(revoked, 0, kRevokedClosed);
    }
    return;
  }
  if (status == kOk) {
    leader_ = true;
    term_ = token;
    Elected elected = elected_;
    lock.unlock();
    observe_elected(token);
    Election* outer = in_callback_;
    in_callback_ = this;
    try {
      if (elected) elected(token);
    } catch (...) {
      // A callback must not take a library thread down; bindings report their own failures.
    }
    in_callback_ = outer;
    return;
  }
  // The campaign ended without leadership: closed, or an error that does not pass by itself
  // (a waiting acquire retries those that do). kCanceled comes only from resign, whose round
  // is over.
  active_ = false;
  Revoked revoked = revoked_;
  lock.unlock();
  tell_revoked(revoked, 0, status == kClosed ? kRevokedClosed : kRevokedFailed);
}

void Election::lost(int reason) {
  std::lock_guard<std::recursive_mutex> serial(callbacks_);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!leader_) return;
  leader_ = false;
  const int64_t term = term_;
  term_ = 0;
  Revoked revoked = revoked_;
  lock.unlock();
  // Told before it campaigns again: nothing of a new round may delay the news.
  tell_revoked(revoked, term, reason);
  lock.lock();
  if (!active_) return;  // resigned or closed from the callback
  bool again = options_.requeue && !client_->closed();
  if (again) again = start_round_locked(++round_) == kOk;
  if (!again) active_ = false;
}

int Election::resign() {
  const int rc = resign_now();
  settle();
  return rc;
}

int Election::resign_now() {
  std::lock_guard<std::recursive_mutex> serial(callbacks_);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!active_) return kOk;
  active_ = false;
  ++round_;
  const bool was_leader = leader_;
  const int64_t term = term_;
  leader_ = false;
  term_ = 0;
  std::shared_ptr<CancelSet> cancel = std::move(cancel_);
  Revoked revoked = revoked_;
  lock.unlock();
  if (cancel) cancel->cancel_all(true);
  if (!was_leader) return kOk;
  // A leadership that ended before the resign (its lease ran out, the key was taken) is told
  // as that loss, not as a resignation: the caller may have seen it first (is_leader).
  const int lost = lock_->lost_reason(thread_id_);
  // Told before the release, so nobody else can be leader while this one still acts.
  tell_revoked(revoked, term, lost != 0 ? lost : kRevokedResigned);
  const int rc = lock_->release(thread_id_);
  // A hold already lost or expired needs no release.
  return rc == kNotHeld || rc == kLost || rc == kNotOwner ? kOk : rc;
}

void Election::close() {
  (void)resign();
  // A grant racing the resign is given back (by granted(), or by the lock when its waits are
  // closed), not left to its lease.
  lock_->close_waits();
  std::lock_guard<std::recursive_mutex> serial(callbacks_);
  std::lock_guard<std::mutex> lock(mutex_);
  elected_ = nullptr;
  revoked_ = nullptr;
}

void Election::client_closing() {
  std::lock_guard<std::recursive_mutex> serial(callbacks_);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!active_) return;
  active_ = false;
  ++round_;
  const int64_t term = leader_ ? term_ : 0;
  leader_ = false;
  term_ = 0;
  Revoked revoked = revoked_;
  lock.unlock();
  // The closing client releases the hold after this returns.
  tell_revoked(revoked, term, kRevokedClosed);
}

void Election::observe_elected(int64_t term) {
  if (Stats* stats = client_->stats()) stats->elected();
  emit(Event::Elected, term, 0);
}

void Election::observe_revoked(int64_t term, int reason) {
  // Term 0 ends a campaign that never led: an event, but no leadership to count.
  if (Stats* stats = client_->stats(); stats != nullptr && term > 0) stats->revoked(reason);
  emit(Event::Revoked, term, reason);
}

void Election::emit(Event::Kind kind, int64_t term, int reason) {
  Events& events = client_->events();
  if (!events.on()) return;
  Event e;
  e.kind = kind;
  e.name = lock_->name();
  e.owner = lock_->owner_field(thread_id_);
  e.thread_id = thread_id_;
  e.token = term;
  e.reason = reason;
  events.emit(std::move(e));
}

void Election::tell_revoked(const Revoked& revoked, int64_t term, int reason) {
  observe_revoked(term, reason);
  if (!revoked) return;
  Election* outer = in_callback_;
  in_callback_ = this;
  try {
    revoked(term, reason);
  } catch (...) {
    // As in granted().
  }
  in_callback_ = outer;
}

bool Election::is_leader() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return leader_ && lock_->is_held(thread_id_);
}

int64_t Election::term() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return leader_ && lock_->is_held(thread_id_) ? term_ : 0;
}

bool Election::campaigning() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return active_ && !leader_;
}

}  // namespace rlock::core
