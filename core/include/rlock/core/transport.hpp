// Runs commands for many threads. hiredis contexts are not thread-safe, so this keeps a pool of
// blocking connections, each used by one caller at a time. Callers never see which connection
// they got, so the strategy can change (e.g. to pipelining) without touching the lock code.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "rlock/core/config.hpp"
#include "rlock/core/connection.hpp"
#include "rlock/core/reply.hpp"

namespace rlock::core {

class Transport {
 public:
  virtual ~Transport() = default;
  // Runs one command. Redis error replies are returned; I/O failures and timeouts throw
  // Error(kConn): the command may or may not have been applied.
  virtual Reply run(const Args& args) = 0;
  // For commands that are safe to apply twice: on an I/O failure, retries once on a fresh
  // connection before throwing.
  virtual Reply run_retrying(const Args& args) = 0;
  // Fails every later call with Error(kClosed) and closes idle connections.
  virtual void close() = 0;
};

class PooledTransport : public Transport {
 public:
  explicit PooledTransport(const ClientConfig& config);
  ~PooledTransport() override;

  Reply run(const Args& args) override;
  Reply run_retrying(const Args& args) override;
  void close() override;

  // Opens one connection now (so bad addresses and credentials fail at client creation).
  void warm_up();

 private:
  std::unique_ptr<Connection> borrow();
  void give_back(std::unique_ptr<Connection> conn);

  const ClientConfig config_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<Connection>> idle_;
  int open_ = 0;  // connections in idle_ plus those lent out
  bool closed_ = false;
};

}  // namespace rlock::core
