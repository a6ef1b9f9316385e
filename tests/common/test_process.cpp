#include "test_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace rlock_test {

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t mono_us() { return mono_ns() / 1000; }
int64_t mono_ms() { return mono_ns() / 1000000; }

void sleep_ms(int64_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

Process::Process(const std::vector<std::string>& argv, bool capture_stdout) {
  if (argv.empty()) throw std::invalid_argument("Process: empty argv");
  // Everything the child needs is prepared before fork: after fork only async-signal-safe
  // calls are allowed, since the test process has other threads.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2] = {-1, -1};
  if (capture_stdout && pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    int err = errno;
    if (capture_stdout) {
      close(fds[0]);
      close(fds[1]);
    }
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);              // the parent already died
    if (capture_stdout) dup2(fds[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copy
    execvp(args[0], args.data());
    _exit(127);
  }
  if (capture_stdout) {
    close(fds[1]);
    out_fd_ = fds[0];
  }
}

Process::~Process() {
  if (!reaped_) {
    kill(SIGKILL);
    int status;
    wait(-1, &status);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

bool Process::read_line(std::string* line, int64_t timeout_ms) {
  if (out_fd_ < 0) return false;
  const int64_t deadline = mono_ms() + timeout_ms;
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      *line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    int64_t left = deadline - mono_ms();
    if (left <= 0) return false;
    pollfd pfd{out_fd_, POLLIN, 0};
    int r = poll(&pfd, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char chunk[4096];
    ssize_t n = read(out_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void Process::kill(int sig) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
}

bool Process::wait(int64_t timeout_ms, int* status) {
  if (reaped_) return false;
  const int64_t deadline = timeout_ms < 0 ? INT64_MAX : mono_ms() + timeout_ms;
  for (;;) {
    pid_t r = waitpid(pid_, status, timeout_ms < 0 ? 0 : WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      return true;
    }
    if (r < 0 && errno != EINTR) return false;
    if (timeout_ms >= 0 && mono_ms() >= deadline) return false;
    if (timeout_ms >= 0) sleep_ms(2);
  }
}

bool Process::running() {
  if (reaped_) return false;
  int status;
  return !wait(0, &status);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::string make_temp_dir(const std::string& prefix) {
  std::string base = "/tmp";
  struct stat st;
  if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0) {
    base = "/dev/shm";
  } else if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') {
    base = t;
  }
  std::string templ = base + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + templ + ": " + std::strerror(errno));
  }
  return std::string(buf.data());
}

void remove_tree(const std::string& path) {
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string child = path + "/" + name;
      struct stat st;
      if (lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        remove_tree(child);
      } else {
        unlink(child.c_str());
      }
    }
    closedir(d);
  }
  rmdir(path.c_str());
}

}  // namespace rlock_test
