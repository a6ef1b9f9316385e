#include "rlock/core/connection.hpp"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "rlock/core/error.hpp"

namespace rlock::core {
namespace {

timeval to_timeval(int64_t ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

struct ArgvBuffer {
  explicit ArgvBuffer(const Args& args) {
    ptrs.reserve(args.size());
    lens.reserve(args.size());
    for (auto a : args) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  std::vector<const char*> ptrs;
  std::vector<size_t> lens;
};

// Busy-polling threads of the whole process. A spinning thread holds a core, so beyond one
// per two cores (none on one core) it would take the CPU from the threads, or the Redis
// server, it waits for.
std::atomic<int> spinning_threads{0};
const int kMaxSpinningThreads = static_cast<int>(std::thread::hardware_concurrency() / 2);

struct SpinSlot {
  SpinSlot()
      : taken(spinning_threads.fetch_add(1, std::memory_order_relaxed) < kMaxSpinningThreads) {
    if (!taken) spinning_threads.fetch_sub(1, std::memory_order_relaxed);
  }
  ~SpinSlot() { release(); }
  void release() {
    if (taken) spinning_threads.fetch_sub(1, std::memory_order_relaxed);
    taken = false;
  }
  bool taken;
};

int poll_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1;
  return static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

// A connect that got no answer in time: hiredis reports the poll's timeout as an I/O error
// with errno ETIMEDOUT, and a unix socket whose listen queue is full as EAGAIN.
bool connect_timed_out(int hiredis_err, int error_number) {
  return hiredis_err == REDIS_ERR_IO &&
         (error_number == ETIMEDOUT || error_number == EAGAIN || error_number == EWOULDBLOCK);
}

}  // namespace

Reply reply_from_hiredis(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      out.type = Reply::Type::Integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      out.type = Reply::Type::String;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = Reply::Type::Status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = Reply::Type::Error;
      out.str.assign(r->str, r->len);
      out.error = classify_redis_error(out.str);
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::Array;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) {
        out.elements.push_back(reply_from_hiredis(r->element[i]));
      }
      break;
    default:
      out.type = Reply::Type::Nil;
  }
  return out;
}

Connection::Connection(const Endpoint& ep, int64_t connect_timeout_ms, int64_t command_timeout_ms)
    : where_(ep.describe()), command_timeout_ms_(command_timeout_ms) {
  timeval ctv = to_timeval(connect_timeout_ms);
  errno = 0;
  ctx_ = ep.unix_path.empty() ? redisConnectWithTimeout(ep.host.c_str(), ep.port, ctv)
                              : redisConnectUnixWithTimeout(ep.unix_path.c_str(), ctv);
  const int connect_errno = errno;  // what hiredis's I/O error was made from
  if (ctx_ == nullptr) throw Error(kNoMemory, "out of memory allocating a Redis connection");
  if (ctx_->err) {
    std::string why = ctx_->errstr;
    const bool no_answer = connect_timed_out(ctx_->err, connect_errno);
    redisFree(ctx_);
    ctx_ = nullptr;
    if (no_answer) why = "no answer within " + std::to_string(connect_timeout_ms) + " ms";
    throw Error(kConn, "cannot connect to Redis at " + where_ + ": " + why);
  }
  // hiredis 0.14 does not set close-on-exec: without it every program that spawns processes
  // would leak its Redis connections into them.
  ::fcntl(ctx_->fd, F_SETFD, ::fcntl(ctx_->fd, F_GETFD) | FD_CLOEXEC);
  timeval tv = to_timeval(command_timeout_ms);
  redisSetTimeout(ctx_, tv);
  // Keep-alive probes are TCP only; on a unix socket hiredis would mark the context failed.
  if (ep.unix_path.empty()) redisEnableKeepAlive(ctx_);
  try {
    if (ep.has_password) {
      Reply r = ep.username.empty() ? command({"AUTH", ep.password})
                                    : command({"AUTH", ep.username, ep.password});
      if (r.is_error()) {
        const int code = r.error.code == kRedis ? kAuth : r.error.code;
        throw Error(code, "Redis at " + where_ + " rejected the credentials" +
                              (ep.username.empty() ? "" : " of user '" + ep.username + "'") + ": " +
                              r.str);
      }
    }
    if (ep.db != 0) {
      std::string db = std::to_string(ep.db);
      Reply r = command({"SELECT", db});
      if (r.is_error()) {
        throw Error(r.error.code == kRedis ? kInvalid : r.error.code,
                    "Redis at " + where_ + " refused database " + db + ": " + r.str);
      }
    }
  } catch (...) {
    redisFree(ctx_);
    ctx_ = nullptr;
    throw;
  }
}

Connection::~Connection() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

int Connection::fd() const { return ctx_->fd; }

void Connection::shutdown() { ::shutdown(ctx_->fd, SHUT_RDWR); }

void Connection::io_failure(const char* doing) {
  broken_ = true;
  std::string why;
  if (ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    why = "no reply within " + std::to_string(command_timeout_ms_) + " ms";
  } else if (ctx_->err == REDIS_ERR_EOF) {
    why = "connection closed by the server";
  } else {
    why = ctx_->errstr[0] ? ctx_->errstr : std::strerror(errno);
  }
  throw Error(kConn, std::string("Redis at ") + where_ + ": " + doing + " failed: " + why);
}

void Connection::fail(const std::string& why) {
  broken_ = true;
  throw Error(kConn, "Redis at " + where_ + ": " + why);
}

void Connection::append_command(std::string& out, const Args& args) {
  out += '*';
  out += std::to_string(args.size());
  out += "\r\n";
  for (auto a : args) {
    out += '$';
    out += std::to_string(a.size());
    out += "\r\n";
    out.append(a.data(), a.size());
    out += "\r\n";
  }
}

void Connection::write_all(std::string_view bytes, std::chrono::steady_clock::time_point deadline) {
  if (broken_) fail("connection is broken");
  while (!bytes.empty()) {
    ssize_t n = ::send(ctx_->fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      fail(std::string("sending a command failed: ") + std::strerror(errno));
    pollfd p{ctx_->fd, POLLOUT, 0};
    int ms = poll_ms(deadline);
    if (ms == 0)
      fail("sending a command failed: the socket accepted nothing within " +
           std::to_string(command_timeout_ms_) + " ms");
    if (::poll(&p, 1, ms) < 0 && errno != EINTR)
      fail(std::string("poll failed: ") + std::strerror(errno));
  }
}

Reply Connection::read_reply(std::chrono::steady_clock::time_point deadline, int64_t spin_us) {
  if (broken_) fail("connection is broken");
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  // Spinning pays only while replies usually come within the spin (not for a distant server).
  SpinSlot spin_slot;
  if (spin_us <= 0 || typical_wait_us_ > spin_us) spin_slot.release();
  Clock::time_point spin_until = start + std::chrono::microseconds(spin_us);
  char buf[16384];
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(ctx_->reader, &raw) != REDIS_OK) fail("protocol error in reply");
    if (raw != nullptr) {
      Reply out = reply_from_hiredis(static_cast<redisReply*>(raw));
      freeReplyObject(raw);
      auto waited = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
      typical_wait_us_ = (typical_wait_us_ * 7 + waited.count()) / 8;
      return out;
    }
    ssize_t n = ::recv(ctx_->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      if (redisReaderFeed(ctx_->reader, buf, static_cast<size_t>(n)) != REDIS_OK)
        fail("protocol error in reply");
      continue;
    }
    if (n == 0) fail("reading a reply failed: connection closed by the server");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      fail(std::string("reading a reply failed: ") + std::strerror(errno));
    if (spin_slot.taken) {
      if (Clock::now() < spin_until) continue;
      spin_slot.release();
    }
    int ms = poll_ms(deadline);
    if (ms == 0) fail("no reply within " + std::to_string(command_timeout_ms_) + " ms");
    pollfd p{ctx_->fd, POLLIN, 0};
    if (::poll(&p, 1, ms) < 0 && errno != EINTR)
      fail(std::string("poll failed: ") + std::strerror(errno));
  }
}

Reply Connection::command(const Args& args) {
  if (broken_) fail("connection is broken");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(command_timeout_ms_);
  std::string bytes;
  append_command(bytes, args);
  write_all(bytes, deadline);
  return read_reply(deadline);
}

void Connection::send(const Args& args) {
  if (broken_) throw Error(kConn, "Redis at " + where_ + ": connection is broken");
  ArgvBuffer argv(args);
  if (redisAppendCommandArgv(ctx_, static_cast<int>(args.size()), argv.ptrs.data(),
                             argv.lens.data()) != REDIS_OK)
    io_failure("send");
  int done = 0;
  while (!done) {
    errno = 0;
    if (redisBufferWrite(ctx_, &done) != REDIS_OK) io_failure("send");
  }
}

std::vector<Reply> Connection::read_available() {
  if (broken_) throw Error(kConn, "Redis at " + where_ + ": connection is broken");
  errno = 0;
  if (redisBufferRead(ctx_) != REDIS_OK) io_failure("read");
  std::vector<Reply> out;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(ctx_->reader, &raw) != REDIS_OK) {
      broken_ = true;
      throw Error(kConn, "Redis at " + where_ + ": protocol error in reply");
    }
    if (raw == nullptr) break;
    out.push_back(reply_from_hiredis(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return out;
}

bool Connection::closed_by_peer() const {
  char byte;
  ssize_t n = ::recv(ctx_->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // orderly close (CLIENT KILL, server restart, idle timeout)
  if (n > 0) return true;   // unasked data on an idle request connection: unusable
  return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

}  // namespace rlock::core
