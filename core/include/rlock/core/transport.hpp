// Runs commands for many threads over a few pipelined connections. A caller appends its command
// to a connection's outgoing bytes and its request to the connection's queue; whichever caller
// finds nobody writing writes everything queued, and whichever finds nobody reading reads
// replies in order and hands each to its caller. Under load many threads' commands share one
// write and one read on each side; alone, a caller writes and reads its own command directly.
// Callers never see which connection they got, so the lock code does not depend on any of this.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rlock/core/config.hpp"
#include "rlock/core/connection.hpp"
#include "rlock/core/reply.hpp"
#include "rlock/core/sentinel.hpp"

namespace rlock::core {

// When a call gives up waiting for its reply.
using Deadline = std::chrono::steady_clock::time_point;

// Throws Error(kReadOnly) unless the server on `conn` says it is a master (ROLE).
void check_master_role(Connection& conn, const Endpoint& where);

class Transport {
 public:
  virtual ~Transport() = default;
  // Runs one command, waiting for its reply until `deadline`. Redis error replies are
  // returned; I/O failures and timeouts throw Error(kConn): the command may or may not have
  // been applied.
  virtual Reply run(const Args& args, Deadline deadline) = 0;
  // The same, waiting the command timeout from now.
  Reply run(const Args& args) { return run(args, deadline_from_now()); }
  // For commands that are safe to apply twice: on an I/O failure with time left before the
  // deadline, retries once on a fresh connection before throwing. Both tries share the
  // deadline, so a retry never doubles the time a call may take.
  Reply run_retrying(const Args& args, Deadline deadline);
  Reply run_retrying(const Args& args) { return run_retrying(args, deadline_from_now()); }
  // Runs several commands back to back on one connection (WAIT must follow the write it waits
  // for on the same connection) and returns their replies in order. A failure throws as run()
  // does. This default runs them one by one, for transports with a single connection.
  virtual std::vector<Reply> run_batch(const std::vector<Args>& commands, Deadline deadline);
  // Now plus the command timeout.
  virtual Deadline deadline_from_now() const = 0;
  // Whether wake-ups go by sharded pub/sub (SPUBLISH): scripts then run their sharded twins.
  virtual bool sharded_pubsub() const { return false; }
  // Fails every later call with Error(kClosed); commands already sent still get their replies.
  virtual void close() = 0;
};

class PipelinedTransport : public Transport {
 public:
  // Commands go to `master`, which must outlive the transport.
  PipelinedTransport(const ClientConfig& config, MasterSource& master);
  // Commands go to the configured endpoint.
  explicit PipelinedTransport(const ClientConfig& config);
  ~PipelinedTransport() override;

  using Transport::run;
  Reply run(const Args& args, Deadline deadline) override;
  std::vector<Reply> run_batch(const std::vector<Args>& commands, Deadline deadline) override;
  Deadline deadline_from_now() const override;
  void close() override;

  // Opens one connection now (so bad addresses and credentials fail at client creation) and
  // checks that the user may run EVAL, EVALSHA and (S)PUBLISH: Error(kNoPerm) names the refused.
  void warm_up(bool sharded_pubsub = false);
  // The master moved: every connection goes, and the commands in flight on them fail with
  // Error(kConn) (they may have been applied); later commands connect to the new master.
  void reconnect();

 private:
  struct Request;
  struct Pipe;

  Pipe& pick();
  // A new connection to the master, tried again when the server cut its handshake.
  std::shared_ptr<Connection> connect(Deadline deadline);
  // Queues `count` requests whose commands are `bytes` and waits for all their replies.
  void run_on(Pipe& pipe, Request* requests, size_t count, const std::string& bytes,
              Deadline deadline);
  // run_on with the master's failures noted (a failover may explain them).
  void run_noted(Request* requests, size_t count, const std::string& bytes, Deadline deadline);
  void write_queued(Pipe& pipe, std::unique_lock<std::mutex>& lock);
  void read_until_done(Pipe& pipe, Request& request, std::unique_lock<std::mutex>& lock);
  static void fail_all_locked(Pipe& pipe, int code, const std::string& message);

  const ClientConfig config_;
  std::unique_ptr<MasterSource> own_master_;  // when none was given
  MasterSource& master_;
  std::vector<std::unique_ptr<Pipe>> pipes_;  // config_.pool_size of them, connected lazily
  std::atomic<unsigned> next_pipe_{0};
  std::atomic<int> in_flight_{0};  // requests of every pipe awaiting replies
  std::atomic<bool> closed_{false};
};

}  // namespace rlock::core
