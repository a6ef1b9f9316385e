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
  const auto connect_start = std::chrono::steady_clock::now();
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
    if (ep.tls != nullptr) {
      tls_ = std::make_unique<TlsStream>(
          *ep.tls, ctx_->fd, ep.host, where_,
          connect_start + std::chrono::milliseconds(connect_timeout_ms), connect_timeout_ms);
    }
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
    tls_.reset();
    redisFree(ctx_);
    ctx_ = nullptr;
    throw;
  }
}

Connection::~Connection() {
  tls_.reset();  // before the socket it uses is closed
  if (ctx_ != nullptr) redisFree(ctx_);
}

int Connection::fd() const { return ctx_->fd; }

void Connection::shutdown() { ::shutdown(ctx_->fd, SHUT_RDWR); }

void Connection::fail(const std::string& why, int code) {
  broken_ = true;
  throw Error(code, "Redis at " + where_ + ": " + why);
}

Connection::Io Connection::read_some(char* buf, size_t size, size_t* got, std::string* why) {
  if (tls_ != nullptr) return tls_->read(buf, size, got, why);
  for (;;) {
    ssize_t n = ::recv(ctx_->fd, buf, size, MSG_DONTWAIT);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return Io::kDone;
    }
    if (n == 0) return Io::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Io::kWantRead;
    *why = std::strerror(errno);
    return Io::kFailed;
  }
}

Connection::Io Connection::write_some(const char* buf, size_t size, size_t* put, std::string* why) {
  if (tls_ != nullptr) return tls_->write(buf, size, put, why);
  for (;;) {
    ssize_t n = ::send(ctx_->fd, buf, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      *put = static_cast<size_t>(n);
      return Io::kDone;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Io::kWantWrite;
    *why = n < 0 ? std::strerror(errno) : "the socket took nothing";
    return Io::kFailed;
  }
}

void Connection::io_failed(Io io, const char* doing, const std::string& why) {
  const std::string what = std::string(doing) + " failed: ";
  if (io == Io::kTlsFailed) {
    // Before the first reply, a TLS alert is the server refusing us (TLS 1.3 servers check a
    // client certificate after the client's handshake is done): a TLS failure, not a lost link.
    fail(what + why, answered_ ? kConn : kTls);
  }
  std::string reason = io == Io::kClosed ? "connection closed by the server" : why;
  if (!answered_ && tls_ != nullptr) {
    // TLS 1.3 servers check the client's certificate after the client's side of the handshake
    // is done: a refusal comes as an alert and a close, which a write may meet first. The
    // alert is still readable then.
    char buf[512];
    size_t got = 0;
    std::string alert;
    if (tls_->read(buf, sizeof buf, &got, &alert) == Io::kTlsFailed) fail(what + alert, kTls);
    reason += " before any reply (does the server want a client certificate? tls_cert_file)";
  } else if (!answered_ && where_.compare(0, 5, "unix:") != 0) {
    // A TLS server drops a plaintext client at its first bytes.
    reason += " before any reply: is this a TLS port? (TLS Redis URLs are rediss://)";
  }
  fail(what + reason);
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
    size_t put = 0;
    std::string why;
    const Io io = write_some(bytes.data(), bytes.size(), &put, &why);
    if (io == Io::kDone) {
      bytes.remove_prefix(put);
      continue;
    }
    if (io != Io::kWantRead && io != Io::kWantWrite) io_failed(io, "sending a command", why);
    int ms = poll_ms(deadline);
    if (ms == 0)
      fail("sending a command failed: the socket accepted nothing within " +
           std::to_string(command_timeout_ms_) + " ms");
    // TLS may need to read before it can write; the reader thread may take those bytes, so
    // look again soon rather than sleep on them.
    if (io == Io::kWantRead) ms = std::min(ms, 10);
    pollfd p{ctx_->fd, static_cast<short>(io == Io::kWantRead ? POLLIN : POLLOUT), 0};
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
      if (!answered_.load(std::memory_order_relaxed)) answered_.store(true);
      auto waited = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
      typical_wait_us_ = (typical_wait_us_ * 7 + waited.count()) / 8;
      return out;
    }
    // Only a read that finds nothing leads to poll(): bytes TLS already took off the socket
    // are never waited for there.
    size_t got = 0;
    std::string why;
    const Io io = read_some(buf, sizeof buf, &got, &why);
    if (io == Io::kDone) {
      if (redisReaderFeed(ctx_->reader, buf, got) != REDIS_OK) fail("protocol error in reply");
      continue;
    }
    if (io != Io::kWantRead && io != Io::kWantWrite) io_failed(io, "reading a reply", why);
    if (spin_slot.taken) {
      if (Clock::now() < spin_until) continue;
      spin_slot.release();
    }
    int ms = poll_ms(deadline);
    if (ms == 0) fail("no reply within " + std::to_string(command_timeout_ms_) + " ms");
    if (io == Io::kWantWrite) ms = std::min(ms, 10);  // the writer thread may take the room
    pollfd p{ctx_->fd, static_cast<short>(io == Io::kWantWrite ? POLLOUT : POLLIN), 0};
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
  if (broken_) fail("connection is broken");
  std::string bytes;
  append_command(bytes, args);
  write_all(bytes,
            std::chrono::steady_clock::now() + std::chrono::milliseconds(command_timeout_ms_));
}

std::vector<Reply> Connection::read_available() {
  if (broken_) fail("connection is broken");
  char buf[16384];
  for (;;) {
    size_t got = 0;
    std::string why;
    const Io io = read_some(buf, sizeof buf, &got, &why);
    if (io == Io::kWantRead || io == Io::kWantWrite) break;
    if (io != Io::kDone) io_failed(io, "read", why);
    if (redisReaderFeed(ctx_->reader, buf, got) != REDIS_OK) fail("protocol error in reply");
  }
  std::vector<Reply> out;
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(ctx_->reader, &raw) != REDIS_OK) fail("protocol error in reply");
    if (raw == nullptr) break;
    out.push_back(reply_from_hiredis(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
    if (!answered_.load(std::memory_order_relaxed)) answered_.store(true);
  }
  return out;
}

bool Connection::closed_by_peer() const {
  if (tls_ != nullptr) return tls_->closed_by_peer();
  char byte;
  ssize_t n = ::recv(ctx_->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;  // orderly close (CLIENT KILL, server restart, idle timeout)
  if (n > 0) return true;   // unasked data on an idle request connection: unusable
  return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

}  // namespace rlock::core
