// Leader election on a name (docs/leader.md): the candidates wait for the name's fenced lock
// (LockKind::Fenced) as an ordinary waiting acquire on the engine, so a candidate costs no
// thread. The one that gets it is the leader; the watchdog keeps its hold, and the fencing
// token of its acquire is its term, which grows with every new leader of the name whatever
// process or language it runs in. The leader is told its leadership ended (revoked) before
// another candidate could have taken it: at the hold's validity deadline when renewals fail, at
// once when the key was deleted or taken, on resign, and when the client closes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "rlock/core/cancel.hpp"
#include "rlock/core/client.hpp"
#include "rlock/core/lock.hpp"

namespace rlock::core {

// Why a leadership (or a campaign) ended. 1..3 are the lost-hold reasons (kLostGone...).
enum RevokeReason {
  kRevokedGone = 1,         // the key was deleted or is held by another owner
  kRevokedUnreachable = 2,  // renewals failed until the hold's validity deadline
  kRevokedExpired = 3,      // the hold's lease ran out (not under the watchdog: not used yet)
  kRevokedResigned = 4,     // resign() or the election's end
  kRevokedClosed = 5,       // the client closed
  kRevokedFailed = 6,       // the campaign met an error that does not pass by itself
};

struct ElectionOptions {
  // After a leadership ends by loss (gone, unreachable), campaign again.
  bool requeue = true;
};

class Election : public std::enable_shared_from_this<Election> {
 public:
  // elected(term); revoked(term, reason): term 0 when a campaign ended without leadership.
  // Both run with no library lock held, one at a time and in order (elected before the revoked
  // of its term), on library threads (elected: the engine's; revoked: the watchdog's, or the
  // thread calling resign() or closing the client). A failing campaign's message is the
  // thread's last error while revoked(0, kRevokedFailed) runs.
  using Elected = std::function<void(int64_t term)>;
  using Revoked = std::function<void(int64_t term, int reason)>;

  // Throws Error(kInvalid) for a bad name. Must be owned by a shared_ptr (create).
  static std::shared_ptr<Election> create(std::shared_ptr<Client> client, const std::string& name,
                                          const ElectionOptions& options);
  ~Election();
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;

  // Starts campaigning; returns at once. kInvalid while a campaign or leadership is active,
  // kClosed on a closed client.
  int campaign(Elected elected, Revoked revoked);
  // Ends the campaign, or the leadership: revoked(term, kRevokedResigned) runs (on this thread,
  // before the lock is released) when this was the leader. Returns the release's status
  // (kOk when there was nothing to release). Idempotent.
  int resign();
  // Local view, no I/O: the leader, and its hold is within its validity deadline (checked
  // against the clock on every call, so a process paused past its lease sees false at once).
  bool is_leader() const;
  // The term of the current leadership, 0 when not the leader.
  int64_t term() const;
  bool campaigning() const;
  // resign(), then no callback runs any more: waits for one running on another thread.
  void close();

  const std::string& name() const { return lock_->name(); }
  Lock& lock() { return *lock_; }
  int64_t thread_id() const { return thread_id_; }

 private:
  Election(std::shared_ptr<Client> client, const std::string& name, const ElectionOptions& options);
  // Sends the waiting acquire of campaign number `round` (state mutex held by the caller).
  int start_round_locked(uint64_t round);
  // The outcome of campaign `round` comes too late: resigned, closed, or a later round.
  bool stale_locked(uint64_t round) const;
  // resign() without waiting for the campaign's outcome.
  int resign_now();
  // Waits (bounded) until the cancelled campaign's outcome has arrived, so a grant racing a
  // resign is given back before resign() returns; not on library threads.
  void settle();
  void granted(uint64_t round, int status, int64_t token);
  void lost(int reason);
  void client_closing();
  // Counts the leadership (Stats) and queues its event: whether or not a callback is set.
  void observe_elected(int64_t term);
  void observe_revoked(int64_t term, int reason);
  void emit(Event::Kind kind, int64_t term, int reason);
  // Runs revoked with the callback mutex held (the caller holds it).
  void tell_revoked(const Revoked& revoked, int64_t term, int reason);

  std::shared_ptr<Client> client_;
  std::shared_ptr<Lock> lock_;
  const ElectionOptions options_;
  const int64_t thread_id_;  // the owner of this election's holds: unique in the process
  uint64_t close_hook_ = 0;

  // Callbacks run under this one (recursive: a callback may call resign()).
  std::recursive_mutex callbacks_;
  mutable std::mutex mutex_;  // the state below
  bool active_ = false;       // campaigning or leading
  bool leader_ = false;
  int64_t term_ = 0;
  uint64_t round_ = 0;   // grows with each campaign and each end: stale outcomes are dropped
  int outstanding_ = 0;  // campaign outcomes not yet arrived
  std::condition_variable settled_;
  std::shared_ptr<CancelSet> cancel_;
  Elected elected_;
  Revoked revoked_;
};

}  // namespace rlock::core
