#include "rlock/core/subscriber.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>

#include "rlock/core/connection.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/stats.hpp"
#include "rlock/core/timing.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {
namespace {

constexpr size_t kChannelsPerCommand = 512;
constexpr int64_t kMinBackoffMs = 50;
constexpr int64_t kMaxBackoffMs = 1000;
// How long a channel stays subscribed after its last waiter left, and how many may linger.
constexpr auto kIdleLinger = std::chrono::milliseconds(500);
constexpr size_t kMaxIdleChannels = 1024;

void send_in_chunks(Connection& conn, const char* verb, const std::vector<std::string>& names,
                    size_t per_command) {
  for (size_t i = 0; i < names.size(); i += per_command) {
    Args cmd{verb};
    for (size_t j = i; j < names.size() && j < i + per_command; ++j) cmd.push_back(names[j]);
    conn.send(cmd);
  }
}

}  // namespace

// ---- Waiter ---------------------------------------------------------------------------------

Subscriber::Waiter::~Waiter() { owner_->leave(this); }

bool Subscriber::Waiter::subscribed() const {
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  return channel_->confirmed;
}

Subscriber::Wake Subscriber::Waiter::take_or_sleep(bool* polls, Clock::time_point* message_at) {
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  Channel& c = *channel_;
  *polls = false;
  if (cancelled_) return Wake::Cancelled;  // an unused wake-up is passed on when leaving
  if (signalled_) {
    signalled_ = false;
    if (message_at != nullptr) *message_at = message_at_;
    return Wake::Signalled;
  }
  if (c.permits > 0) {
    --c.permits;
    if (message_at != nullptr) *message_at = c.permit_at;
    return Wake::Signalled;
  }
  if (!sleeping_) {
    c.sleeping.push_back(this);
    sleeping_ = true;
  }
  if (c.poller == nullptr) c.poller = this;
  *polls = c.poller == this && polls_for_group(this);
  return Wake::None;
}

void Subscriber::Waiter::pass_turn() {
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  if (group_ == nullptr) return;
  auto it = std::find(group_->begin(), group_->end(), this);
  // Only onward: a round of passes ends at the group's last waiter.
  if (it != group_->end() && ++it != group_->end() && !(*it)->signalled_) {
    owner_->signal_locked(*it);
  }
}

bool Subscriber::Waiter::stop_sleeping() {
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  if (sleeping_) {
    auto& s = channel_->sleeping;
    s.erase(std::remove(s.begin(), s.end(), this), s.end());
    sleeping_ = false;
  }
  const bool woken = signalled_;
  signalled_ = false;
  return woken;
}

// ---- Subscriber -----------------------------------------------------------------------------

bool Subscriber::Waiter::moved() const {
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  return channel_->moved;
}

Subscriber::Subscriber(const ClientConfig& config, MasterSource& master, bool sharded,
                       std::atomic<uint64_t>* marks)
    : config_(config),
      master_(master),
      sharded_(sharded),
      marks_(marks != nullptr ? marks : &own_marks_) {}

Subscriber::~Subscriber() { stop(); }

uint64_t Subscriber::message_mark(const std::string& name, bool* others_sleeping) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (others_sleeping != nullptr) *others_sleeping = false;
  auto it = channels_.find(name);
  if (it == channels_.end()) return 0;
  const Channel& c = it->second;
  if (!c.confirmed) return 0;
  if (others_sleeping != nullptr) *others_sleeping = !c.sleeping.empty() && c.permits == 0;
  return c.mark;
}

std::unique_ptr<Subscriber::Waiter> Subscriber::join(const std::string& name, uint64_t mark,
                                                     WakeTarget* target, const Place& place) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) throw Error(kClosed, "the rlock client was closed");
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  auto [it, added] = channels_.try_emplace(name);
  Channel& c = it->second;
  c.name = &it->first;
  if (added) c.rule = rule_for(name);
  std::unique_ptr<Waiter> w(new Waiter(this, &c, target));
  w->nothing_missed_ = mark != 0 && c.confirmed && c.mark == mark;
  w->shared_ = place.shared;
  if (!place.group.empty()) {
    auto g = groups_.try_emplace(place.group).first;
    g->second.push_back(w.get());
    w->group_ = &g->second;
    w->group_name_ = &g->first;
  }
  c.members.push_back(w.get());
  if (c.moved) {  // routed here again: try this node once more
    c.moved = false;
    mark_dirty_locked(c);
  }
  if (++c.refcount == 1) mark_dirty_locked(c);
  return w;
}

void Subscriber::leave(Waiter* w) {
  std::lock_guard<std::mutex> lock(mutex_);
  Channel& c = *w->channel_;
  if (w->sleeping_) {
    c.sleeping.erase(std::remove(c.sleeping.begin(), c.sleeping.end(), w), c.sleeping.end());
  }
  c.members.erase(std::remove(c.members.begin(), c.members.end(), w), c.members.end());
  --c.refcount;
  if (w->signalled_ && w->pass_on_unused_) wake_one_locked(c, w->message_at_);
  if (w->group_ != nullptr) {
    const bool was_first = w->group_->front() == w;
    w->group_->erase(std::remove(w->group_->begin(), w->group_->end(), w), w->group_->end());
    if (w->group_->empty()) {
      groups_.erase(*w->group_name_);
    } else if (was_first) {
      w->group_->front()->target_->wake_up();  // the group's periodic retry is its now
    }
  }
  if (c.poller == w) {
    // The periodic retry passes to the waiter in line longest (woken to take it up).
    c.poller = nullptr;
    if (!c.sleeping.empty()) c.sleeping.front()->target_->wake_up();
  }
  c.permits = std::min(c.permits, c.refcount);
  if (c.refcount == 0) {
    c.idle_since = Clock::now();
    idle_.emplace_back(*c.name, c.idle_since);
    if (idle_.size() > kMaxIdleChannels) notify_thread();
  }
}

Subscriber::Clock::time_point Subscriber::expire_idle_locked(Clock::time_point now) {
  while (!idle_.empty()) {
    auto& [name, since] = idle_.front();
    auto it = channels_.find(name);
    bool current =
        it != channels_.end() && it->second.refcount == 0 && it->second.idle_since == since;
    if (current && since + kIdleLinger > now && idle_.size() <= kMaxIdleChannels) {
      return since + kIdleLinger;
    }
    if (current) mark_dirty_locked(it->second);
    idle_.pop_front();
  }
  return Clock::time_point::max();
}

void Subscriber::mark_dirty_locked(Channel& c) {
  if (!c.dirty) {
    c.dirty = true;
    dirty_.push_back(*c.name);
  }
  notify_thread();
}

void Subscriber::signal_locked(Waiter* w, Clock::time_point message_at) {
  if (w->sleeping_) {
    auto& s = w->channel_->sleeping;
    if (s.front() == w) {
      s.pop_front();  // the usual case, a message's wake-up: no scan of a long line
    } else {
      s.erase(std::remove(s.begin(), s.end(), w), s.end());
    }
    w->sleeping_ = false;
  }
  w->signalled_ = true;
  w->message_at_ = message_at;
  w->target_->wake_up();
}

void Subscriber::wake_one_locked(Channel& c, Clock::time_point message_at) {
  if (!c.sleeping.empty()) {
    signal_locked(c.sleeping.front(), message_at);
  } else if (c.permits < c.refcount) {
    ++c.permits;
    c.permit_at = message_at;
  }
}

void Subscriber::wake_all_locked(Channel& c, Clock::time_point message_at) {
  for (Waiter* w : c.members) {
    w->signalled_ = true;
    w->message_at_ = message_at;
    w->sleeping_ = false;
    w->target_->wake_up();
  }
  c.sleeping.clear();
}

void Subscriber::on_disconnected_locked() {
  connected_ = false;
  dirty_.clear();
  unanswered_.clear();
  for (auto it = channels_.begin(); it != channels_.end();) {
    Channel& c = it->second;
    c.inflight = 0;
    c.sub_sent = false;
    c.confirmed = false;
    c.dirty = false;
    if (c.refcount == 0) {
      it = channels_.erase(it);
      continue;
    }
    // Nobody retries now: a release published before the new subscription is confirmed is
    // lost anyway, so the attempt that covers the gap must come after the confirmation, and
    // that one attempt covers the drop too. Meanwhile pollers keep their timers.
    c.retry_on_confirm = true;
    ++it;
  }
}

void Subscriber::mark_moved_locked(Channel& c) {
  c.sub_sent = false;
  c.confirmed = false;
  c.moved = true;
  wake_all_locked(c);
}

void Subscriber::count_answer_locked(Channel& c) {
  if (sharded_ && !unanswered_.empty()) unanswered_.pop_front();
  if (c.inflight > 0) --c.inflight;
}

void Subscriber::handle_reply_locked(const Reply& reply, bool* pong) {
  if (reply.type == Reply::Type::Status && reply.str == "PONG") {
    *pong = true;
    return;
  }
  if (reply.type == Reply::Type::Error) {
    handle_error_reply_locked();
    return;
  }
  if (reply.type != Reply::Type::Array || reply.elements.size() < 2) return;
  const std::string& kind = reply.elements[0].str;
  if (kind == "pong") {
    *pong = true;
    return;
  }
  if (reply.elements.size() < 3) return;
  handle_channel_reply_locked(kind, reply.elements[1].str, reply.elements[2].str);
}

void Subscriber::handle_error_reply_locked() {
  // Sharded: SSUBSCRIBE of a channel whose slot this node does not serve (MOVED). Its
  // waiters are told to join again, which routes them to the slot's owner.
  if (unanswered_.empty()) return;
  auto it = channels_.find(unanswered_.front());
  unanswered_.pop_front();
  if (it == channels_.end()) return;
  Channel& c = it->second;
  if (c.inflight > 0) --c.inflight;
  if (c.sub_sent) mark_moved_locked(c);
}

void Subscriber::handle_channel_reply_locked(const std::string& kind, const std::string& name,
                                             const std::string& payload) {
  auto it = channels_.find(name);
  if (it == channels_.end()) {
    handle_unknown_channel_locked(kind, name);
    return;
  }
  Channel& c = it->second;
  if (kind == "message" || kind == "smessage") {
    handle_message_locked(c, payload);
  } else if (kind == "subscribe" || kind == "ssubscribe") {
    handle_subscribed_locked(c);
  } else if (kind == "sunsubscribe" && c.sub_sent && c.confirmed && c.inflight == 0) {
    // Not asked for: the server dropped the subscription because the slot moved away.
    mark_moved_locked(c);
  } else if (kind == "unsubscribe" || kind == "sunsubscribe") {
    if (handle_unsubscribed_locked(c)) channels_.erase(it);
  }
}

void Subscriber::handle_unknown_channel_locked(const std::string& kind, const std::string& name) {
  if (sharded_ && (kind == "ssubscribe" || kind == "sunsubscribe") && !unanswered_.empty() &&
      unanswered_.front() == name) {
    unanswered_.pop_front();
  }
}

Subscriber::Rule Subscriber::rule_for(const std::string& channel) {
  auto starts = [&](const char* prefix) { return channel.rfind(prefix, 0) == 0; };
  if (starts("redisson_sc:")) return Rule::Semaphore;
  if (starts("redisson_countdownlatch__channel__")) return Rule::Latch;
  if (starts("__keyevent@")) return Rule::KeyEvent;
  return Rule::Lock;
}

void Subscriber::set_key_event_hook(KeyEventHook hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  key_event_hook_ = std::move(hook);
}

void Subscriber::handle_message_locked(Channel& c, const std::string& payload) {
  c.mark = next_mark();
  switch (c.rule) {
    case Rule::KeyEvent:
      try {
        if (key_event_hook_) key_event_hook_(*c.name, payload);
      } catch (...) {  // no memory for the event: it is dropped, the subscriber goes on
      }
      return;
    case Rule::Lock:
      if (payload == "0") {
        wake_one_locked(c, Clock::now());
      } else if (payload == "1") {
        wake_all_locked(c, Clock::now());
      }
      return;
    case Rule::Semaphore: {
      // Redisson publishes the permits available (or released): that many waiters may get one.
      // A waiter woken for a permit another process took first goes back to sleep.
      if (payload.empty()) return;
      int64_t permits = 0;
      for (char ch : payload) {
        if (ch < '0' || ch > '9') return;  // not a count above 0 ("-2"): nobody
        permits = std::min<int64_t>(permits * 10 + (ch - '0'), int64_t{1} << 40);
      }
      const Clock::time_point now = Clock::now();
      for (int64_t i = 0; i < permits && i < c.refcount; ++i) wake_one_locked(c, now);
      return;
    }
    case Rule::Latch:
      if (payload == "0") wake_all_locked(c, Clock::now());
      return;
  }
}

void Subscriber::handle_subscribed_locked(Channel& c) {
  count_answer_locked(c);
  if (c.inflight == 0 && c.sub_sent && !c.confirmed) {
    c.confirmed = true;
    c.mark = next_mark();
    // Those waiting for the subscription (sleepers wait for messages, not for this).
    for (Waiter* w : c.members) {
      if (!w->sleeping_) w->target_->wake_up();
    }
    if (c.retry_on_confirm) {
      c.retry_on_confirm = false;
      retry_after_reconnect_locked(c);
    }
  }
}

// One attempt per lock decides for its waiters: granted, or held (they wait for its release
// message, the poller also for the holder's lease), or free but another's turn (a fair queue:
// the group's next waiter tries, pass_turn). Waiters that several may be admitted together (read
// locks, semaphores, latches) each try.
void Subscriber::retry_after_reconnect_locked(Channel& c) {
  if (c.rule != Rule::Lock) {
    wake_all_locked(c);
    return;
  }
  Waiter* one = nullptr;
  bool any_exclusive = false;
  for (Waiter* w : c.members) {
    if (w->shared_) {
      signal_locked(w);
    } else if (polls_for_group(w)) {
      any_exclusive = true;
    }
  }
  for (Waiter* w : c.sleeping) {  // the one a "0" would wake
    if (!w->shared_ && polls_for_group(w)) {
      one = w;
      break;
    }
  }
  if (one != nullptr) {
    signal_locked(one);
  } else if (any_exclusive && c.permits < c.refcount) {
    ++c.permits;  // none asleep yet: the first to sleep takes it
  }
}

bool Subscriber::handle_unsubscribed_locked(Channel& c) {
  count_answer_locked(c);
  return c.inflight == 0 && c.refcount == 0 && !c.sub_sent && !c.dirty;
}

// ---- The subscriber thread ------------------------------------------------------------------

// The thread's connection and what it knows of the connection's health. Only run() and the
// steps it calls touch it, so it needs no lock.
struct Subscriber::Link {
  explicit Link(const ClientConfig& config)
      : ping_idle(config.poll_cap_ms), ping_timeout(config.command_timeout_ms) {}

  const std::chrono::milliseconds ping_idle;     // PING after this long without a read
  const std::chrono::milliseconds ping_timeout;  // give the connection up when PONG takes longer
  std::unique_ptr<Connection> conn;
  Backoff backoff{kMinBackoffMs, kMaxBackoffMs};
  Clock::time_point last_read = Clock::now();
  bool ping_outstanding = false;
  Clock::time_point ping_sent;
  bool connected_before = false;  // a new connection is a reconnect (stats)
};

void Subscriber::run() {
  Link link(config_);
  while (keep_running(link)) {
    if (!link.conn && !connect(link)) {
      doorbell_.wait(link.backoff.next());
      continue;
    }
    try {
      Clock::time_point next_expiry;
      const bool have_channels = send_pending(*link.conn, &next_expiry);
      keep_alive(link, have_channels);
      wait_and_read(link, poll_timeout_ms(link, have_channels, next_expiry));
    } catch (const Error&) {
      lose_connection(link);
      // Back off here too: a server that accepts and then fails every command (at its client
      // limit, say) must not be hammered with reconnects.
      doorbell_.wait(link.backoff.next());
    }
  }
}

bool Subscriber::keep_running(Link& link) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) return false;
  if (reconnect_) {
    reconnect_ = false;
    link.backoff.reset();
    if (link.conn) {
      link.conn.reset();
      on_disconnected_locked();
    }
  }
  return true;
}

bool Subscriber::connect(Link& link) {
  try {
    link.conn = std::make_unique<Connection>(master_.master(), config_.connect_timeout_ms,
                                             config_.command_timeout_ms);
    if (master_.check_role()) check_master_role(*link.conn, master_.master());
    link.last_read = Clock::now();
    link.ping_outstanding = false;
    if (link.connected_before) {
      if (Stats* stats = config_.telemetry.stats.get()) Stats::add(stats->reconnects);
    }
    link.connected_before = true;
    std::lock_guard<std::mutex> lock(mutex_);
    connected_ = true;
    for (auto& entry : channels_) {
      if (entry.second.refcount > 0) mark_dirty_locked(entry.second);
    }
    return true;
  } catch (const Error&) {
    lose_connection(link);
    return false;
  }
}

void Subscriber::lose_connection(Link& link) {
  link.conn.reset();
  master_.suspect();
  std::lock_guard<std::mutex> lock(mutex_);
  on_disconnected_locked();
}

bool Subscriber::send_pending(Connection& conn, Clock::time_point* next_expiry) {
  std::vector<std::string> subscribe, unsubscribe;
  bool have_channels;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    *next_expiry = expire_idle_locked(Clock::now());
    take_dirty_locked(&subscribe, &unsubscribe);
    have_channels = !channels_.empty();
  }
  if (sharded_) {
    // One channel per command: Redis refuses an SSUBSCRIBE whose channels span slots.
    send_in_chunks(conn, "SSUBSCRIBE", subscribe, 1);
    send_in_chunks(conn, "SUNSUBSCRIBE", unsubscribe, 1);
    std::lock_guard<std::mutex> lock(mutex_);
    unanswered_.insert(unanswered_.end(), subscribe.begin(), subscribe.end());
    unanswered_.insert(unanswered_.end(), unsubscribe.begin(), unsubscribe.end());
  } else {
    send_in_chunks(conn, "SUBSCRIBE", subscribe, kChannelsPerCommand);
    send_in_chunks(conn, "UNSUBSCRIBE", unsubscribe, kChannelsPerCommand);
  }
  return have_channels;
}

void Subscriber::take_dirty_locked(std::vector<std::string>* subscribe,
                                   std::vector<std::string>* unsubscribe) {
  for (const std::string& name : dirty_) {
    auto it = channels_.find(name);
    if (it == channels_.end()) continue;
    Channel& c = it->second;
    c.dirty = false;
    if (c.refcount > 0 && !c.sub_sent) {
      c.sub_sent = true;
      c.confirmed = false;
      ++c.inflight;
      subscribe->push_back(name);
    } else if (c.refcount == 0 && c.sub_sent) {
      c.sub_sent = false;
      c.confirmed = false;
      ++c.inflight;
      unsubscribe->push_back(name);
    } else if (c.refcount == 0 && c.inflight == 0) {
      channels_.erase(it);
    }
  }
  dirty_.clear();
}

void Subscriber::keep_alive(Link& link, bool have_channels) {
  Clock::time_point now = Clock::now();
  if (have_channels && !link.ping_outstanding && now - link.last_read >= link.ping_idle) {
    link.conn->send({"PING"});
    link.ping_outstanding = true;
    link.ping_sent = now;
  }
  if (link.ping_outstanding && now - link.ping_sent >= link.ping_timeout) {
    throw Error(kConn, "subscriber connection: no answer to PING");
  }
}

int Subscriber::poll_timeout_ms(const Link& link, bool have_channels,
                                Clock::time_point next_expiry) {
  int timeout_ms = -1;
  if (link.ping_outstanding) {
    timeout_ms = static_cast<int>(ms_until(link.ping_sent + link.ping_timeout));
  } else if (have_channels) {
    timeout_ms = static_cast<int>(ms_until(link.last_read + link.ping_idle));
  }
  if (next_expiry != Clock::time_point::max()) {
    int expiry_ms = static_cast<int>(ms_until(next_expiry)) + 1;
    timeout_ms = timeout_ms < 0 ? expiry_ms : std::min(timeout_ms, expiry_ms);
  }
  return timeout_ms;
}

void Subscriber::wait_and_read(Link& link, int timeout_ms) {
  pollfd pfds[2] = {{link.conn->fd(), POLLIN, 0}, {doorbell_.fd(), POLLIN, 0}};
  ::poll(pfds, 2, timeout_ms);
  if (pfds[1].revents & POLLIN) doorbell_.clear();
  if (!(pfds[0].revents & (POLLIN | POLLHUP | POLLERR))) return;
  std::vector<Reply> replies = link.conn->read_available();
  link.last_read = Clock::now();
  if (!replies.empty()) link.backoff.reset();  // the connection works
  bool pong = false;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Reply& r : replies) handle_reply_locked(r, &pong);
  if (pong) link.ping_outstanding = false;
}

void Subscriber::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    for (auto& [name, c] : channels_) {
      for (Waiter* w : c.members) {
        w->cancelled_ = true;
        w->target_->wake_up();
      }
    }
  }
  notify_thread();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Subscriber::reconnect() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reconnect_ = true;
  }
  notify_thread();
}

size_t Subscriber::channel_count() {
  std::lock_guard<std::mutex> lock(mutex_);
  return channels_.size();
}

}  // namespace rlock::core
