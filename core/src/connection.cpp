#include "rlock/core/connection.hpp"

#include <hiredis/hiredis.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "rlock/core/error.hpp"

namespace rlock::core {
namespace {

timeval to_timeval(int64_t ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

Reply convert(const redisReply* r) {
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
      break;
    case REDIS_REPLY_ARRAY:
      out.type = Reply::Type::Array;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      out.type = Reply::Type::Nil;
  }
  return out;
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

}  // namespace

Connection::Connection(const Endpoint& ep, int64_t connect_timeout_ms, int64_t command_timeout_ms)
    : where_(ep.describe()), command_timeout_ms_(command_timeout_ms) {
  timeval ctv = to_timeval(connect_timeout_ms);
  ctx_ = ep.unix_path.empty() ? redisConnectWithTimeout(ep.host.c_str(), ep.port, ctv)
                              : redisConnectUnixWithTimeout(ep.unix_path.c_str(), ctv);
  if (ctx_ == nullptr) throw Error(kNoMemory, "out of memory allocating a Redis connection");
  if (ctx_->err) {
    std::string why = ctx_->errstr;
    redisFree(ctx_);
    ctx_ = nullptr;
    if (why.find("timed out") != std::string::npos || why.find("temporarily") != std::string::npos)
      why = "no answer within " + std::to_string(connect_timeout_ms) + " ms";
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
        int code = code_for_redis_error(r.str);
        if (code == kRedis) code = kAuth;
        throw Error(code, "Redis at " + where_ + " rejected the credentials" +
                              (ep.username.empty() ? "" : " of user '" + ep.username + "'") + ": " +
                              r.str);
      }
    }
    if (ep.db != 0) {
      std::string db = std::to_string(ep.db);
      Reply r = command({"SELECT", db});
      if (r.is_error()) {
        int code = code_for_redis_error(r.str);
        throw Error(code == kRedis ? kInvalid : code,
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

Reply Connection::command(const Args& args) {
  if (broken_) throw Error(kConn, "Redis at " + where_ + ": connection is broken");
  ArgvBuffer argv(args);
  errno = 0;
  void* raw = redisCommandArgv(ctx_, static_cast<int>(args.size()), argv.ptrs.data(),
                               argv.lens.data());
  if (raw == nullptr) io_failure("command");
  auto* reply = static_cast<redisReply*>(raw);
  Reply out = convert(reply);
  freeReplyObject(reply);
  return out;
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
    out.push_back(convert(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return out;
}

bool Connection::closed_by_peer() const {
  char byte;
  ssize_t n = ::recv(ctx_->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;   // orderly close (CLIENT KILL, server restart, idle timeout)
  if (n > 0) return true;    // unasked data on an idle request connection: unusable
  return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

}  // namespace rlock::core
