#include "rlock/core/transport.hpp"

#include <condition_variable>

#include "rlock/core/error.hpp"
#include "rlock/core/stats.hpp"
#include "rlock/core/timing.hpp"

namespace rlock::core {
namespace {

// Callers go to the first connection with fewer requests in flight than this: a few per
// connection batch well (measured: 2 to 16 differ little, 1 is the old one-caller-per-connection
// pool and clearly slower), and light load stays on one connection.
constexpr int kPipelineDepth = 4;

// Busy-poll for a reply at most this long before sleeping: a loopback or LAN round trip is
// shorter than the time it takes to wake a sleeping thread.
constexpr int64_t kSpinUs = 100;

// A connection whose oldest reply is this overdue (a lost request, a paused server, a stuck
// background round) gets no new callers while another can take them: they would share its fate.
constexpr int64_t kOverdueNs = 100'000'000;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void check_master_role(Connection& conn, const Endpoint& where) {
  Reply role = conn.command({"ROLE"});
  if (role.is_error()) {  // NOAUTH: the master wants the password the URL did not give
    const int code = role.error.code == kRedis ? kConn : role.error.code;
    throw Error(code, "Redis at " + where.describe() + " refused ROLE: " + role.str);
  }
  if (role.type == Reply::Type::Array && !role.elements.empty() &&
      role.elements[0].str == "master") {
    return;
  }
  throw Error(kReadOnly, "Redis at " + where.describe() + " is not a master (ROLE: " +
                             (role.type == Reply::Type::Array && !role.elements.empty()
                                  ? printable(role.elements[0].str, 40)
                                  : printable(role.str, 80)) +
                             "); the sentinels are asked again");
}

struct PipelinedTransport::Request {
  std::chrono::steady_clock::time_point deadline;
  Reply reply;
  int error_code = 0;
  std::string error_message;
  bool done = false;
  std::condition_variable wake;
  // Whose thread waits for this request: its own, or for a batch the last request's.
  std::condition_variable* waker = &wake;
};

struct PipelinedTransport::Pipe {
  std::mutex mutex;
  std::shared_ptr<Connection> conn;  // null until first used, and again once it failed
  uint64_t generation = 0;           // of the master address conn was made for
  bool connected_before = false;     // a new conn is a reconnect (stats)
  std::deque<Request*> queue;        // requests sent or about to be, oldest first
  std::string outgoing;              // their commands not yet written
  bool writing = false;
  bool reading = false;
  std::atomic<int> load{0};             // queue.size(), read without the mutex when picking a pipe
  std::atomic<int64_t> progress_ns{0};  // the last reply read, or the queue's start when later
};

PipelinedTransport::PipelinedTransport(const ClientConfig& config)
    : config_(config),
      own_master_(std::make_unique<FixedMaster>(config.endpoint)),
      master_(*own_master_) {
  int n = config_.pool_size > 0 ? config_.pool_size : 1;
  for (int i = 0; i < n; ++i) pipes_.push_back(std::make_unique<Pipe>());
}

PipelinedTransport::PipelinedTransport(const ClientConfig& config, MasterSource& master)
    : config_(config), master_(master) {
  int n = config_.pool_size > 0 ? config_.pool_size : 1;
  for (int i = 0; i < n; ++i) pipes_.push_back(std::make_unique<Pipe>());
}

PipelinedTransport::~PipelinedTransport() = default;

namespace {

// Asks the server whether the user may publish a lock's wake-up: the unlock scripts do, and a
// refusal there fails the unlock after it deleted the key, leaving other processes' waiters to
// their poll. The channel is a sample lock's: ACL channel rules (&pattern, Redis 7's default
// resetchannels) apply too. Redis 7+ checks without publishing (redis.acl_check_cmd); Redis 6,
// which has no channel rules, publishes to the sample channel (no lock is called so; a waiter
// of one would only check again).
constexpr const char* kPublishProbe =
    "if type(redis.acl_check_cmd) ~= 'function' then "
    "  local r = redis.pcall(ARGV[1], ARGV[2], '0') "
    "  if type(r) == 'table' and r.err then return 'denied' end "
    "  return '' "
    "end "
    "if redis.acl_check_cmd(ARGV[1], ARGV[2], '0') then return '' end "
    "return 'denied'";

}  // namespace

void PipelinedTransport::warm_up(bool sharded_pubsub) {
  // Fail at creation, not at the first lock call, when the server wants a password we lack or
  // the user may not run scripts or publish (ACL) or EVAL is renamed away.
  const char* verb = sharded_pubsub ? "SPUBLISH" : "PUBLISH";
  std::string refusal;
  Reply reply = run({"PING"});
  Reply publish;
  if (reply.is_error()) {
    refusal = "refused PING";
  } else {
    publish = run({"EVAL", kPublishProbe, "0", verb, "redisson_lock__channel:{rlock-probe}"});
    reply = publish;
    if (reply.is_error()) refusal = "refused a no-op script (rlock needs EVAL and EVALSHA)";
  }
  if (refusal.empty()) {
    // Every call goes by EVALSHA first: an unknown SHA1 answers NOSCRIPT, a denied command NOPERM.
    reply = run({"EVALSHA", "0000000000000000000000000000000000000000", "0"});
    const RedisErrorKind kind = reply.error.kind;
    if (kind != RedisErrorKind::kNoPerm && kind != RedisErrorKind::kUnknownCommand) reply = Reply{};
    if (reply.is_error()) refusal = "refused EVALSHA, which every rlock call uses";
  }
  if (!refusal.empty()) {
    throw Error(reply.error.code,
                "Redis at " + master_.master().describe() + " " + refusal + ": " + reply.str,
                reply.error.transient);
  }
  if (publish.type == Reply::Type::String && publish.str == "denied") {
    throw Error(kNoPerm, "Redis at " + master_.master().describe() + ": the ACL user may not run " +
                             verb + " on channel redisson_lock__channel:{...} (needs +" +
                             (sharded_pubsub ? "spublish" : "publish") +
                             " and &*), which rlock's unlock scripts call to wake waiters");
  }
}

void PipelinedTransport::reconnect() {
  const std::string why = "the master moved to " + master_.master().describe();
  for (auto& p : pipes_) {
    std::lock_guard<std::mutex> lock(p->mutex);
    if (p->conn) fail_all_locked(*p, kConn, why);
  }
}

PipelinedTransport::Pipe& PipelinedTransport::pick() {
  // The first pipe with room, so that light load stays on one connection and batches there;
  // none whose reply is overdue unless every pipe's is.
  const int64_t now = steady_ns();
  Pipe* least = nullptr;
  Pipe* least_overdue = pipes_[0].get();
  for (auto& p : pipes_) {
    const int load = p->load.load(std::memory_order_relaxed);
    if (load > 0 && now - p->progress_ns.load(std::memory_order_relaxed) > kOverdueNs) {
      if (load < least_overdue->load.load(std::memory_order_relaxed)) least_overdue = p.get();
      continue;
    }
    if (load < kPipelineDepth) return *p;
    if (least == nullptr || load < least->load.load(std::memory_order_relaxed)) least = p.get();
  }
  return least != nullptr ? *least : *least_overdue;
}

void PipelinedTransport::fail_all_locked(Pipe& pipe, int code, const std::string& message) {
  if (pipe.conn) pipe.conn->shutdown();  // wakes a reader still blocked on it
  pipe.conn.reset();
  pipe.outgoing.clear();
  for (Request* r : pipe.queue) {
    r->error_code = code;
    r->error_message = message;
    r->done = true;
    r->waker->notify_one();
  }
  pipe.queue.clear();
  pipe.load.store(0, std::memory_order_relaxed);
}

void PipelinedTransport::write_queued(Pipe& pipe, std::unique_lock<std::mutex>& lock) {
  pipe.writing = true;
  std::string bytes;
  while (!pipe.outgoing.empty() && pipe.conn) {
    std::shared_ptr<Connection> conn = pipe.conn;
    bytes.clear();
    bytes.swap(pipe.outgoing);
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.command_timeout_ms);
    lock.unlock();
    try {
      conn->write_all(bytes, deadline);
      lock.lock();
    } catch (const Error& e) {
      lock.lock();
      if (pipe.conn == conn) fail_all_locked(pipe, e.code(), e.what());
    } catch (...) {
      // Out of memory, say: the queued callers must still get an answer, never wait forever.
      lock.lock();
      if (pipe.conn == conn) fail_all_locked(pipe, kNoMemory, "sending a command failed");
    }
  }
  pipe.writing = false;
}

void PipelinedTransport::read_until_done(Pipe& pipe, Request& request,
                                         std::unique_lock<std::mutex>& lock) {
  while (!request.done) {
    if (pipe.reading) {
      // The reader waits until the earliest deadline it saw when it began reading: a request
      // that joined since with an earlier one gives up by itself, taking the connection with
      // it (its reply cannot be skipped in the stream), as the reader would have.
      if (request.wake.wait_until(lock, request.deadline) == std::cv_status::timeout &&
          !request.done && pipe.reading) {
        fail_all_locked(pipe, kConn,
                        "Redis at " + master_.master().describe() + ": no reply within " +
                            std::to_string(config_.command_timeout_ms) + " ms");
      }
      continue;
    }
    // Nobody reads: this caller reads replies in order, handing each to its caller, until its
    // own has come; then the next caller in line takes over.
    pipe.reading = true;
    std::shared_ptr<Connection> conn = pipe.conn;
    while (!request.done) {
      // The earliest deadline in line: a retry's shorter one may sit behind a newer command.
      Deadline deadline = pipe.queue.front()->deadline;
      for (const Request* r : pipe.queue) deadline = std::min(deadline, r->deadline);
      lock.unlock();
      Reply reply;
      try {
        // Busy-poll only when this is the one command in flight: with more, replies come in
        // batches anyway and a spinning reader would take the CPU the others need.
        int64_t spin_us = in_flight_.load(std::memory_order_relaxed) <= 1 ? kSpinUs : 0;
        reply = conn->read_reply(deadline, spin_us);
        lock.lock();
      } catch (const Error& e) {
        lock.lock();
        if (pipe.conn == conn) fail_all_locked(pipe, e.code(), e.what());
        break;
      } catch (...) {
        // The reply could not be kept (out of memory): its place in the stream is lost, so the
        // connection goes, and every caller on it gets an answer rather than waiting forever.
        lock.lock();
        if (pipe.conn == conn) fail_all_locked(pipe, kNoMemory, "reading a reply failed");
        break;
      }
      if (pipe.conn != conn) break;  // failed meanwhile: every request on it was failed
      Request* first = pipe.queue.front();
      pipe.queue.pop_front();
      pipe.progress_ns.store(steady_ns(), std::memory_order_relaxed);
      pipe.load.fetch_sub(1, std::memory_order_relaxed);
      first->reply = std::move(reply);
      first->done = true;
      if (first != &request) first->waker->notify_one();
    }
    pipe.reading = false;
    if (!pipe.queue.empty()) pipe.queue.front()->waker->notify_one();
  }
}

std::shared_ptr<Connection> PipelinedTransport::connect(Deadline deadline) {
  // A handshake the server cut (CLIENT KILL, a restart) sent nothing: a new connection may
  // do. A few tries, within the caller's time: a TLS handshake is a wide window to be cut in.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    // Connecting counts within the caller's time.
    const int64_t connect_ms =
        std::max<int64_t>(1, std::min<int64_t>(config_.connect_timeout_ms, ms_until(deadline)));
    try {
      return std::make_shared<Connection>(master_.master(), connect_ms, config_.command_timeout_ms);
    } catch (const ConnectionCut&) {
      if (attempt >= kAttempts || ms_until(deadline) <= 0) throw;
    }
  }
}

void PipelinedTransport::run_on(Pipe& pipe, Request* requests, size_t count,
                                const std::string& bytes, Deadline deadline) {
  std::unique_lock<std::mutex> lock(pipe.mutex);
  bool idle = pipe.queue.empty() && !pipe.writing && !pipe.reading;
  // A connection the server closed (restart, CLIENT KILL, idle timeout) while nobody used it
  // is replaced before use rather than failing a command.
  if (pipe.conn && idle && pipe.conn->closed_by_peer()) pipe.conn.reset();
  // One made for a master that has since moved goes too.
  if (pipe.conn && idle && pipe.generation != master_.generation()) pipe.conn.reset();
  if (!pipe.conn) {
    const uint64_t generation = master_.generation();
    auto conn = connect(deadline);
    if (master_.check_role()) check_master_role(*conn, master_.master());
    pipe.conn = std::move(conn);
    pipe.generation = generation;
    if (pipe.connected_before) {
      if (Stats* stats = config_.telemetry.stats.get()) Stats::add(stats->reconnects);
    }
    pipe.connected_before = true;
  }
  // The bytes and the requests join their queues together: replies come in that order.
  if (pipe.queue.empty()) pipe.progress_ns.store(steady_ns(), std::memory_order_relaxed);
  pipe.outgoing += bytes;
  for (size_t i = 0; i < count; ++i) {
    requests[i].deadline = deadline;
    requests[i].waker = &requests[count - 1].wake;
    pipe.queue.push_back(&requests[i]);
  }
  pipe.load.fetch_add(static_cast<int>(count), std::memory_order_relaxed);
  in_flight_.fetch_add(static_cast<int>(count), std::memory_order_relaxed);
  struct Landed {
    std::atomic<int>& in_flight;
    int count;
    ~Landed() { in_flight.fetch_sub(count, std::memory_order_relaxed); }
  } landed{in_flight_, static_cast<int>(count)};
  if (!pipe.writing) write_queued(pipe, lock);
  // Replies come in order, so the last one done means all are (or all failed together).
  read_until_done(pipe, requests[count - 1], lock);
  for (size_t i = 0; i < count; ++i) {
    if (requests[i].error_code != 0) throw Error(requests[i].error_code, requests[i].error_message);
  }
}

void PipelinedTransport::run_noted(Request* requests, size_t count, const std::string& bytes,
                                   Deadline deadline) {
  if (closed_.load()) throw Error(kClosed, "the rlock client was closed");
  Stats* const stats = config_.telemetry.stats.get();
  // Read only for the round-trip histogram: a client without stats spares the clock.
  const auto sent =
      stats != nullptr ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  try {
    run_on(pick(), requests, count, bytes, deadline);
  } catch (const Error& e) {
    if (e.code() == kConn || e.code() == kReadOnly) master_.suspect();
    throw;
  }
  if (stats != nullptr) stats->command_rtt.record(std::chrono::steady_clock::now() - sent);
  // A demoted master answers writes with READONLY, one cut off from its replicas with
  // NOREPLICAS: the sentinels know where the master went, or soon will.
  for (size_t i = 0; i < count; ++i) {
    const RedisErrorKind kind = requests[i].reply.error.kind;
    if (kind == RedisErrorKind::kReadOnly || kind == RedisErrorKind::kNoReplicas) {
      master_.suspect();
    }
  }
}

namespace {

void count_scripts(const ClientConfig& config, const Args& args) {
  Stats* stats = config.telemetry.stats.get();
  if (stats != nullptr && !args.empty() && args[0].rfind("EVAL", 0) == 0) {
    Stats::add(stats->scripts_sent);
  }
}

}  // namespace

Reply PipelinedTransport::run(const Args& args, Deadline deadline) {
  count_scripts(config_, args);
  std::string command;
  Connection::append_command(command, args);
  Request request;
  run_noted(&request, 1, command, deadline);
  return std::move(request.reply);
}

std::vector<Reply> PipelinedTransport::run_batch(const std::vector<Args>& commands,
                                                 Deadline deadline) {
  if (commands.empty()) return {};
  std::string bytes;
  for (const Args& args : commands) {
    count_scripts(config_, args);
    Connection::append_command(bytes, args);
  }
  std::vector<Request> requests(commands.size());
  run_noted(requests.data(), requests.size(), bytes, deadline);
  std::vector<Reply> replies;
  replies.reserve(requests.size());
  for (Request& r : requests) replies.push_back(std::move(r.reply));
  return replies;
}

Deadline PipelinedTransport::deadline_from_now() const {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.command_timeout_ms);
}

std::vector<Reply> Transport::run_batch(const std::vector<Args>& commands, Deadline deadline) {
  std::vector<Reply> replies;
  replies.reserve(commands.size());
  for (const Args& args : commands) replies.push_back(run(args, deadline));
  return replies;
}

Reply Transport::run_retrying(const Args& args, Deadline deadline) {
  try {
    return run(args, deadline);
  } catch (const Error& e) {
    // A timeout leaves no time: only a connection that failed early (closed while idle,
    // reset) gets a second try.
    if (e.code() != kConn || std::chrono::steady_clock::now() >= deadline) throw;
  }
  return run(args, deadline);
}

void PipelinedTransport::close() {
  closed_.store(true);
  for (auto& p : pipes_) {
    std::lock_guard<std::mutex> lock(p->mutex);
    if (p->queue.empty() && !p->writing && !p->reading) p->conn.reset();
  }
}

}  // namespace rlock::core
