// What this client holds, and the watchdog that keeps it held.
//
// Holds are keyed by (lock name, owner), so every lock handle of one client agrees on them. Each
// hold has a local validity deadline: the send time of the last acquire/renew/extend plus its
// lease, minus a drift allowance. The watchdog thread renews every hold taken without an explicit
// lease every lease/3, many holds per script call, on a renewer thread. A hold is declared lost,
// once, when a renewal finds it gone or when its validity deadline passes without a renewal;
// the lock handle's listener is then told on one of those two threads, with no internal lock
// held.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rlock/core/config.hpp"

namespace rlock::core {

class Transport;
struct Script;

enum LostReason : int { kLostGone = 1, kLostUnreachable = 2, kLostExpired = 3 };

// How a hold sits in Redis, which decides how it is renewed and released at shutdown.
enum class HoldLayout { Plain, Fair, Read, Write };

// The lost-lock callback of one lock handle.
class LostListener {
 public:
  using Fn = std::function<void(const std::string& name, int64_t thread_id, int reason)>;
  // Replaces the callback; waits for a call running on another thread to return first.
  void set(Fn fn);
  void notify(const std::string& name, int64_t thread_id, int reason);

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  Fn fn_;
  int running_ = 0;
  std::thread::id running_on_;
};

class Holds {
 public:
  using Clock = std::chrono::steady_clock;

  Holds(const ClientConfig& config, Transport& transport);
  ~Holds();

  // An acquire script sent at `sent` granted this owner `count` holds with `lease_ms`.
  void acquired(const std::string& name, const std::string& owner, int64_t thread_id, int64_t count,
                int64_t lease_ms, bool watchdog, Clock::time_point sent,
                std::shared_ptr<LostListener> listener, int64_t token = 0,
                HoldLayout layout = HoldLayout::Plain);
  // A release of this owner is about to be sent / has its answer. While one is in flight a
  // loss the watchdog notices is held back, since the release may be what removed the key; the
  // outcome decides: Held (it released a live hold: no loss), NotHeld (the server no longer
  // had it, or it had outlived its validity: a loss, reported now if not yet), Unknown (no
  // answer or an error reply: only a loss noticed meanwhile is reported). Losses are told on
  // the watchdog thread.
  enum class Released { Held, NotHeld, Unknown };
  void begin_release(const std::string& name, const std::string& owner);
  void end_release(const std::string& name, const std::string& owner, Released outcome);
  // A release left `left` holds (0 = unlocked), re-applying `lease_ms`.
  void released(const std::string& name, const std::string& owner, int64_t left, int64_t lease_ms,
                Clock::time_point sent);
  // An extend reset the lease.
  void extended(const std::string& name, const std::string& owner, int64_t lease_ms,
                Clock::time_point sent);
  // A lock handle is gone: holds acquired only through it are forgotten (no network call), so
  // the watchdog stops renewing them and they expire by their lease. Holds also acquired
  // through a live handle stay.
  void abandon(const LostListener* handle);
  // The server says the owner does not hold the lock: drop it. Returns true if it was held
  // (or known lost) here, i.e. the owner lost it.
  bool forget(const std::string& name, const std::string& owner);

  int64_t count(const std::string& name, const std::string& owner) const;  // 0 if lost
  int64_t lease(const std::string& name, const std::string& owner) const;  // 0 if unknown
  // The fencing token of the owner's latest acquire; 0 if none (not held, or not fenced).
  int64_t token(const std::string& name, const std::string& owner) const;
  bool is_held(const std::string& name, const std::string& owner) const;
  bool is_lost(const std::string& name, const std::string& owner) const;
  // Why the owner's hold is lost (as is_lost: also once its validity ran out, before the
  // watchdog marked it); 0 while it is not.
  int lost_reason(const std::string& name, const std::string& owner) const;
  // The owner's hold is renewed by the watchdog (acquired without a lease).
  bool is_watchdog(const std::string& name, const std::string& owner) const;

  struct Active {
    std::string name;
    std::string owner;
    int64_t count;
    HoldLayout layout;
  };
  std::vector<Active> active() const;
  // Holds kept now, not lost (the holds gauge of the stats).
  int64_t live_count() const;

  // Stops the watchdog thread; holds are no longer renewed. Idempotent.
  void stop();

  // Returns a reference that keeps the owning client alive while callbacks run: a callback may
  // drop the user's last reference, and the watchdog thread must not destroy itself.
  void set_keep_alive(std::function<std::shared_ptr<void>()> keep_alive) {
    keep_alive_ = std::move(keep_alive);
  }

  static int64_t drift_ms(int64_t lease_ms) { return lease_ms / 100 + 2; }

  // A script whose effect on an owner's holds is unknown: the undo of an acquire whose reply
  // was lost, or a release or queue leave that got no answer. Until it is known to have run,
  // the owner's next acquire of the lock could inherit a count nobody releases, or be undone by
  // the late script itself. So it runs before that acquire (settle), and meanwhile the renewer
  // thread tries it in the background; a caller whose own deadline has passed never waits for
  // it. Scripts go as every call does (EVALSHA; a NOSCRIPT or a lost reply reloads them).
  struct Cleanup {
    const Script* script;
    std::vector<std::string> keys;
    std::vector<std::string> argv;
    // A release of every hold the owner has: it does all that such releases queued before it
    // would (no acquire of the owner is sent while its cleanups wait), so it replaces them.
    bool releases_all = false;
    // Past this it is dropped, not run (counted in Stats::cleanups_dropped): a semaphore's
    // clean-up reads a latch that expires, and a latch gone reads as "never applied".
    Clock::time_point give_up = Clock::time_point::max();
  };
  // Queues a cleanup. A release of every hold replaces the like releases at the end of the
  // owner's queue: without that, every release to a server that stays down (a RedLock member)
  // would add one, and the queue, and each round of it, would grow without bound.
  void add_cleanup(const std::string& name, const std::string& owner, Cleanup cleanup);
  // Runs the owner's pending cleanups of `name` on this thread, in order, waiting until
  // `deadline` at most (also for a round that is running them). Throws Error(kConn) when they
  // could not all finish. Costs one atomic load when none is pending.
  void settle(const std::string& name, const std::string& owner,
              std::chrono::steady_clock::time_point deadline);
  // A round: every pending cleanup no caller is settling, pipelined (one round trip per slot in
  // a cluster), waiting until `deadline`. What fails waits for the next round. The renewer
  // runs them; the client's close runs a last one.
  void run_cleanups(std::chrono::steady_clock::time_point deadline);
  size_t cleanups_pending() const { return cleanup_count_.load(); }

  // Who holds (docs/operators.md "Who holds it"): a small hash per client at `key`, with the
  // client's `fields` (host, pid, command, start time: name/value pairs) and, per hold of an
  // owner starting with `owner_prefix` (this client's id and ':') once it is a second old,
  // when it was first acquired (since_field, epoch ms). The renewer thread writes new lines as
  // holds reach that age, deletes a line when its hold goes, and gives it a new expiry a third of
  // the watchdog lease apart while anything is listed (writing it whole again when Redis lost
  // it), so it expires a lease after the client stops holding or dies. Never on a caller's path,
  // nothing of a lock's own keys, and nothing at all for holds shorter than a second. A failed
  // write (an ACL refusing the key, Redis unreachable) changes nothing else.
  void set_holder_record(std::string key, std::string owner_prefix,
                         std::vector<std::string> fields);
  // Whether a write of the record was answered (the client's close then deletes it).
  bool holder_written() const;
  const std::string& holder_key() const { return holder_key_; }
  // The record's field of a hold: "since:" + the owner after the client id + '|' + key name.
  // The owner part never holds '|', so the field names one hold.
  static std::string since_field(const std::string& owner_suffix, const std::string& key_name);

 private:
  using Key = std::pair<std::string, std::string>;  // (name, owner)
  struct Hold {
    int64_t thread_id = 0;
    int64_t count = 0;
    int64_t lease_ms = 0;
    int64_t token = 0;
    HoldLayout layout = HoldLayout::Plain;
    bool watchdog = false;
    bool renewing = false;
    bool lost = false;
    int lost_reason = 0;      // once lost
    int releasing = 0;        // releases in flight
    int deferred_reason = 0;  // a loss noticed while one was
    uint64_t generation = 0;
    Clock::time_point held_since;  // the first acquire of this hold (the hold histogram)
    int64_t since_unix_ms = 0;     // the same on the wall clock, for the holder record
    bool recorded = false;         // its since field was written (a release must delete it)
    bool recording = false;        // a holder round in flight writes it
    Clock::time_point valid_until;
    Clock::time_point next_renew;
    Clock::time_point due;  // position in index_
    bool indexed = false;
    std::shared_ptr<LostListener> listener;  // told of a loss: the latest acquiring handle's
    std::vector<std::shared_ptr<LostListener>> handles;  // every handle that acquired it
  };
  struct Notice {
    std::shared_ptr<LostListener> listener;
    std::string name;
    int64_t thread_id;
    int reason;
  };
  struct Renewal {
    Key key;
    uint64_t generation;
    bool read;
    Clock::time_point valid_until;  // a renewal answered later is no use
  };

  void run();
  void renew_loop();
  // Hands the renewer a round of pending cleanups when one is due.
  void start_cleanup_round_locked(Clock::time_point now);
  // Runs the key's cleanups until `deadline`; the caller marked the key settling. False when
  // one failed (it stays pending).
  bool run_cleanups_of(const Key& key, Clock::time_point deadline);
  // Ends a settle of `key` whose first `done` cleanups ran.
  void end_settling_locked(const Key& key, size_t done);
  // Drops the key's cleanups past their give-up time; erases an emptied queue.
  void drop_expired_locked(const Key& key, Clock::time_point now);
  void reindex_locked(const Key& key, Hold& h);
  void unindex_locked(const Key& key, Hold& h);
  void mark_lost_locked(const Key& key, Hold& h, int reason, std::vector<Notice>* notices);
  void lose_or_defer_locked(const Key& key, Hold& h, int reason, std::vector<Notice>* notices);
  void renew(const std::vector<Renewal>& batch, std::vector<Notice>* notices);
  void dispatch(std::vector<Notice>* notices);
  void start_locked();
  // The holder record: when a round is due, its round on the renewer, the fields to delete.
  bool mine_locked(const std::string& owner) const;  // this client's (not an owner id)
  void schedule_holder_locked(const std::string& owner, Clock::time_point sent);
  void drop_recorded_locked(const Key& key, const Hold& h);
  void start_holder_round_locked(Clock::time_point now);
  void write_holder_record();
  struct HolderRound {
    std::vector<std::string> drops;     // since fields to delete
    std::deque<std::string> texts;      // what `set`'s views point at (a deque: they stay put)
    std::vector<std::string_view> set;  // HSET of the record (an Args)
    std::vector<std::pair<Key, uint64_t>> listed;  // the holds in `set`, with their generation
    bool whole = false;  // the client's fields and every hold (the record may be missing)
    bool full = false;   // a new expiry
  };
  void take_holder_round_locked(Clock::time_point start, HolderRound* round);
  void end_holder_round_locked(Clock::time_point start, const HolderRound& round, bool ok,
                               bool missing);
  void wake_if_sooner_locked(const Hold& h);

  const ClientConfig config_;
  Transport& transport_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  // When the sleeping watchdog thread wakes by itself; min() while it is awake (it looks at
  // the index before sleeping again). Saves waking it on every acquire and release.
  Clock::time_point watchdog_wakes_at_ = Clock::time_point::min();
  std::map<Key, Hold> holds_;
  std::set<std::pair<Clock::time_point, const Key*>> index_;
  std::vector<Notice> pending_;  // losses found by a caller's thread, told by the watchdog
  uint64_t next_generation_ = 1;
  bool stop_ = false;
  std::thread thread_;
  // Renewal round trips run on a thread of their own, so a slow or paused server never delays
  // the watchdog's deadlines: a hold whose renewal is stuck is reported lost on time.
  std::thread renewer_;
  std::condition_variable renew_wake_;
  std::deque<std::vector<Renewal>> renew_queue_;
  std::function<std::shared_ptr<void>()> keep_alive_;
  // Pending cleanups, oldest first per key; keys a thread is running now; when the renewer
  // next tries them (max() while none waits for it).
  std::map<Key, std::deque<Cleanup>> cleanups_;
  std::set<Key> settling_;
  std::condition_variable settled_;
  std::atomic<size_t> cleanup_count_{0};
  Clock::time_point cleanup_due_ = Clock::time_point::max();
  bool cleanup_round_ = false;
  std::string holder_key_;  // empty: no holder record
  std::string holder_owner_prefix_;
  std::vector<std::string> holder_fields_;
  Clock::time_point holder_due_ = Clock::time_point::max();
  Clock::time_point holder_refresh_at_ = Clock::time_point::min();  // the next new expiry
  bool holder_whole_ = true;  // the next round writes the record whole
  bool holder_round_ = false;
  bool holder_writing_ = false;
  bool holder_written_ = false;
  std::vector<std::string> holder_drops_;
};

}  // namespace rlock::core
