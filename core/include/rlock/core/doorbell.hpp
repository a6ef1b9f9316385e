// A background thread's doorbell: other threads ring it, and the thread, asleep in poll() on it
// (alone or beside its socket), wakes at once. An eventfd underneath.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "rlock/core/error.hpp"

namespace rlock::core {

class Doorbell {
 public:
  Doorbell() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw Error(kError, "eventfd failed (a background thread's wake-up)");
  }
  ~Doorbell() { ::close(fd_); }
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  void ring() {
    uint64_t one = 1;
    ssize_t ignored = ::write(fd_, &one, sizeof one);
    (void)ignored;
  }
  // Sleeps up to `ms`, or until rung; either way the rings so far are cleared.
  void wait(int64_t ms) {
    pollfd pfd{fd_, POLLIN, 0};
    ::poll(&pfd, 1, static_cast<int>(ms));
    clear();
  }
  // For polling beside other descriptors: clear() after it was readable.
  int fd() const { return fd_; }
  void clear() {
    uint64_t drained;
    ssize_t ignored = ::read(fd_, &drained, sizeof drained);
    (void)ignored;
  }

 private:
  const int fd_;
};

}  // namespace rlock::core
