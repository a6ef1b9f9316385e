// The client's one pub/sub connection and thread, shared by every waiting lock.
//
// Channels are reference-counted: SUBSCRIBE on the first local waiter, UNSUBSCRIBE once the
// last has been gone for a moment (a lock waited on once is often waited on again soon, and a
// subscription kept meanwhile saves two commands and an attempt per wait). Within the process, a
// "0" message wakes one waiter of the channel and a "1" wakes all. After a lost connection every
// channel is subscribed again and, once confirmed, one waiter per lock retries (every shared-mode
// waiter: read locks, semaphores, latches), covering what was published meanwhile. A PING on an
// idle connection detects a dead peer. Waiters never rely on messages alone: they also sleep with
// a bound (see Lock), so a lost message costs at most one bounded sleep.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "rlock/core/config.hpp"
#include "rlock/core/doorbell.hpp"
#include "rlock/core/reply.hpp"
#include "rlock/core/sentinel.hpp"

namespace rlock::core {

class Connection;

class Subscriber {
 public:
  using Clock = std::chrono::steady_clock;

  struct Channel;
  class Waiter;

  // What a waiter's events wake (a wake-up message, the subscription's confirmation, the
  // channel moving, the subscriber stopping): called with the subscriber's lock held, so it
  // must only queue work (the waiting engine runs the waiter's next step).
  class WakeTarget {
   public:
    virtual void wake_up() = 0;

   protected:
    ~WakeTarget() = default;
  };

  enum class Wake { Signalled, None, Cancelled };

  // One waiting acquire's place on a channel. Leaves the channel when destroyed. Never
  // blocks: what happens to it is told to its target, and read with the calls below.
  class Waiter final {
   public:
    ~Waiter();
    Waiter(const Waiter&) = delete;
    Waiter& operator=(const Waiter&) = delete;

    // The subscription is confirmed by Redis.
    bool subscribed() const;
    // Takes a wake-up meant for this waiter (Signalled), or else puts it in line for one
    // (None). *polls tells whether this waiter keeps the channel's periodic retry: one waiter
    // per channel does (the first to sleep, until it leaves), so the client's waiters on one
    // lock cost Redis one attempt per poll period however many they are (in a poll group,
    // only if it is also the group's first).
    // *message_at (optional) gets, with Signalled, when the unlock message behind the
    // wake-up arrived (min() when it was not a message: a reconnect, a move).
    Wake take_or_sleep(bool* polls, Clock::time_point* message_at = nullptr);
    // Out of line for wake-ups (its timer ran out). True if one had come for it meanwhile.
    bool stop_sleeping();
    // Called when the waiter got what it waited for: a wake-up it did not use is then not
    // handed to another waiter on leaving.
    void satisfied() { pass_on_unused_ = false; }
    // True when join() was given a mark and no message (nor re-subscription) has come on the
    // channel since it was taken: whatever the caller saw after taking it is still news.
    bool nothing_missed() const { return nothing_missed_; }
    // Sharded pub/sub: the server dropped or refused the subscription because the channel's
    // slot is served elsewhere now; the waiter should join again (on the new owner).
    bool moved() const;
    // A waiter of a poll group found the lock free but not its turn (a fair queue's head is
    // another waiter): wakes the group's next waiter to try, as the lock may be its.
    void pass_turn();

   private:
    friend class Subscriber;
    Waiter(Subscriber* owner, Channel* channel, WakeTarget* target)
        : owner_(owner), channel_(channel), target_(target) {}

    Subscriber* owner_;
    Channel* channel_;
    WakeTarget* target_;
    bool signalled_ = false;
    Clock::time_point message_at_ = Clock::time_point::min();  // of the wake-up in signalled_
    bool cancelled_ = false;
    bool sleeping_ = false;
    bool pass_on_unused_ = true;
    bool nothing_missed_ = false;
    bool shared_ = false;
    std::deque<Waiter*>* group_ = nullptr;  // its poll group (join order), or none
    const std::string* group_name_ = nullptr;
  };

  // How a waiter takes part in its channel (join).
  struct Place {
    // Shared mode (a read lock): after a reconnect it retries with the channel's one waiter, as
    // several such waiters may be admitted at once.
    bool shared = false;
    // Waiters on channels of their own (fair: one per owner) that share one periodic retry: the
    // group's first (oldest) waiter polls and retries after a reconnect, the others rely on it.
    std::string group;
  };

  // What a message on a channel means, told by the channel's name (names.hpp).
  enum class Rule : uint8_t {
    Lock,       // "0" wakes one waiter, "1" all
    Semaphore,  // "redisson_sc:...": a count k > 0 wakes up to k waiters
    Latch,      // "redisson_countdownlatch__channel__...": "0" wakes all, others nobody
    KeyEvent,   // "__keyevent@...": a key event (its payload the key) for the key-event hook
  };
  static Rule rule_for(const std::string& channel);

  struct Channel {
    const std::string* name = nullptr;  // the key of this entry in channels_
    Rule rule = Rule::Lock;
    int refcount = 0;
    bool sub_sent = false;  // the last command sent for it was SUBSCRIBE
    int inflight = 0;       // (UN)SUBSCRIBE commands whose confirmation is not yet read
    bool confirmed = false;
    bool retry_on_confirm = false;  // subscribed again after a lost connection
    bool dirty = false;             // queued for the thread to (un)subscribe
    bool moved = false;             // sharded: its slot went to another node
    int permits = 0;                // wake-ups that arrived while nobody slept
    Clock::time_point permit_at = Clock::time_point::min();  // the latest one's message
    uint64_t mark = 0;             // renewed by every message and every confirmation
    Clock::time_point idle_since;  // when refcount last fell to 0
    std::deque<Waiter*> sleeping;
    std::vector<Waiter*> members;
    Waiter* poller = nullptr;  // the waiter that keeps the periodic retry (take_or_sleep)
  };

  // Subscribes on `master`, which must outlive the subscriber. `sharded`: SSUBSCRIBE (the
  // master must own each channel's slot). `marks`: a counter shared by several subscribers,
  // so marks of different ones never match (default: the subscriber's own).
  Subscriber(const ClientConfig& config, MasterSource& master, bool sharded = false,
             std::atomic<uint64_t>* marks = nullptr);
  ~Subscriber();

  // Registers a waiter on a channel (subscribing if it is the first), whose events wake
  // `target`. Throws Error(kClosed) after stop(). `mark` is a message_mark() taken earlier,
  // or 0.
  std::unique_ptr<Waiter> join(const std::string& channel, uint64_t mark, WakeTarget* target,
                               const Place& place);
  std::unique_ptr<Waiter> join(const std::string& channel, uint64_t mark, WakeTarget* target) {
    return join(channel, mark, target, Place{});
  }

  // A mark of the channel's state while it is subscribed (confirmed), else 0.
  // Taken before a lock attempt, it lets a waiter that joins after a failed attempt skip the
  // immediate second attempt, when no unlock message can have slipped between the two.
  // `others_sleeping` (optional) tells whether waiters of this client sleep on the channel
  // with no wake-up pending for them.
  uint64_t message_mark(const std::string& channel, bool* others_sleeping = nullptr);

  // Called with each message of a KeyEvent channel (channel, key), with the subscriber's lock
  // held: it must only queue work. Null: none.
  using KeyEventHook = std::function<void(const std::string&, const std::string&)>;
  void set_key_event_hook(KeyEventHook hook);

  // Cancels every waiter and stops the thread. Idempotent.
  void stop();

  // The master moved: drop the connection now and subscribe everything again on the new one
  // (one waiter per lock retries once subscribed again, as after any lost connection).
  void reconnect();

  // For tests and leak checks: channels currently known (subscribed or pending).
  size_t channel_count();

 private:
  void run();
  void leave(Waiter* w);
  void mark_dirty_locked(Channel& c);
  // `message_at`: when the message that wakes them arrived; min() for other wake-ups.
  void wake_one_locked(Channel& c, Clock::time_point message_at = Clock::time_point::min());
  void wake_all_locked(Channel& c, Clock::time_point message_at = Clock::time_point::min());
  void on_disconnected_locked();
  // Subscribed again after a lost connection: wakes the waiters whose attempt covers the gap.
  void retry_after_reconnect_locked(Channel& c);
  // Signals `w` to attempt (min(): not for a message).
  void signal_locked(Waiter* w, Clock::time_point message_at = Clock::time_point::min());
  static bool polls_for_group(const Waiter* w) { return !w->group_ || w->group_->front() == w; }

  // Replies read on the pub/sub connection. `pong`: set when one answers our PING.
  void handle_reply_locked(const Reply& reply, bool* pong);
  // An error answers the oldest unanswered (S)SUBSCRIBE (sharded: MOVED).
  void handle_error_reply_locked();
  // A (s)message or an (un)subscribe confirmation of `name`.
  void handle_channel_reply_locked(const std::string& kind, const std::string& name,
                                   const std::string& payload);
  // A confirmation for a channel already forgotten: its place among the unanswered goes.
  void handle_unknown_channel_locked(const std::string& kind, const std::string& name);
  // Wakes waiters as the channel's rule says.
  void handle_message_locked(Channel& c, const std::string& payload);
  void handle_subscribed_locked(Channel& c);
  // True when the channel is no longer needed and can be erased.
  bool handle_unsubscribed_locked(Channel& c);
  // One (un)subscribe command of `c` answered.
  void count_answer_locked(Channel& c);
  // The node no longer serves the channel's slot: its waiters must join again.
  void mark_moved_locked(Channel& c);

  // The thread (run) and its steps, which lock mutex_ themselves where needed.
  struct Link;
  // False once stopped; drops the connection first when reconnect() asked for it.
  bool keep_running(Link& link);
  // Connects to the master and queues every channel in use; false (connection lost) on failure.
  bool connect(Link& link);
  void lose_connection(Link& link);
  // Sends the queued (un)subscriptions; returns whether any channel is known, and in
  // `next_expiry` when the next idle channel is due to be dropped.
  bool send_pending(Connection& conn, Clock::time_point* next_expiry);
  void take_dirty_locked(std::vector<std::string>* subscribe,
                         std::vector<std::string>* unsubscribe);
  // PINGs an idle connection; throws Error(kConn) when the PONG is overdue.
  void keep_alive(Link& link, bool have_channels);
  // How long the thread may sleep in poll (-1: until rung).
  static int poll_timeout_ms(const Link& link, bool have_channels, Clock::time_point next_expiry);
  // Sleeps until the connection is readable, the doorbell rings or the timeout; handles what came.
  void wait_and_read(Link& link, int timeout_ms);
  void notify_thread() { doorbell_.ring(); }
  // Unsubscribes channels idle for long enough (or too many); returns when to look again.
  Clock::time_point expire_idle_locked(Clock::time_point now);

  const ClientConfig config_;
  MasterSource& master_;
  std::mutex mutex_;
  KeyEventHook key_event_hook_;  // guarded by mutex_
  bool reconnect_ = false;       // reconnect() asked for a new connection
  std::unordered_map<std::string, Channel> channels_;
  std::unordered_map<std::string, std::deque<Waiter*>> groups_;  // Place::group: its waiters
  std::vector<std::string> dirty_;
  std::deque<std::pair<std::string, Clock::time_point>>
      idle_;  // (channel, idle_since), oldest first
  uint64_t next_mark() { return ++*marks_; }
  const bool sharded_;
  std::atomic<uint64_t> own_marks_{0};
  std::atomic<uint64_t>* marks_;
  // Sharded: the channel of each (S)SUBSCRIBE/SUNSUBSCRIBE sent and not yet answered, in
  // order, so an error reply (MOVED) can be put down to its channel.
  std::deque<std::string> unanswered_;
  bool stop_ = false;
  bool connected_ = false;
  std::thread thread_;
  Doorbell doorbell_;
};

}  // namespace rlock::core
