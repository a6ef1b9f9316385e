#include "rlock/core/transport.hpp"

#include <chrono>

#include "rlock/core/error.hpp"

namespace rlock::core {

PooledTransport::PooledTransport(const ClientConfig& config) : config_(config) {}

PooledTransport::~PooledTransport() = default;

void PooledTransport::warm_up() {
  // Fail at creation, not at the first lock call, when the server wants a password we lack or
  // the user may not run scripts (ACL) or EVAL is renamed away.
  std::unique_ptr<Connection> conn = borrow();
  const char* refusal = nullptr;
  Reply reply = conn->command({"PING"});
  if (reply.is_error()) {
    refusal = "refused PING";
  } else {
    reply = conn->command({"EVAL", "return 1", "0"});
    if (reply.is_error()) refusal = "refused a no-op script (rlock needs EVAL/EVALSHA)";
  }
  give_back(std::move(conn));
  if (refusal != nullptr) {
    int code = code_for_redis_error(reply.str);
    throw Error(code, "Redis at " + config_.endpoint.describe() + " " + refusal + ": " + reply.str);
  }
}

std::unique_ptr<Connection> PooledTransport::borrow() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.command_timeout_ms);
  for (;;) {
    if (closed_) throw Error(kClosed, "the rlock client was closed");
    while (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      if (!conn->closed_by_peer()) return conn;
      --open_;  // killed or timed out while idle: drop it and try the next
    }
    if (open_ < config_.pool_size) {
      ++open_;
      lock.unlock();
      try {
        return std::make_unique<Connection>(config_.endpoint, config_.connect_timeout_ms,
                                            config_.command_timeout_ms);
      } catch (...) {
        lock.lock();
        --open_;
        available_.notify_one();
        throw;
      }
    }
    if (available_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= config_.pool_size) {
      throw Error(kConn, "all " + std::to_string(config_.pool_size) +
                             " Redis connections stayed busy for " +
                             std::to_string(config_.command_timeout_ms) + " ms");
    }
  }
}

void PooledTransport::give_back(std::unique_ptr<Connection> conn) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_ || conn->broken()) {
    --open_;
  } else {
    idle_.push_back(std::move(conn));
  }
  available_.notify_one();
}

Reply PooledTransport::run(const Args& args) {
  std::unique_ptr<Connection> conn = borrow();
  try {
    Reply reply = conn->command(args);
    give_back(std::move(conn));
    return reply;
  } catch (...) {
    give_back(std::move(conn));  // broken connections are dropped there
    throw;
  }
}

Reply PooledTransport::run_retrying(const Args& args) {
  try {
    return run(args);
  } catch (const Error& e) {
    if (e.code() != kConn) throw;
  }
  return run(args);
}

void PooledTransport::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  open_ -= static_cast<int>(idle_.size());
  idle_.clear();
  available_.notify_all();
}

}  // namespace rlock::core
