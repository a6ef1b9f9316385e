// Client::watch_key_events: Redis keyspace notifications ("__keyevent@<db>__:expired" and
// ":del", the key as payload) heard on the client's subscriber and turned into events.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rlock/core/client.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/parse.hpp"

namespace rlock::core {

// Keeps the channels subscribed: each is a waiter no message wakes.
struct Client::KeyWatch final : Subscriber::WakeTarget {
  int kinds = 0;
  std::vector<std::unique_ptr<Subscriber::Waiter>> channels;
  void wake_up() override {}
};

namespace {

std::string key_event_channel(int db, const char* event) {
  return "__keyevent@" + std::to_string(db) + "__:" + event;
}

// What the server's notify-keyspace-events lacks for `kinds` ("" when nothing); "" too when
// CONFIG GET is refused (an ACL, a managed service): then we cannot tell, and subscribe.
std::string missing_notifications(Transport& transport, int kinds) {
  std::vector<Reply> replies;
  try {
    replies = transport.run_batch({{"CONFIG", "GET", "notify-keyspace-events"}},
                                  transport.deadline_from_now());
  } catch (const Error& e) {
    if (e.code() == kConn || e.code() == kClosed) throw;
    return "";
  }
  if (replies.size() != 1 || replies[0].is_error() || replies[0].elements.size() != 2) return "";
  const std::string flags = replies[0].elements[1].str;
  auto has = [&](char c) { return flags.find(c) != std::string::npos; };
  std::string missing;
  if (!has('E')) missing += 'E';
  if ((kinds & Client::kKeyExpired) != 0 && !has('x') && !has('A')) missing += 'x';
  if ((kinds & Client::kKeyDeleted) != 0 && !has('g') && !has('A')) missing += 'g';
  if (missing.empty()) return "";
  return "the server's notify-keyspace-events is \"" + flags + "\", without " + missing +
         ": it does not publish these key events (CONFIG SET notify-keyspace-events " + flags +
         missing + ")";
}

}  // namespace

void Client::watch_key_events(int kinds) {
  if ((kinds & ~(kKeyExpired | kKeyDeleted)) != 0) {
    throw Error(kInvalid,
                "key event kinds must be a combination of expired (1) and deleted (2), got " +
                    std::to_string(kinds));
  }
  std::lock_guard<std::mutex> guard(key_watch_mutex_);
  if (kinds == 0) {  // stopping: also after close (nothing to stop then)
    subscriber_.set_key_event_hook(nullptr);
    key_watch_.reset();  // unsubscribes
    return;
  }
  if (closed()) throw Error(kClosed, "the rlock client was closed");
  if (config_.topology == Topology::Cluster) {
    throw Error(kUnsupported,
                "key events are not available on Redis Cluster: each node publishes only its "
                "own keys' notifications");
  }
  if (key_watch_ != nullptr && key_watch_->kinds == kinds) return;
  const std::string missing = missing_notifications(*transport_, kinds);
  if (!missing.empty()) throw Error(kUnsupported, missing);
  const int db = config_.endpoint.db;
  const std::string expired = key_event_channel(db, "expired");
  const std::string deleted = key_event_channel(db, "del");
  auto watch = std::make_shared<KeyWatch>();
  watch->kinds = kinds;
  // The hook runs on the subscriber's thread with its lock held: it only queues an event.
  const std::string prefix = config_.key_prefix;
  Events* events = &this->events();
  subscriber_.set_key_event_hook([events, prefix, expired, deleted, kinds](
                                     const std::string& channel, const std::string& key) {
    // Keys of the client's names only (not the bare prefix), and only the kinds asked for: a
    // channel of an earlier watch may linger a moment.
    if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) return;
    Event e;
    if (channel == expired && (kinds & kKeyExpired) != 0) {
      e.kind = Event::KeyExpired;
    } else if (channel == deleted && (kinds & kKeyDeleted) != 0) {
      e.kind = Event::KeyDeleted;
    } else {
      return;
    }
    e.name = key;  // as every event's: the C API gives it without the prefix
    events->emit(std::move(e));
  });
  if ((kinds & kKeyExpired) != 0) {
    watch->channels.push_back(subscriber_.join(expired, 0, watch.get()));
  }
  if ((kinds & kKeyDeleted) != 0) {
    watch->channels.push_back(subscriber_.join(deleted, 0, watch.get()));
  }
  // As Redisson's addListener: return once the server confirmed the subscriptions, so that
  // what happens after this call is reported.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.command_timeout_ms);
  auto confirmed = [&] {
    for (const auto& channel : watch->channels) {
      if (!channel->subscribed()) return false;
    }
    return true;
  };
  while (!confirmed()) {
    if (closed()) throw Error(kClosed, "the rlock client was closed");
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(kConn,
                  "key events: the server did not confirm the subscription within the command "
                  "timeout");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  key_watch_ = std::move(watch);  // the previous one's channels go
}

}  // namespace rlock::core
