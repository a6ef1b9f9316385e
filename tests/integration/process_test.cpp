// What a library client leaves for processes it spawns: nothing. hiredis opens sockets without
// close-on-exec; a child (a command run under `rlock exec`, a daemon) must not inherit them.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "it_support.hpp"

namespace {

// Descriptors of this process that are sockets without FD_CLOEXEC.
std::vector<std::string> inheritable_sockets() {
  std::vector<std::string> found;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return {"cannot read /proc/self/fd"};
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    int fd = std::stoi(e->d_name);
    char target[256] = {0};
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n <= 0 || std::string(target, static_cast<size_t>(n)).rfind("socket:", 0) != 0) continue;
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC))
      found.push_back(std::string(e->d_name) + " -> " + target);
  }
  ::closedir(dir);
  return found;
}

TEST(SpawnedChildren, RedisSocketsAreCloseOnExec) {
  std::vector<std::string> before = inheritable_sockets();
  it::Client client = it::make_client();
  it::Lock holder_lock = it::make_lock(client.get(), rlock_test::unique_name("cloexec"));
  ASSERT_EQ(rlock_acquire(holder_lock.get(), 0), RLOCK_OK) << it::last_error();
  // A waiter on another thread brings up the subscriber connection too.
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.thread_id = 424242;
  opts.wait_ms = 300;
  EXPECT_EQ(rlock_acquire_ex(holder_lock.get(), &opts), RLOCK_ETIMEDOUT);
  std::vector<std::string> after = inheritable_sockets();
  EXPECT_EQ(after.size(), before.size())
      << "sockets a child would inherit: " << (after.empty() ? "" : after.back());
  EXPECT_EQ(rlock_release(holder_lock.get()), RLOCK_OK) << it::last_error();
}

}  // namespace
