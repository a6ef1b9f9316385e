// Where the master is: fixed for a lone server, followed through the sentinels otherwise.
//
// SentinelWatch asks every sentinel for the master's address at start and follows the address
// a majority of them names (one stale sentinel must not send the client to an old master). It
// keeps one subscription to "+switch-master" on one sentinel (moving to the next when it
// fails) and asks them all again soon after a switch is announced there, after every
// reconnect (a switch may have been missed meanwhile), every few seconds, and soon after a
// command failed on the master (connection lost, READONLY). When the address
// changes it tells its listeners (the transport and the subscriber drop their connections and
// reconnect to the new master).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rlock/core/config.hpp"
#include "rlock/core/doorbell.hpp"

namespace rlock::core {

class Connection;
struct Reply;

class MasterSource {
 public:
  virtual ~MasterSource() = default;
  // The master's address now, with the configured credentials and database.
  virtual Endpoint master() const = 0;
  // Bumped on every change of master().
  virtual uint64_t generation() const = 0;
  // A command failed on the master in a way a failover explains: look again soon.
  virtual void suspect() = 0;
  // Whether a new connection must first check that its server is a master (ROLE).
  virtual bool check_role() const = 0;
};

// A lone server: the configured endpoint, forever.
class FixedMaster final : public MasterSource {
 public:
  explicit FixedMaster(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}
  Endpoint master() const override { return endpoint_; }
  uint64_t generation() const override { return 0; }
  void suspect() override {}
  bool check_role() const override { return false; }

 private:
  const Endpoint endpoint_;
};

class SentinelWatch final : public MasterSource {
 public:
  explicit SentinelWatch(const ClientConfig& config);
  ~SentinelWatch() override;

  // Finds the master and starts following it. Throws Error(kConn) when no sentinel answers or
  // they disagree with no majority or newest epoch, Error(kInvalid) when every sentinel that
  // answered does not know the master name.
  void start();
  // Called on the watch thread after every change of master. Set before start().
  void add_listener(std::function<void()> fn) { listeners_.push_back(std::move(fn)); }
  void stop();

  Endpoint master() const override;
  uint64_t generation() const override { return generation_.load(); }
  void suspect() override;
  bool check_role() const override { return true; }

 private:
  enum class Answer { Found, Unknown, Unreachable, Refused, Split, TlsFailed };
  // What one sentinel said: nothing (kSilent: unreachable), a refusal of our credentials, an
  // error, that it knows no such master, or the master's address and its config epoch.
  struct View {
    enum class Kind { kSilent, kRefused, kFailed, kNoMaster, kNamed };
    Kind kind = Kind::kSilent;
    Endpoint master;
    int64_t epoch = -1;  // from SENTINEL MASTER; -1 when it did not say
    std::string why;
    bool tls_failed = false;  // the TLS handshake with it failed (certificate, protocol)
  };
  enum class Choice { kNone, kChosen, kSplit };
  // Asks every configured sentinel, all at once, for the master's address and takes the one a
  // majority of them names (else the one of the highest config epoch). Refused: every
  // sentinel reached refused our credentials. Split: they disagree with no way to decide.
  Answer ask(Endpoint* found, std::string* why);
  static View ask_one(const ClientConfig& config, size_t index);
  struct Round;
  // Every sentinel's answer, or as many as it took a majority to agree.
  std::vector<View> ask_all() const;
  // Which of `views` names the master (kChosen, its index in `winner`), or why none does.
  Choice choose(const std::vector<View>& views, size_t* winner, std::string* why) const;
  // Takes `found` as the master; true if it changed.
  bool adopt(const Endpoint& found);
  void run();
  // The steps of run(), all on the watch thread.
  // A connection subscribed to +switch-master on the first sentinel that takes it, or null.
  std::unique_ptr<Connection> subscribe_to_switches();
  // Asks the sentinels, and tells the listeners when the master changed.
  void ask_again();
  void tell_listeners();
  // Sleeps until `wake`, the doorbell or a message, and follows any switch announced; false
  // when the subscription's connection failed.
  bool wait_for_switches(Connection& sub, std::chrono::steady_clock::time_point wake);
  // Whether `r` announces our master's move, to the address then put in `found`.
  bool switched_to(const Reply& r, Endpoint* found) const;

  // Shared with the threads that ask the sentinels, which may outlive a round.
  const std::shared_ptr<const ClientConfig> config_;
  mutable std::mutex mutex_;
  Endpoint master_;
  std::atomic<uint64_t> generation_{0};
  size_t preferred_ = 0;  // index in config_.seeds of the sentinel that answered last
  std::atomic<bool> suspected_{false};
  // The address the last +switch-master named, and until when to keep asking for it (both
  // used on the watch thread only).
  Endpoint announced_;
  std::chrono::steady_clock::time_point chase_until_{};
  std::atomic<bool> stop_{false};
  std::vector<std::function<void()>> listeners_;
  std::thread thread_;
  Doorbell doorbell_;
};

}  // namespace rlock::core
