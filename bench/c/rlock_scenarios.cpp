// The scenarios only rlock-c runs: hand-off latency between two processes, a herd of waiting
// processes, the watchdog's cost and the memory of handles and waiters.
#include <pthread.h>
#include <rlock/rlock.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "bench.hpp"

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

// CLOCK_MONOTONIC (what steady_clock reads on Linux) is one clock for every process.
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

void sleep_us(int64_t us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }

std::string rlock_failure(const char* doing) {
  return std::string(doing) + ": " + rlock_last_error()->message;
}

struct Client {
  explicit Client(const std::string& url, int64_t watchdog_lease_ms = 0) {
    rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
    opts.url = url.c_str();
    opts.watchdog_lease_ms = watchdog_lease_ms;
    if (rlock_client_new(&c, &opts) != RLOCK_OK) throw Failure(rlock_failure("rlock_client_new"));
  }
  ~Client() { rlock_client_free(c); }
  rlock_client* c = nullptr;
};

struct Lock {
  Lock(rlock_client* client, const std::string& name, int kind = RLOCK_LOCK_REENTRANT) {
    rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
    opts.kind = kind;
    if (rlock_lock_new(&l, client, name.c_str(), &opts) != RLOCK_OK) {
      throw Failure(rlock_failure("rlock_lock_new"));
    }
  }
  ~Lock() { rlock_lock_free(l); }
  rlock_lock* l = nullptr;
};

// Memory shared with forked children; they report through it and exit.
template <typename T>
T* shared_array(size_t n) {
  void* p = mmap(nullptr, sizeof(T) * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw Failure("mmap failed");
  return new (p) T[n]();
}

// Runs fn in a child process; the child exits 0, or 1 with the message in `error` (shared).
pid_t fork_child(char* error, size_t error_len, const std::function<void()>& fn) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw Failure("fork failed");
  if (pid > 0) return pid;
  int rc = 0;
  try {
    fn();
  } catch (const std::exception& e) {
    std::snprintf(error, error_len, "%s", e.what());
    rc = 1;
  }
  std::fflush(nullptr);
  _exit(rc);
}

void wait_children(const std::vector<pid_t>& pids, const char* error) {
  bool failed = false;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed = failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  if (failed) throw Failure(std::string("a child process failed: ") + (error[0] ? error : "(no message)"));
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * v.size()));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Requests clients sent, from INFO commandstats (commands run inside scripts are counted there
// too, so they are summed apart).
struct CommandCounts {
  int64_t requests = 0;   // what a client can send: scripts, (un)subscribes, pings
  int64_t in_scripts = 0;  // everything else (what the scripts called)
};

CommandCounts command_counts(redisContext* admin) {
  static const char* const kRequests[] = {"evalsha", "eval", "evalsha_ro", "eval_ro", "fcall",
                                          "subscribe", "unsubscribe", "psubscribe",
                                          "punsubscribe", "ping"};
  Reply r = command(admin, {"INFO", "commandstats"});
  std::string text(r->str, r->len);
  CommandCounts out;
  size_t at = 0;
  while ((at = text.find("cmdstat_", at)) != std::string::npos) {
    size_t colon = text.find(':', at);
    std::string cmd = text.substr(at + 8, colon - at - 8);
    int64_t calls = std::atoll(text.c_str() + text.find("calls=", colon) + 6);
    at = colon;
    if (cmd == "info" || cmd == "config") continue;  // ours
    bool request = std::find_if(std::begin(kRequests), std::end(kRequests),
                                [&](const char* c) { return cmd == c; }) != std::end(kRequests);
    (request ? out.requests : out.in_scripts) += calls;
  }
  return out;
}

// ---- 3: hand-off latency --------------------------------------------------------------------

struct PingPong {
  std::atomic<int> turn;                 // whose acquire may start: 0 or 1
  std::atomic<int64_t> released_ns[2];   // when each side's last release returned (0: pending)
  std::atomic<int64_t> stop_ns;
  int count[2];
  char error[512];
};
constexpr int kMaxHandoffs = 200000;

std::vector<Result> handoff(const Options& o) {
  auto* s = shared_array<PingPong>(1);
  auto* samples = shared_array<int64_t>(2 * kMaxHandoffs);
  const std::string name = "bench:h:rlock-c:0";
  // Each side: take the lock, note how long after the other's release that was, hold it long
  // enough for the other side to be waiting (1 ms), let it go, then wait for the other side to
  // have it before asking again (so no side barges back in).
  auto side = [&](int me) {
    Client client(o.url);
    Lock lock(client.c, name);
    int64_t* mine = samples + me * kMaxHandoffs;
    for (;;) {
      while (s->turn.load() != me) {
        if (now_ns() >= s->stop_ns.load()) return;
        sleep_us(50);
      }
      if (rlock_acquire(lock.l, RLOCK_WAIT_FOREVER) != RLOCK_OK) {
        throw Failure(rlock_failure("rlock_acquire"));
      }
      int64_t got = now_ns();
      int64_t other_released = s->released_ns[1 - me].exchange(0);
      if (other_released != 0 && s->count[me] < kMaxHandoffs) {
        mine[s->count[me]++] = got - other_released;
      }
      s->turn.store(1 - me);
      sleep_us(1000);
      if (rlock_release(lock.l) != RLOCK_OK) throw Failure(rlock_failure("rlock_release"));
      s->released_ns[me].store(now_ns());
      if (now_ns() >= s->stop_ns.load()) return;
    }
  };
  int64_t warm_ns = static_cast<int64_t>(std::max(o.seconds / 10, 0.2) * 1e9);
  s->stop_ns.store(now_ns() + warm_ns + static_cast<int64_t>(o.seconds * 1e9) + 500000000);
  std::vector<pid_t> pids = {fork_child(s->error, sizeof s->error, [&] { side(0); }),
                             fork_child(s->error, sizeof s->error, [&] { side(1); })};
  sleep_us(warm_ns / 1000);
  // Warm-up samples are dropped by counting from here.
  int from[2] = {s->count[0], s->count[1]};
  wait_children(pids, s->error);
  std::vector<double> us;
  for (int side_ = 0; side_ < 2; ++side_) {
    for (int i = from[side_]; i < s->count[side_]; ++i) us.push_back(samples[side_ * kMaxHandoffs + i] / 1e3);
  }
  if (us.empty()) throw Failure("no hand-off was measured");
  std::vector<std::pair<std::string, std::string>> extra = {
      {"handoffs", number(static_cast<double>(us.size()))}, {"hold_ms", "1"}};
  return {{"handoff_p50", percentile(us, 0.50), "us", extra},
          {"handoff_p99", percentile(us, 0.99), "us", extra},
          {"handoff_max", percentile(us, 1.0), "us", extra}};
}

// ---- 4: herd --------------------------------------------------------------------------------

struct Section {
  int64_t acquired_ns;
  int64_t release_start_ns;
  int64_t released_ns;
};
constexpr int kMaxSectionsPerProcess = 400000;

struct HerdShared {
  std::atomic<int64_t> start_ns;
  std::atomic<int64_t> stop_ns;
  std::atomic<int> count[64];
  char error[512];
};

std::vector<Result> herd(const Options& o, bool fair) {
  const int processes = o.processes;
  const int threads = o.threads;
  if (processes > 64) throw Failure("--processes must be at most 64");
  auto* s = shared_array<HerdShared>(1);
  auto* sections = shared_array<Section>(static_cast<size_t>(processes) * kMaxSectionsPerProcess);
  const std::string name = std::string("bench:") + (fair ? "hf" : "h") + ":rlock-c:herd";
  const int kind = fair ? RLOCK_LOCK_FAIR : RLOCK_LOCK_REENTRANT;
  Context admin = connect(o.url);

  int64_t warm_ns = static_cast<int64_t>(std::max(o.seconds / 10, 0.3) * 1e9);
  s->start_ns.store(now_ns() + 500000000);  // every process has its client by then
  s->stop_ns.store(s->start_ns.load() + warm_ns + static_cast<int64_t>(o.seconds * 1e9));
  std::vector<pid_t> pids;
  for (int p = 0; p < processes; ++p) {
    pids.push_back(fork_child(s->error, sizeof s->error, [&, p] {
      Client client(o.url);
      Lock lock(client.c, name, kind);
      Section* mine = sections + static_cast<size_t>(p) * kMaxSectionsPerProcess;
      std::atomic<bool> failed{false};
      std::string why;
      std::mutex why_mutex;
      std::vector<std::thread> pool;
      while (now_ns() < s->start_ns.load()) sleep_us(1000);
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
          while (!failed.load() && now_ns() < s->stop_ns.load()) {
            if (rlock_acquire(lock.l, RLOCK_WAIT_FOREVER) != RLOCK_OK) {
              std::lock_guard<std::mutex> g(why_mutex);
              why = rlock_failure("rlock_acquire");
              failed = true;
              return;
            }
            Section sec;
            sec.acquired_ns = now_ns();
            sec.release_start_ns = now_ns();
            int rc = rlock_release(lock.l);
            sec.released_ns = now_ns();
            if (rc != RLOCK_OK) {
              std::lock_guard<std::mutex> g(why_mutex);
              why = rlock_failure("rlock_release");
              failed = true;
              return;
            }
            int i = s->count[p].fetch_add(1);
            if (i < kMaxSectionsPerProcess) mine[i] = sec;
          }
        });
      }
      for (std::thread& t : pool) t.join();
      if (failed) throw Failure(why);
    }));
  }
  // The measured window: after the warm-up, until the stop time.
  const int64_t window_start = s->start_ns.load() + warm_ns;
  while (now_ns() < window_start) sleep_us(1000);
  CommandCounts before = command_counts(admin.get());
  while (now_ns() < s->stop_ns.load()) sleep_us(1000);
  CommandCounts after = command_counts(admin.get());
  wait_children(pids, s->error);

  std::vector<Section> all;
  for (int p = 0; p < processes; ++p) {
    int n = std::min(s->count[p].load(), kMaxSectionsPerProcess);
    all.insert(all.end(), sections + static_cast<size_t>(p) * kMaxSectionsPerProcess,
               sections + static_cast<size_t>(p) * kMaxSectionsPerProcess + n);
  }
  std::sort(all.begin(), all.end(),
            [](const Section& a, const Section& b) { return a.acquired_ns < b.acquired_ns; });
  // Mutual exclusion, checked on the shared clock: each owner got the lock after the previous
  // one began to release it.
  std::vector<double> gaps_us;
  int64_t handoffs = 0;
  for (size_t i = 1; i < all.size(); ++i) {
    if (all[i].acquired_ns < all[i - 1].release_start_ns) {
      throw Failure("two owners overlapped: a section began " +
                    std::to_string(all[i - 1].release_start_ns - all[i].acquired_ns) +
                    " ns before the previous one released");
    }
    if (all[i].acquired_ns >= window_start && all[i].acquired_ns < s->stop_ns.load()) {
      ++handoffs;
      gaps_us.push_back((all[i].acquired_ns - all[i - 1].released_ns) / 1e3);
    }
  }
  if (handoffs == 0) throw Failure("no hand-off in the measured window");
  double seconds = (s->stop_ns.load() - window_start) / 1e9;
  double requests = static_cast<double>(after.requests - before.requests) / handoffs;
  double in_scripts = static_cast<double>(after.in_scripts - before.in_scripts) / handoffs;
  std::vector<std::pair<std::string, std::string>> extra = {
      {"processes", std::to_string(processes)}, {"threads_per_process", std::to_string(threads)},
      {"handoffs", std::to_string(handoffs)}, {"seconds", number(seconds)},
      {"commands_in_scripts_per_handoff", number(in_scripts)}};
  return {{"requests_per_handoff", requests, "requests", extra},
          {"handoffs_per_s", handoffs / seconds, "handoffs/s", extra},
          {"handoff_p50", percentile(gaps_us, 0.50), "us", extra},
          {"handoff_p99", percentile(gaps_us, 0.99), "us", extra}};
}

// ---- 5: watchdog ----------------------------------------------------------------------------

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

std::vector<Result> watchdog(const Options& o) {
  // A short watchdog lease (renewed every third of it) shows several periods in one run.
  const int64_t lease_ms = 3000;
  const double period_s = lease_ms / 3 / 1000.0;
  Context admin = connect(o.url);
  Client client(o.url, lease_ms);
  std::vector<std::unique_ptr<Lock>> locks;
  for (int i = 0; i < o.locks; ++i) {
    locks.push_back(std::make_unique<Lock>(client.c, "bench:w:rlock-c:" + std::to_string(i)));
    if (rlock_acquire(locks.back()->l, 0) != RLOCK_OK) throw Failure(rlock_failure("rlock_acquire"));
  }
  // Let the renewals of holds taken at different moments settle into their batches.
  std::this_thread::sleep_for(std::chrono::duration<double>(period_s * 1.5));
  CommandCounts before = command_counts(admin.get());
  double cpu0 = cpu_seconds();
  Clock::time_point t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(std::max(o.seconds, 3 * period_s)));
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  double cpu = cpu_seconds() - cpu0;
  CommandCounts after = command_counts(admin.get());
  for (auto& lock : locks) {
    if (rlock_is_lost(lock->l, RLOCK_THREAD_CURRENT) == 1) throw Failure("a watched hold was lost");
  }
  for (auto& lock : locks) {
    if (rlock_release(lock->l) != RLOCK_OK) throw Failure(rlock_failure("rlock_release"));
  }
  double periods = wall / period_s;
  std::vector<std::pair<std::string, std::string>> extra = {
      {"locks", std::to_string(o.locks)}, {"watchdog_lease_ms", std::to_string(lease_ms)},
      {"period_s", number(period_s)}, {"seconds", number(wall)}};
  return {{"scripts_per_period", (after.requests - before.requests) / periods, "scripts", extra},
          {"renewal_cpu", 100 * cpu / wall, "% of a core", extra}};
}

// ---- 6: memory ------------------------------------------------------------------------------

int64_t rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  throw Failure("no VmRSS in /proc/self/status");
}

std::vector<Result> memory(const Options& o) {
  constexpr size_t kStack = 64 * 1024;
  std::vector<Result> out;
  Client holder_client(o.url);
  Lock held(holder_client.c, "bench:m:rlock-c:held");
  if (rlock_acquire(held.l, 0) != RLOCK_OK) throw Failure(rlock_failure("rlock_acquire"));

  int64_t rss0 = rss_kib();
  Client client(o.url);
  int64_t rss1 = rss_kib();
  {
    std::vector<std::unique_ptr<Lock>> handles;
    for (int i = 0; i < o.locks; ++i) {
      handles.push_back(std::make_unique<Lock>(client.c, "bench:m:rlock-c:" + std::to_string(i)));
    }
    int64_t rss2 = rss_kib();
    out.push_back({"handles_rss", static_cast<double>(rss2 - rss1), "KiB",
                   {{"handles", std::to_string(o.locks)},
                    {"per_handle_bytes", number((rss2 - rss1) * 1024.0 / o.locks)},
                    {"client_kib", std::to_string(rss1 - rss0)}}});
  }

  // Waiters: threads with small stacks blocked on the held lock through one shared handle.
  Lock waited(client.c, "bench:m:rlock-c:held");
  std::atomic<int> started{0}, failed{0};
  int64_t rss3 = rss_kib();
  std::vector<pthread_t> threads(o.waiters);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStack);
  struct Arg {
    rlock_lock* lock;
    std::atomic<int>* started;
    std::atomic<int>* failed;
  } arg{waited.l, &started, &failed};
  auto body = [](void* p) -> void* {
    auto* a = static_cast<Arg*>(p);
    a->started->fetch_add(1);
    if (rlock_acquire(a->lock, RLOCK_WAIT_FOREVER) != RLOCK_OK || rlock_release(a->lock) != RLOCK_OK) {
      a->failed->fetch_add(1);
    }
    return nullptr;
  };
  for (int i = 0; i < o.waiters; ++i) {
    if (pthread_create(&threads[i], &attr, body, &arg) != 0) throw Failure("pthread_create failed");
  }
  pthread_attr_destroy(&attr);
  while (started.load() < o.waiters) sleep_us(1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // all in their wait by now
  int64_t rss4 = rss_kib();
  if (rlock_release(held.l) != RLOCK_OK) throw Failure(rlock_failure("rlock_release"));
  for (pthread_t t : threads) pthread_join(t, nullptr);
  if (failed.load() != 0) throw Failure(std::to_string(failed.load()) + " waiters failed");
  out.push_back({"waiters_rss", static_cast<double>(rss4 - rss3), "KiB",
                 {{"waiters", std::to_string(o.waiters)},
                  {"per_waiter_bytes", number((rss4 - rss3) * 1024.0 / o.waiters)},
                  {"thread_stack_kib", std::to_string(kStack / 1024)}}});
  return out;
}

}  // namespace

bool is_rlock_scenario(const std::string& scenario) {
  return scenario == "handoff" || scenario == "herd" || scenario == "herd-fair" ||
         scenario == "watchdog" || scenario == "memory";
}

std::vector<Result> run_rlock_scenario(const Options& o) {
  if (o.scenario == "handoff") return handoff(o);
  if (o.scenario == "herd") return herd(o, false);
  if (o.scenario == "herd-fair") return herd(o, true);
  if (o.scenario == "watchdog") return watchdog(o);
  return memory(o);
}

}  // namespace bench
