// Semaphores and count-down latches on Redisson's layouts (docs/protocol.md): RSemaphore (the
// count of available permits in the string key N), RPermitExpirableSemaphore (the same count,
// plus the held permits' ids and deadlines in "{N}:timeout") and RCountDownLatch (the count in
// N). Waiting goes through the client's waiting engine and subscriber, as a lock's acquire.
//
// All operations return a status code (kOk or a negative Code) and record a message for the
// calling thread on failure, as Lock's do.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rlock/core/cancel.hpp"
#include "rlock/core/client.hpp"
#include "rlock/core/lock.hpp"

namespace rlock::core {

class Semaphore;

enum class SemaphoreKind { Plain = 0, Expirable = 1 };

// Redisson reads counts as a Java int.
constexpr int64_t kMaxPermits = 2147483647;
// A latch's count: up to 15 digits, as the scripts take them.
constexpr int64_t kMaxLatchCount = 999999999999999;
// Permits one call of an expirable semaphore may take or give back (one id each); a plain one
// takes 0 to kMaxPermits.
constexpr int64_t kMaxPermitsPerCall = 1000;
// An expirable permit's lease: none (the permit never expires: Redisson's lease -1).
constexpr int64_t kLeaseNone = -2;
// The 32 lower-case hex digits of a permit id (16 bytes on Redis).
constexpr size_t kPermitIdHexLen = 32;

struct SemaphoreOptions {
  SemaphoreKind kind = SemaphoreKind::Plain;
  // Expirable: the lease of acquires that give none: kLeaseWatchdog (renewed by the client
  // until released or the client closes), kLeaseNone, or 1..kMaxDurationMs.
  int64_t lease_ms = kLeaseWatchdog;
};

struct PermitArgs {
  int64_t permits = 1;          // plain: 0..kMaxPermits; expirable: 1..kMaxPermitsPerCall
  int64_t wait_ms = -1;         // 0 = try once, -1 = forever, or a bound
  int64_t lease_ms = 0;         // expirable: 0 = the semaphore's default, or as in options
  CancelSet* cancel = nullptr;  // optional sticky token
};

// Semaphore and Latch calls that wait, asynchronously: the outcome and, for an expirable
// acquire, the permit ids taken. Runs exactly once, on a library thread.
using PermitCompletion = std::function<void(int status, std::vector<std::string> ids)>;

class Semaphore : public std::enable_shared_from_this<Semaphore> {
 public:
  // Throws Error(kInvalid) for a bad name or options.
  Semaphore(std::shared_ptr<Client> client, const std::string& name,
            const SemaphoreOptions& options);

  // Sets the permits of a semaphore that does not exist yet (0..kMaxPermits); ttl_ms > 0 also
  // gives it an expiry (plain kind only). *set tells whether it was set.
  int try_set_permits(int64_t permits, int64_t ttl_ms, bool* set);
  // Adds permits (or takes them away, delta < 0); a missing semaphore counts as 0.
  // *available (optional) gets the new count.
  int add_permits(int64_t delta, int64_t* available);
  // Takes permits, waiting up to args.wait_ms for them (kTimedOut then). Expirable: *ids gets
  // one id (32 hex digits) per permit.
  int acquire(const PermitArgs& args, std::vector<std::string>* ids);
  int acquire_async(const PermitArgs& args, std::shared_ptr<CancelSet> keep, PermitCompletion done);
  // Plain: gives back `permits` taken through this client (kNotHeld for more than it holds).
  int release(int64_t permits);
  // Plain: as release, except that a semaphore that no longer exists is no failure: *released
  // (optional) tells whether the permits were given back (Redisson's releaseIfExists; 0
  // permits answer false at once).
  int release_if_exists(int64_t permits, bool* released);
  // Expirable: gives back permits by id, all or none (kNotHeld naming an id not held, kLost
  // for one whose lease ran out). `synced`: WAIT for sync_replicas after it (answer unchecked).
  int release_ids(const std::vector<std::string>& ids, bool synced = true);
  // Expirable: a held permit's new lease (kLeaseNone, kLeaseWatchdog or 1..kMaxDurationMs);
  // kNotHeld when it is not held (released or expired).
  int update_lease(const std::string& id, int64_t lease_ms);
  // Expirable: the ms left on a held permit's lease, or kLeaseNone for a permit without one;
  // kNotHeld when it is not held (never taken, released, or expired). Redisson's getLeaseTime.
  int lease_time(const std::string& id, int64_t* lease_ms);
  // Expirable: sets the total of permits (0..kMaxPermits), available plus held, as Redisson's
  // setPermits: the available count moves by the difference (below 0 when more are held).
  // *available and *held (optional) get the counts after it.
  int set_permits(int64_t permits, int64_t* available, int64_t* held);
  // Permits available now (expirable: after giving expired ones back); *exists (optional)
  // tells whether the semaphore exists. Expirable: *held (optional) the permits held.
  int available(int64_t* available, int64_t* held, bool* exists);
  // Takes every available permit; *drained gets how many (plain kind only).
  int drain(int64_t* drained);
  // Deletes the semaphore (and the permits' deadlines); *deleted tells whether it existed.
  int remove(bool* deleted);
  // Wakes every acquire in progress on this object with kCanceled.
  void cancel_waits() { waits_.cancel_all(false); }
  // The handle is gone: wakes the waits in progress and refuses later ones.
  void close_waits();

  const std::string& name() const { return name_; }
  SemaphoreKind kind() const { return options_.kind; }
  // Plain: permits this client took on this name and has not given back.
  int64_t permits_held() const;

  // One attempt's result, for the wait (semaphore.cpp). A grant the replicas did not confirm
  // (sync_replicas) is given back and tried once more, then kNotSynced.
  struct Attempt {
    int code;                  // kOk, kTimedOut (not enough permits), or an error
    int64_t retry_in_ms = -1;  // expirable: when a held permit's lease runs out (-1: none)
    bool transient = false;
    bool missing = false;  // not enough permits because the semaphore does not exist
  };
  Attempt try_once(const PermitArgs& args, int64_t lease_ms, std::vector<std::string>* ids);

 private:
  struct AcquirePlan;
  int plan_acquire(const PermitArgs& args, AcquirePlan* plan) const;
  int check_kind(SemaphoreKind wanted, const char* doing) const;
  int check_open() const;
  int check_permits(int64_t permits, const char* doing) const;
  int give_back(int64_t permits, bool if_exists, bool* released, bool synced = true);
  // An acquire attempt without the retry try_once makes after kNotSynced.
  Attempt try_grant(const PermitArgs& args, int64_t lease_ms, std::vector<std::string>* ids);
  Attempt try_grant_plain(const PermitArgs& args, const std::string& doing);
  Attempt try_grant_ids(int64_t lease_ms, std::vector<std::string>* ids, const std::string& doing);
  int not_synced(const std::string& doing, int wanted, int64_t acked, int back) const;
  // A request sent at `sent` whose replies were lost: `script` settles it in the background,
  // through the client's clean-up queue, while its latch still exists.
  void clean_up_later(const Script& script, std::vector<std::string> keys,
                      std::vector<std::string> argv, std::chrono::steady_clock::time_point sent);
  // An expirable acquire whose replies were lost: its ids are undone later, and *ids get fresh
  // ones for the next attempt (the undo would take back the old ones).
  void undo_lost_acquire(std::vector<std::string>* ids, std::chrono::steady_clock::time_point sent);
  int resolve_lease(int64_t lease_ms, int64_t* out) const;
  int redis_failure(const std::string& doing, const Reply& reply) const;
  int unexpected(const std::string& doing) const;
  void watch(const std::vector<std::string>& ids);
  void unwatch(const std::vector<std::string>& ids);
  std::string what(const char* doing) const;

  std::shared_ptr<Client> client_;
  const std::string name_;
  const SemaphoreOptions options_;
  const std::string channel_;
  const std::string deadlines_;  // expirable: "{N}:timeout"
  CancelSet waits_;
};

class Latch : public std::enable_shared_from_this<Latch> {
 public:
  Latch(std::shared_ptr<Client> client, const std::string& name);

  // Sets the count (1..kMaxLatchCount) of a latch that does not exist (is open): *set tells.
  int try_set_count(int64_t count, bool* set);
  // Counts down by one; *left (optional) gets the count left (0: the latch opened now, or it
  // was open already). With sync_replicas followed by WAIT, whose answer is not checked.
  int count_down(int64_t* left);
  // The count (0: open).
  int count(int64_t* out);
  // Waits until the count is 0: kOk, or kTimedOut after wait_ms.
  int await(int64_t wait_ms, CancelSet* cancel);
  int await_async(int64_t wait_ms, CancelSet* cancel, std::shared_ptr<CancelSet> keep,
                  PermitCompletion done);
  // Deletes the latch (it opens without waking waiters, as in Redisson); *deleted tells.
  int remove(bool* deleted);
  void cancel_waits() { waits_.cancel_all(false); }
  void close_waits() { waits_.cancel_all(true); }
  const std::string& name() const { return name_; }

  Semaphore::Attempt try_once();

 private:
  int check_open() const;
  int redis_failure(const std::string& doing, const Reply& reply) const;
  std::string what(const char* doing) const;

  std::shared_ptr<Client> client_;
  const std::string name_;
  const std::string channel_;
  CancelSet waits_;
};

// Permit ids: 16 random bytes on Redis, 32 lower-case hex digits for users.
std::string permit_id_hex(const std::string& raw);
// The raw id of a hex one (either case); false when it is not 32 hex digits.
bool permit_id_raw(const std::string& hex, std::string* raw);

}  // namespace rlock::core
