// Child processes and clocks for tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rlock_test {

// CLOCK_MONOTONIC, which is the same clock in every process of the machine, so stamps taken by
// worker processes can be compared with the test's own.
int64_t mono_ns();
int64_t mono_us();
int64_t mono_ms();

void sleep_ms(int64_t ms);

// A child process started with fork/exec. Its stdout can be captured through a pipe. The child
// is killed (SIGKILL) if the thread that started it dies, and by the destructor if it is still
// running, so a failing test never leaves workers behind.
class Process {
 public:
  // argv[0] is the program; a name without '/' is looked up in PATH.
  explicit Process(const std::vector<std::string>& argv, bool capture_stdout = true);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }

  // Reads one line (without the '\n') from the child's stdout. False on EOF or timeout.
  bool read_line(std::string* line, int64_t timeout_ms);

  // Sends a signal if the child has not been reaped yet.
  void kill(int sig);

  // Waits up to timeout_ms (-1 = forever) for the child to end; true with its waitpid status.
  bool wait(int64_t timeout_ms, int* status);

  bool running();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool reaped_ = false;
  std::string buffer_;
};

// Describes a waitpid status ("exit 0", "signal 9").
std::string describe_status(int status);

// Makes a fresh directory (in /dev/shm when it exists, else $TMPDIR or /tmp) and returns its path.
std::string make_temp_dir(const std::string& prefix);
// Removes a directory tree made by make_temp_dir. Errors are ignored.
void remove_tree(const std::string& path);

}  // namespace rlock_test
