#include "rlock/core/lock.hpp"

#include <algorithm>
#include <chrono>
#include <shared_mutex>
#include <thread>

#include "client_open.hpp"
#include "kinds/kind.hpp"
#include "replica_sync.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/scripts.hpp"
#include "rlock/core/timing.hpp"

namespace rlock::core {
namespace {

// Owner ids are names, not payloads: long enough for a UUID, a URL or a job key.
constexpr size_t kMaxOwnerIdLen = 1024;

// "Every hold" in a release script's count of holds to release.
constexpr int64_t kAllHolds = 1 << 30;

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxSpinMs = 60000;

bool valid_lease(int64_t lease) {
  return lease == kLeaseWatchdog || (lease > 0 && lease <= kMaxDurationMs);
}

std::string lease_problem(int64_t lease) {
  return "lease_ms must be -1 (watchdog) or from 1 to " + std::to_string(kMaxDurationMs) +
         " ms, got " + std::to_string(lease) +
         (lease == 0 || lease < -1 ? " (a lease <= 0 would unlock at once)" : "");
}

// Replies are read only in the shapes core/scripts/*.lua return; anything else (a proxy's or a
// broken server's answer) is an unexpected reply, kRedis, never a result.
bool is_int(const Reply& r) { return r.type == Reply::Type::Integer; }

bool is_text_or_nil(const Reply& r) {
  return r.type == Reply::Type::String || r.type == Reply::Type::Nil;
}

// status.lua: {pttl, mine, owners, first owner or nil, its count, mode or nil}.
bool status_shape(const Reply& r) {
  if (r.type != Reply::Type::Array || r.elements.size() != 6) return false;
  const std::vector<Reply>& e = r.elements;
  return is_int(e[0]) && is_int(e[1]) && is_int(e[2]) && is_text_or_nil(e[3]) && is_int(e[4]) &&
         is_text_or_nil(e[5]);
}

}  // namespace

void check_lock_name(const ClientConfig& config, const std::string& name, const char* what) {
  if (name.empty()) throw Error(kInvalid, std::string(what) + " name must not be empty");
  const size_t key_len = config.key_prefix.size() + name.size();
  if (key_len > config.max_name_len) {
    throw Error(kInvalid, std::string(what) + " name is " + std::to_string(name.size()) + " bytes" +
                              (config.key_prefix.empty()
                                   ? std::string()
                                   : " (" + std::to_string(key_len) + " with the key_prefix)") +
                              ", longer than the limit of " + std::to_string(config.max_name_len) +
                              " (client option max_name_len)");
  }
}

std::string mapped_name(const ClientConfig& config, const std::string& name, const char* what) {
  check_lock_name(config, name, what);
  return config.key_prefix + name;
}

// The first half of a lock's owner fields: the client id, or a caller-given owner id's UUID.
static std::string owner_prefix_of(const Client& client, const std::string& owner_id) {
  if (owner_id.empty()) return client.id();
  if (owner_id.size() > kMaxOwnerIdLen) {
    throw Error(kInvalid, "owner_id is " + std::to_string(owner_id.size()) +
                              " bytes, longer than the limit of " + std::to_string(kMaxOwnerIdLen));
  }
  return owner_id_prefix(owner_id);
}

int check_wait(int64_t wait_ms) {
  if (wait_ms < -1 || wait_ms > kMaxDurationMs) {
    return fail(kInvalid, "wait_ms must be 0 (try once), -1 (forever) or up to " +
                              std::to_string(kMaxDurationMs) + " ms, got " +
                              std::to_string(wait_ms));
  }
  return kOk;
}

int check_lease(int64_t lease_ms) {
  return valid_lease(lease_ms) ? kOk : fail(kInvalid, lease_problem(lease_ms));
}

Lock::Lock(std::shared_ptr<Client> client, const std::string& name, const LockOptions& options)
    : client_(std::move(client)),
      name_(mapped_name(client_->config(), name, "lock")),
      // A caller-given owner never re-enters (as python-redis-lock's id= and redsync's
      // WithValue): its holds are shared by threads and processes, so a count above 1 could
      // not be told apart, and a local count or undo could act on another process's hold.
      kind_(kinds::make_kind(options.kind, name_, options.owner_id.empty())),
      channel_(kind_->channel()),
      options_(options),
      owner_prefix_(owner_prefix_of(*client_, options.owner_id)) {
  if (!valid_lease(options.lease_ms)) throw Error(kInvalid, lease_problem(options.lease_ms));
  // Every script of a lock names its key with the channel and auxiliary keys: in a cluster they
  // must share one slot, which the hash-tag rule gives unless the name's braces defeat it.
  if (client_->config().topology == Topology::Cluster &&
      key_slot(name_) != key_slot(lock_channel(name_))) {
    throw Error(kInvalid, "lock name " + printable(name_) +
                              " cannot be used on a Redis Cluster: its braces put the lock key "
                              "and its channel in different slots (use no braces, or one "
                              "non-empty {tag} before any other '}')");
  }
  if (options.spin_initial_ms < 1 || options.spin_initial_ms > kMaxSpinMs ||
      options.spin_max_ms < options.spin_initial_ms || options.spin_max_ms > kMaxSpinMs) {
    throw Error(kInvalid, "spin backoff must satisfy 1 <= spin_initial_ms <= spin_max_ms <= " +
                              std::to_string(kMaxSpinMs) + " ms, got " +
                              std::to_string(options.spin_initial_ms) + " and " +
                              std::to_string(options.spin_max_ms));
  }
  if (options.fair_wait_ms < 1 || options.fair_wait_ms > kMaxDurationMs) {
    throw Error(kInvalid, "fair_wait_ms must be from 1 to " + std::to_string(kMaxDurationMs) +
                              " ms, got " + std::to_string(options.fair_wait_ms));
  }
}

Lock::~Lock() {
  client_->holds().abandon(listener_.get());  // renewal stops; held locks expire by lease
  listener_->set(nullptr);
}

int Lock::check_open() const { return check_client_open(*client_, "lock", name_); }

int64_t Lock::resolve_thread(int64_t thread_id) const {
  // A caller-given owner is one owner whichever thread (or group, or async call) acts for it.
  if (!options_.owner_id.empty()) return 1;
  return thread_id == 0 ? current_thread_id() : thread_id;
}

std::string Lock::base_owner(int64_t resolved_thread_id) const {
  return owner_prefix_ + ":" + std::to_string(resolved_thread_id);
}

std::string Lock::owner_field(int64_t thread_id) const {
  return kind_->owner_field(base_owner(resolve_thread(thread_id)));
}

int Lock::unexpected(const std::string& doing) const {
  return fail(kRedis, doing + " lock " + printable(name_) + ": unexpected reply");
}

int Lock::redis_failure(const std::string& doing, const Reply& reply) const {
  std::string hint;
  if (reply.error.kind == RedisErrorKind::kWrongType) {
    hint = " (the key exists and is not a lock hash)";
  }
  return fail(reply.error.code,
              doing + " lock " + printable(name_) + ": Redis replied: " + reply.str + hint,
              reply.error.transient);
}

Reply Lock::run_once(const kinds::Call& call, Send send) {
  return eval_script(client_->transport(), *call.script, kinds::views(call.keys),
                     kinds::views(call.argv), Retry::Once, send);
}

Reply Lock::run_synced(const kinds::Call& call, Retry retry, Deadline deadline, int replicas,
                       int64_t* acked) {
  return run_script_synced(*client_, *call.script, kinds::views(call.keys), kinds::views(call.argv),
                           retry, deadline, replicas, acked);
}

Lock::Attempt Lock::try_acquire(const Plan& plan, bool join_queue) {
  Attempt at = try_acquire_once(plan, join_queue);
  if (at.code == kNotSynced) {
    client_->recount_replicas();  // auto mode: the replica may be gone rather than slow
    at = try_acquire_once(plan, join_queue);
  }
  // A failed attempt recorded whether its failure passes by itself (see worth_retrying).
  at.transient = at.code != kOk && at.code != kTimedOut && last_error_transient();
  return at;
}

Lock::Attempt Lock::try_acquire_once(const Plan& plan, bool join_queue) {
  std::shared_lock<std::shared_mutex> in_flight(client_->acquire_gate());
  if (client_->closed()) return {check_open(), 0};
  Holds& holds = client_->holds();
  int64_t before = holds.count(name_, plan.owner);
  const int wanted = client_->sync_replicas(name_);
  Clock::time_point sent = Clock::now();
  const Clock::time_point deadline = std::min(
      sent + std::chrono::milliseconds(client_->config().command_timeout_ms), plan.call_end);
  Reply r;
  int64_t acked = -1;
  try {
    // What an earlier call of this owner left unknown is settled first.
    holds.settle(name_, plan.owner, deadline);
    const kinds::Call call =
        kind_->acquire({plan.owner, plan.base_owner, std::to_string(plan.lease_ms), plan.fenced,
                        plan.fair_allowance_ms, join_queue});
    r = run_synced(call, Retry::No, deadline, wanted, &acked);
  } catch (const Error& e) {
    // The request may have been applied with its reply lost: take it back if so, so the key
    // does not outlive us until its lease.
    // Not for a caller-given owner: the hold found may be another process's of the same id.
    if (e.code() == kConn && plan.undo_lost_reply && options_.owner_id.empty()) {
      undo_acquire(plan.owner, before + 1, plan.lease_ms);
    }
    return {fail(e.code(), "acquiring lock " + printable(name_) + ": " + e.message()), 0};
  }
  if (r.is_error()) return {redis_failure("acquiring", r), 0};
  kinds::AcquireReply got;
  if (!kind_->read_acquire(r, &got)) return {unexpected("acquiring"), 0};
  if (got.verdict == kinds::AcquireReply::Verdict::Granted) {
    // The holds this owner took, counted here: the server may count more, from an acquire
    // whose reply was lost and whose undo failed, or a release still on its way. Only this
    // client uses this owner, so those are nobody's, and the last release removes them all.
    // (Fewer on the server means the earlier holds were lost: this one starts afresh.)
    const int64_t count = std::min(got.count, before + 1);
    holds.acquired(name_, plan.owner, plan.thread_id, count, plan.lease_ms, plan.watchdog, sent,
                   listener_, got.token, kind_->layout());
    return confirm_grant(plan, sent, wanted, acked, &in_flight);
  }
  if (got.verdict == kinds::AcquireReply::Verdict::Refused) {
    return {fail(kDeadlock,
                 "lock " + printable(name_) + ": " + plan.base_owner + " " + kind_->refusal()),
            0};
  }
  return {kTimedOut, got.pttl};
}

Lock::Attempt Lock::confirm_grant(const Plan& plan, Clock::time_point sent, int wanted,
                                  int64_t acked, std::shared_lock<std::shared_mutex>* in_flight) {
  const int64_t elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - sent).count();
  if (wanted > 0 && elapsed_ms >= plan.lease_ms - Holds::drift_ms(plan.lease_ms)) {
    // The answer came after the lease it granted ran out (WAIT took most of it): whatever
    // it granted is no longer ours to use. (Without WAIT such a late grant is reported
    // acquired and at once lost, through the lost-lock callback, as it always was.)
    in_flight->unlock();
    release_hold(plan.thread_id, false);
    return {fail(kConn, "lock " + printable(name_) + ": the grant arrived after its lease of " +
                            std::to_string(plan.lease_ms) + " ms ran out; it was taken back"),
            0};
  }
  if (wanted > 0 && acked < wanted) {
    // Granted on the master only: a failover now would hand the lock to another owner.
    // Take this hold back (the outer ones of a re-entry stay).
    in_flight->unlock();
    release_hold(plan.thread_id, false);
    return {fail(kNotSynced,
                 "lock " + printable(name_) + " was granted, but " +
                     sync_shortfall(*client_, wanted, acked, "it") + ": it was taken back" +
                     (acked == kWaitRefused ? " (sync_replicas=auto goes on without WAIT where the "
                                              "server refuses it)"
                                            : "")),
            0};
  }
  return {kOk, 0};
}

void Lock::undo_acquire(const std::string& owner, int64_t expected_count, int64_t lease_ms) {
  const std::optional<kinds::Call> undo = kind_->undo_acquire(owner, expected_count, lease_ms);
  if (!undo) return;  // the key expires by its lease
  // Not on the caller's time: the attempt used it up. Until the undo is known to have run,
  // this owner's next acquire runs it first (or it could take back that acquire's hold); if
  // Redis stays unreachable nothing renews the key, which expires by its lease.
  clean_up_later(owner, *undo);
}

void Lock::clean_up_later(const std::string& owner, const kinds::Call& call, bool releases_all) {
  client_->holds().add_cleanup(name_, owner, {call.script, call.keys, call.argv, releases_all});
}

int Lock::make_plan(const AcquireArgs& a, Plan* plan) const {
  if (int c = check_open()) return c;
  if (int rc = check_wait(a.wait_ms)) return rc;
  int64_t lease = a.lease_ms == 0 ? options_.lease_ms : a.lease_ms;
  if (!valid_lease(lease)) return fail(kInvalid, lease_problem(a.lease_ms));
  if (a.thread_id < 0) {
    return fail(kInvalid, "thread_id must be 0 (calling thread) or positive, got " +
                              std::to_string(a.thread_id));
  }
  if (a.cancel != nullptr && a.cancel->cancelled()) {
    return fail(kCanceled, "acquiring lock " + printable(name_) + ": cancelled");
  }
  plan->thread_id = resolve_thread(a.thread_id);
  plan->base_owner = base_owner(plan->thread_id);
  plan->owner = kind_->owner_field(plan->base_owner);
  plan->watchdog = lease == kLeaseWatchdog;
  plan->lease_ms = plan->watchdog ? client_->config().watchdog_lease_ms : lease;
  plan->fenced = kind_->always_fenced() || a.token != nullptr;
  plan->poll_cap_ms = a.poll_cap_ms > 0 ? a.poll_cap_ms : client_->config().poll_cap_ms;
  plan->undo_lost_reply = a.undo_lost_reply;
  if (plan->fenced && kind_->fencing_unavailable() != nullptr) {
    return fail(kInvalid, "lock " + printable(name_) + ": " + kind_->fencing_unavailable());
  }
  // Redisson's rule: a bounded wait is also how long a fair waiter's place is kept.
  plan->fair_allowance_ms = a.wait_ms > 0 ? a.wait_ms : options_.fair_wait_ms;
  plan->wait_end = deadline_after(a.wait_ms);
  plan->call_end = a.wait_ms < 0
                       ? Clock::time_point::max()
                       : saturating_after(plan->wait_end, client_->config().command_timeout_ms);
  return kOk;
}

bool Lock::first_attempt(const AcquireArgs& a, const Plan& plan, Attempt* at, uint64_t* mark,
                         int* outcome) {
  // Taken before the attempt: if this client already listens on the channel (for other waiters,
  // or still, for one that left a moment ago) and no message comes before this caller joins,
  // its failed attempt is still current.
  bool others_sleeping = false;
  *mark = a.wait_ms != 0 && !kind_->spins()
              ? client_->subscriber_for(channel_).message_mark(wake_channel(plan), &others_sleeping)
              : 0;
  // A call that waits for as long as it takes does not barge past this client's waiters of a
  // reentrant lock: it sleeps behind them without an attempt (the next unlock message wakes the
  // first of them), so a busy lock costs one attempt per client per release. Not for a thread
  // that already holds the lock (a re-entry), nor for bounded waits (the lock may have expired
  // meanwhile, and such a call must not time out without having tried).
  const bool behind_others = others_sleeping && *mark != 0 && a.wait_ms < 0 &&
                             kind_->yields_to_local_waiters() &&
                             client_->holds().count(name_, plan.owner) == 0;
  // A call that will wait takes its place in a fair queue with its first attempt, as Redisson
  // does; a try-once call never queues.
  *at = behind_others ? Attempt{kTimedOut, -1} : try_acquire(plan, a.wait_ms != 0);
  if (at->code == kOk) {
    *outcome = acquired(a, plan);
    return false;
  }
  if (!worth_retrying(at->code, at->transient)) {
    *outcome = at->code;
    return false;
  }
  if (a.wait_ms == 0) {
    *outcome = at->code == kTimedOut
                   ? fail(kTimedOut, "lock " + printable(name_) + " is held by another owner")
                   : at->code;
    return false;
  }
  if (Clock::now() >= plan.wait_end) {  // the attempt took the whole wait (a slow server)
    *outcome = give_up(at->code, a.wait_ms);
    return false;
  }
  return true;
}

int Lock::acquired(const AcquireArgs& a, const Plan& plan) {
  if (a.token != nullptr) *a.token = plan.fenced ? client_->holds().token(name_, plan.owner) : 0;
  return kOk;
}

// The channel this plan's waiter is woken on (a fair waiter: one of its own).
std::string Lock::wake_channel(const Plan& plan) const { return kind_->wake_channel(plan.owner); }

// A waiter that gives up leaves the queue of a kind that has one, within the call's time.
void Lock::leave_queue(const Plan& plan) {
  const std::optional<kinds::Call> leave = kind_->leave_queue(plan.owner, plan.fair_allowance_ms);
  if (!leave) return;
  const Clock::time_point deadline =
      std::min(Clock::now() + std::chrono::milliseconds(client_->config().command_timeout_ms),
               plan.call_end);
  try {
    if (Clock::now() < deadline) {
      eval_script(client_->transport(), *leave->script, kinds::views(leave->keys),
                  kinds::views(leave->argv), Retry::Once, Send::Sha, deadline);
      return;
    }
  } catch (const Error& e) {
    if (e.code() != kConn) return;  // the client closed: the entry ends by its deadline
  }
  // Unknown or not tried: left to the background (before our next acquire), or the entry is
  // dropped when its deadline passes. Not for an owner id: by then the entry may be another
  // process's wait with the same id.
  if (options_.owner_id.empty()) clean_up_later(plan.owner, *leave);
}

int Lock::give_up(int last_code, int64_t wait_ms) {
  if (last_code != kTimedOut) return last_code;  // its message is already recorded
  return fail(kTimedOut, "lock " + printable(name_) + " is still held by another owner after " +
                             std::to_string(wait_ms) + " ms");
}

int Lock::release(int64_t thread_id) {
  const int code = release_hold(thread_id, true);
  if (Stats* stats = client_->stats()) stats->release_ended(code);
  return code;
}

int Lock::release_hold(int64_t thread_id, bool synced) {
  if (int c = check_open()) return c;
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 or positive");
  const std::string owner = owner_field(thread_id);
  Holds& holds = client_->holds();
  int64_t lease_ms = holds.lease(name_, owner);
  if (lease_ms <= 0) lease_ms = client_->config().watchdog_lease_ms;
  const std::string latch = unlock_latch(name_, random_hex(8));
  const std::string latch_ttl = std::to_string(unlock_latch_ttl_ms(client_->config()));
  // A hold already reported lost stays lost: its release still frees the key if it is there,
  // but reports the loss (the owner's work was not protected to the end).
  const bool was_lost = holds.is_lost(name_, owner);
  Clock::time_point sent = Clock::now();
  Reply r;
  // This owner's last hold (as counted here) takes every hold the server counts for it: the
  // extra ones are nobody's (see acquire). Read-write locks count holds their own way, and a
  // caller-given owner's holds may come from other clients: the server's count is the truth.
  const int64_t own = holds.count(name_, owner);
  const bool last = own <= 1 && !kind_->counts_holds_on_server() && options_.owner_id.empty();
  const std::string to_release = last ? std::to_string(kAllHolds) : "1";
  holds.begin_release(name_, owner);
  // Every try, and the retries on LOADING below, end within one command timeout.
  const Clock::time_point give_up =
      sent + std::chrono::milliseconds(client_->config().command_timeout_ms);
  // With replica sync the release is followed by WAIT too (its answer is not checked: the lock
  // is free on the master either way, and a replica that missed it frees it by its lease).
  int64_t acked = -1;
  const int replicas = synced ? client_->sync_replicas(name_) : 0;
  const kinds::Call call =
      kind_->release({owner, std::to_string(lease_ms), to_release, latch, latch_ttl});
  auto send = [&] { return run_synced(call, Retry::Once, give_up, replicas, &acked); };
  try {
    // Retrying is safe: the latch makes a second delivery return the first one's result.
    r = send();
    // A server restarting answers LOADING until its data is back: keep trying within the
    // command timeout rather than leave the lock to expire.
    for (int64_t pause = 5; r.error.kind == RedisErrorKind::kLoading &&
                            Clock::now() + std::chrono::milliseconds(pause) < give_up;
         pause = std::min<int64_t>(pause * 2, 100)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause));
      r = send();
    }
  } catch (const Error& e) {
    holds.end_release(name_, owner, Holds::Released::Unknown);
    holds.forget(name_, owner);  // stop renewing: the lock expires by its lease
    // It may have run, or may still arrive: sent again with the same latch before this owner's
    // next acquire, it runs exactly once, and never after that acquire. Not so for an owner id:
    // another process may take the lock with the same id meanwhile, and a late retry (its latch
    // gone, or never written) would free that hold.
    if (e.code() == kConn && options_.owner_id.empty()) clean_up_later(owner, call, last);
    return fail(e.code(), "releasing lock " + printable(name_) + ": " + e.message() +
                              (options_.owner_id.empty()
                                   ? " (renewal stopped; the lock expires by its lease)"
                                   : " (renewal stopped; not retried for an owner id: release "
                                     "again, or the lock expires by its lease)"));
  }
  return finish_release(owner, r, was_lost, last ? 0 : own - 1, lease_ms, sent);
}

int Lock::finish_release(const std::string& owner, const Reply& r, bool was_lost, int64_t left_here,
                         int64_t lease_ms, Clock::time_point sent) {
  Holds& holds = client_->holds();
  // A renewal that found the key gone while this release was in flight counts as a loss only
  // if the release did not find the lock held (it may have deleted the key itself). A held
  // release ends after the hold's own update, so a renewal answering in between finds the hold
  // already gone rather than a hold that looks lost.
  if (r.is_error() || !is_int(r)) {
    holds.end_release(name_, owner, Holds::Released::Unknown);
    return r.is_error() ? redis_failure("releasing", r) : unexpected("releasing");
  }
  if (r.integer >= 0 && !was_lost) {
    // Holds left as counted here: fewer on the server means the outer ones were lost, which
    // their renewal then reports.
    const int64_t left = kind_->counts_holds_on_server() ? r.integer : left_here;
    holds.released(name_, owner, left, lease_ms, sent);
    holds.end_release(name_, owner, Holds::Released::Held);
    return kOk;
  }
  holds.end_release(name_, owner, Holds::Released::NotHeld);
  if (r.integer >= 0) {  // was_lost: the key outlived our local validity deadline
    holds.forget(name_, owner);
    return fail(
        kLost, "lock " + printable(name_) +
                   " was lost before this release: its lease ran "
                   "out or it could not be renewed in time (the key, still present, was released)");
  }
  return not_held(owner, r.integer == -2, was_lost, "release");
}

int Lock::not_held(const std::string& owner, bool other_owner, bool known_lost, const char* doing) {
  // Held here before (or already reported lost) means lost; otherwise the caller never held it.
  if (client_->holds().forget(name_, owner) || known_lost) {
    return fail(kLost, "lock " + printable(name_) + " was lost before this " + doing +
                           ": it expired or was deleted" +
                           (other_owner ? ", and another owner holds it now" : ""));
  }
  if (other_owner) {
    return fail(kNotOwner,
                "lock " + printable(name_) + " is held by another owner, not by " + owner);
  }
  return fail(kNotHeld, "lock " + printable(name_) + " is not locked");
}

int Lock::lost_before_extend(const std::string& owner) {
  Holds& holds = client_->holds();
  if (!holds.is_lost(name_, owner)) return kOk;
  holds.forget(name_, owner);
  return fail(kLost, "lock " + printable(name_) +
                         " was lost before this extend: its lease ran "
                         "out or it could not be renewed in time");
}

int Lock::extend(int64_t lease_ms, int64_t thread_id) {
  if (int c = check_open()) return c;
  if (lease_ms <= 0 || lease_ms > kMaxDurationMs) {
    return fail(kInvalid, "lease_ms must be from 1 to " + std::to_string(kMaxDurationMs) +
                              " ms, got " + std::to_string(lease_ms));
  }
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 or positive");
  const std::string owner = owner_field(thread_id);
  Holds& holds = client_->holds();
  if (int c = lost_before_extend(owner)) return c;
  Clock::time_point sent = Clock::now();
  Reply r;
  try {
    const kinds::Call call = kind_->extend(owner, std::to_string(lease_ms));
    r = run_once(call);
  } catch (const Error& e) {
    return fail(e.code(), "extending lock " + printable(name_) + ": " + e.message());
  }
  if (r.is_error()) return redis_failure("extending", r);
  int64_t result = 0;
  if (!kind_->read_extend(r, &result)) return unexpected("extending");
  if (result == 1) {
    holds.extended(name_, owner, lease_ms, sent);
    return kOk;
  }
  return not_held(owner, result == -2, false, "extend");
}

int Lock::force_unlock(bool* deleted) {
  if (int c = check_open()) return c;
  Reply r;
  try {
    const kinds::Call call = kind_->force_unlock();
    r = run_once(call);
  } catch (const Error& e) {
    return fail(e.code(), "force-unlocking lock " + printable(name_) + ": " + e.message());
  }
  if (r.is_error()) return redis_failure("force-unlocking", r);
  if (!is_int(r)) return unexpected("force-unlocking");
  if (deleted != nullptr) *deleted = r.integer == 1;
  return kOk;
}

int Lock::extend_by(int64_t add_ms, int64_t thread_id) {
  if (int c = check_open()) return c;
  if (add_ms <= 0 || add_ms > kMaxDurationMs) {
    return fail(kInvalid, "add_ms must be from 1 to " + std::to_string(kMaxDurationMs) +
                              " ms, got " + std::to_string(add_ms));
  }
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 or positive");
  const std::string owner = owner_field(thread_id);
  Holds& holds = client_->holds();
  if (holds.is_watchdog(name_, owner)) {
    return fail(kInvalid, "lock " + printable(name_) +
                              " is held without a lease (renewed by the watchdog): there is no "
                              "lease to add to; extend with a lease to set one");
  }
  if (int c = lost_before_extend(owner)) return c;
  Clock::time_point sent = Clock::now();
  Reply r;
  try {
    // One script reads the owner's remaining lease and adds to it. Not sent twice: a retry after
    // a lost reply could add twice, so a failed connection is reported (kConn) instead.
    const kinds::Call call =
        kind_->extend_by(owner, std::to_string(add_ms), std::to_string(kMaxDurationMs));
    r = eval_script(client_->transport(), *call.script, kinds::views(call.keys),
                    kinds::views(call.argv), Retry::No);
  } catch (const Error& e) {
    return fail(e.code(), "extending lock " + printable(name_) + ": " + e.message());
  }
  if (r.is_error()) return redis_failure("extending", r);
  if (!is_int(r)) return unexpected("extending");
  if (r.integer > 0) {  // the owner's new remaining lease
    holds.extended(name_, owner, r.integer, sent);
    return kOk;
  }
  if (r.integer == -3) {
    return fail(kInvalid, "lock " + printable(name_) +
                              " has no expiry on Redis: there is no lease to add to (nothing "
                              "changed); extend with a lease to set one");
  }
  if (r.integer != -1 && r.integer != -2) return unexpected("extending");
  return not_held(owner, r.integer == -2, false, "extend");
}

int Lock::query(int64_t thread_id, LockState* out) {
  if (int c = check_open()) return c;
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 or positive");
  const std::string owner = owner_field(thread_id);
  Reply r;
  try {
    r = eval_script(client_->transport(), scripts::status, {name_}, {owner}, Retry::Once);
  } catch (const Error& e) {
    return fail(e.code(), "reading lock " + printable(name_) + ": " + e.message());
  }
  if (r.is_error()) return redis_failure("reading", r);
  if (!status_shape(r)) return unexpected("reading");
  out->ttl_ms = r.elements[0].integer;
  out->locked = out->ttl_ms != -2;
  out->hold_count = r.elements[1].integer;
  out->held_by_me = out->hold_count > 0;
  out->owner_count = r.elements[2].integer;
  out->owner = r.elements[3].str;
  out->owner_hold_count = r.elements[4].integer;
  out->mode = r.elements[5].str;
  return kOk;
}

bool Lock::is_held(int64_t thread_id) const {
  if (thread_id < 0) return false;
  return client_->holds().is_held(name_, owner_field(thread_id));
}

int Lock::lost_reason(int64_t thread_id) const {
  if (thread_id < 0) return 0;
  return client_->holds().lost_reason(name_, owner_field(thread_id));
}

bool Lock::is_lost(int64_t thread_id) const {
  if (thread_id < 0) return false;
  return client_->holds().is_lost(name_, owner_field(thread_id));
}

int Lock::token(int64_t thread_id, int64_t* out) const {
  if (thread_id < 0) return fail(kInvalid, "thread_id must be 0 or positive");
  const std::string owner = owner_field(thread_id);
  int64_t token = client_->holds().token(name_, owner);
  if (token <= 0 || !client_->holds().is_held(name_, owner)) {
    return fail(kNotHeld,
                "lock " + printable(name_) + " is not held by " + owner + " with a fencing token");
  }
  *out = token;
  return kOk;
}

}  // namespace rlock::core
