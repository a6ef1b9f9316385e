#include "rlock/core/subscriber.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>

#include "rlock/core/connection.hpp"
#include "rlock/core/error.hpp"
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

int64_t ms_until(Subscriber::Clock::time_point t) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - Subscriber::Clock::now());
  return std::max<int64_t>(0, d.count());
}

}  // namespace

// ---- Waiter ---------------------------------------------------------------------------------

Subscriber::Waiter::~Waiter() { owner_->leave(this); }

bool Subscriber::Waiter::wait_subscribed(Clock::time_point until) {
  std::unique_lock<std::mutex> lock(owner_->mutex_);
  cv_.wait_until(lock, until, [&] { return channel_->confirmed || cancelled_; });
  return channel_->confirmed;
}

Subscriber::Wake Subscriber::Waiter::wait(Clock::time_point until) {
  std::unique_lock<std::mutex> lock(owner_->mutex_);
  if (cancelled_) return Wake::Cancelled;
  if (!signalled_ && channel_->permits > 0) {
    --channel_->permits;
    return Wake::Signalled;
  }
  if (!signalled_) {
    channel_->sleeping.push_back(this);
    sleeping_ = true;
    cv_.wait_until(lock, until, [&] { return signalled_ || cancelled_; });
    if (sleeping_) {
      auto& s = channel_->sleeping;
      s.erase(std::remove(s.begin(), s.end(), this), s.end());
      sleeping_ = false;
    }
  }
  if (cancelled_) return Wake::Cancelled;  // an unused wake-up is passed on when leaving
  if (signalled_) {
    signalled_ = false;
    return Wake::Signalled;
  }
  return Wake::Timeout;
}

void Subscriber::Waiter::cancel() {
  std::lock_guard<std::mutex> lock(owner_->mutex_);
  cancelled_ = true;
  cv_.notify_all();
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

std::unique_ptr<Subscriber::Waiter> Subscriber::join(const std::string& name, uint64_t mark) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) throw Error(kClosed, "the rlock client was closed");
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  auto it = channels_.try_emplace(name).first;
  Channel& c = it->second;
  c.name = &it->first;
  std::unique_ptr<Waiter> w(new Waiter(this, &c));
  w->nothing_missed_ = mark != 0 && c.confirmed && c.mark == mark;
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
  if (w->signalled_ && w->pass_on_unused_) wake_one_locked(c);
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

void Subscriber::wake_one_locked(Channel& c) {
  if (!c.sleeping.empty()) {
    Waiter* w = c.sleeping.front();
    c.sleeping.pop_front();
    w->sleeping_ = false;
    w->signalled_ = true;
    w->cv_.notify_all();
  } else if (c.permits < c.refcount) {
    ++c.permits;
  }
}

void Subscriber::wake_all_locked(Channel& c) {
  for (Waiter* w : c.members) {
    w->signalled_ = true;
    w->sleeping_ = false;
    w->cv_.notify_all();
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
    c.wake_all_on_confirm = true;
    wake_all_locked(c);  // retry now rather than after a sleep: a wake-up may have been lost
    ++it;
  }
}

void Subscriber::handle_reply_locked(const Reply& reply, bool* pong) {
  if (reply.type == Reply::Type::Status && reply.str == "PONG") {
    *pong = true;
    return;
  }
  if (reply.type == Reply::Type::Error) {
    // Sharded: SSUBSCRIBE of a channel whose slot this node does not serve (MOVED). Its
    // waiters are told to join again, which routes them to the slot's owner.
    if (unanswered_.empty()) return;
    auto it = channels_.find(unanswered_.front());
    unanswered_.pop_front();
    if (it == channels_.end()) return;
    Channel& c = it->second;
    if (c.inflight > 0) --c.inflight;
    if (c.sub_sent) {
      c.sub_sent = false;
      c.confirmed = false;
      c.moved = true;
      wake_all_locked(c);
    }
    return;
  }
  if (reply.type != Reply::Type::Array || reply.elements.size() < 2) return;
  const std::string& kind = reply.elements[0].str;
  if (kind == "pong") {
    *pong = true;
    return;
  }
  if (reply.elements.size() < 3) return;
  auto it = channels_.find(reply.elements[1].str);
  if (it == channels_.end()) {
    if (sharded_ && (kind == "ssubscribe" || kind == "sunsubscribe") && !unanswered_.empty() &&
        unanswered_.front() == reply.elements[1].str) {
      unanswered_.pop_front();
    }
    return;
  }
  Channel& c = it->second;
  if (kind == "message" || kind == "smessage") {
    c.mark = next_mark();
    const std::string& payload = reply.elements[2].str;
    if (payload == "0") {
      wake_one_locked(c);
    } else if (payload == "1") {
      wake_all_locked(c);
    }
  } else if (kind == "subscribe" || kind == "ssubscribe") {
    if (sharded_ && !unanswered_.empty()) unanswered_.pop_front();
    if (c.inflight > 0) --c.inflight;
    if (c.inflight == 0 && c.sub_sent && !c.confirmed) {
      c.confirmed = true;
      c.mark = next_mark();
      for (Waiter* w : c.members) w->cv_.notify_all();
      if (c.wake_all_on_confirm) {
        c.wake_all_on_confirm = false;
        wake_all_locked(c);
      }
    }
  } else if (kind == "sunsubscribe" && c.sub_sent && c.confirmed && c.inflight == 0) {
    // Not asked for: the server dropped the subscription because the slot moved away.
    c.sub_sent = false;
    c.confirmed = false;
    c.moved = true;
    wake_all_locked(c);
  } else if (kind == "unsubscribe" || kind == "sunsubscribe") {
    if (sharded_ && !unanswered_.empty()) unanswered_.pop_front();
    if (c.inflight > 0) --c.inflight;
    if (c.inflight == 0 && c.refcount == 0 && !c.sub_sent && !c.dirty) channels_.erase(it);
  }
}

void Subscriber::run() {
  std::unique_ptr<Connection> conn;
  int64_t backoff_ms = kMinBackoffMs;
  Clock::time_point last_read = Clock::now();
  bool ping_outstanding = false;
  Clock::time_point ping_sent;
  const auto ping_idle = std::chrono::milliseconds(config_.poll_cap_ms);
  const auto ping_timeout = std::chrono::milliseconds(config_.command_timeout_ms);

  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) break;
      if (reconnect_) {
        reconnect_ = false;
        backoff_ms = kMinBackoffMs;
        if (conn) {
          conn.reset();
          on_disconnected_locked();
        }
      }
    }
    if (!conn) {
      try {
        conn = std::make_unique<Connection>(master_.master(), config_.connect_timeout_ms,
                                            config_.command_timeout_ms);
        if (master_.check_role()) check_master_role(*conn, master_.master());
        last_read = Clock::now();
        ping_outstanding = false;
        std::lock_guard<std::mutex> lock(mutex_);
        connected_ = true;
        for (auto& entry : channels_) {
          if (entry.second.refcount > 0) mark_dirty_locked(entry.second);
        }
      } catch (const Error&) {
        conn.reset();
        master_.suspect();
        std::lock_guard<std::mutex> lock(mutex_);
        on_disconnected_locked();
      }
      if (!conn) {
        doorbell_.wait(backoff_ms);
        backoff_ms = std::min(backoff_ms * 2, kMaxBackoffMs);
        continue;
      }
    }

    try {
      std::vector<std::string> subscribe, unsubscribe;
      bool have_channels;
      Clock::time_point next_expiry;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        next_expiry = expire_idle_locked(Clock::now());
        for (const std::string& name : dirty_) {
          auto it = channels_.find(name);
          if (it == channels_.end()) continue;
          Channel& c = it->second;
          c.dirty = false;
          if (c.refcount > 0 && !c.sub_sent) {
            c.sub_sent = true;
            c.confirmed = false;
            ++c.inflight;
            subscribe.push_back(name);
          } else if (c.refcount == 0 && c.sub_sent) {
            c.sub_sent = false;
            c.confirmed = false;
            ++c.inflight;
            unsubscribe.push_back(name);
          } else if (c.refcount == 0 && c.inflight == 0) {
            channels_.erase(it);
          }
        }
        dirty_.clear();
        have_channels = !channels_.empty();
      }
      if (sharded_) {
        // One channel per command: Redis refuses an SSUBSCRIBE whose channels span slots.
        send_in_chunks(*conn, "SSUBSCRIBE", subscribe, 1);
        send_in_chunks(*conn, "SUNSUBSCRIBE", unsubscribe, 1);
        std::lock_guard<std::mutex> lock(mutex_);
        unanswered_.insert(unanswered_.end(), subscribe.begin(), subscribe.end());
        unanswered_.insert(unanswered_.end(), unsubscribe.begin(), unsubscribe.end());
      } else {
        send_in_chunks(*conn, "SUBSCRIBE", subscribe, kChannelsPerCommand);
        send_in_chunks(*conn, "UNSUBSCRIBE", unsubscribe, kChannelsPerCommand);
      }

      Clock::time_point now = Clock::now();
      if (have_channels && !ping_outstanding && now - last_read >= ping_idle) {
        conn->send({"PING"});
        ping_outstanding = true;
        ping_sent = now;
      }
      if (ping_outstanding && now - ping_sent >= ping_timeout) {
        throw Error(kConn, "subscriber connection: no answer to PING");
      }
      int timeout_ms = -1;
      if (ping_outstanding) {
        timeout_ms = static_cast<int>(ms_until(ping_sent + ping_timeout));
      } else if (have_channels) {
        timeout_ms = static_cast<int>(ms_until(last_read + ping_idle));
      }
      if (next_expiry != Clock::time_point::max()) {
        int expiry_ms = static_cast<int>(ms_until(next_expiry)) + 1;
        timeout_ms = timeout_ms < 0 ? expiry_ms : std::min(timeout_ms, expiry_ms);
      }
      pollfd pfds[2] = {{conn->fd(), POLLIN, 0}, {doorbell_.fd(), POLLIN, 0}};
      ::poll(pfds, 2, timeout_ms);
      if (pfds[1].revents & POLLIN) doorbell_.clear();
      if (pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        std::vector<Reply> replies = conn->read_available();
        last_read = Clock::now();
        if (!replies.empty()) backoff_ms = kMinBackoffMs;  // the connection works
        bool pong = false;
        std::lock_guard<std::mutex> lock(mutex_);
        for (const Reply& r : replies) handle_reply_locked(r, &pong);
        if (pong) ping_outstanding = false;
      }
    } catch (const Error&) {
      conn.reset();
      master_.suspect();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        on_disconnected_locked();
      }
      // Back off here too: a server that accepts and then fails every command (at its client
      // limit, say) must not be hammered with reconnects.
      doorbell_.wait(backoff_ms);
      backoff_ms = std::min(backoff_ms * 2, kMaxBackoffMs);
    }
  }
}

void Subscriber::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    for (auto& [name, c] : channels_) {
      for (Waiter* w : c.members) {
        w->cancelled_ = true;
        w->cv_.notify_all();
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
