// Scenarios 3-11 for rlock-c: handoff (two processes ping-pong one lock), herd and herd-fair
// (processes x threads on one lock), watchdog (renewing many held locks), memory (RSS of
// lock handles and of blocked waiters), many-waiters (asynchronous waiters on held locks),
// semaphore (threads taking and giving back permits), latch (waiters released at once), leader
// (elections) and reconnect (a pair after the server closed the client's connections).
// See bench/README.md.
//
// The multi-process scenarios fork their processes before any rlock object exists; each child
// makes its own client. The processes share one anonymous MAP_SHARED mapping for their turns
// and records, and time everything with CLOCK_MONOTONIC, which all processes share.
#include <linux/futex.h>
#include <pthread.h>
#include <rlock/rlock.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "bench.hpp"

namespace bench {
namespace {

// ---- clocks, shared memory, processes ----

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

void sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
  }
}

double warm_up_s(double seconds) { return std::max(seconds / 10, 0.2); }

// An anonymous shared mapping: children forked after it see the same pages.
class Shared {
 public:
  explicit Shared(size_t bytes) : bytes_(bytes) {
    p_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p_ == MAP_FAILED) throw Failure(std::string("mmap: ") + std::strerror(errno));
  }
  ~Shared() { munmap(p_, bytes_); }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  template <typename T>
  T* at(size_t offset) const {
    return reinterpret_cast<T*>(static_cast<char*>(p_) + offset);
  }

 private:
  void* p_;
  size_t bytes_;
};

// Flags and counters in shared memory, waited on with a (process-shared) futex.
using Word = std::atomic<uint32_t>;
static_assert(sizeof(Word) == sizeof(uint32_t) && Word::is_always_lock_free);

void futex_wait(Word* w, uint32_t seen, int64_t timeout_ns) {
  timespec ts{static_cast<time_t>(timeout_ns / 1000000000),
              static_cast<long>(timeout_ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake(Word* w) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(w), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

void set_and_wake(Word* w, uint32_t v) {
  w->store(v);
  futex_wake(w);
}

// Child processes running `body(index)`; a child that throws prints the message to stderr and
// exits 1. The children never return into the parent's code.
class Children {
 public:
  Children(int n, const std::function<void(int)>& body) {
    std::fflush(nullptr);
    for (int i = 0; i < n; ++i) {
      pid_t pid = fork();
      if (pid < 0) throw Failure(std::string("fork: ") + std::strerror(errno));
      if (pid == 0) {
        int code = 0;
        try {
          body(i);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "rlock-bench: process %d: %s\n", i, e.what());
          code = 1;
        }
        std::fflush(nullptr);
        _exit(code);
      }
      pids_.push_back(pid);
    }
  }
  ~Children() {  // on an exception in the parent: do not leave them running
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }

  // True when a child has already exited (the parent stops waiting for it then).
  bool any_exited() {
    for (size_t i = 0; i < pids_.size(); ++i) {
      int status;
      if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
        failed_ |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        pids_.erase(pids_.begin() + static_cast<long>(i));
        return true;
      }
    }
    return false;
  }

  // Waits for every child; throws if one failed.
  void join() {
    for (pid_t pid : pids_) {
      int status;
      waitpid(pid, &status, 0);
      failed_ |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    pids_.clear();
    if (failed_) throw Failure("a child process failed (its message is above)");
  }

 private:
  std::vector<pid_t> pids_;
  bool failed_ = false;
};

// Waits until `count` reaches `want`, failing when a child dies first or after a minute.
void wait_ready(Word* count, uint32_t want, Children& children, const char* what) {
  int64_t give_up = now_ns() + int64_t{60} * 1000000000;
  for (uint32_t seen; (seen = count->load()) < want;) {
    if (children.any_exited()) {
      children.join();
      throw Failure(std::string("a process exited before ") + what);
    }
    if (now_ns() > give_up) throw Failure(std::string("timed out waiting for ") + what);
    futex_wait(count, seen, 10000000);
  }
}

// ---- rlock ----

std::string rlock_failure(const char* doing) {
  return std::string(doing) + ": " + rlock_last_error()->message;
}

void check(int rc, const char* doing) {
  if (rc != RLOCK_OK) throw Failure(rlock_failure(doing));
}

struct ClientFree {
  void operator()(rlock_client* c) const { rlock_client_free(c); }
};
using Client = std::unique_ptr<rlock_client, ClientFree>;

struct LockFree {
  void operator()(rlock_lock* l) const { rlock_lock_free(l); }
};
using Lock = std::unique_ptr<rlock_lock, LockFree>;

Client new_client(const std::string& url, int64_t watchdog_lease_ms = 0) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.watchdog_lease_ms = watchdog_lease_ms;
  rlock_client* c = nullptr;
  check(rlock_client_new(&c, &opts), "rlock_client_new");
  return Client(c);
}

Lock new_lock(rlock_client* client, const std::string& name,
              rlock_lock_kind kind = RLOCK_LOCK_REENTRANT) {
  rlock_lock_options opts = RLOCK_LOCK_OPTIONS_INIT;
  opts.kind = kind;
  rlock_lock* l = nullptr;
  check(rlock_lock_new(&l, client, name.c_str(), &opts), "rlock_lock_new");
  return Lock(l);
}

std::string lock_name(const Options& o, const char* tag, int64_t k) {
  return "bench:" + std::string(tag) + ":" + o.contender + ":" + std::to_string(k);
}

// Every key a lock of `kind` keeps while held or waited for (not the short-lived unlock
// latches, which expire on their own).
std::vector<std::string> lock_keys(const std::string& name, bool fair) {
  std::vector<std::string> keys = {name};
  if (fair) {
    keys.push_back("redisson_lock_queue:{" + name + "}");
    keys.push_back("redisson_lock_timeout:{" + name + "}");
  }
  return keys;
}

void check_clean(redisContext* admin, const std::vector<std::string>& keys) {
  int64_t left = count_existing(admin, keys);
  if (left != 0) throw Failure(std::to_string(left) + " lock key(s) still present after the run");
}

// ---- statistics ----

// q-quantile (nearest rank) of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// Requests clients sent, from a commandstats delta. Every lock operation of the contenders in
// these scenarios is a script, so data commands (HSET, PEXPIRE, PUBLISH, ...) are counted as
// run inside scripts, not as requests. The harness's own INFO and CONFIG calls are left out.
struct Traffic {
  int64_t requests = 0;  // scripts + everything else a client sends (SUBSCRIBE, PING, ...)
  int64_t scripts = 0;   // EVAL, EVALSHA, FCALL and their _RO forms
  int64_t inner = 0;     // data commands, run inside the scripts
  std::map<std::string, int64_t> by_command;  // requests (not inner commands) by name
  std::map<std::string, int64_t> inner_by_command;
};

Traffic traffic(const std::map<std::string, int64_t>& before,
                const std::map<std::string, int64_t>& after) {
  static const std::set<std::string> scripts = {"eval",       "evalsha", "eval_ro",
                                                "evalsha_ro", "fcall",   "fcall_ro"};
  static const std::set<std::string> client_level = {
      "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe",
      "ping",      "hello",       "auth",       "select",       "echo",       "multi",
      "exec",      "discard",     "quit",       "readonly",     "reset"};
  Traffic t;
  for (const auto& [name, calls] : after) {
    auto it = before.find(name);
    int64_t delta = calls - (it == before.end() ? 0 : it->second);
    std::string base = name.substr(0, name.find('|'));
    if (base == "info" || base == "config" || delta == 0) continue;
    if (scripts.count(base)) {
      t.scripts += delta;
      t.requests += delta;
      t.by_command[name] += delta;
    } else if (client_level.count(base) || base == "script" || base == "client" ||
               base == "command") {
      t.requests += delta;
      t.by_command[name] += delta;
    } else {
      t.inner += delta;
      t.inner_by_command[name] += delta;
    }
  }
  return t;
}

// {"name": calls / n, ...} as a JSON object.
std::string per_handoff(const std::map<std::string, int64_t>& calls, double n) {
  std::string out;
  for (const auto& [name, count] : calls) {
    out += (out.empty() ? "{\"" : ", \"") + name + "\": " + number(count / n);
  }
  return out + (out.empty() ? "{}" : "}");
}

// ---- scenario 3: handoff ----

// Two processes take turns on one lock. The holder keeps it kHold, long enough for the other,
// which started waiting as soon as the holder had it, to be blocked in acquire; after its
// release the holder waits until the other has the lock before asking again, so it never takes
// the lock back itself. Handoff k: acquire returning for hold k+1 minus release returning for
// hold k.
constexpr int64_t kHoldNs = 1000000;

struct HandoffHeader {
  Word ready, go, stop, acquired;  // acquired: holds taken so far
};

std::vector<Result> handoff(const Options& o, redisContext* admin) {
  const std::string name = lock_name(o, "h", 0);
  const size_t capacity =
      static_cast<size_t>((o.seconds + warm_up_s(o.seconds) + 2) * 1e9 / kHoldNs) + 16;
  // Per hold k: when acquire was called and returned, when release was called and returned.
  const size_t header = 64, column = capacity * sizeof(int64_t);
  Shared shared(header + 4 * column);
  auto* h = shared.at<HandoffHeader>(0);
  int64_t* called = shared.at<int64_t>(header);
  int64_t* acquired_at = shared.at<int64_t>(header + column);
  int64_t* release_called = shared.at<int64_t>(header + 2 * column);
  int64_t* released_at = shared.at<int64_t>(header + 3 * column);

  Children children(2, [&](int p) {
    Client client = new_client(o.url);
    Lock lock = new_lock(client.get(), name);
    h->ready.fetch_add(1);
    futex_wake(&h->ready);
    while (h->go.load() == 0) futex_wait(&h->go, 0, 100000000);
    for (uint32_t k = static_cast<uint32_t>(p);; k += 2) {
      // My turn to wait comes once the other process holds hold k-1.
      for (uint32_t seen; (seen = h->acquired.load()) < k && !h->stop.load();) {
        futex_wait(&h->acquired, seen, 10000000);
      }
      if (h->stop.load()) return;
      if (k >= capacity) {
        set_and_wake(&h->stop, 1);
        return;
      }
      called[k] = now_ns();
      check(rlock_acquire(lock.get(), RLOCK_WAIT_FOREVER), "rlock_acquire");
      acquired_at[k] = now_ns();
      set_and_wake(&h->acquired, k + 1);
      sleep_ns(kHoldNs);
      release_called[k] = now_ns();
      check(rlock_release(lock.get()), "rlock_release");
      released_at[k] = now_ns();
    }
  });
  wait_ready(&h->ready, 2, children, "the processes' clients");
  const int64_t start = now_ns();
  set_and_wake(&h->go, 1);
  const int64_t measure_from = start + static_cast<int64_t>(warm_up_s(o.seconds) * 1e9);
  sleep_ns(measure_from - start + static_cast<int64_t>(o.seconds * 1e9));
  const int64_t measure_to = now_ns();
  set_and_wake(&h->stop, 1);
  children.join();

  const uint32_t holds = h->acquired.load();
  std::vector<double> us;
  int64_t late = 0;  // receivers that had not been waiting for half a hold when it was released
  for (uint32_t k = 0; k + 1 < holds; ++k) {
    // The receiver must not have the lock before the holder asked to release it.
    if (acquired_at[k + 1] < release_called[k]) {
      throw Failure("holds " + std::to_string(k) + " and " + std::to_string(k + 1) +
                    " overlapped: two owners at once");
    }
    if (released_at[k] < measure_from || acquired_at[k + 1] > measure_to) continue;
    us.push_back((acquired_at[k + 1] - released_at[k]) / 1e3);
    if (release_called[k] - called[k + 1] < kHoldNs / 2) ++late;
  }
  check_clean(admin, lock_keys(name, false));
  if (us.size() < 2) throw Failure("too few handoffs measured");
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  double seconds = (measure_to - measure_from) / 1e9;
  std::vector<std::pair<std::string, std::string>> extra = {
      {"handoffs", number(static_cast<int64_t>(us.size()))},
      {"seconds", number(seconds)},
      {"hold_ms", number(kHoldNs / 1e6)},
      {"mean_us", number(mean(us))},
      {"late_receivers", number(late)}};
  return {{"handoff_p50_us", quantile(sorted, 0.50), "us", extra},
          {"handoff_p99_us", quantile(sorted, 0.99), "us", extra},
          {"handoff_max_us", sorted.back(), "us", extra}};
}

// ---- scenario 4: herd ----

struct HerdHeader {
  Word ready, go, stop, pad;
  std::atomic<uint64_t> next;  // records taken
};

struct HoldRecord {
  int64_t acquired, release_called, released;
  int32_t who;  // process * threads + thread
  int32_t pad;
};

// One process of the herd: o.threads threads taking and releasing the lock until told to stop,
// each hold recorded.
void herd_process(const Options& o, const std::string& name, bool fair, int p, HerdHeader* h,
                  HoldRecord* records, size_t capacity) {
  static volatile int64_t critical;  // the tiny critical section's work
  Client client = new_client(o.url);
  Lock lock = new_lock(client.get(), name, fair ? RLOCK_LOCK_FAIR : RLOCK_LOCK_REENTRANT);
  std::mutex error_mutex;
  std::string error;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      h->ready.fetch_add(1);
      futex_wake(&h->ready);
      while (h->go.load() == 0) futex_wait(&h->go, 0, 100000000);
      try {
        while (!h->stop.load(std::memory_order_relaxed)) {
          check(rlock_acquire(lock.get(), RLOCK_WAIT_FOREVER), "rlock_acquire");
          int64_t acquired = now_ns();
          uint64_t i = h->next.fetch_add(1);
          critical = critical + 1;
          int64_t release_called = now_ns();
          check(rlock_release(lock.get()), "rlock_release");
          int64_t released = now_ns();
          if (i >= capacity) throw Failure("more handoffs than the bench has room to record");
          records[i] = {acquired, release_called, released, p * o.threads + t, 0};
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> g(error_mutex);
        if (error.empty()) error = e.what();
        set_and_wake(&h->stop, 1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (!error.empty()) throw Failure(error);
}

struct Handoffs {
  std::vector<double> gaps_us;  // from one release to the next acquire, in the measured window
  int64_t same_thread = 0, same_process = 0;
};

// The handoffs between the holds (in any order), checked for overlap.
Handoffs handoffs_of(std::vector<HoldRecord> holds, int64_t measure_from, int64_t measure_to,
                     int threads) {
  std::sort(holds.begin(), holds.end(),
            [](const HoldRecord& a, const HoldRecord& b) { return a.acquired < b.acquired; });
  Handoffs out;
  for (size_t i = 0; i + 1 < holds.size(); ++i) {
    const HoldRecord &prev = holds[i], &next = holds[i + 1];
    // Safety: the next owner may return from acquire only after the previous one asked to
    // release (it may return before that release's reply arrives: Redis sends the reply and
    // the wake-up together).
    if (next.acquired < prev.release_called) {
      throw Failure("two owners at once: one acquired " +
                    std::to_string((prev.release_called - next.acquired) / 1000) +
                    " us before the previous holder asked to release");
    }
    if (next.acquired < measure_from || next.acquired > measure_to) continue;
    out.gaps_us.push_back((next.acquired - prev.released) / 1e3);
    out.same_thread += next.who == prev.who;
    out.same_process += next.who / threads == prev.who / threads;
  }
  return out;
}

std::vector<Result> herd_results(const Options& o, const Handoffs& handoffs, const Traffic& tr,
                                 double seconds) {
  const double count = static_cast<double>(handoffs.gaps_us.size());
  std::vector<double> sorted = handoffs.gaps_us;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::pair<std::string, std::string>> extra = {
      {"processes", number(int64_t{o.processes})},
      {"threads_per_process", number(int64_t{o.threads})},
      {"handoffs", number(static_cast<int64_t>(handoffs.gaps_us.size()))},
      {"seconds", number(seconds)},
      {"requests", number(tr.requests)},
      {"scripts_per_handoff", number(tr.scripts / count)},
      {"inner_commands_per_handoff", number(tr.inner / count)},
      {"requests_per_handoff_by_command", per_handoff(tr.by_command, count)},
      {"handoff_p50_us", number(quantile(sorted, 0.50))},
      {"handoff_max_us", number(sorted.back())},
      {"same_thread_share", number(handoffs.same_thread / count)},
      {"same_process_share", number(handoffs.same_process / count)}};
  return {{"requests_per_handoff", tr.requests / count, "requests", extra},
          {"handoff_p99_us", quantile(sorted, 0.99), "us", extra},
          {"pairs_per_s", count / seconds, "pairs/s", extra}};
}

std::vector<Result> herd(const Options& o, redisContext* admin, bool fair) {
  const std::string name = lock_name(o, fair ? "hf" : "hd", 0);
  const int n = o.processes * o.threads;
  // Far more than one lock can hand over in the time; running out fails the run.
  const size_t capacity = static_cast<size_t>((o.seconds + warm_up_s(o.seconds) + 5) * 100000);
  Shared shared(64 + capacity * sizeof(HoldRecord));
  auto* h = shared.at<HerdHeader>(0);
  auto* records = shared.at<HoldRecord>(64);

  Children children(o.processes,
                    [&](int p) { herd_process(o, name, fair, p, h, records, capacity); });
  wait_ready(&h->ready, static_cast<uint32_t>(n), children, "the processes' threads");
  set_and_wake(&h->go, 1);
  sleep_ns(static_cast<int64_t>(warm_up_s(o.seconds) * 1e9));
  std::map<std::string, int64_t> before = command_calls(admin);
  const int64_t measure_from = now_ns();
  sleep_ns(static_cast<int64_t>(o.seconds * 1e9));
  std::map<std::string, int64_t> after = command_calls(admin);
  const int64_t measure_to = now_ns();
  set_and_wake(&h->stop, 1);
  children.join();

  size_t count = static_cast<size_t>(std::min<uint64_t>(h->next.load(), capacity));
  Handoffs handoffs = handoffs_of(std::vector<HoldRecord>(records, records + count), measure_from,
                                  measure_to, o.threads);
  check_clean(admin, lock_keys(name, fair));
  if (handoffs.gaps_us.empty()) throw Failure("no handoff in the measured window");
  return herd_results(o, handoffs, traffic(before, after), (measure_to - measure_from) / 1e9);
}

// ---- scenario 5: watchdog ----

double cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int64_t script_calls(const std::map<std::string, int64_t>& before,
                     const std::map<std::string, int64_t>& after) {
  return traffic(before, after).scripts;
}

// One client holds o.locks locks with the watchdog. The renewal period is a third of the
// watchdog lease; the lease is chosen so that the run sees several periods (30 s, the
// default, from --seconds 30 up).
std::vector<Result> watchdog(const Options& o, redisContext* admin) {
  const double period_s = std::clamp(o.seconds / 3, 0.5, 10.0);
  const int64_t lease_ms = static_cast<int64_t>(std::llround(period_s * 3000));
  const int periods = std::max(2, static_cast<int>(o.seconds / period_s + 1e-9));
  Client client = new_client(o.url, lease_ms);
  std::vector<Lock> locks;
  std::vector<std::string> names;
  for (int i = 0; i < o.locks; ++i) {
    names.push_back(lock_name(o, "w", i));
    locks.push_back(new_lock(client.get(), names.back()));
  }
  const int64_t t_acquire = now_ns();
  for (Lock& l : locks) check(rlock_acquire(l.get(), 0), "rlock_acquire");
  const double acquire_s = (now_ns() - t_acquire) / 1e9;
  // One period to settle: the holds were taken over acquire_s and converge on shared batches.
  sleep_ns(static_cast<int64_t>(period_s * 1e9));
  std::map<std::string, int64_t> before = command_calls(admin);
  const double cpu0 = cpu_seconds();
  const int64_t t0 = now_ns();
  sleep_ns(static_cast<int64_t>(periods * period_s * 1e9));
  const double cpu1 = cpu_seconds();
  const int64_t t1 = now_ns();
  std::map<std::string, int64_t> after = command_calls(admin);
  int64_t lost = 0;
  for (Lock& l : locks) lost += !rlock_is_held(l.get());
  for (Lock& l : locks) check(rlock_release(l.get()), "rlock_release");
  if (lost) throw Failure(std::to_string(lost) + " lock(s) lost while the watchdog kept them");
  check_clean(admin, names);

  const double wall = (t1 - t0) / 1e9;
  const double measured_periods = wall / period_s;
  const double cpu_ms = (cpu1 - cpu0) * 1e3;
  std::vector<std::pair<std::string, std::string>> extra = {
      {"locks", number(int64_t{o.locks})},
      {"lease_ms", number(lease_ms)},
      {"period_ms", number(period_s * 1e3)},
      {"periods", number(measured_periods)},
      {"scripts", number(script_calls(before, after))},
      {"cpu_ms", number(cpu_ms)},
      {"cpu_ms_per_period", number(cpu_ms / measured_periods)},
      {"acquire_all_s", number(acquire_s)}};
  return {{"scripts_per_period", script_calls(before, after) / measured_periods, "scripts", extra},
          {"cpu_percent", 100 * (cpu1 - cpu0) / wall, "% of a core", extra}};
}

// ---- scenario 6: memory ----

int64_t rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoll(line.c_str() + 6, nullptr, 10);
  }
  throw Failure("no VmRSS in /proc/self/status");
}

constexpr size_t kWaiterStack = 64 * 1024;

struct WaiterArgs {
  rlock_lock* lock;
  rlock_cancel_token* cancel;
  std::atomic<int>* started;
  int rc;
  std::string error;
};

void* waiter_main(void* p) {
  auto* a = static_cast<WaiterArgs*>(p);
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.cancel = a->cancel;
  a->started->fetch_add(1);
  a->rc = rlock_acquire_ex(a->lock, &opts);
  if (a->rc != RLOCK_ECANCELED) a->error = rlock_last_error()->message;
  if (a->rc == RLOCK_OK) rlock_release(a->lock);
  return nullptr;
}

// Threads with the waiters' stack size, parked on a futex: what a thread costs without rlock.
int64_t bare_threads_kib(int n) {
  Word release{0};
  std::vector<pthread_t> threads;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kWaiterStack);
  const int64_t before = rss_kib();
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(
            &t, &attr,
            [](void* p) -> void* {
              auto* w = static_cast<Word*>(p);
              while (w->load() == 0) futex_wait(w, 0, 1000000000);
              return nullptr;
            },
            &release) != 0) {
      break;
    }
    threads.push_back(t);
  }
  pthread_attr_destroy(&attr);
  sleep_ns(100000000);
  const int64_t after = rss_kib();
  set_and_wake(&release, 1);
  for (pthread_t t : threads) pthread_join(t, nullptr);
  if (threads.size() != static_cast<size_t>(n)) throw Failure("pthread_create failed");
  return after - before;
}

// In a process of its own: the stacks glibc caches after the threads end would make the
// waiters look cheaper here.
int64_t bare_threads_kib_in_child(int n) {
  Shared result(sizeof(int64_t));
  Children child(1, [&](int) { *result.at<int64_t>(0) = bare_threads_kib(n); });
  child.join();
  return *result.at<int64_t>(0);
}

// Starts a waiter thread for each of `args`; an error message if one could not start.
std::string start_waiters(std::vector<WaiterArgs>& args, std::vector<pthread_t>* threads) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kWaiterStack);
  std::string error;
  for (WaiterArgs& a : args) {
    pthread_t t;
    int rc = pthread_create(&t, &attr, waiter_main, &a);
    if (rc != 0) {
      error = std::string("pthread_create: ") + std::strerror(rc);
      break;
    }
    threads->push_back(t);
  }
  pthread_attr_destroy(&attr);
  return error;
}

// Every waiter is blocked once each has entered its acquire and Redis sees no more attempts
// than the client's one periodic retry (a waiter that finds others of its client asleep makes
// no attempt of its own, so attempts cannot be counted per waiter): at most one script per
// 300 ms, twice in a row. The RSS then, or 0 with *error set.
int64_t rss_once_blocked(const Options& o, redisContext* admin, const std::atomic<int>& started,
                         const std::map<std::string, int64_t>& before, std::string* error) {
  const int64_t give_up = now_ns() + int64_t{60} * 1000000000;
  int quiet = 0;
  int64_t seen = script_calls(before, command_calls(admin));
  while (quiet < 2) {
    if (now_ns() > give_up) {
      *error = "the waiters did not all block within a minute";
      return 0;
    }
    sleep_ns(300000000);
    const int64_t now_seen = script_calls(before, command_calls(admin));
    const bool all_in = started.load() == o.waiters && now_seen >= 1;
    quiet = all_in && now_seen - seen <= 1 ? quiet + 1 : 0;
    seen = now_seen;
  }
  return rss_kib();
}

// The first waiter whose acquire did not end canceled, as an error message.
std::string waiter_failure(const std::vector<WaiterArgs>& args) {
  for (const WaiterArgs& a : args) {
    if (a.rc != RLOCK_ECANCELED) {
      return "a waiter's acquire returned " + std::to_string(a.rc) + ": " + a.error;
    }
  }
  return std::string();
}

// Blocks o.waiters threads on `held` (which this thread holds) and cancels them. The RSS while
// they wait and, in *rss_before, just before they started.
int64_t waiters_rss_kib(const Options& o, redisContext* admin, rlock_lock* held,
                        int64_t* rss_before) {
  rlock_cancel_token* cancel = nullptr;
  check(rlock_cancel_token_new(&cancel), "rlock_cancel_token_new");
  std::map<std::string, int64_t> before = command_calls(admin);
  *rss_before = rss_kib();
  std::atomic<int> started{0};
  std::vector<WaiterArgs> args(static_cast<size_t>(o.waiters),
                               WaiterArgs{held, cancel, &started, 0, ""});
  std::vector<pthread_t> threads;
  std::string error = start_waiters(args, &threads);
  int64_t rss_waiters = 0;
  if (error.empty()) rss_waiters = rss_once_blocked(o, admin, started, before, &error);
  rlock_cancel_token_cancel(cancel);
  for (pthread_t t : threads) pthread_join(t, nullptr);
  rlock_cancel_token_free(cancel);
  check(rlock_release(held), "rlock_release");
  if (error.empty()) error = waiter_failure(args);
  if (!error.empty()) throw Failure(error);
  return rss_waiters;
}

std::vector<Result> memory(const Options& o, redisContext* admin) {
  const int64_t bare_kib = bare_threads_kib_in_child(o.waiters);
  const int64_t rss_start = rss_kib();
  Client client = new_client(o.url);
  const int64_t rss_client = rss_kib();
  std::vector<Lock> handles;
  for (int i = 0; i < o.locks; ++i) handles.push_back(new_lock(client.get(), lock_name(o, "m", i)));
  const int64_t rss_handles = rss_kib();

  // Waiters: o.waiters threads blocked on one lock this thread holds.
  const std::string name = lock_name(o, "mw", 0);
  Lock held = new_lock(client.get(), name);
  check(rlock_acquire(held.get(), 0), "rlock_acquire");
  int64_t rss_before_waiters = 0;
  const int64_t rss_waiters = waiters_rss_kib(o, admin, held.get(), &rss_before_waiters);
  std::vector<std::string> names;
  for (int i = 0; i < o.locks; ++i) names.push_back(lock_name(o, "m", i));
  names.push_back(name);
  check_clean(admin, names);

  std::vector<std::pair<std::string, std::string>> extra = {
      {"handles", number(int64_t{o.locks})},
      {"waiters", number(int64_t{o.waiters})},
      {"waiter_stack_kib", number(static_cast<int64_t>(kWaiterStack / 1024))},
      {"rss_start_kib", number(rss_start)},
      {"client_kib", number(rss_client - rss_start)},
      {"rss_with_handles_kib", number(rss_handles)},
      {"rss_with_waiters_kib", number(rss_waiters)},
      {"bare_thread_kib", number(static_cast<double>(bare_kib) / o.waiters)}};
  double handles_kib = static_cast<double>(rss_handles - rss_client);
  double waiters_kib = static_cast<double>(rss_waiters - rss_before_waiters);
  return {{"handles_rss_kib", handles_kib, "KiB", extra},
          {"kib_per_handle", handles_kib / o.locks, "KiB", extra},
          {"waiters_rss_kib", waiters_kib, "KiB", extra},
          {"kib_per_waiter", waiters_kib / o.waiters, "KiB", extra}};
}

// ---- scenario 7: many waiters ----

// Owner ids of the waiters: far above any OS thread id, so none is the main thread's.
constexpr int64_t kWaiterOwnerBase = int64_t{1} << 40;

// The process's OS threads, from /proc/self/status.
int64_t os_threads() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::strtoll(line.c_str() + 8, nullptr, 10);
  }
  throw Failure("no Threads in /proc/self/status");
}

// What waiters sent: scripts and client-level commands; when no script ran, the data commands
// too, since a lock that waits with plain commands (SET NX) sends them itself.
Traffic waiting_traffic(const std::map<std::string, int64_t>& before,
                        const std::map<std::string, int64_t>& after) {
  Traffic t = traffic(before, after);
  if (t.scripts == 0) {
    t.requests += t.inner;
    for (const auto& [name, calls] : t.inner_by_command) t.by_command[name] += calls;
  }
  return t;
}

// Lock attempts: the requests less subscriptions and pings.
int64_t attempts_of(const Traffic& t) {
  int64_t n = t.requests;
  for (const auto& [name, calls] : t.by_command) {
    if (name.find("subscribe") != std::string::npos || name == "ping") n -= calls;
  }
  return n;
}

// Waits until Redis has seen an attempt per waiter since `before`, or until attempts stay at
// an idle rate for two seconds in a row (fewer than 2 per lock plus 1% of the waiters each
// second: waiters that share their attempts never make one each), at most a minute; then
// 200 ms for the last to settle. Returns the attempts seen.
int64_t settle_waiters(const Options& o, redisContext* admin,
                       const std::map<std::string, int64_t>& before) {
  const int64_t idle = 2 * int64_t{o.locks} + o.waiters / 100;
  const int64_t give_up = now_ns() + int64_t{60} * 1000000000;
  int64_t seen = 0, second_ago = 0, mark = now_ns();
  int quiet_seconds = 0;
  while ((seen = attempts_of(waiting_traffic(before, command_calls(admin)))) < o.waiters &&
         now_ns() < give_up) {
    if (now_ns() - mark >= 1000000000) {
      quiet_seconds = seen - second_ago < idle ? quiet_seconds + 1 : 0;
      if (quiet_seconds == 2) break;
      second_ago = seen;
      mark = now_ns();
    }
    sleep_ns(20000000);
  }
  sleep_ns(200000000);
  return seen;
}

// The waiters' side: acquire completions hand the granted waiter to the main thread's loop,
// which starts its release; the release completion ends the waiter.
struct Drain {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> granted;  // waiters to release
  int acquired = 0, released = 0, completions = 0;
  std::string error;
};

struct Waiter {
  Drain* drain;
  rlock_lock* lock;
  int index;
};

void finish(Drain* d, int status, const char* what, bool acquired, int index) {
  std::string message = status == RLOCK_OK ? "" : rlock_failure(what);
  {
    std::lock_guard<std::mutex> g(d->mu);
    ++d->completions;
    if (status != RLOCK_OK) {
      if (d->error.empty()) d->error = message;
    } else if (acquired) {
      ++d->acquired;
      d->granted.push_back(index);
    } else {
      ++d->released;
    }
    d->cv.notify_one();  // under the mutex: the main thread frees `d` once it sees the last
  }
}

void acquired_cb(void* user, int status, int64_t) {
  auto* w = static_cast<Waiter*>(user);
  finish(w->drain, status, "rlock_acquire_async", true, w->index);
}

void released_cb(void* user, int status, int64_t) {
  auto* w = static_cast<Waiter*>(user);
  finish(w->drain, status, "rlock_release_async", false, w->index);
}

// Until every waiter has acquired and released once: starts the releases of granted waiters.
// False on a failed completion or after two minutes.
bool drain_waiters(Drain* d, std::vector<Waiter>& waiters) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  std::unique_lock<std::mutex> g(d->mu);
  const int n = static_cast<int>(waiters.size());
  while (d->released < n && d->error.empty()) {
    if (d->granted.empty() && d->cv.wait_until(g, give_up) == std::cv_status::timeout) {
      d->error = "the waiters did not drain within two minutes";
      break;
    }
    std::vector<int> batch;
    batch.swap(d->granted);
    g.unlock();
    for (int i : batch) {
      Waiter& w = waiters[static_cast<size_t>(i)];
      if (rlock_release_async(w.lock, kWaiterOwnerBase + i, released_cb, &w) != RLOCK_OK) {
        g.lock();
        d->error = rlock_failure("rlock_release_async");
        g.unlock();
      }
    }
    g.lock();
  }
  return d->error.empty() && d->completions == 2 * n;
}

struct WaitFigures {
  int64_t threads_before = 0, threads_waiting = 0, rss_before = 0, rss_waiting = 0;
  int64_t first_attempts = 0;
  double settle_s = 0, window_s = 0, drain_s = 0;
  Traffic held;
  int64_t reconnect_scripts = 0;    // scripts Redis ran for one subscriber reconnect
  double reconnect_background = 0;  // of which periodic retries, expected
  double reconnect_s = 0;           // from the kill until every channel was subscribed again
};

int64_t subscribers(redisContext* admin, const std::string& channel);

// The reconnect step, while every waiter sleeps on a held lock: kills the client's pub/sub
// connection, waits until each lock's channel is subscribed again and then until scripts run no
// faster than while held (the periodic retries) for 100 ms (at most 10 s), and counts the scripts
// Redis ran from the kill on, and the periodic retries' expected share of them (at f->held's
// rate; roughly: a reconnect's attempt by a channel's poller puts off its next poll).
void reconnect_step(redisContext* admin, const std::vector<std::string>& names, WaitFigures* f) {
  const double background_per_s = f->held.scripts / f->window_s;
  std::vector<std::string> channels;
  for (const std::string& n : names) channels.push_back("redisson_lock__channel:{" + n + "}");
  const std::map<std::string, int64_t> before = command_calls(admin);
  const int64_t t0 = now_ns();
  Reply killed = command(admin, {"CLIENT", "KILL", "TYPE", "pubsub"});
  if (killed->type != REDIS_REPLY_INTEGER || killed->integer < 1) {
    throw Failure("no pub/sub connection to kill");
  }
  const int64_t give_up = t0 + int64_t{30} * 1000000000;
  for (const std::string& channel : channels) {
    while (subscribers(admin, channel) < 1) {
      if (now_ns() > give_up) throw Failure("the waiters did not subscribe again within 30 s");
      sleep_ns(1000000);
    }
  }
  f->reconnect_s = (now_ns() - t0) / 1e9;
  const int64_t quiet_until = now_ns() + int64_t{10} * 1000000000;
  const double idle_per_sample = background_per_s / 100 * 1.5 + 1;  // per 10 ms
  int64_t seen = traffic(before, command_calls(admin)).scripts;
  for (int quiet = 0; quiet < 10 && now_ns() < quiet_until;) {
    sleep_ns(10000000);
    const int64_t scripts = traffic(before, command_calls(admin)).scripts;
    quiet = static_cast<double>(scripts - seen) <= idle_per_sample ? quiet + 1 : 0;
    seen = scripts;
  }
  f->reconnect_scripts = seen;
  f->reconnect_background = background_per_s * (now_ns() - t0) / 1e9;
}

// Starts the waiters asynchronously (waiter i on lock i % locks, which this thread holds),
// measures them while the locks stay held, then releases the locks and times the drain.
WaitFigures wait_on_held(const Options& o, redisContext* admin, std::vector<Lock>& locks,
                         const std::vector<std::string>& names, Drain* d,
                         std::vector<Waiter>& waiters) {
  WaitFigures f;
  sleep_ns(100000000);  // threads of the acquires above ending
  f.threads_before = os_threads();
  f.rss_before = rss_kib();
  std::map<std::string, int64_t> start = command_calls(admin);
  const int64_t t_start = now_ns();
  for (int i = 0; i < o.waiters; ++i) {
    Waiter& w = waiters[static_cast<size_t>(i)];
    w = {d, locks[static_cast<size_t>(i % o.locks)].get(), i};
    rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
    opts.thread_id = kWaiterOwnerBase + i;
    check(rlock_acquire_async(w.lock, &opts, acquired_cb, &w), "rlock_acquire_async");
  }
  f.first_attempts = settle_waiters(o, admin, start);
  f.settle_s = (now_ns() - t_start) / 1e9;
  std::map<std::string, int64_t> before = command_calls(admin);
  const int64_t t0 = now_ns();
  f.threads_waiting = os_threads();
  sleep_ns(static_cast<int64_t>(o.seconds * 1e9));
  f.threads_waiting = std::max(f.threads_waiting, os_threads());
  f.rss_waiting = rss_kib();
  std::map<std::string, int64_t> after = command_calls(admin);
  f.window_s = (now_ns() - t0) / 1e9;
  f.held = waiting_traffic(before, after);
  reconnect_step(admin, names, &f);
  {
    std::lock_guard<std::mutex> g(d->mu);
    if (d->completions != 0) throw Failure("a waiter completed while the lock was held");
  }
  const int64_t t_release = now_ns();
  for (Lock& l : locks) check(rlock_release(l.get()), "rlock_release");
  if (!drain_waiters(d, waiters)) {
    std::lock_guard<std::mutex> g(d->mu);
    throw Failure(d->error.empty() ? "a waiter completed more than once" : d->error);
  }
  f.drain_s = (now_ns() - t_release) / 1e9;
  return f;
}

std::vector<Result> many_waiters_results(const Options& o, const WaitFigures& f) {
  const double n = o.waiters;
  std::vector<std::pair<std::string, std::string>> extra = {
      {"waiters", number(int64_t{o.waiters})},
      {"locks", number(int64_t{o.locks})},
      {"threads_before", number(f.threads_before)},
      {"threads_waiting", number(f.threads_waiting)},
      {"rss_before_kib", number(f.rss_before)},
      {"rss_waiting_kib", number(f.rss_waiting)},
      {"first_attempts", number(f.first_attempts)},
      {"settle_s", number(f.settle_s)},
      {"window_s", number(f.window_s)},
      {"requests", number(f.held.requests)},
      {"scripts_per_s", number(f.held.scripts / f.window_s)},
      {"requests_per_s_by_command", per_handoff(f.held.by_command, f.window_s)},
      {"reconnect_scripts_per_channel", number(static_cast<double>(f.reconnect_scripts) / o.locks)},
      {"reconnect_background_scripts", number(f.reconnect_background)},
      {"reconnect_ms", number(f.reconnect_s * 1e3)},
      {"async", "true"}};
  return {{"threads_added", static_cast<double>(f.threads_waiting - f.threads_before), "threads",
           extra},
          {"kib_per_waiter", (f.rss_waiting - f.rss_before) / n, "KiB", extra},
          {"requests_per_s", f.held.requests / f.window_s, "requests/s", extra},
          {"drain_ms", f.drain_s * 1e3, "ms", extra},
          {"scripts_per_reconnect", static_cast<double>(f.reconnect_scripts), "scripts", extra}};
}

// o.waiters asynchronous acquires (rlock_acquire_async, no thread of ours per waiter) spread
// over o.locks locks that this thread holds; see bench/README.md.
std::vector<Result> many_waiters(const Options& o, redisContext* admin) {
  Client client = new_client(o.url);
  std::vector<Lock> locks;
  std::vector<std::string> names;
  for (int i = 0; i < o.locks; ++i) {
    names.push_back(lock_name(o, "mw", i));
    locks.push_back(new_lock(client.get(), names.back()));
    check(rlock_acquire(locks.back().get(), 0), "rlock_acquire");
  }
  // Completions may still run after a failure: the waiters' state is then left allocated.
  auto d = std::make_unique<Drain>();
  auto waiters = std::make_unique<std::vector<Waiter>>(static_cast<size_t>(o.waiters));
  WaitFigures f;
  try {
    f = wait_on_held(o, admin, locks, names, d.get(), *waiters);
  } catch (const Failure&) {
    d.release();
    waiters.release();
    throw;
  }
  check_clean(admin, names);
  return many_waiters_results(o, f);
}

// ---- scenario 8: semaphore ----

// A semaphore of kSemaphorePermits permits shared by o.threads threads of one client; each loops
// acquiring one permit (waiting as long as it takes) and releasing it. Its name has no tag of
// the lock scenarios, so the leftovers check of a lock run never sees it.
constexpr int64_t kSemaphorePermits = 4;

struct SemaphoreFree {
  void operator()(rlock_semaphore* s) const { rlock_semaphore_free(s); }
};
using Semaphore = std::unique_ptr<rlock_semaphore, SemaphoreFree>;

// One thread's measured pairs: the pair's time (acquire called to release returned) and the
// acquire's alone, in microseconds.
struct alignas(64) PairSamples {
  std::vector<float> pair_us, acquire_us;
};

// Phases of a timed multi-thread loop: warming up, measured, stopping.
enum Phase : uint32_t { kWarming = 0, kMeasured = 1, kStopping = 2 };

void semaphore_thread(rlock_semaphore* sem, std::atomic<uint32_t>* phase, std::atomic<int>* inside,
                      std::atomic<int>* most_inside, PairSamples* out) {
  out->pair_us.reserve(1 << 16);
  out->acquire_us.reserve(1 << 16);
  for (uint32_t p; (p = phase->load(std::memory_order_relaxed)) != kStopping;) {
    const int64_t t0 = now_ns();
    check(rlock_semaphore_acquire(sem, 1, RLOCK_WAIT_FOREVER), "rlock_semaphore_acquire");
    const int64_t t1 = now_ns();
    // More holders at once than permits would make the figures meaningless: checked, cheaply.
    const int now_inside = inside->fetch_add(1, std::memory_order_relaxed) + 1;
    if (now_inside > kSemaphorePermits) most_inside->store(now_inside);
    inside->fetch_sub(1, std::memory_order_relaxed);
    check(rlock_semaphore_release(sem, 1), "rlock_semaphore_release");
    if (p == kMeasured) {
      const int64_t t2 = now_ns();
      out->pair_us.push_back(static_cast<float>((t2 - t0) / 1e3));
      out->acquire_us.push_back(static_cast<float>((t1 - t0) / 1e3));
    }
  }
}

std::vector<double> merged_sorted(const std::vector<PairSamples>& all,
                                  std::vector<float> PairSamples::*field) {
  std::vector<double> v;
  for (const PairSamples& s : all) v.insert(v.end(), (s.*field).begin(), (s.*field).end());
  std::sort(v.begin(), v.end());
  return v;
}

// The semaphore after the run: every permit back, none held by the client.
void check_semaphore_whole(rlock_semaphore* sem) {
  int64_t available = 0, held = 0;
  int exists = 0;
  check(rlock_semaphore_available(&available, nullptr, &exists, sem), "rlock_semaphore_available");
  check(rlock_semaphore_held(&held, sem), "rlock_semaphore_held");
  if (!exists || available != kSemaphorePermits || held != 0) {
    throw Failure("after the run the semaphore has " + std::to_string(available) +
                  " permits available (exists: " + std::to_string(exists) + ") and " +
                  std::to_string(held) + " held, expected " + std::to_string(kSemaphorePermits) +
                  " and 0");
  }
}

std::vector<Result> semaphore(const Options& o, redisContext* admin) {
  const std::string name = lock_name(o, "s", 0);
  Client client = new_client(o.url);
  rlock_semaphore* raw = nullptr;
  check(rlock_semaphore_new(&raw, client.get(), name.c_str(), nullptr), "rlock_semaphore_new");
  Semaphore sem(raw);
  int set = 0;
  check(rlock_semaphore_try_set_permits(&set, sem.get(), kSemaphorePermits, 0),
        "rlock_semaphore_try_set_permits");
  if (!set) throw Failure("the semaphore " + name + " already existed");

  std::atomic<uint32_t> phase{kWarming};
  std::atomic<int> inside{0}, most_inside{0};
  std::vector<PairSamples> samples(static_cast<size_t>(o.threads));
  std::mutex error_mutex;
  std::string error;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      try {
        semaphore_thread(sem.get(), &phase, &inside, &most_inside, &samples[t]);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> g(error_mutex);
        if (error.empty()) error = e.what();
        phase = kStopping;
      }
    });
  }
  sleep_ns(static_cast<int64_t>(warm_up_s(o.seconds) * 1e9));
  std::map<std::string, int64_t> before = command_calls(admin);
  uint32_t expected = kWarming;
  phase.compare_exchange_strong(expected, kMeasured);
  const int64_t t0 = now_ns();
  sleep_ns(static_cast<int64_t>(o.seconds * 1e9));
  expected = kMeasured;
  phase.compare_exchange_strong(expected, kStopping);
  const int64_t t1 = now_ns();
  std::map<std::string, int64_t> after = command_calls(admin);
  phase = kStopping;
  for (std::thread& t : threads) t.join();
  if (!error.empty()) throw Failure(error);
  if (most_inside.load() > kSemaphorePermits) {
    throw Failure(std::to_string(most_inside.load()) + " holders at once on a semaphore of " +
                  std::to_string(kSemaphorePermits));
  }
  check_semaphore_whole(sem.get());
  int deleted = 0;
  check(rlock_semaphore_delete(&deleted, sem.get()), "rlock_semaphore_delete");
  check_clean(admin, {name});

  const std::vector<double> pairs = merged_sorted(samples, &PairSamples::pair_us);
  const std::vector<double> acquires = merged_sorted(samples, &PairSamples::acquire_us);
  if (pairs.empty()) throw Failure("no pair in the measured window");
  const double seconds = (t1 - t0) / 1e9;
  const double n = static_cast<double>(pairs.size());
  const Traffic tr = traffic(before, after);
  std::vector<std::pair<std::string, std::string>> extra = {
      {"threads", number(int64_t{o.threads})},
      {"permits", number(kSemaphorePermits)},
      {"pairs", number(static_cast<int64_t>(pairs.size()))},
      {"seconds", number(seconds)},
      {"pair_mean_us", number(mean(pairs))},
      {"acquire_p50_us", number(quantile(acquires, 0.50))},
      {"acquire_p99_us", number(quantile(acquires, 0.99))},
      {"scripts_per_pair", number(tr.scripts / n)},
      {"inner_commands_per_pair", number(tr.inner / n)},
      {"requests_per_pair_by_command", per_handoff(tr.by_command, n)}};
  return {{"pairs_per_s", n / seconds, "pairs/s", extra},
          {"pair_p50_us", quantile(pairs, 0.50), "us", extra},
          {"pair_p99_us", quantile(pairs, 0.99), "us", extra},
          {"requests_per_pair", tr.requests / n, "requests", extra}};
}

// ---- scenario 9: latch ----

// Rounds of: a latch of count 1, kLatchWaiters asynchronous awaits on it (no thread of ours
// each), then one count-down; each waiter's release latency is its completion minus the
// count-down's call.
constexpr int kLatchWaiters = 100;

struct LatchFree {
  void operator()(rlock_latch* l) const { rlock_latch_free(l); }
};
using Latch = std::unique_ptr<rlock_latch, LatchFree>;

struct LatchRound {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> released_at;  // completion times, in completion order
  std::string error;
};

void latch_released(void* user, int status, int64_t) {
  auto* r = static_cast<LatchRound*>(user);
  const int64_t t = now_ns();
  std::string message = status == RLOCK_OK ? "" : rlock_failure("rlock_latch_await_async");
  std::lock_guard<std::mutex> g(r->mu);
  if (status != RLOCK_OK && r->error.empty()) r->error = message;
  r->released_at.push_back(t);
  r->cv.notify_one();  // under the mutex: the round may end (and be reused) once all are in
}

int64_t subscribers(redisContext* admin, const std::string& channel) {
  Reply r = command(admin, {"PUBSUB", "NUMSUB", channel});
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[1]->type != REDIS_REPLY_INTEGER) {
    throw Failure("unexpected PUBSUB NUMSUB reply");
  }
  return r->element[1]->integer;
}

// Until the waiters' client is subscribed to the latch's channel, then 100 ms for every await
// to have made its first check; none may have been released by then.
void settle_latch_waiters(redisContext* admin, const std::string& channel, LatchRound* round) {
  const int64_t give_up = now_ns() + int64_t{10} * 1000000000;
  while (subscribers(admin, channel) < 1) {
    if (now_ns() > give_up) throw Failure("the latch waiters did not subscribe within 10 s");
    sleep_ns(1000000);
  }
  sleep_ns(100000000);
  std::lock_guard<std::mutex> g(round->mu);
  if (!round->released_at.empty()) {
    throw Failure("a latch waiter was released before the count-down: " + round->error);
  }
}

struct LatchFigures {
  std::vector<double> last_us, median_us, count_down_us;
};

void latch_round(rlock_latch* latch, redisContext* admin, const std::string& channel,
                 LatchRound* round, LatchFigures* f) {
  int set = 0;
  check(rlock_latch_try_set_count(&set, latch, 1), "rlock_latch_try_set_count");
  if (!set) throw Failure("the latch was still closed at the start of a round");
  round->released_at.clear();
  for (int i = 0; i < kLatchWaiters; ++i) {
    check(rlock_latch_await_async(latch, RLOCK_WAIT_FOREVER, nullptr, latch_released, round),
          "rlock_latch_await_async");
  }
  settle_latch_waiters(admin, channel, round);
  const int64_t t0 = now_ns();
  int64_t left = -1;
  check(rlock_latch_count_down(&left, latch), "rlock_latch_count_down");
  f->count_down_us.push_back((now_ns() - t0) / 1e3);
  if (left != 0) throw Failure("the count-down left " + std::to_string(left) + ", not 0");
  std::unique_lock<std::mutex> g(round->mu);
  if (!round->cv.wait_for(g, std::chrono::seconds(10), [&] {
        return round->released_at.size() == static_cast<size_t>(kLatchWaiters);
      })) {
    throw Failure(std::to_string(round->released_at.size()) + " of " +
                  std::to_string(kLatchWaiters) + " latch waiters released within 10 s");
  }
  if (!round->error.empty()) throw Failure(round->error);
  std::vector<double> us;
  for (int64_t t : round->released_at) us.push_back((t - t0) / 1e3);
  std::sort(us.begin(), us.end());
  f->last_us.push_back(us.back());
  f->median_us.push_back(quantile(us, 0.50));
}

// Every command Redis ran between two commandstats (scripts and the commands inside them alike),
// but the harness's own INFO, CONFIG and PUBSUB.
std::map<std::string, int64_t> commands_ran(const std::map<std::string, int64_t>& before,
                                            const std::map<std::string, int64_t>& after) {
  std::map<std::string, int64_t> ran;
  for (const auto& [name, calls] : after) {
    auto it = before.find(name);
    const int64_t delta = calls - (it == before.end() ? 0 : it->second);
    const std::string base = name.substr(0, name.find('|'));
    if (delta != 0 && base != "info" && base != "config" && base != "pubsub") ran[name] = delta;
  }
  return ran;
}

// Rounds: at least 20, five a second of --seconds beyond that (each takes about 0.1 s).
int latch_rounds(const Options& o) { return std::max(20, static_cast<int>(o.seconds * 5)); }

std::vector<Result> latch(const Options& o, redisContext* admin) {
  const std::string name = lock_name(o, "l", 0);
  const std::string channel = "redisson_countdownlatch__channel__{" + name + "}";
  Client client = new_client(o.url);
  rlock_latch* raw = nullptr;
  check(rlock_latch_new(&raw, client.get(), name.c_str()), "rlock_latch_new");
  Latch handle(raw);
  // Completions may still run after a failure: the round's state is then left allocated.
  auto round = std::make_unique<LatchRound>();
  LatchFigures f;
  const int rounds = latch_rounds(o);
  const std::map<std::string, int64_t> before = command_calls(admin);
  try {
    for (int r = 0; r < rounds; ++r) latch_round(handle.get(), admin, channel, round.get(), &f);
  } catch (const Failure&) {
    handle.reset();  // cancels the awaits still pending
    round.release();
    throw;
  }
  const std::map<std::string, int64_t> ran = commands_ran(before, command_calls(admin));
  handle.reset();
  check_clean(admin, {name});
  std::vector<double> last = f.last_us, median = f.median_us, count_down = f.count_down_us;
  std::sort(last.begin(), last.end());
  std::sort(median.begin(), median.end());
  std::sort(count_down.begin(), count_down.end());
  std::vector<std::pair<std::string, std::string>> extra = {
      {"waiters", number(int64_t{kLatchWaiters})},
      {"rounds", number(int64_t{rounds})},
      {"last_max_us", number(last.back())},
      {"count_down_call_p50_us", number(quantile(count_down, 0.50))},
      {"commands_per_round_by_command", per_handoff(ran, rounds)},
      {"async", "true"}};
  return {{"last_p50_us", quantile(last, 0.50), "us", extra},
          {"last_p99_us", quantile(last, 0.99), "us", extra},
          {"median_p50_us", quantile(median, 0.50), "us", extra},
          {"median_p99_us", quantile(median, 0.99), "us", extra}};
}

// ---- scenario 10: leader ----

// Leader elections (rlock_election_*): what idle candidates cost Redis, and how long the lead
// takes to move when the leader resigns and when it dies.
struct ElectedAt {
  std::mutex mu;
  std::condition_variable cv;
  int64_t at = 0;  // when the latest leader was elected (now_ns), 0 before
  int index = -1;  // which candidate
  int64_t term = 0;
};

struct BenchCandidate {
  ElectedAt* elected;
  int index;
};

void bench_elected(rlock_election*, int64_t term, void* payload) {
  auto* c = static_cast<BenchCandidate*>(payload);
  std::lock_guard<std::mutex> g(c->elected->mu);
  if (term <= c->elected->term) return;  // terms only grow: an older one would be a bug
  c->elected->at = now_ns();
  c->elected->index = c->index;
  c->elected->term = term;
  c->elected->cv.notify_all();
}

struct ElectionFree {
  void operator()(rlock_election* e) const { rlock_election_free(e); }
};
using Election = std::unique_ptr<rlock_election, ElectionFree>;

Election new_election(rlock_client* client, const std::string& name) {
  rlock_election* e = nullptr;
  check(rlock_election_new(&e, client, name.data(), name.size(), nullptr), "rlock_election_new");
  return Election(e);
}

// Waits for a leader with a term above `after`; its index.
int wait_elected(ElectedAt* e, int64_t after, const char* what) {
  std::unique_lock<std::mutex> g(e->mu);
  if (!e->cv.wait_for(g, std::chrono::seconds(30), [&] { return e->term > after; })) {
    throw Failure(std::string("no leader within 30 s ") + what);
  }
  return e->index;
}

constexpr int kLeaderClients = 10;      // the candidates are spread over these clients
constexpr int64_t kDeadLeaseMs = 2000;  // the lease of the leaders that die

// Rounds of: a leader in a child process (lease kDeadLeaseMs) that exits without resigning
// once a candidate here waits; the time from its exit to the candidate's election.
std::vector<double> dead_leader_failovers(const Options& o, int rounds) {
  const std::string name = lock_name(o, "leader-dead", 0);
  Shared shared(sizeof(Word) * 3 * static_cast<size_t>(rounds));
  Word* go = shared.at<Word>(0);
  Word* led = go + rounds;
  Word* die = led + rounds;
  // Forked before this process makes a client of its own.
  Children children(rounds, [&](int r) {
    while (go[r].load() == 0) futex_wait(&go[r], 0, 100000000);
    Client client = new_client(o.url, kDeadLeaseMs);
    Election e = new_election(client.get(), name);
    check(rlock_election_campaign(e.get(), nullptr, nullptr, nullptr), "campaign");
    const int64_t give_up = now_ns() + int64_t{30} * 1000000000;
    while (!rlock_election_is_leader(e.get())) {
      if (now_ns() > give_up) throw Failure("the dying leader was not elected within 30 s");
      sleep_ns(1000000);
    }
    set_and_wake(&led[r], 1);
    while (die[r].load() == 0) futex_wait(&die[r], 0, 100000000);
    _exit(0);  // no resign, no release: the lock stays until its lease runs out
  });
  Client client = new_client(o.url);
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    set_and_wake(&go[r], 1);
    // Not wait_ready: the children of earlier rounds have exited, as they should.
    const int64_t give_up = now_ns() + int64_t{60} * 1000000000;
    while (led[r].load() == 0) {
      if (now_ns() > give_up) throw Failure("the dying leader was not elected within a minute");
      futex_wait(&led[r], 0, 10000000);
    }
    ElectedAt elected;
    BenchCandidate me{&elected, 0};
    Election e = new_election(client.get(), name);
    check(rlock_election_campaign(e.get(), bench_elected, nullptr, &me), "campaign");
    sleep_ns(100000000);
    if (elected.term != 0) throw Failure("elected while the dying leader still led");
    const int64_t t0 = now_ns();
    set_and_wake(&die[r], 1);
    wait_elected(&elected, 0, "after the leader died");
    ms.push_back((elected.at - t0) / 1e6);
  }
  children.join();
  return ms;
}

std::vector<Result> leader(const Options& o, redisContext* admin) {
  const int rounds_dead = o.seconds < 1 ? 1 : 3;
  std::vector<double> dead_ms = dead_leader_failovers(o, rounds_dead);
  const std::string name = lock_name(o, "leader", 0);
  std::vector<Client> clients;
  for (int i = 0; i < kLeaderClients; ++i) clients.push_back(new_client(o.url));
  sleep_ns(100000000);
  const int64_t threads_before = os_threads();
  ElectedAt elected;
  std::vector<BenchCandidate> who(static_cast<size_t>(o.waiters));
  std::vector<Election> elections;
  for (int i = 0; i < o.waiters; ++i) {
    who[static_cast<size_t>(i)] = {&elected, i};
    elections.push_back(new_election(clients[static_cast<size_t>(i % kLeaderClients)].get(), name));
    check(rlock_election_campaign(elections.back().get(), bench_elected, nullptr,
                                  &who[static_cast<size_t>(i)]),
          "rlock_election_campaign");
  }
  int leader_index = wait_elected(&elected, 0, "among the candidates");
  sleep_ns(1000000000);  // every candidate has made its first attempt and waits
  // Idle: one leader, the rest waiting, for the measured window.
  const std::map<std::string, int64_t> before = command_calls(admin);
  const int64_t t0 = now_ns();
  sleep_ns(static_cast<int64_t>(std::max(o.seconds, 1.0) * 1e9));
  const int64_t threads_waiting = os_threads();
  const Traffic idle = waiting_traffic(before, command_calls(admin));
  const double window_s = (now_ns() - t0) / 1e9;
  // Handovers: the leader resigns; the time until the next is elected. It campaigns again.
  std::vector<double> handover_ms;
  const int rounds = std::max(10, static_cast<int>(o.seconds * 5));
  for (int r = 0; r < rounds; ++r) {
    int64_t term;
    {
      std::lock_guard<std::mutex> g(elected.mu);
      term = elected.term;
    }
    const size_t outgoing = static_cast<size_t>(leader_index);
    const int64_t start = now_ns();
    check(rlock_election_resign(elections[outgoing].get()), "rlock_election_resign");
    leader_index = wait_elected(&elected, term, "after a resign");
    handover_ms.push_back((elected.at - start) / 1e6);
    check(
        rlock_election_campaign(elections[outgoing].get(), bench_elected, nullptr, &who[outgoing]),
        "rlock_election_campaign");
  }
  elections.clear();
  clients.clear();
  check_clean(admin, {name});
  std::sort(handover_ms.begin(), handover_ms.end());
  std::sort(dead_ms.begin(), dead_ms.end());
  const double per_s = idle.requests / window_s;
  std::vector<std::pair<std::string, std::string>> extra = {
      {"candidates", number(int64_t{o.waiters})},
      {"clients", number(int64_t{kLeaderClients})},
      {"threads_added", number(threads_waiting - threads_before)},
      {"window_s", number(window_s)},
      {"requests_per_s_by_command", per_handoff(idle.by_command, window_s)},
      {"handover_rounds", number(int64_t{rounds})},
      {"dead_leader_lease_ms", number(kDeadLeaseMs)},
      {"dead_leader_rounds", number(int64_t{rounds_dead})},
      {"async", "true"}};
  return {{"requests_per_s", per_s, "requests/s", extra},
          {"requests_per_candidate_per_s", per_s / o.waiters, "requests/s", extra},
          {"handover_p50_ms", quantile(handover_ms, 0.50), "ms", extra},
          {"handover_p99_ms", quantile(handover_ms, 0.99), "ms", extra},
          {"dead_leader_failover_ms", dead_ms.back(), "ms", extra}};
}

// ---- scenario 11: reconnect ----

// One thread; before each acquire+release the server closes the client's command connections
// (CLIENT KILL TYPE normal from the admin connection, which it skips), so every pair first
// opens a connection: TCP, and over TLS a handshake, which resumes an earlier connection's
// session when the server takes it. Only the pair is timed, not the kill. Run plaintext
// (rlock-c) and over TLS (rlock-c-tls), it shows what a reconnect costs each.
constexpr int kReconnectNames = 1024;

rlock_stats client_stats(rlock_client* client) {
  rlock_stats s;
  std::memset(&s, 0, sizeof s);
  s.version = RLOCK_STATS_VERSION;
  check(rlock_client_stats(&s, client), "rlock_client_stats");
  return s;
}

std::vector<Result> reconnect(const Options& o, redisContext* admin) {
  Client client = new_client(o.url);
  std::vector<Lock> locks;
  std::vector<std::string> keys;
  for (int k = 0; k < kReconnectNames; ++k) {
    keys.push_back(lock_name(o, "r", k));
    locks.push_back(new_lock(client.get(), keys.back()));
  }
  int64_t i = 0;
  std::vector<double> pair_us;
  auto loop = [&](double span) {
    pair_us.clear();
    const int64_t end = now_ns() + static_cast<int64_t>(span * 1e9);
    while (now_ns() < end) {
      Reply killed = command(admin, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
      if (killed->type != REDIS_REPLY_INTEGER || killed->integer < 1) {
        throw Failure("CLIENT KILL closed no connection of the client");
      }
      rlock_lock* lock = locks[static_cast<size_t>(i++ % kReconnectNames)].get();
      const int64_t t0 = now_ns();
      check(rlock_acquire(lock, RLOCK_WAIT_FOREVER), "rlock_acquire after a reconnect");
      check(rlock_release(lock), "rlock_release after a reconnect");
      pair_us.push_back((now_ns() - t0) / 1e3);
    }
  };
  loop(warm_up_s(o.seconds));
  const rlock_stats before = client_stats(client.get());
  const int64_t t0 = now_ns();
  loop(o.seconds);
  const double seconds = (now_ns() - t0) / 1e9;
  const rlock_stats after = client_stats(client.get());
  locks.clear();
  client.reset();
  check_clean(admin, keys);
  const double mean_us = mean(pair_us);
  std::sort(pair_us.begin(), pair_us.end());
  std::vector<std::pair<std::string, std::string>> extra = {
      {"pairs", number(static_cast<int64_t>(pair_us.size()))},
      {"seconds", number(seconds)},
      {"mean_us", number(mean_us)},
      {"p99_us", number(quantile(pair_us, 0.99))},
      {"tls_handshakes",
       number(static_cast<int64_t>(after.tls_handshakes - before.tls_handshakes))},
      {"tls_sessions_resumed",
       number(static_cast<int64_t>(after.tls_sessions_resumed - before.tls_sessions_resumed))}};
  return {{"reconnect_pair_p50_us", quantile(pair_us, 0.50), "us", extra}};
}
}  // namespace

bool is_rlock_only_scenario(const std::string& s) {
  return s == "handoff" || s == "herd" || s == "herd-fair" || s == "watchdog" || s == "memory" ||
         s == "many-waiters" || s == "semaphore" || s == "latch" || s == "leader" ||
         s == "reconnect";
}

std::vector<Result> run_rlock_scenario(const Options& o, redisContext* admin) {
  if (o.scenario == "handoff") return handoff(o, admin);
  if (o.scenario == "herd") return herd(o, admin, false);
  if (o.scenario == "herd-fair") return herd(o, admin, true);
  if (o.scenario == "watchdog") return watchdog(o, admin);
  if (o.scenario == "many-waiters") return many_waiters(o, admin);
  if (o.scenario == "semaphore") return semaphore(o, admin);
  if (o.scenario == "latch") return latch(o, admin);
  if (o.scenario == "leader") return leader(o, admin);
  if (o.scenario == "reconnect") return reconnect(o, admin);
  return memory(o, admin);
}

}  // namespace bench
