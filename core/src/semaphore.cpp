// Semaphores (plain and permit-expirable) and count-down latches: the scripts of
// core/scripts/sem_*, psem_* and latch_*, their replies, and waiting through PermitWait.
#include "rlock/core/semaphore.hpp"

#include <algorithm>
#include <chrono>
#include <new>

#include "client_open.hpp"
#include "permit_watchdog.hpp"
#include "replica_sync.hpp"
#include "rlock/core/cluster.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/parse.hpp"
#include "rlock/core/scripts.hpp"
#include "waiting.hpp"

namespace rlock::core {
namespace {

using Clock = std::chrono::steady_clock;

// Redisson's score of a permit without a lease (Long.MAX_VALUE / 10000).
constexpr int64_t kNever = 922337203685477;

// What the name's key holds, for the message of a wrong-type error.
constexpr const char* kSemaphoreCount = "a semaphore count";
constexpr const char* kLatchCount = "a latch count";

int64_t epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool is_int(const Reply& r) { return r.type == Reply::Type::Integer; }

std::string plural(int64_t n, const char* one) {
  return std::to_string(n) + " " + one + (n == 1 ? "" : "s");
}

// A count read with GET: missing (false), a whole number, or a failure (kRedis).
int parse_count(const Reply& r, int64_t* out, bool* exists) {
  *exists = false;
  *out = 0;
  if (r.is_nil()) return kOk;
  if (r.type != Reply::Type::String) return kRedis;
  if (parse_int(r.str, INT64_MIN, INT64_MAX, out) != ParseStatus::kOk) return kRedis;
  *exists = true;
  return kOk;
}

// Cluster: every key and the channel of one object must share a slot.
void check_slots(const ClientConfig& config, const std::string& name,
                 std::initializer_list<std::string> others, const char* what) {
  if (config.topology != Topology::Cluster) return;
  for (const std::string& other : others) {
    if (key_slot(name) != key_slot(other)) {
      throw Error(kInvalid, std::string(what) + " name " + printable(name) +
                                " cannot be used on a Redis Cluster: its braces put its key and " +
                                printable(other) +
                                " in different slots (use a name without '{' or '}')");
    }
  }
}

// A script's failure as a code with a message naming the object; a lost connection and other
// transient failures are marked so (a wait retries them).
int redis_error(const std::string& what, const Reply& reply, const char* key_kind) {
  std::string hint;
  if (reply.error.kind == RedisErrorKind::kWrongType) {
    hint = std::string(" (the key exists and is not ") + key_kind + ")";
  }
  return fail(reply.error.code, what + ": Redis replied: " + reply.str + hint,
              reply.error.transient);
}

// Runs a script whose reply is one integer: kOk with *out set, or a code with a message that
// starts with `doing`. `key_kind` names what the key must hold (for a wrong-type error);
// `unsure` is added when no reply came back, for a call that may have been applied unseen.
// `synced`: WAIT for sync_replicas after it, answer not checked (as a lock's release).
int run_int_script(Client& client, const Script& script, const Args& keys, const Args& argv,
                   Retry retry, const std::string& doing, const char* key_kind, const char* unsure,
                   int64_t* out, bool synced = false) {
  try {
    int64_t acked = -1;
    const int replicas = synced ? client.sync_replicas(std::string(keys.at(0))) : 0;
    Reply r = run_script_synced(client, script, keys, argv, retry, Deadline{}, replicas, &acked);
    if (r.is_error()) return redis_error(doing, r, key_kind);
    if (!is_int(r)) return fail(kRedis, doing + ": unexpected reply");
    *out = r.integer;
    return kOk;
  } catch (const Error& e) {
    return fail(e.code(), doing + ": " + e.message() + unsure, e.transient());
  }
}

}  // namespace

std::string permit_id_hex(const std::string& raw) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

bool permit_id_raw(const std::string& hex, std::string* raw) {
  if (hex.size() != kPermitIdHexLen) return false;
  auto value = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = value(hex[2 * i]), lo = value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  *raw = std::move(out);
  return true;
}

// ---- Semaphore -----------------------------------------------------------------------------

Semaphore::Semaphore(std::shared_ptr<Client> client, const std::string& name,
                     const SemaphoreOptions& options)
    : client_(std::move(client)),
      name_(mapped_name(client_->config(), name, "semaphore")),
      options_(options),
      channel_(semaphore_channel(name_)),
      deadlines_(permit_deadlines(name_)) {
  if (options.kind != SemaphoreKind::Plain && options.kind != SemaphoreKind::Expirable) {
    throw Error(kInvalid, "semaphore kind must be plain (0) or expirable (1), got " +
                              std::to_string(static_cast<int>(options.kind)));
  }
  if (options.kind == SemaphoreKind::Expirable) {
    int64_t lease = 0;
    if (options.lease_ms == 0 || resolve_lease(options.lease_ms, &lease) != kOk) {
      throw Error(kInvalid,
                  "semaphore lease_ms must be -1 (watchdog), -2 (no lease) or from 1 "
                  "to " +
                      std::to_string(kMaxDurationMs) + " ms, got " +
                      std::to_string(options.lease_ms));
    }
  }
  check_slots(client_->config(), name_, {channel_, deadlines_}, "semaphore");
}

void Semaphore::close_waits() { waits_.cancel_all(true); }

std::string Semaphore::what(const char* doing) const {
  return std::string(doing) + " semaphore " + printable(name_);
}

int Semaphore::check_open() const { return check_client_open(*client_, "semaphore", name_); }

int Semaphore::check_kind(SemaphoreKind wanted, const char* doing) const {
  if (options_.kind == wanted) return kOk;
  return fail(kInvalid, std::string(doing) + " semaphore " + printable(name_) + ": only for " +
                            (wanted == SemaphoreKind::Plain ? "a plain semaphore"
                                                            : "a permit-expirable semaphore"));
}

int Semaphore::check_permits(int64_t permits, const char* doing) const {
  // A plain semaphore's permits are a count (Redisson: 0 to Integer.MAX_VALUE, 0 granted at
  // once); an expirable one's are ids, one per permit, so a call is bounded.
  const bool plain = options_.kind == SemaphoreKind::Plain;
  const int64_t least = plain ? 0 : 1;
  const int64_t most = plain ? kMaxPermits : kMaxPermitsPerCall;
  if (permits >= least && permits <= most) return kOk;
  return fail(kInvalid, std::string(doing) + " semaphore " + printable(name_) +
                            ": permits must be from " + std::to_string(least) + " to " +
                            std::to_string(most) + ", got " + std::to_string(permits));
}

// The deadline score of a new lease: kNever, or now + lease (the watchdog's lease for
// kLeaseWatchdog).
int Semaphore::resolve_lease(int64_t lease_ms, int64_t* out) const {
  if (lease_ms == kLeaseNone) {
    *out = kLeaseNone;
  } else if (lease_ms == kLeaseWatchdog) {
    *out = client_->config().watchdog_lease_ms;
  } else if (lease_ms >= 1 && lease_ms <= kMaxDurationMs) {
    *out = lease_ms;
  } else {
    return fail(kInvalid, "lease_ms must be -1 (watchdog), -2 (no lease) or from 1 to " +
                              std::to_string(kMaxDurationMs) + " ms, got " +
                              std::to_string(lease_ms));
  }
  return kOk;
}

int Semaphore::redis_failure(const std::string& doing, const Reply& reply) const {
  return redis_error(doing, reply, kSemaphoreCount);
}

int Semaphore::unexpected(const std::string& doing) const {
  return fail(kRedis, doing + ": unexpected reply");
}

int64_t Semaphore::permits_held() const { return client_->permits_held(name_); }

int Semaphore::try_set_permits(int64_t permits, int64_t ttl_ms, bool* set) {
  const std::string doing = what("setting the permits of");
  if (int c = check_open()) return c;
  if (permits < 0 || permits > kMaxPermits) {
    return fail(kInvalid, doing + ": permits must be from 0 to " + std::to_string(kMaxPermits) +
                              ", got " + std::to_string(permits));
  }
  if (ttl_ms < 0 || ttl_ms > kMaxDurationMs) {
    return fail(kInvalid, doing + ": ttl_ms must be 0 (none) or up to " +
                              std::to_string(kMaxDurationMs) + ", got " + std::to_string(ttl_ms));
  }
  if (ttl_ms > 0 && options_.kind == SemaphoreKind::Expirable) {
    return fail(kInvalid, doing + ": a permit-expirable semaphore takes no ttl (as in Redisson)");
  }
  const std::string count = std::to_string(permits), ttl = std::to_string(ttl_ms);
  Args argv{count};
  if (ttl_ms > 0) argv.push_back(ttl);
  int64_t reply = 0;
  if (int c = run_int_script(*client_, scripts::sem_try_set, {name_, channel_}, argv, Retry::No,
                             doing, kSemaphoreCount, "", &reply, true)) {
    return c;
  }
  if (set != nullptr) *set = reply == 1;
  return kOk;
}

int Semaphore::add_permits(int64_t delta, int64_t* available) {
  const std::string doing = what("adding permits to");
  if (int c = check_open()) return c;
  if (delta == 0 || delta < -kMaxPermits || delta > kMaxPermits) {
    return fail(kInvalid, doing + ": the change must be from " + std::to_string(-kMaxPermits) +
                              " to " + std::to_string(kMaxPermits) + " and not 0, got " +
                              std::to_string(delta));
  }
  const std::string change = std::to_string(delta);
  // Not resent: a lost reply may hide an applied change, and applying it twice is wrong.
  int64_t now_available = 0;
  if (int c = run_int_script(*client_, scripts::sem_add, {name_, channel_}, {change}, Retry::No,
                             doing, kSemaphoreCount, " (the change may or may not be applied)",
                             &now_available, true)) {
    return c;
  }
  if (available != nullptr) *available = now_available;
  return kOk;
}

Semaphore::Attempt Semaphore::try_once(const PermitArgs& args, int64_t lease_ms,
                                       std::vector<std::string>* ids) {
  Attempt at = try_grant(args, lease_ms, ids);
  if (at.code == kNotSynced) {
    client_->recount_replicas();  // auto mode: the replica may be gone rather than slow
    at = try_grant(args, lease_ms, ids);
  }
  return at;
}

// A grant the replicas did not confirm was given back (`back`: how that went): kNotSynced.
int Semaphore::not_synced(const std::string& doing, int wanted, int64_t acked, int back) const {
  std::string message =
      doing + ": granted, but " + sync_shortfall(*client_, wanted, acked, "the grant") +
      (back == kOk ? ": given back" : ": giving it back failed (" + last_error_message() + ")");
  if (acked == kWaitRefused) {
    message += " (sync_replicas=auto goes on without WAIT where the server refuses it)";
  }
  return fail(kNotSynced, std::move(message));
}

Semaphore::Attempt Semaphore::try_grant(const PermitArgs& args, int64_t lease_ms,
                                        std::vector<std::string>* ids) {
  const std::string doing = what(("acquiring " + plural(args.permits, "permit") + " of").c_str());
  try {
    if (options_.kind == SemaphoreKind::Plain) return try_grant_plain(args, doing);
    return try_grant_ids(lease_ms, ids, doing);
  } catch (const Error& e) {
    return {fail(e.code(), doing + ": " + e.message(), e.transient()), -1, e.transient()};
  }
}

Semaphore::Attempt Semaphore::try_grant_plain(const PermitArgs& args, const std::string& doing) {
  if (args.permits == 0) return {kOk};  // nothing to take, as Redisson: no round trip
  const std::string latch = unlock_latch(name_, random_hex(8));
  const std::string latch_ttl = std::to_string(semaphore_latch_ttl_ms(client_->config()));
  const std::string permits = std::to_string(args.permits);
  // The request's latch makes a resend (after a lost reply) answer the first one's result.
  const int wanted = client_->sync_replicas(name_);
  int64_t acked = -1;
  const Clock::time_point sent = Clock::now();
  Reply r;
  try {
    r = run_script_synced(*client_, scripts::sem_try_acquire, {name_, latch}, {permits, latch_ttl},
                          Retry::Once, Deadline{}, wanted, &acked);
  } catch (const Error& e) {
    // Granted or not, unseen: given back if it was, refused should it still arrive.
    if (e.code() == kConn) {
      clean_up_later(scripts::sem_undo_acquire, {name_, channel_, latch}, {permits, latch_ttl},
                     sent);
    }
    throw;
  }
  if (r.is_error()) {
    int code = redis_failure(doing, r);
    return {code, -1, r.error.transient};
  }
  if (!is_int(r)) return {unexpected(doing)};
  if (r.integer == 1) {
    client_->permits_taken(name_, args.permits);
    if (wanted > 0 && acked < wanted) {
      // Granted on the master only: a failover now could admit one holder too many.
      const int back = give_back(args.permits, false, nullptr, false);
      return {not_synced(doing, wanted, acked, back)};
    }
    return {kOk};
  }
  Attempt at{kTimedOut};
  at.missing = r.integer == -1;
  return at;
}

// Expirable: the call's ids (made once, so a resend of an applied acquire is recognised).
Semaphore::Attempt Semaphore::try_grant_ids(int64_t lease_ms, std::vector<std::string>* ids,
                                            const std::string& doing) {
  const int64_t now = epoch_ms();
  const std::string now_text = std::to_string(now);
  const std::string deadline =
      std::to_string(lease_ms == kLeaseNone ? kNever : std::min(kNever, now + lease_ms));
  Args argv{now_text, deadline};
  for (const std::string& id : *ids) argv.push_back(id);
  const std::string tombstone = unlock_latch(name_, permit_id_hex(ids->front()));
  const int wanted = client_->sync_replicas(name_);
  int64_t acked = -1;
  const Clock::time_point sent = Clock::now();
  Reply r;
  try {
    r = run_script_synced(*client_, scripts::psem_acquire, {name_, deadlines_, channel_, tombstone},
                          argv, Retry::Once, Deadline{}, wanted, &acked);
  } catch (const Error& e) {
    if (e.code() == kConn) undo_lost_acquire(ids, sent);
    throw;
  }
  if (r.is_error()) return {redis_failure(doing, r), -1, r.error.transient};
  if (r.type != Reply::Type::Array || r.elements.size() != 3 || !is_int(r.elements[0]) ||
      !is_int(r.elements[1]) || !is_int(r.elements[2])) {
    return {unexpected(doing)};
  }
  if (r.elements[0].integer == 1) {
    if (wanted > 0 && acked < wanted) {
      std::vector<std::string> hex;
      for (const std::string& id : *ids) hex.push_back(permit_id_hex(id));
      const int back = release_ids(hex, false);
      return {not_synced(doing, wanted, acked, back)};
    }
    return {kOk};
  }
  Attempt at{kTimedOut};
  at.missing = r.elements[2].integer == -1;
  const int64_t earliest = r.elements[1].integer;
  if (earliest > 0) at.retry_in_ms = std::max<int64_t>(0, earliest - epoch_ms()) + 1;
  return at;
}

// Owner of the semaphore clean-ups in the client's queue: no lock owner is empty, so they never
// run before a lock's acquire (Holds::settle), and a lock's never wait for them.
const char* const kSemaphoreCleanupOwner = "";

void Semaphore::clean_up_later(const Script& script, std::vector<std::string> keys,
                               std::vector<std::string> argv, Clock::time_point sent) {
  Holds::Cleanup c{&script, std::move(keys), std::move(argv)};
  c.give_up = sent + std::chrono::milliseconds(semaphore_cleanup_window_ms(client_->config()));
  client_->holds().add_cleanup(name_, kSemaphoreCleanupOwner, std::move(c));
}

void Semaphore::undo_lost_acquire(std::vector<std::string>* ids, Clock::time_point sent) {
  std::vector<std::string> argv{std::to_string(semaphore_latch_ttl_ms(client_->config()))};
  argv.insert(argv.end(), ids->begin(), ids->end());
  clean_up_later(scripts::psem_undo_acquire,
                 {name_, deadlines_, channel_, unlock_latch(name_, permit_id_hex(ids->front()))},
                 std::move(argv), sent);
  for (std::string& id : *ids) permit_id_raw(random_hex(16), &id);
}

// What an acquire, blocking or not, runs with once its arguments are checked.
struct Semaphore::AcquirePlan {
  int64_t lease = 0;      // expirable: the new permits' lease (resolve_lease)
  bool watchdog = false;  // expirable: the watchdog renews them
  // Expirable: the call's raw permit ids, made once so a resend of an applied acquire is
  // recognised.
  std::vector<std::string> raw;
};

int Semaphore::plan_acquire(const PermitArgs& args, AcquirePlan* plan) const {
  const char* doing = "acquiring permits of";
  if (int c = check_open()) return c;
  if (int c = check_permits(args.permits, doing)) return c;
  if (int c = check_wait(args.wait_ms)) return c;
  if (options_.kind == SemaphoreKind::Plain) {
    if (args.lease_ms != 0) {
      return fail(kInvalid, what(doing) + ": a plain semaphore's permits have no lease");
    }
    return kOk;
  }
  const int64_t asked = args.lease_ms == 0 ? options_.lease_ms : args.lease_ms;
  if (int c = resolve_lease(asked, &plan->lease)) return c;
  plan->watchdog = asked == kLeaseWatchdog;
  for (int64_t i = 0; i < args.permits; ++i) {
    std::string id;
    permit_id_raw(random_hex(16), &id);
    plan->raw.push_back(std::move(id));
  }
  return kOk;
}

int Semaphore::acquire(const PermitArgs& args, std::vector<std::string>* ids) {
  if (options_.kind == SemaphoreKind::Expirable && ids == nullptr) {
    return fail(kInvalid, what("acquiring permits of") + ": no place for the permit ids");
  }
  AcquirePlan plan;
  if (int c = plan_acquire(args, &plan)) return c;
  PermitWait::Setup s;
  s.client = client_;
  s.channel = channel_;
  s.what = what(("acquiring " + plural(args.permits, "permit") + " of").c_str());
  s.deadline = deadline_after(args.wait_ms);
  s.wait_ms = args.wait_ms;
  s.handle_waits = &waits_;
  s.token = args.cancel;
  s.attempt = [this, args, &plan] { return try_once(args, plan.lease, &plan.raw); };
  const int code = PermitWait::run_blocking(std::move(s));
  if (code != kOk) return code;
  if (options_.kind == SemaphoreKind::Expirable) {
    if (plan.watchdog) watch(plan.raw);
    ids->clear();
    for (const std::string& id : plan.raw) ids->push_back(permit_id_hex(id));
  }
  return kOk;
}

int Semaphore::acquire_async(const PermitArgs& args, std::shared_ptr<CancelSet> keep,
                             PermitCompletion done) {
  if (!done) return fail(kInvalid, what("acquiring permits of") + ": no completion");
  AcquirePlan plan;
  if (int c = plan_acquire(args, &plan)) return c;
  const int64_t lease = plan.lease;
  const bool watchdog = plan.watchdog;
  auto raw = std::make_shared<std::vector<std::string>>(std::move(plan.raw));
  auto self = shared_from_this();
  PermitWait::Setup s;
  s.client = client_;
  s.keep_alive = self;
  s.channel = channel_;
  s.what = what(("acquiring " + plural(args.permits, "permit") + " of").c_str());
  s.deadline = deadline_after(args.wait_ms);
  s.wait_ms = args.wait_ms;
  s.handle_waits = &waits_;
  s.token = args.cancel;
  s.keep_token = std::move(keep);
  s.attempt = [self, args, lease, raw] { return self->try_once(args, lease, raw.get()); };
  s.finish = [self, args, raw, watchdog, done = std::move(done)](int code) {
    std::vector<std::string> ids;
    if (code == kOk && self->waits_.cancelled()) {
      // Granted after the handle was freed: nobody can give these back through it.
      if (self->options_.kind == SemaphoreKind::Plain) {
        self->release(args.permits);
      } else {
        std::vector<std::string> hex;
        for (const std::string& id : *raw) hex.push_back(permit_id_hex(id));
        self->release_ids(hex);
      }
      code = fail(kCanceled, self->what("acquiring permits of") + ": its handle was freed");
    } else if (code == kOk && self->options_.kind == SemaphoreKind::Expirable) {
      if (watchdog) self->watch(*raw);
      for (const std::string& id : *raw) ids.push_back(permit_id_hex(id));
    }
    done(code, std::move(ids));
  };
  return PermitWait::start_async(std::move(s));
}

int Semaphore::release(int64_t permits) { return give_back(permits, false, nullptr); }

int Semaphore::release_if_exists(int64_t permits, bool* released) {
  if (released != nullptr) *released = false;
  return give_back(permits, true, released);
}

// release and release_if_exists: the same script (it never creates the semaphore); they differ
// in how a missing semaphore is told, and in release_if_exists answering false for 0 permits.
int Semaphore::give_back(int64_t permits, bool if_exists, bool* released, bool synced) {
  const std::string doing = what(("releasing " + plural(permits, "permit") + " of").c_str());
  if (int c = check_open()) return c;
  if (int c = check_kind(SemaphoreKind::Plain, "releasing permits of")) return c;
  if (int c = check_permits(permits, "releasing permits of")) return c;
  if (permits == 0) return kOk;
  if (!client_->permits_given_back(name_, permits)) {
    return fail(kNotHeld, doing + ": this client holds " +
                              std::to_string(client_->permits_held(name_)) +
                              " (to add permits, use add_permits)");
  }
  const std::string latch = unlock_latch(name_, random_hex(8));
  const std::string latch_ttl = std::to_string(semaphore_latch_ttl_ms(client_->config()));
  const std::string count = std::to_string(permits);
  const Clock::time_point sent = Clock::now();
  try {
    int64_t acked = -1;
    Reply r = run_script_synced(*client_, scripts::sem_release, {name_, channel_, latch},
                                {count, latch_ttl}, Retry::Once, Deadline{},
                                synced ? client_->sync_replicas(name_) : 0, &acked);
    if (r.is_error()) {
      client_->permits_taken(name_, permits);  // refused: still held
      return redis_failure(doing, r);
    }
    if (!is_int(r)) return unexpected(doing);
    if (r.integer == -1) {
      // The permits went with the semaphore: they no longer count as this client's.
      if (if_exists) return kOk;
      return fail(kLost, doing + ": the semaphore no longer exists (deleted, or expired)");
    }
    if (released != nullptr) *released = true;
    return kOk;
  } catch (const Error& e) {
    // Not known whether it arrived: counted as given back, so a retry cannot give it twice; sent
    // again later with the same latch, it is applied exactly once.
    const bool later = e.code() == kConn;
    if (later) {
      clean_up_later(scripts::sem_release, {name_, channel_, latch}, {count, latch_ttl}, sent);
    }
    return fail(e.code(),
                doing + ": " + e.message() +
                    (later ? " (it is sent again in the background and applied once)"
                           : " (the release may or may not be applied)"),
                e.transient());
  }
}

int Semaphore::release_ids(const std::vector<std::string>& ids, bool synced) {
  const std::string doing =
      what(("releasing " + plural(static_cast<int64_t>(ids.size()), "permit") + " of").c_str());
  if (int c = check_open()) return c;
  if (int c = check_kind(SemaphoreKind::Expirable, "releasing permits of")) return c;
  if (int c = check_permits(static_cast<int64_t>(ids.size()), "releasing permits of")) return c;
  std::vector<std::string> raw;
  for (const std::string& hex : ids) {
    std::string id;
    if (!permit_id_raw(hex, &id)) {
      return fail(kInvalid, doing + ": a permit id is 32 hex digits, got " + printable(hex));
    }
    if (std::find(raw.begin(), raw.end(), id) != raw.end()) {
      return fail(kInvalid, doing + ": permit id " + printable(hex) + " is given twice");
    }
    raw.push_back(std::move(id));
  }
  const int replicas = synced ? client_->sync_replicas(name_) : 0;
  auto run = [&](Retry retry) {
    const std::string now = std::to_string(epoch_ms());
    Args argv{now};
    for (const std::string& id : raw) argv.push_back(id);
    int64_t acked = -1;
    return run_script_synced(*client_, scripts::psem_release, {name_, deadlines_, channel_}, argv,
                             retry, Deadline{}, replicas, &acked);
  };
  Reply r;
  bool resent = false;
  const Clock::time_point sent = Clock::now();
  try {
    try {
      r = run(Retry::No);
    } catch (const Error& e) {
      if (e.code() != kConn) throw;
      resent = true;  // the first may have been applied: "not held" then means released
      r = run(Retry::No);
    }
  } catch (const Error& e) {
    const bool later = e.code() == kConn;
    if (later) {
      // Sent again later: ids already released answer "not held" and change nothing. No
      // longer renewed: should the resend never land, they expire by their lease.
      unwatch(raw);
      std::vector<std::string> argv{std::to_string(epoch_ms())};
      argv.insert(argv.end(), raw.begin(), raw.end());
      clean_up_later(scripts::psem_release, {name_, deadlines_, channel_}, std::move(argv), sent);
    }
    return fail(e.code(),
                doing + ": " + e.message() +
                    (later ? " (it is sent again in the background)"
                           : " (the release may or may not be applied)"),
                e.transient());
  }
  if (r.is_error()) return redis_failure(doing, r);
  if (!is_int(r)) return unexpected(doing);
  if (r.integer >= 0 || (resent && r.integer == -1)) {
    unwatch(raw);
    return kOk;
  }
  if (r.integer == -2) {
    unwatch(raw);
    return fail(kLost, doing + ": a permit's lease ran out (it goes back to the semaphore)");
  }
  if (r.integer == -3) return fail(kNotHeld, doing + ": the semaphore does not exist");
  return fail(kNotHeld, doing + ": a permit is not held (never taken, released, or expired)");
}

int Semaphore::update_lease(const std::string& hex, int64_t lease_ms) {
  const std::string doing = what("updating a permit's lease on");
  if (int c = check_open()) return c;
  if (int c = check_kind(SemaphoreKind::Expirable, "updating a permit's lease on")) return c;
  std::string raw;
  if (!permit_id_raw(hex, &raw)) {
    return fail(kInvalid, doing + ": a permit id is 32 hex digits, got " + printable(hex));
  }
  int64_t lease = 0;
  if (int c = resolve_lease(lease_ms, &lease)) return c;
  try {
    const int64_t now = epoch_ms();
    const std::string now_text = std::to_string(now);
    const std::string deadline =
        std::to_string(lease == kLeaseNone ? kNever : std::min(kNever, now + lease));
    Reply r = eval_script(client_->transport(), scripts::psem_update_lease,
                          {name_, deadlines_, channel_}, {now_text, deadline, raw}, Retry::Once);
    if (r.is_error()) return redis_failure(doing, r);
    if (r.type != Reply::Type::Array || r.elements.size() != 1 || !is_int(r.elements[0])) {
      return unexpected(doing);
    }
    if (r.elements[0].integer != 1) {
      unwatch({raw});
      return fail(kNotHeld, doing + ": permit " + hex + " is not held (released, or expired)");
    }
  } catch (const Error& e) {
    return fail(e.code(), doing + ": " + e.message(), e.transient());
  }
  if (lease_ms == kLeaseWatchdog) {
    watch({raw});
  } else {
    unwatch({raw});
  }
  return kOk;
}

int Semaphore::lease_time(const std::string& hex, int64_t* lease_ms) {
  const std::string doing = what("reading a permit's lease on");
  if (int c = check_open()) return c;
  if (int c = check_kind(SemaphoreKind::Expirable, "reading a permit's lease on")) return c;
  std::string raw;
  if (!permit_id_raw(hex, &raw)) {
    return fail(kInvalid, doing + ": a permit id is 32 hex digits, got " + printable(hex));
  }
  int64_t left = 0;
  const std::string now = std::to_string(epoch_ms());
  if (int c = run_int_script(*client_, scripts::psem_lease_time, {name_, deadlines_, channel_},
                             {now, raw}, Retry::Once, doing, kSemaphoreCount, "", &left)) {
    return c;
  }
  if (left == -2) {
    return fail(kNotHeld, doing + ": permit " + hex + " is not held (never taken, released, or " +
                              "expired)");
  }
  if (left == -1) {
    left = kLeaseNone;
  } else if (left < 1) {
    return unexpected(doing);
  }
  if (lease_ms != nullptr) *lease_ms = left;
  return kOk;
}

int Semaphore::set_permits(int64_t permits, int64_t* available, int64_t* held) {
  const std::string doing = what("setting the permits of");
  if (int c = check_open()) return c;
  if (int c = check_kind(SemaphoreKind::Expirable, "setting the permits of")) return c;
  if (permits < 0 || permits > kMaxPermits) {
    return fail(kInvalid, doing + ": permits must be from 0 to " + std::to_string(kMaxPermits) +
                              ", got " + std::to_string(permits));
  }
  try {
    // Resent once: the script sets a total, so applying it twice gives the same counts.
    const std::string now = std::to_string(epoch_ms());
    int64_t acked = -1;
    Reply r = run_script_synced(*client_, scripts::psem_set_permits, {name_, deadlines_, channel_},
                                {now, std::to_string(permits)}, Retry::Once, Deadline{},
                                client_->sync_replicas(name_), &acked);
    if (r.is_error()) return redis_failure(doing, r);
    if (r.type != Reply::Type::Array || r.elements.size() != 2 || !is_int(r.elements[0]) ||
        !is_int(r.elements[1])) {
      return unexpected(doing);
    }
    if (available != nullptr) *available = r.elements[0].integer;
    if (held != nullptr) *held = r.elements[1].integer;
    return kOk;
  } catch (const Error& e) {
    return fail(e.code(), doing + ": " + e.message(), e.transient());
  }
}

int Semaphore::available(int64_t* out, int64_t* held, bool* exists) {
  const std::string doing = what("reading");
  if (int c = check_open()) return c;
  try {
    if (options_.kind == SemaphoreKind::Plain) {
      Reply r = client_->transport().run_retrying({"GET", name_});
      if (r.is_error()) return redis_failure(doing, r);
      int64_t count = 0;
      bool found = false;
      if (parse_count(r, &count, &found) != kOk) {
        return fail(kRedis, doing + ": the key holds a string that is not a whole number");
      }
      if (out != nullptr) *out = count;
      if (held != nullptr) *held = 0;
      if (exists != nullptr) *exists = found;
      return kOk;
    }
    const std::string now = std::to_string(epoch_ms());
    Reply r = eval_script(client_->transport(), scripts::psem_available,
                          {name_, deadlines_, channel_}, {now}, Retry::Once);
    if (r.is_error()) return redis_failure(doing, r);
    if (r.type != Reply::Type::Array || r.elements.size() != 3 || !is_int(r.elements[0]) ||
        !is_int(r.elements[1]) || !is_int(r.elements[2])) {
      return unexpected(doing);
    }
    if (out != nullptr) *out = r.elements[0].integer;
    if (held != nullptr) *held = r.elements[1].integer;
    if (exists != nullptr) *exists = r.elements[2].integer == 1;
    return kOk;
  } catch (const Error& e) {
    return fail(e.code(), doing + ": " + e.message(), e.transient());
  }
}

int Semaphore::drain(int64_t* drained) {
  const std::string doing = what("draining");
  if (int c = check_open()) return c;
  if (int c = check_kind(SemaphoreKind::Plain, "draining")) return c;
  int64_t taken = 0;
  if (int c = run_int_script(*client_, scripts::sem_drain, {name_}, {}, Retry::No, doing,
                             kSemaphoreCount, " (it may or may not be applied)", &taken)) {
    return c;
  }
  if (drained != nullptr) *drained = taken;
  return kOk;
}

int Semaphore::remove(bool* deleted) {
  const std::string doing = what("deleting");
  if (int c = check_open()) return c;
  try {
    Args cmd{"DEL", name_};
    if (options_.kind == SemaphoreKind::Expirable) cmd.push_back(deadlines_);
    Reply r = client_->transport().run_retrying(cmd);
    if (r.is_error()) return redis_failure(doing, r);
    if (!is_int(r)) return unexpected(doing);
    if (deleted != nullptr) *deleted = r.integer > 0;
    client_->permit_watchdog().forget(name_);
    return kOk;
  } catch (const Error& e) {
    return fail(e.code(), doing + ": " + e.message(), e.transient());
  }
}

// The client renews watchdog permits, as a lock's holds: whether or not this handle lives.
void Semaphore::watch(const std::vector<std::string>& ids) {
  client_->permit_watchdog().watch(name_, ids);
}

void Semaphore::unwatch(const std::vector<std::string>& ids) {
  client_->permit_watchdog().unwatch(name_, ids);
}

// ---- Latch ---------------------------------------------------------------------------------

Latch::Latch(std::shared_ptr<Client> client, const std::string& name)
    : client_(std::move(client)),
      name_(mapped_name(client_->config(), name, "latch")),
      channel_(latch_channel(name_)) {
  check_slots(client_->config(), name_, {channel_}, "latch");
}

std::string Latch::what(const char* doing) const {
  return std::string(doing) + " latch " + printable(name_);
}

int Latch::check_open() const { return check_client_open(*client_, "latch", name_); }

int Latch::redis_failure(const std::string& doing, const Reply& reply) const {
  return redis_error(doing, reply, kLatchCount);
}

int Latch::try_set_count(int64_t count, bool* set) {
  const std::string doing = what("setting the count of");
  if (int c = check_open()) return c;
  if (count < 1 || count > kMaxLatchCount) {
    return fail(kInvalid, doing + ": count must be from 1 to " + std::to_string(kMaxLatchCount) +
                              ", got " + std::to_string(count));
  }
  const std::string text = std::to_string(count);
  int64_t reply = 0;
  if (int c = run_int_script(*client_, scripts::latch_try_set, {name_, channel_}, {text}, Retry::No,
                             doing, kLatchCount, "", &reply, true)) {
    return c;
  }
  if (set != nullptr) *set = reply == 1;
  return kOk;
}

int Latch::count_down(int64_t* left) {
  const std::string doing = what("counting down");
  if (int c = check_open()) return c;
  // Never resent (as in Redisson): a lost reply may hide an applied count-down.
  int64_t reply = 0;
  if (int c = run_int_script(*client_, scripts::latch_count_down, {name_, channel_}, {}, Retry::No,
                             doing, kLatchCount, " (the count-down may or may not be applied)",
                             &reply, true)) {
    return c;
  }
  if (left != nullptr) *left = std::max<int64_t>(0, reply);
  return kOk;
}

int Latch::count(int64_t* out) {
  const std::string doing = what("reading");
  if (int c = check_open()) return c;
  try {
    Reply r = client_->transport().run_retrying({"GET", name_});
    if (r.is_error()) return redis_failure(doing, r);
    int64_t value = 0;
    bool exists = false;
    if (parse_count(r, &value, &exists) != kOk) {
      return fail(kRedis, doing + ": the key holds a string that is not a whole number");
    }
    if (out != nullptr) *out = std::max<int64_t>(0, value);
    return kOk;
  } catch (const Error& e) {
    return fail(e.code(), doing + ": " + e.message(), e.transient());
  }
}

Semaphore::Attempt Latch::try_once() {
  int64_t left = 0;
  const int code = count(&left);
  if (code != kOk) return {code, -1, last_error_transient()};
  return {left == 0 ? kOk : kTimedOut};
}

int Latch::await(int64_t wait_ms, CancelSet* cancel) {
  if (int c = check_open()) return c;
  if (int c = check_wait(wait_ms)) return c;
  PermitWait::Setup s;
  s.client = client_;
  s.channel = channel_;
  s.what = what("waiting for");
  s.deadline = deadline_after(wait_ms);
  s.wait_ms = wait_ms;
  s.handle_waits = &waits_;
  s.token = cancel;
  s.attempt = [this] { return try_once(); };
  return PermitWait::run_blocking(std::move(s));
}

int Latch::await_async(int64_t wait_ms, CancelSet* cancel, std::shared_ptr<CancelSet> keep,
                       PermitCompletion done) {
  if (!done) return fail(kInvalid, what("waiting for") + ": no completion");
  if (int c = check_open()) return c;
  if (int c = check_wait(wait_ms)) return c;
  auto self = shared_from_this();
  PermitWait::Setup s;
  s.client = client_;
  s.keep_alive = self;
  s.channel = channel_;
  s.what = what("waiting for");
  s.deadline = deadline_after(wait_ms);
  s.wait_ms = wait_ms;
  s.handle_waits = &waits_;
  s.token = cancel;
  s.keep_token = std::move(keep);
  s.attempt = [self] { return self->try_once(); };
  s.finish = [done = std::move(done)](int code) { done(code, {}); };
  return PermitWait::start_async(std::move(s));
}

int Latch::remove(bool* deleted) {
  const std::string doing = what("deleting");
  if (int c = check_open()) return c;
  int64_t reply = 0;
  if (int c = run_int_script(*client_, scripts::latch_delete, {name_, channel_}, {}, Retry::Once,
                             doing, kLatchCount, "", &reply)) {
    return c;
  }
  if (deleted != nullptr) *deleted = reply == 1;
  return kOk;
}

}  // namespace rlock::core
