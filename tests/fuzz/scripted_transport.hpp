// A Transport that answers from a script instead of a server, and records what it was sent, so
// the lock code runs unchanged on fuzzed replies. Out of replies means the connection dropped.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rlock/core/error.hpp"
#include "rlock/core/scripts.hpp"
#include "rlock/core/transport.hpp"

namespace fuzz {

using rlock::core::Args;
using rlock::core::Error;
using rlock::core::Reply;

class ScriptedTransport : public rlock::core::Transport {
 public:
  using Command = std::vector<std::string>;
  struct Exchange {
    Command command;
    bool dropped;  // got kConn instead of a reply
    Reply reply;
    std::thread::id thread;  // the caller's; clean-up rounds run on the watchdog's thread
  };

  // Answers in order; when they run out, `answer` (if set) decides, else kConn is thrown.
  std::deque<Reply> replies;
  std::function<Reply(const Command&)> answer;

  using rlock::core::Transport::run;
  Reply run(const Args& args, rlock::core::Deadline) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) throw Error(rlock::core::kClosed, "scripted transport: closed");
    Exchange e{Command(args.begin(), args.end()), false, Reply::nil(), std::this_thread::get_id()};
    if (!replies.empty()) {
      e.reply = std::move(replies.front());
      replies.pop_front();
    } else if (answer) {
      e.reply = answer(e.command);
    } else {
      e.dropped = true;
    }
    log_.push_back(e);
    if (e.dropped) throw Error(rlock::core::kConn, "scripted transport: no reply left");
    return e.reply;
  }

  rlock::core::Deadline deadline_from_now() const override {
    return std::chrono::steady_clock::now() + std::chrono::seconds(1);
  }

  void close() override {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }

  // Every command sent, with what it got, oldest first.
  std::vector<Exchange> log() {
    std::lock_guard<std::mutex> lock(mutex_);
    return log_;
  }

 private:
  std::mutex mutex_;
  bool closed_ = false;
  std::vector<Exchange> log_;
};

// The embedded script an EVALSHA or EVAL command runs (by its SHA1 or its source), or null.
inline const rlock::core::Script* script_of(const ScriptedTransport::Command& c) {
  namespace s = rlock::core::scripts;
  static const rlock::core::Script* const all[] = {&s::acquire,
                                                   &s::fenced_write,
                                                   &s::fair_acquire,
                                                   &s::fair_release,
                                                   &s::fair_leave,
                                                   &s::fair_force_unlock,
                                                   &s::rw_read_acquire,
                                                   &s::rw_read_release,
                                                   &s::rw_read_renew,
                                                   &s::rw_write_acquire,
                                                   &s::rw_write_release,
                                                   &s::rw_force_unlock,
                                                   &s::release,
                                                   &s::renew,
                                                   &s::extend,
                                                   &s::extend_by,
                                                   &s::force_unlock,
                                                   &s::status,
                                                   &s::undo_acquire,
                                                   &s::fair_undo_acquire,
                                                   &s::rw_read_undo_acquire,
                                                   &s::rw_write_undo_acquire};
  if (c.size() < 3) return nullptr;
  for (const rlock::core::Script* script : all) {
    if ((c[0] == "EVALSHA" && c[1] == script->sha1) || (c[0] == "EVAL" && c[1] == script->source))
      return script;
  }
  return nullptr;
}

// The embedded script a SCRIPT LOAD command loads, or null.
inline const rlock::core::Script* script_loaded_by(const ScriptedTransport::Command& c) {
  if (c.size() != 3 || c[0] != "SCRIPT" || c[1] != "LOAD") return nullptr;
  return script_of({"EVAL", c[2], "0"});
}

// The KEYS of an EVALSHA or EVAL command (empty if it is neither or malformed).
inline std::vector<std::string> keys_of(const ScriptedTransport::Command& c) {
  if (c.size() < 3 || (c[0] != "EVALSHA" && c[0] != "EVAL")) return {};
  size_t n = 0;
  for (char d : c[2]) {
    if (d < '0' || d > '9' || n > c.size()) return {};
    n = n * 10 + static_cast<size_t>(d - '0');
  }
  if (c[2].empty() || 3 + n > c.size()) return {};
  return std::vector<std::string>(c.begin() + 3, c.begin() + 3 + static_cast<long>(n));
}

}  // namespace fuzz
