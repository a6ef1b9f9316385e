// Worker process for the multi-process integration tests.
//
//   rlock_it_worker mutex URL NAME COUNTER_FILE STAMPS_FILE THREADS ITERATIONS
//     THREADS threads share one client and one lock handle (so they contend as separate
//     owners). Each runs ITERATIONS critical sections: acquire, read the counter file, sleep
//     0-200 us, write the counter + 1, release. Every section's CLOCK_MONOTONIC enter and exit
//     stamps (ns) are written to STAMPS_FILE as "enter exit" lines. Exit 0 when every call
//     succeeded.
//
//     An optional 8th argument KIND (an rlock_lock_kind number) picks the kind of lock.
//
//   rlock_it_worker fenced URL NAME RESOURCE WATCHDOG_LEASE_MS
//     Acquires NAME as a fenced lock with the watchdog, prints "acquired TOKEN", waits for
//     SIGUSR1, then writes its pid to RESOURCE with rlock_fenced_write, prints
//     "write accepted" or "write refused", releases, prints "release RC", and exits 0. The
//     lost-lock callback prints "lost REASON" whenever it runs.
//
//   rlock_it_worker rw URL NAME STAMPS_FILE THREADS ITERATIONS
//     THREADS owners share one client, a read handle and a write handle on NAME. Each does
//     ITERATIONS sections, a quarter of them (at random) under the write lock and the rest under
//     the read lock, holding for 0-1000 us. Writes "R|W enter exit" lines (monotonic ns) to
//     STAMPS_FILE. Exit 0 when every call succeeded.
//
//   rlock_it_worker fair URL NAME FAIR_WAIT_MS WAIT_MS HOLD_MS THREADS [POLL_CAP_MS]
//     One client (poll_cap_ms POLL_CAP_MS, default the library's) and one RLOCK_LOCK_FAIR handle
//     on NAME with fair_wait_ms FAIR_WAIT_MS (0 = default). Prints "ready CLIENT_ID" once
//     SIGUSR1 is blocked, then starts owner T = 1..THREADS (thread id T, each on a thread of its
//     own) one per SIGUSR1 received, so the test decides the order they queue in. Each owner
//     prints "start T", acquires with WAIT_MS (-1 = forever), prints "acquired T MONO_US" (or
//     "failed T RC"), holds for HOLD_MS, prints "releasing T MONO_US", releases and prints
//     "released T RC". Exit 0 when every owner acquired and released.
//
//   rlock_it_worker elect URL NAME RESOURCE WATCHDOG_LEASE_MS
//     Campaigns in an election on NAME. Prints "elected TERM MONO_US" and "revoked TERM REASON
//     MONO_US" from the callbacks. Every 10 ms, while rlock_election_is_leader says so, writes
//     "<pid>:<term>" to RESOURCE with rlock_fenced_write and the term, and prints
//     "write TERM accepted MONO_US" for the first accepted write of a term and
//     "write TERM refused MONO_US" for every refused one. Runs until killed.
//
//   rlock_it_worker crosslang URL DIR ITERATIONS NAME [NAME...]
//     The C library's side of tests/python/test_crosslang.py, on its contract (see
//     crosslang_worker.py): each iteration takes NAMES[i % n] (a reentrant lock, or with
//     RLOCK_WORKER_KIND=leader one leadership of the election NAME), enters DIR/NAME.inside
//     exclusively (exit 3 when another owner is inside), adds one to DIR/NAME.count (a leader
//     also appends "TERM c" to DIR/NAME.terms, after checking it still leads), leaves and
//     releases or resigns. Prints "ok ITERATIONS" at the end.
//
//   rlock_it_worker hold URL NAME LEASE_MS WATCHDOG_LEASE_MS
//     Acquires NAME with LEASE_MS (-1 = watchdog; WATCHDOG_LEASE_MS 0 = default), prints
//     "acquired BEFORE_US AFTER_US OWNER" (monotonic time before and after the acquire call)
//     and sleeps until killed.
#include <fcntl.h>
#include <pthread.h>
#include <rlock/rlock.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_process.hpp"

namespace {

std::mutex g_err_mutex;

void report(const char* what, int rc) {
  std::lock_guard<std::mutex> lock(g_err_mutex);
  std::fprintf(stderr, "worker %d: %s returned %d: %s\n", static_cast<int>(getpid()), what, rc,
               rlock_last_error()->message);
}

rlock_client* connect(const char* url, int64_t watchdog_lease_ms, int pool_size) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url;
  opts.watchdog_lease_ms = watchdog_lease_ms;
  opts.pool_size = pool_size;
  rlock_client* client = nullptr;
  int rc = rlock_client_new(&client, &opts);
  if (rc != RLOCK_OK) {
    report("rlock_client_new", rc);
    std::exit(2);
  }
  return client;
}

// The counter is a fixed-width decimal so a write never leaves stale digits behind.
bool read_counter(int fd, long long* value) {
  char buf[32] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  *value = std::strtoll(buf, nullptr, 10);
  return true;
}

bool write_counter(int fd, long long value) {
  char buf[32];
  int n = std::snprintf(buf, sizeof buf, "%020lld\n", value);
  return pwrite(fd, buf, static_cast<size_t>(n), 0) == n;
}

int run_mutex(char** argv) {
  const char* url = argv[2];
  const std::string name = argv[3];
  const char* counter_path = argv[4];
  const char* stamps_path = argv[5];
  const int threads = std::atoi(argv[6]);
  const int iterations = std::atoi(argv[7]);

  rlock_client* client = connect(url, 0, threads);
  rlock_lock* lock = nullptr;
  rlock_lock_options lock_options = RLOCK_LOCK_OPTIONS_INIT;
  if (argv[8] != nullptr) lock_options.kind = static_cast<rlock_lock_kind>(std::atoi(argv[8]));
  int rc = rlock_lock_new_n(&lock, client, name.data(), name.size(), &lock_options);
  if (rc != RLOCK_OK) {
    report("rlock_lock_new_n", rc);
    return 2;
  }

  std::vector<std::vector<std::pair<int64_t, int64_t>>> stamps(threads);
  std::vector<int> failed(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      int fd = open(counter_path, O_RDWR);
      if (fd < 0) {
        std::perror("open counter");
        failed[t] = 1;
        return;
      }
      std::mt19937 rng(static_cast<unsigned>(getpid() * 131 + t));
      std::uniform_int_distribution<int> pause_us(0, 200);
      stamps[t].reserve(iterations);
      for (int i = 0; i < iterations; ++i) {
        int r = rlock_acquire(lock, RLOCK_WAIT_FOREVER);
        if (r != RLOCK_OK) {
          report("rlock_acquire", r);
          failed[t] = 1;
          break;
        }
        int64_t enter = rlock_test::mono_ns();
        long long value = 0;
        if (!read_counter(fd, &value)) failed[t] = 1;
        // The read-sleep-write is deliberately not atomic: without mutual exclusion, updates
        // get lost and sections overlap.
        usleep(static_cast<useconds_t>(pause_us(rng)));
        if (!write_counter(fd, value + 1)) failed[t] = 1;
        int64_t exit = rlock_test::mono_ns();
        stamps[t].emplace_back(enter, exit);
        r = rlock_release(lock);
        if (r != RLOCK_OK) {
          report("rlock_release", r);
          failed[t] = 1;
          break;
        }
      }
      close(fd);
    });
  }
  for (std::thread& th : pool) th.join();
  rlock_lock_free(lock);
  rlock_client_free(client);

  FILE* out = std::fopen(stamps_path, "w");
  if (out == nullptr) {
    std::perror("open stamps");
    return 2;
  }
  for (const auto& per_thread : stamps) {
    for (const auto& s : per_thread) {
      std::fprintf(out, "%" PRId64 " %" PRId64 "\n", s.first, s.second);
    }
  }
  if (std::fclose(out) != 0) return 2;
  for (int f : failed) {
    if (f) return 1;
  }
  return 0;
}

int run_rw(char** argv) {
  const char* url = argv[2];
  const std::string name = argv[3];
  const char* stamps_path = argv[4];
  const int threads = std::atoi(argv[5]);
  const int iterations = std::atoi(argv[6]);
  rlock_client* client = connect(url, 0, threads);
  rlock_lock* halves[2] = {nullptr, nullptr};  // [0] read, [1] write
  for (int w = 0; w < 2; ++w) {
    rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
    opts.kind = w ? RLOCK_LOCK_WRITE : RLOCK_LOCK_READ;
    int rc = rlock_lock_new_n(&halves[w], client, name.data(), name.size(), &opts);
    if (rc != RLOCK_OK) {
      report("rlock_lock_new_n", rc);
      return 2;
    }
  }
  struct Stamp {
    bool write;
    int64_t enter, exit;
  };
  std::vector<std::vector<Stamp>> stamps(threads);
  std::vector<int> failed(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(getpid() * 977 + t));
      for (int i = 0; i < iterations; ++i) {
        const bool write = rng() % 4 == 0;
        rlock_lock* lock = halves[write ? 1 : 0];
        int rc = rlock_acquire(lock, 30000);
        if (rc != RLOCK_OK) {
          report("rlock_acquire", rc);
          failed[t] = 1;
          return;
        }
        Stamp s{write, rlock_test::mono_ns(), 0};
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1000));
        s.exit = rlock_test::mono_ns();
        stamps[t].push_back(s);
        rc = rlock_release(lock);
        if (rc != RLOCK_OK) {
          report("rlock_release", rc);
          failed[t] = 1;
          return;
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  rlock_lock_free(halves[0]);
  rlock_lock_free(halves[1]);
  rlock_client_free(client);
  FILE* out = std::fopen(stamps_path, "w");
  if (out == nullptr) return 2;
  for (const auto& per_thread : stamps) {
    for (const Stamp& s : per_thread) {
      std::fprintf(out, "%c %" PRId64 " %" PRId64 "\n", s.write ? 'W' : 'R', s.enter, s.exit);
    }
  }
  if (std::fclose(out) != 0) return 2;
  for (int f : failed) {
    if (f) return 1;
  }
  return 0;
}

void print_lost(rlock_lock*, const char*, size_t, int64_t, rlock_lost_reason reason, void*) {
  std::printf("lost %d\n", static_cast<int>(reason));
  std::fflush(stdout);
}

int run_fenced(char** argv) {
  const char* url = argv[2];
  const std::string name = argv[3];
  const std::string resource = argv[4];
  const int64_t watchdog_lease_ms = std::strtoll(argv[5], nullptr, 10);

  // SIGUSR1 is taken with sigwait, so block it before the library starts its threads.
  sigset_t go;
  sigemptyset(&go);
  sigaddset(&go, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &go, nullptr);

  rlock_client* client = connect(url, watchdog_lease_ms, 0);
  rlock_lock_options lock_options = RLOCK_LOCK_OPTIONS_INIT;
  lock_options.kind = RLOCK_LOCK_FENCED;
  rlock_lock* lock = nullptr;
  int rc = rlock_lock_new_n(&lock, client, name.data(), name.size(), &lock_options);
  if (rc != RLOCK_OK) {
    report("rlock_lock_new_n", rc);
    return 2;
  }
  rlock_lock_set_lost_callback(lock, print_lost, nullptr);
  int64_t token = 0;
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = 10000;
  opts.token = &token;
  rc = rlock_acquire_ex(lock, &opts);
  if (rc != RLOCK_OK) {
    report("rlock_acquire_ex", rc);
    return 1;
  }
  std::printf("acquired %" PRId64 "\n", token);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&go, &sig);
  const std::string value = std::to_string(getpid());
  int accepted = -1;
  rc = rlock_fenced_write(&accepted, client, resource.data(), resource.size(), value.data(),
                          value.size(), token);
  if (rc != RLOCK_OK) {
    report("rlock_fenced_write", rc);
    return 1;
  }
  std::printf("write %s\n", accepted ? "accepted" : "refused");
  std::printf("release %d\n", rlock_release(lock));
  std::fflush(stdout);
  rlock_lock_free(lock);
  rlock_client_free(client);
  return 0;
}

std::mutex g_out_mutex;

// One whole line on stdout at a time, flushed at once (the test reads them as they come).
void say(const char* format, ...) __attribute__((format(printf, 1, 2)));
void say(const char* format, ...) {
  std::lock_guard<std::mutex> lock(g_out_mutex);
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
  std::fflush(stdout);
}

void print_elected(rlock_election*, int64_t term, void*) {
  say("elected %" PRId64 " %" PRId64 "\n", term, rlock_test::mono_us());
}

void print_revoked(rlock_election*, int64_t term, rlock_revoke_reason reason, void*) {
  say("revoked %" PRId64 " %d %" PRId64 "\n", term, static_cast<int>(reason),
      rlock_test::mono_us());
}

int run_elect(char** argv) {
  const char* url = argv[2];
  const std::string name = argv[3];
  const std::string resource = argv[4];
  rlock_client* client = connect(url, std::strtoll(argv[5], nullptr, 10), 0);
  rlock_election* election = nullptr;
  int rc = rlock_election_new(&election, client, name.data(), name.size(), nullptr);
  if (rc == RLOCK_OK) rc = rlock_election_campaign(election, print_elected, print_revoked, nullptr);
  if (rc != RLOCK_OK) {
    report("rlock_election_new/campaign", rc);
    return 2;
  }
  const std::string me = std::to_string(getpid());
  int64_t reported_term = 0;
  for (;;) {
    int64_t term = 0;
    if (rlock_election_is_leader(election) && rlock_election_term(&term, election) == RLOCK_OK) {
      const std::string value = me + ":" + std::to_string(term);
      int accepted = -1;
      rc = rlock_fenced_write(&accepted, client, resource.data(), resource.size(), value.data(),
                              value.size(), term);
      if (rc == RLOCK_OK && !accepted) {
        say("write %" PRId64 " refused %" PRId64 "\n", term, rlock_test::mono_us());
      } else if (rc == RLOCK_OK && term != reported_term) {
        reported_term = term;
        say("write %" PRId64 " accepted %" PRId64 "\n", term, rlock_test::mono_us());
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The cross-language section's work: false when another owner is inside.
bool enter_section(const std::string& dir, const std::string& name) {
  const std::string inside = dir + "/" + name + ".inside";
  const int fd = open(inside.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) return false;
  close(fd);
  const std::string count = dir + "/" + name + ".count";
  long long value = 0;
  if (FILE* f = std::fopen(count.c_str(), "r")) {
    if (std::fscanf(f, "%lld", &value) != 1) value = 0;
    std::fclose(f);
  }
  FILE* f = std::fopen(count.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "%lld\n", value + 1);
  std::fclose(f);
  return true;
}

// An election's first elected term, waited for.
struct Elected {
  std::mutex mutex;
  std::condition_variable changed;
  int64_t term = 0;
};

void note_elected(rlock_election*, int64_t term, void* payload) {
  auto* e = static_cast<Elected*>(payload);
  std::lock_guard<std::mutex> lock(e->mutex);
  e->term = term;
  e->changed.notify_all();
}

// One leadership of `name`: campaign, section (with the term appended), resign. The exit
// status of the worker when it fails, else 0.
int lead_once(rlock_client* client, const std::string& dir, const std::string& name) {
  rlock_election* election = nullptr;
  Elected elected;
  int rc = rlock_election_new(&election, client, name.data(), name.size(), nullptr);
  if (rc == RLOCK_OK) rc = rlock_election_campaign(election, note_elected, nullptr, &elected);
  if (rc != RLOCK_OK) {
    report("rlock_election_new/campaign", rc);
    return 2;
  }
  int64_t term = 0;
  {
    std::unique_lock<std::mutex> lock(elected.mutex);
    elected.changed.wait(lock, [&] { return elected.term != 0; });
    term = elected.term;
  }
  int status = 0;
  if (!enter_section(dir, name)) {
    std::fprintf(stderr, "overlap on %s\n", name.c_str());
    status = 3;
  } else if (!rlock_election_is_leader(election)) {
    std::fprintf(stderr, "leadership of %s lost inside\n", name.c_str());
    status = 4;
  } else {
    FILE* f = std::fopen((dir + "/" + name + ".terms").c_str(), "a");
    if (f != nullptr) {
      std::fprintf(f, "%" PRId64 " c\n", term);
      std::fclose(f);
    }
    unlink((dir + "/" + name + ".inside").c_str());
  }
  rc = rlock_election_resign(election);
  rlock_election_free(election);
  if (status == 0 && rc != RLOCK_OK) {
    report("rlock_election_resign", rc);
    status = 2;
  }
  return status;
}

int run_crosslang(int argc, char** argv) {
  const std::string dir = argv[3];
  const long iterations = std::strtol(argv[4], nullptr, 10);
  const std::vector<std::string> names(argv + 5, argv + argc);
  const char* kind = std::getenv("RLOCK_WORKER_KIND");
  const bool leader = kind != nullptr && std::strcmp(kind, "leader") == 0;
  rlock_client* client = connect(argv[2], 0, 0);
  std::vector<rlock_lock*> locks;
  for (const std::string& name : names) {
    rlock_lock* lock = nullptr;
    if (!leader && rlock_lock_new_n(&lock, client, name.data(), name.size(), nullptr) != RLOCK_OK) {
      report("rlock_lock_new_n", rlock_last_error()->code);
      return 2;
    }
    locks.push_back(lock);
  }
  int status = 0;
  for (long i = 0; i < iterations && status == 0; ++i) {
    const size_t at = static_cast<size_t>(i) % names.size();
    if (leader) {
      status = lead_once(client, dir, names[at]);
      continue;
    }
    int rc = rlock_acquire(locks[at], RLOCK_WAIT_FOREVER);
    if (rc != RLOCK_OK) {
      report("rlock_acquire", rc);
      return 2;
    }
    if (!enter_section(dir, names[at])) {
      std::fprintf(stderr, "overlap on %s\n", names[at].c_str());
      status = 3;
    } else {
      unlink((dir + "/" + names[at] + ".inside").c_str());
    }
    rc = rlock_release(locks[at]);
    if (rc != RLOCK_OK) {
      report("rlock_release", rc);
      return 2;
    }
  }
  for (rlock_lock* lock : locks) rlock_lock_free(lock);
  rlock_client_free(client);
  if (status == 0) say("ok %ld\n", iterations);
  return status;
}

int run_fair(int argc, char** argv) {
  const char* url = argv[2];
  const std::string name = argv[3];
  const int64_t fair_wait_ms = std::strtoll(argv[4], nullptr, 10);
  const int64_t wait_ms = std::strtoll(argv[5], nullptr, 10);
  const int64_t hold_ms = std::strtoll(argv[6], nullptr, 10);
  const int threads = std::atoi(argv[7]);
  const int64_t poll_cap_ms = argc > 8 ? std::strtoll(argv[8], nullptr, 10) : 0;

  // SIGUSR1 is taken with sigwait, so block it before the library starts its threads.
  sigset_t go;
  sigemptyset(&go);
  sigaddset(&go, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &go, nullptr);

  rlock_client_options client_options = RLOCK_CLIENT_OPTIONS_INIT;
  client_options.url = url;
  client_options.poll_cap_ms = poll_cap_ms;
  client_options.pool_size = threads + 1;
  rlock_client* client = nullptr;
  int rc = rlock_client_new(&client, &client_options);
  if (rc != RLOCK_OK) {
    report("rlock_client_new", rc);
    return 2;
  }
  rlock_lock_options lock_options = RLOCK_LOCK_OPTIONS_INIT;
  lock_options.kind = RLOCK_LOCK_FAIR;
  lock_options.fair_wait_ms = fair_wait_ms;
  rlock_lock* lock = nullptr;
  rc = rlock_lock_new_n(&lock, client, name.data(), name.size(), &lock_options);
  if (rc != RLOCK_OK) {
    report("rlock_lock_new_n", rc);
    return 2;
  }
  say("ready %s\n", rlock_client_id(client));

  std::vector<int> failed(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    int sig = 0;
    sigwait(&go, &sig);
    pool.emplace_back([&, t] {
      const int64_t tid = t + 1;
      say("start %" PRId64 "\n", tid);
      rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
      opts.wait_ms = wait_ms;
      opts.thread_id = tid;
      int r = rlock_acquire_ex(lock, &opts);
      const int64_t acquired_us = rlock_test::mono_us();
      if (r != RLOCK_OK) {
        report("rlock_acquire_ex", r);
        say("failed %" PRId64 " %d\n", tid, r);
        failed[t] = 1;
        return;
      }
      say("acquired %" PRId64 " %" PRId64 "\n", tid, acquired_us);
      if (hold_ms > 0) rlock_test::sleep_ms(hold_ms);
      say("releasing %" PRId64 " %" PRId64 "\n", tid, rlock_test::mono_us());
      r = rlock_release_for(lock, tid);
      if (r != RLOCK_OK) {
        report("rlock_release_ex", r);
        failed[t] = 1;
      }
      say("released %" PRId64 " %d\n", tid, r);
    });
  }
  for (std::thread& th : pool) th.join();
  rlock_lock_free(lock);
  rlock_client_free(client);
  for (int f : failed) {
    if (f) return 1;
  }
  return 0;
}

int run_hold(char** argv) {
  const char* url = argv[2];
  const std::string name = argv[3];
  const int64_t lease_ms = std::strtoll(argv[4], nullptr, 10);
  const int64_t watchdog_lease_ms = std::strtoll(argv[5], nullptr, 10);

  rlock_client* client = connect(url, watchdog_lease_ms, 0);
  rlock_lock* lock = nullptr;
  int rc = rlock_lock_new_n(&lock, client, name.data(), name.size(), nullptr);
  if (rc != RLOCK_OK) {
    report("rlock_lock_new_n", rc);
    return 2;
  }
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = 10000;
  opts.lease_ms = lease_ms;
  int64_t before = rlock_test::mono_us();
  rc = rlock_acquire_ex(lock, &opts);
  int64_t after = rlock_test::mono_us();
  if (rc != RLOCK_OK) {
    report("rlock_acquire_ex", rc);
    return 1;
  }
  std::printf("acquired %" PRId64 " %" PRId64 " %s:%" PRId64 "\n", before, after,
              rlock_client_id(client), rlock_current_thread_id());
  std::fflush(stdout);
  for (;;) pause();  // until the test kills us
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 8 || argc == 9) && std::strcmp(argv[1], "mutex") == 0) return run_mutex(argv);
  if (argc == 6 && std::strcmp(argv[1], "fenced") == 0) return run_fenced(argv);
  if (argc == 6 && std::strcmp(argv[1], "elect") == 0) return run_elect(argv);
  if (argc == 7 && std::strcmp(argv[1], "rw") == 0) return run_rw(argv);
  if (argc == 6 && std::strcmp(argv[1], "hold") == 0) return run_hold(argv);
  if (argc >= 6 && std::strcmp(argv[1], "crosslang") == 0) return run_crosslang(argc, argv);
  if ((argc == 8 || argc == 9) && std::strcmp(argv[1], "fair") == 0) return run_fair(argc, argv);
  std::fprintf(stderr,
               "usage: %s mutex URL NAME COUNTER_FILE STAMPS_FILE THREADS ITERATIONS\n"
               "       %s hold URL NAME LEASE_MS WATCHDOG_LEASE_MS\n"
               "       %s fair URL NAME FAIR_WAIT_MS WAIT_MS HOLD_MS THREADS [POLL_CAP_MS]\n",
               argv[0], argv[0], argv[0]);
  return 64;
}
