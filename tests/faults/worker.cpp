// The worker process of the fault-injection suite (tests/faults, FAULTS.md "Harness design").
// Each worker writes what it did to an append-only history log that the checkers read; the
// clock is CLOCK_MONOTONIC in ns, which every process on the machine shares.
//
//   rlock-fault-worker loop [options]    THREADS owners loop acquire / section / release
//   rlock-fault-worker hold [options]    one owner acquires NAME, then obeys stdin commands
//
// Options (all --key value):
//   --url U               the lock server (often a fault proxy in front of it)
//   --redlock U1,U2,...   instead of --url: a RedLock over one client per server
//   --multi 1             each name "A+B+..." is a multi-lock of those names (one client)
//   --defer-acquire 1     hold mode: acquire on the "acquire" command, not at start
//   --read 1              hold mode with --kind rw: hold the read half (default the write half)
//   --fair-wait-ms N      fair kind: how long a queued waiter keeps its place (fair_wait_ms)
//   --names A,B,...       lock names (loop picks one at random per cycle); default "fault"
//   --kind K              reentrant | fenced | fair | spin | rw | semaphore | permits | election
//                         (semaphore: a plain semaphore, permits: a permit-expirable one; each
//                         section holds one permit; the history's MODE is S. election, loop
//                         mode only: each thread is a candidate for the first name; a
//                         leadership is one hold (acq when elected, TOKEN the term) of up to
//                         --sections N (default 5) sections, each made only while
//                         rlock_election_is_leader says so, then a resign (rel; RC RLOCK_ELOST when
//                         leadership was lost first))
//   --permits N           semaphore, permits: the semaphore is set to N permits if missing
//   --lease-ms L          -1 = watchdog (default), else the explicit lease
//   --watchdog-lease-ms W client's watchdog lease (default the library's)
//   --wait-ms W           acquire wait; -1 forever; default 5000
//   --command-timeout-ms T, --connect-timeout-ms T, --poll-cap-ms P, --pool-size N
//   --connect-retry-ms R  keep trying to make the client while it fails with RLOCK_ECONN, R ms
//                         (default 1000: a fault may cut the first connects)
//   --threads N, --cycles N (per thread), --duration-ms D: loop ends at whichever comes first,
//                         or at SIGTERM (each thread finishes its cycle, then the summary)
//   --min-duration-ms M   and not before M ms, even when the cycles are done
//   --hold-us N           the section lasts U(0, N) us (default 2000)
//   --write-share F       rw kind: share of sections under the write lock (default 0.25)
//   --log FILE            history log (appended)
//   --counter-dir DIR     lost-update counter: one file per name, read / sleep / write + 1
//   --resource-url U      fenced resource: each section writes through rlock_fenced_write there
//   --seed N
//
// History lines (one write(2) each, so lines of concurrent writers never interleave):
//   acq OWNER NAME MODE T_CALL T_RET RC TOKEN    MODE X (exclusive), R, W or S (a permit);
//                                                RC 0 = acquired
//                                                (a multi-lock logs acq and rel per member)
//   valid OWNER NAME T_RET VALIDITY_MS           a group's validity when it was acquired
//   wrote OWNER NAME                             the counter was written (section done its work)
//   fence OWNER NAME TOKEN T_CALL T_RET RESULT   RESULT 1 accepted, 0 refused, < 0 an error
//   leave OWNER NAME MODE T                      the section ended: a release call follows
//   rel OWNER NAME MODE T_CALL T_RET RC
//   lost OWNER NAME T REASON                     the lost-lock callback ran
// OWNER is PID.THREAD_INDEX.
//
// hold mode reads one command per stdin line and answers one stdout line:
//   acquire -> "acquired RC TOKEN" (with --defer-acquire)
//   write -> "write RESULT"   release -> "release RC"   held -> "held 0|1"
//   extend MS -> "extend RC"  spin MS -> busy for MS ms, then "spin done"  quit -> exits 0
// and prints "acquired RC TOKEN" first, "lost REASON T" whenever the callback runs.
// Exit status of loop: 0, or 2 when set-up failed. Its last stdout line is a summary:
//   "done cycles=N acquired=N errors=N rss_warm_kb=N rss_end_kb=N heap_warm_kb=N heap_end_kb=N
//   fds_warm=N fds_end=N" and "RC=COUNT" pairs (heap: bytes allocated and not freed). The warm
//   figures are taken at a fifth of the run, the end ones before the clients are freed. Before
//   it come "fds warm LIST" and "fds end LIST": each descriptor and what it is.
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <rlock/rlock.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <condition_variable>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Options {
  std::string mode;
  std::string url;
  std::vector<std::string> redlock;
  std::vector<std::string> names{"fault"};
  std::string kind = "reentrant";
  int64_t lease_ms = RLOCK_LEASE_WATCHDOG;
  int64_t watchdog_lease_ms = 0;
  int64_t wait_ms = 5000;
  int64_t command_timeout_ms = 0;
  int64_t connect_timeout_ms = 0;
  int64_t connect_retry_ms = 1000;
  int64_t poll_cap_ms = 0;
  int pool_size = 0;
  int threads = 1;
  int64_t cycles = 1000000000;
  int64_t duration_ms = 0;
  int64_t min_duration_ms = 0;
  int hold_us = 2000;
  int64_t sections = 5;  // election: sections per leadership at most
  double write_share = 0.25;
  std::string log;
  std::string counter_dir;
  std::string resource_url;
  unsigned seed = 0;
  bool multi = false;
  bool defer_acquire = false;
  bool read = false;
  int64_t fair_wait_ms = 0;
  int64_t permits = 1;
  bool semaphore() const { return kind == "semaphore" || kind == "permits"; }
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr, "rlock-fault-worker: %s\n", problem.c_str());
  std::exit(2);
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(sep, start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> split(const std::string& s) { return split_on(s, ','); }

int64_t number(const std::string& key, const std::string& value) {
  char* end = nullptr;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0') usage(key + " needs a whole number, not '" + value + "'");
  return v;
}

Options parse(int argc, char** argv) {
  if (argc < 2) usage("usage: rlock-fault-worker loop|hold --url URL [options]");
  Options o;
  o.mode = argv[1];
  if (o.mode != "loop" && o.mode != "hold") usage("unknown mode '" + o.mode + "'");
  for (int i = 2; i < argc; i += 2) {
    std::string key = argv[i];
    if (i + 1 >= argc) usage(key + " needs a value");
    std::string v = argv[i + 1];
    if (key == "--url")
      o.url = v;
    else if (key == "--redlock")
      o.redlock = split(v);
    else if (key == "--names")
      o.names = split(v);
    else if (key == "--kind")
      o.kind = v;
    else if (key == "--lease-ms")
      o.lease_ms = number(key, v);
    else if (key == "--watchdog-lease-ms")
      o.watchdog_lease_ms = number(key, v);
    else if (key == "--wait-ms")
      o.wait_ms = number(key, v);
    else if (key == "--command-timeout-ms")
      o.command_timeout_ms = number(key, v);
    else if (key == "--connect-timeout-ms")
      o.connect_timeout_ms = number(key, v);
    else if (key == "--connect-retry-ms")
      o.connect_retry_ms = number(key, v);
    else if (key == "--poll-cap-ms")
      o.poll_cap_ms = number(key, v);
    else if (key == "--pool-size")
      o.pool_size = static_cast<int>(number(key, v));
    else if (key == "--threads")
      o.threads = static_cast<int>(number(key, v));
    else if (key == "--cycles")
      o.cycles = number(key, v);
    else if (key == "--duration-ms")
      o.duration_ms = number(key, v);
    else if (key == "--min-duration-ms")
      o.min_duration_ms = number(key, v);
    else if (key == "--hold-us")
      o.hold_us = static_cast<int>(number(key, v));
    else if (key == "--sections")
      o.sections = number(key, v);
    else if (key == "--write-share")
      o.write_share = std::atof(v.c_str());
    else if (key == "--log")
      o.log = v;
    else if (key == "--counter-dir")
      o.counter_dir = v;
    else if (key == "--resource-url")
      o.resource_url = v;
    else if (key == "--seed")
      o.seed = static_cast<unsigned>(number(key, v));
    else if (key == "--multi")
      o.multi = number(key, v) != 0;
    else if (key == "--defer-acquire")
      o.defer_acquire = number(key, v) != 0;
    else if (key == "--read")
      o.read = number(key, v) != 0;
    else if (key == "--fair-wait-ms")
      o.fair_wait_ms = number(key, v);
    else if (key == "--permits")
      o.permits = number(key, v);
    else
      usage("unknown option " + key);
  }
  if (o.url.empty() && o.redlock.empty()) usage("--url or --redlock is required");
  if (o.names.empty()) usage("--names is empty");
  if (o.threads < 1) usage("--threads must be at least 1");
  static const char* kinds[] = {"reentrant", "fenced",    "fair",    "spin",
                                "rw",        "semaphore", "permits", "election"};
  bool known = false;
  for (const char* k : kinds) known = known || o.kind == k;
  if (!known) usage("unknown --kind '" + o.kind + "'");
  if ((!o.redlock.empty() || o.multi) && o.kind != "reentrant") {
    usage("--redlock and --multi take --kind reentrant");
  }
  return o;
}

// The history log: opened O_APPEND, one write(2) per line.
class History {
 public:
  explicit History(const std::string& path) {
    if (path.empty()) return;
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) usage("cannot open the log " + path + ": " + std::strerror(errno));
  }
  ~History() {
    if (fd_ >= 0) close(fd_);
  }
  void line(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    if (fd_ < 0) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n > static_cast<int>(sizeof buf) - 2) n = static_cast<int>(sizeof buf) - 2;
    buf[n++] = '\n';
    if (write(fd_, buf, static_cast<size_t>(n)) != n) std::perror("history write");
  }

 private:
  int fd_ = -1;
};

rlock_client* connect(const Options& o, const std::string& url) {
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url.c_str();
  opts.watchdog_lease_ms = o.watchdog_lease_ms;
  opts.command_timeout_ms = o.command_timeout_ms;
  opts.connect_timeout_ms = o.connect_timeout_ms;
  opts.poll_cap_ms = o.poll_cap_ms;
  opts.pool_size = o.pool_size;
  rlock_client* client = nullptr;
  int rc = rlock_client_new(&client, &opts);
  // A fault (a killed connection, a restart) may hit the first connects: under kills every few
  // milliseconds and a loaded machine, many in a row. Keep trying for --connect-retry-ms; any
  // other error is no fault's doing and ends the worker at once.
  const int64_t give_up = mono_ns() + o.connect_retry_ms * 1000000;
  int attempts = 1;
  for (; rc == RLOCK_ECONN && mono_ns() < give_up; ++attempts) {
    usleep(50000);
    rc = rlock_client_new(&client, &opts);
  }
  if (rc != RLOCK_OK) {
    std::fprintf(stderr, "rlock-fault-worker: cannot connect to %s (%d attempts): %d %s\n",
                 url.c_str(), attempts, rc, rlock_last_error()->message);
    std::exit(2);
  }
  return client;
}

std::mutex g_stdout_mutex;

void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char* fmt, ...) {
  std::lock_guard<std::mutex> guard(g_stdout_mutex);
  va_list ap;
  va_start(ap, fmt);
  std::vprintf(fmt, ap);
  va_end(ap);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// Where the lost-lock callback logs: the handle's name and the owner it was acquired for.
struct LostSink {
  History* history;
  bool print;
  std::map<int64_t, std::string>* owner_of_thread;
  std::mutex* mutex;
};

void on_lost(rlock_lock*, const char* name, size_t name_len, int64_t thread_id,
             rlock_lost_reason reason, void* payload) {
  auto* sink = static_cast<LostSink*>(payload);
  int64_t now = mono_ns();
  std::string owner = "?";
  {
    std::lock_guard<std::mutex> guard(*sink->mutex);
    auto it = sink->owner_of_thread->find(thread_id);
    if (it != sink->owner_of_thread->end()) owner = it->second;
  }
  sink->history->line("lost %s %.*s %" PRId64 " %d", owner.c_str(), static_cast<int>(name_len),
                      name, now, static_cast<int>(reason));
  if (sink->print) say("lost %d %" PRId64, static_cast<int>(reason), now);
}

// The lock side of one name: a handle (two for rw), or a RedLock group.
struct Target {
  std::string name;
  rlock_lock* lock = nullptr;   // exclusive kinds, and the read half of rw
  rlock_lock* write = nullptr;  // rw only
  std::vector<rlock_lock*> members;
  std::vector<std::string> member_names;  // a multi-lock's members, as logged
  rlock_multi* group = nullptr;
  rlock_semaphore* semaphore = nullptr;  // --kind semaphore or permits
  int counter_fd = -1;
};

// The permit a thread of a permits worker holds between its acquire and release.
thread_local rlock_permit_id t_permit;

struct World {
  Options o;
  rlock_client* client = nullptr;
  std::vector<rlock_client*> redlock_clients;
  rlock_client* resource = nullptr;
  std::vector<Target> targets;
  History* history = nullptr;
  LostSink sink{};
  std::map<int64_t, std::string> owner_of_thread;
  std::mutex owner_mutex;
};

rlock_lock* new_lock(World& w, rlock_client* client, const std::string& name,
                     rlock_lock_kind kind) {
  rlock_lock_options lo = RLOCK_LOCK_OPTIONS_INIT;
  lo.kind = kind;
  lo.lease_ms = w.o.lease_ms;
  lo.fair_wait_ms = w.o.fair_wait_ms;
  rlock_lock* lock = nullptr;
  int rc = rlock_lock_new_n(&lock, client, name.data(), name.size(), &lo);
  if (rc != RLOCK_OK) usage("rlock_lock_new_n: " + std::string(rlock_last_error()->message));
  rlock_lock_set_lost_callback(lock, on_lost, &w.sink);
  return lock;
}

void build(World& w, bool print_lost) {
  const Options& o = w.o;
  w.sink = LostSink{w.history, print_lost, &w.owner_of_thread, &w.owner_mutex};
  if (o.redlock.empty()) w.client = connect(o, o.url);
  for (const std::string& url : o.redlock) w.redlock_clients.push_back(connect(o, url));
  if (!o.resource_url.empty()) w.resource = connect(o, o.resource_url);
  for (const std::string& name : o.names) {
    Target t;
    t.name = name;
    if (!o.redlock.empty()) {
      for (rlock_client* c : w.redlock_clients) {
        t.members.push_back(new_lock(w, c, name, RLOCK_LOCK_REENTRANT));
      }
      int rc = rlock_redlock_new(&t.group, t.members.data(), t.members.size());
      if (rc != RLOCK_OK) usage("rlock_redlock_new: " + std::string(rlock_last_error()->message));
      t.member_names.push_back(name);
    } else if (o.multi) {
      for (const std::string& member : split_on(name, '+')) {
        t.members.push_back(new_lock(w, w.client, member, RLOCK_LOCK_REENTRANT));
        t.member_names.push_back(member);
      }
      int rc = rlock_multi_lock_new(&t.group, t.members.data(), t.members.size());
      if (rc != RLOCK_OK)
        usage("rlock_multi_lock_new: " + std::string(rlock_last_error()->message));
    } else if (o.semaphore()) {
      rlock_semaphore_options so = RLOCK_SEMAPHORE_OPTIONS_INIT;
      so.kind = o.kind == "permits" ? RLOCK_SEMAPHORE_EXPIRABLE : RLOCK_SEMAPHORE_PLAIN;
      so.lease_ms = o.lease_ms;
      int rc = rlock_semaphore_new_n(&t.semaphore, w.client, name.data(), name.size(), &so);
      if (rc != RLOCK_OK)
        usage("rlock_semaphore_new_n: " + std::string(rlock_last_error()->message));
      rc = rlock_semaphore_try_set_permits(nullptr, t.semaphore, o.permits, 0);
      if (rc != RLOCK_OK) usage("try_set_permits: " + std::string(rlock_last_error()->message));
    } else if (o.kind == "election") {
      // Each candidate thread makes its own elections (run_elections).
    } else if (o.kind == "rw") {
      t.lock = new_lock(w, w.client, name, RLOCK_LOCK_READ);
      t.write = new_lock(w, w.client, name, RLOCK_LOCK_WRITE);
    } else {
      rlock_lock_kind kind = o.kind == "fenced" ? RLOCK_LOCK_FENCED
                             : o.kind == "fair" ? RLOCK_LOCK_FAIR
                             : o.kind == "spin" ? RLOCK_LOCK_SPIN
                                                : RLOCK_LOCK_REENTRANT;
      t.lock = new_lock(w, w.client, name, kind);
    }
    if (!o.counter_dir.empty()) {
      std::string path = o.counter_dir + "/" + name;
      t.counter_fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (t.counter_fd < 0) usage("cannot open the counter " + path);
    }
    w.targets.push_back(std::move(t));
  }
}

void teardown(World& w) {
  for (Target& t : w.targets) {
    if (t.group != nullptr) rlock_multi_free(t.group);
    rlock_semaphore_free(t.semaphore);
    for (rlock_lock* m : t.members) rlock_lock_free(m);
    if (t.lock != nullptr) rlock_lock_free(t.lock);
    if (t.write != nullptr) rlock_lock_free(t.write);
    if (t.counter_fd >= 0) close(t.counter_fd);
  }
  if (w.resource != nullptr) rlock_client_free(w.resource);
  for (rlock_client* c : w.redlock_clients) rlock_client_free(c);
  if (w.client != nullptr) rlock_client_free(w.client);
}

// A fixed-width decimal, so a write never leaves stale digits behind.
void bump_counter(int fd, int hold_us, std::mt19937& rng) {
  char buf[32] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  long long value = n > 0 ? std::strtoll(buf, nullptr, 10) : 0;
  // Deliberately not atomic: without mutual exclusion updates get lost.
  if (hold_us > 0) usleep(std::uniform_int_distribution<int>(0, hold_us)(rng));
  int len = std::snprintf(buf, sizeof buf, "%020lld\n", value + 1);
  if (pwrite(fd, buf, static_cast<size_t>(len), 0) != len) std::perror("counter write");
}

int64_t rss_kb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long long pages = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%lld %lld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Bytes the process has allocated and not freed (malloc's own count): unlike RSS, it does not
// move with how the allocator's arenas and free lists happen to lie, so it shows a leak alone.
int64_t heap_kb() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>((m.uordblks + m.hblkhd) / 1024);
}

// Each open descriptor and what it is ("5=socket:[123]", "4=anon_inode:[eventfd]", a path),
// sorted; the directory being listed is left out. The summary counts them, and the "fds" lines
// show them, to tell a leak from a connection being reopened.
std::vector<std::string> open_fds() {
  std::vector<std::string> fds;
  if (DIR* d = opendir("/proc/self/fd")) {
    const std::string own = std::to_string(dirfd(d));
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.' || e->d_name == own) continue;
      char link[256];
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t len = readlink(path.c_str(), link, sizeof link - 1);
      fds.push_back(std::string(e->d_name) + "=" +
                    (len > 0 ? std::string(link, static_cast<size_t>(len)) : "?"));
    }
    closedir(d);
  }
  std::sort(fds.begin(), fds.end());
  return fds;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

struct Held {
  int rc = 0;
  int64_t token = 0;
};

// One acquire of `t` in `mode` ('X', 'R', 'W', 'S' a permit) for the calling thread, logged.
Held acquire(World& w, Target& t, char mode, const std::string& owner) {
  const Options& o = w.o;
  Held h;
  int64_t token = 0;
  int64_t start = mono_ns();
  int64_t validity = 0;
  if (t.semaphore != nullptr) {
    rlock_permit_options po = RLOCK_PERMIT_OPTIONS_INIT;
    po.wait_ms = o.wait_ms;
    if (o.kind == "permits") po.ids = &t_permit;
    h.rc = rlock_semaphore_acquire_ex(t.semaphore, &po);
  } else if (t.group != nullptr) {
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.wait_ms = o.wait_ms;
    ao.lease_ms = o.lease_ms == RLOCK_LEASE_WATCHDOG ? 0 : o.lease_ms;
    h.rc = rlock_multi_acquire_ex(&validity, t.group, &ao);
  } else {
    rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
    ao.wait_ms = o.wait_ms;
    // Tokens come with every exclusive acquire when there is a resource to fence.
    if (mode != 'R' && (w.resource != nullptr || o.kind == "fenced")) ao.token = &token;
    h.rc = rlock_acquire_ex(mode == 'W' ? t.write : t.lock, &ao);
  }
  int64_t end = mono_ns();
  h.token = h.rc == RLOCK_OK ? token : 0;
  for (const std::string& name :
       t.member_names.empty() ? std::vector<std::string>{t.name} : t.member_names) {
    w.history->line("acq %s %s %c %" PRId64 " %" PRId64 " %d %" PRId64, owner.c_str(), name.c_str(),
                    mode, start, end, h.rc, h.token);
  }
  if (t.group != nullptr && h.rc == RLOCK_OK) {
    w.history->line("valid %s %s %" PRId64 " %" PRId64, owner.c_str(), t.name.c_str(), end,
                    validity);
  }
  return h;
}

int fenced_write(World& w, Target& t, const std::string& owner, int64_t token) {
  int accepted = 0;
  int64_t start = mono_ns();
  int rc = rlock_fenced_write(&accepted, w.resource, t.name.data(), t.name.size(), owner.data(),
                              owner.size(), token);
  int64_t end = mono_ns();
  int result = rc == RLOCK_OK ? accepted : rc;
  w.history->line("fence %s %s %" PRId64 " %" PRId64 " %" PRId64 " %d", owner.c_str(),
                  t.name.c_str(), token, start, end, result);
  return result;
}

int release(World& w, Target& t, char mode, const std::string& owner) {
  const std::vector<std::string> names =
      t.member_names.empty() ? std::vector<std::string>{t.name} : t.member_names;
  int64_t start = mono_ns();
  // Logged before the call: a kill may land with the release already applied but not logged.
  for (const std::string& name : names) {
    w.history->line("leave %s %s %c %" PRId64, owner.c_str(), name.c_str(), mode, start);
  }
  int rc = t.semaphore != nullptr
               ? (w.o.kind == "permits" ? rlock_permit_release(t.semaphore, t_permit.hex)
                                        : rlock_semaphore_release(t.semaphore, 1))
           : t.group != nullptr ? rlock_multi_release_for(t.group, RLOCK_THREAD_CURRENT)
                                : rlock_release(mode == 'W' ? t.write : t.lock);
  int64_t end = mono_ns();
  for (const std::string& name : names) {
    w.history->line("rel %s %s %c %" PRId64 " %" PRId64 " %d", owner.c_str(), name.c_str(), mode,
                    start, end, rc);
  }
  return rc;
}

std::string register_owner(World& w, int index) {
  std::string owner = std::to_string(getpid()) + "." + std::to_string(index);
  std::lock_guard<std::mutex> guard(w.owner_mutex);
  w.owner_of_thread[rlock_current_thread_id()] = owner;
  return owner;
}

// Set by SIGTERM: loop threads stop after the cycle in hand. A lock-free atomic, so the
// handler's store and the threads' loads are neither a race nor unsafe in a signal handler.
std::atomic<int> g_stop_requested{0};
static_assert(std::atomic<int>::is_always_lock_free, "the SIGTERM flag must be lock-free");

void request_stop(int) { g_stop_requested.store(1); }

int run_loop(World& w) {
  const Options& o = w.o;
  build(w, false);
  struct sigaction on_term {};
  on_term.sa_handler = request_stop;
  sigaction(SIGTERM, &on_term, nullptr);
  const int64_t deadline = o.duration_ms > 0 ? mono_ns() + o.duration_ms * 1000000 : INT64_MAX;
  const int64_t not_before = mono_ns() + o.min_duration_ms * 1000000;
  std::atomic<int64_t> cycles{0}, acquired{0}, errors{0};
  std::mutex rc_mutex;
  std::map<int, int64_t> rc_counts;
  std::vector<std::thread> pool;
  for (int i = 0; i < o.threads; ++i) {
    pool.emplace_back([&, i] {
      const std::string owner = register_owner(w, i);
      std::mt19937 rng(o.seed * 7919u + static_cast<unsigned>(getpid()) * 131u +
                       static_cast<unsigned>(i));
      std::uniform_int_distribution<size_t> pick(0, w.targets.size() - 1);
      std::uniform_real_distribution<double> share(0.0, 1.0);
      for (int64_t c = 0;
           (c < o.cycles || mono_ns() < not_before) && mono_ns() < deadline && !g_stop_requested;
           ++c) {
        Target& t = w.targets[pick(rng)];
        char mode = o.semaphore() ? 'S' : 'X';
        if (o.kind == "rw") mode = share(rng) < o.write_share ? 'W' : 'R';
        ++cycles;
        Held h = acquire(w, t, mode, owner);
        if (h.rc != RLOCK_OK) {
          std::lock_guard<std::mutex> guard(rc_mutex);
          ++rc_counts[h.rc];
          if (h.rc != RLOCK_ETIMEDOUT) ++errors;
          // A failing server must not turn the loop into a busy spin.
          if (h.rc != RLOCK_ETIMEDOUT) usleep(5000);
          continue;
        }
        ++acquired;
        if (t.counter_fd >= 0 && mode != 'R') {
          bump_counter(t.counter_fd, o.hold_us, rng);
          w.history->line("wrote %s %s", owner.c_str(), t.name.c_str());
        } else if (o.hold_us > 0) {
          usleep(std::uniform_int_distribution<int>(0, o.hold_us)(rng));
        }
        if (w.resource != nullptr && mode != 'R') fenced_write(w, t, owner, h.token);
        int rc = release(w, t, mode, owner);
        if (rc != RLOCK_OK) {
          std::lock_guard<std::mutex> guard(rc_mutex);
          ++rc_counts[rc];
          ++errors;
        }
      }
    });
  }
  // Memory and descriptors once warmed up (a fifth of the run) and at the end: a leak shows as
  // growth between the two.
  std::atomic<bool> finished{false};
  int64_t rss_warm = 0, heap_warm = 0;
  std::vector<std::string> fds_warm;
  std::thread monitor([&] {
    const int64_t start = mono_ns();
    const double total_cycles = static_cast<double>(o.cycles) * o.threads;
    while (!finished.load()) {
      // The loop ends at the cap, or once both the cycles and the minimum time are done.
      const double elapsed = static_cast<double>(mono_ns() - start);
      double done = static_cast<double>(cycles.load()) / total_cycles;
      if (o.min_duration_ms > 0) done = std::min(done, elapsed / (o.min_duration_ms * 1e6));
      double progress = o.duration_ms > 0 ? std::max(done, elapsed / (o.duration_ms * 1e6)) : done;
      if (progress >= 0.2) {
        rss_warm = rss_kb();
        heap_warm = heap_kb();
        fds_warm = open_fds();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  for (std::thread& th : pool) th.join();
  finished.store(true);
  monitor.join();
  const int64_t rss_end = rss_kb(), heap_end = heap_kb();
  const std::vector<std::string> fds_end = open_fds();
  say("fds warm %s", joined(fds_warm).c_str());
  say("fds end %s", joined(fds_end).c_str());
  teardown(w);
  std::string summary =
      "done cycles=" + std::to_string(cycles.load()) +
      " acquired=" + std::to_string(acquired.load()) + " errors=" + std::to_string(errors.load()) +
      " rss_warm_kb=" + std::to_string(rss_warm) + " rss_end_kb=" + std::to_string(rss_end) +
      " heap_warm_kb=" + std::to_string(heap_warm) + " heap_end_kb=" + std::to_string(heap_end) +
      " fds_warm=" + std::to_string(fds_warm.size()) + " fds_end=" + std::to_string(fds_end.size());
  for (const auto& kv : rc_counts) {
    summary += " " + std::to_string(kv.first) + "=" + std::to_string(kv.second);
  }
  say("%s", summary.c_str());
  return 0;
}

// One candidate's election, as its callbacks report it.
struct Candidate {
  World* w = nullptr;
  std::string owner, name;
  std::mutex mu;
  std::condition_variable changed;
  int64_t term = 0;
  bool ended = false;  // the leadership (or campaign) is over
  int reason = 0;
};

void candidate_elected(rlock_election*, int64_t term, void* payload) {
  auto* c = static_cast<Candidate*>(payload);
  std::lock_guard<std::mutex> guard(c->mu);
  c->term = term;
  c->changed.notify_all();
}

void candidate_revoked(rlock_election*, int64_t term, rlock_revoke_reason reason, void* payload) {
  auto* c = static_cast<Candidate*>(payload);
  if (term > 0 && reason != RLOCK_REVOKED_RESIGNED) {
    c->w->history->line("lost %s %s %" PRId64 " %d", c->owner.c_str(), c->name.c_str(), mono_ns(),
                        static_cast<int>(reason));
  }
  std::lock_guard<std::mutex> guard(c->mu);
  c->ended = true;
  c->reason = static_cast<int>(reason);
  c->changed.notify_all();
}

// Waits (in slices, so a stop request is seen) until elected, the campaign ends, or the wait
// or the run is over. The term, or 0.
int64_t wait_to_lead(Candidate& c, int64_t wait_ms, int64_t run_deadline) {
  const int64_t give_up =
      wait_ms < 0 ? run_deadline : std::min(run_deadline, mono_ns() + wait_ms * 1000000);
  std::unique_lock<std::mutex> guard(c.mu);
  while (c.term == 0 && !c.ended && !g_stop_requested && mono_ns() < give_up) {
    c.changed.wait_for(guard, std::chrono::milliseconds(50));
  }
  return c.term;
}

// One leadership of a candidate thread: campaign, up to --sections sections while leader,
// resign.
// Returns the campaign's status (0 when it led).
int lead_once(World& w, Target& t, const std::string& owner, int64_t run_deadline,
              std::mt19937& rng) {
  Candidate c;
  c.w = &w;
  c.owner = owner;
  c.name = t.name;
  rlock_election_options eo = RLOCK_ELECTION_OPTIONS_INIT;
  eo.requeue = 0;
  rlock_election* e = nullptr;
  int rc = rlock_election_new(&e, w.client, t.name.data(), t.name.size(), &eo);
  if (rc == RLOCK_OK) rc = rlock_election_campaign(e, candidate_elected, candidate_revoked, &c);
  const int64_t start = mono_ns();
  const int64_t term = rc == RLOCK_OK ? wait_to_lead(c, w.o.wait_ms, run_deadline) : 0;
  const int64_t elected = mono_ns();
  if (term == 0 && rc == RLOCK_OK) {
    std::lock_guard<std::mutex> guard(c.mu);
    rc = c.ended ? RLOCK_ECONN : RLOCK_ETIMEDOUT;
  }
  w.history->line("acq %s %s X %" PRId64 " %" PRId64 " %d %" PRId64, owner.c_str(), t.name.c_str(),
                  start, elected, term > 0 ? 0 : rc, term);
  if (term == 0) {
    rlock_election_free(e);
    return rc;
  }
  for (int64_t k = 0; k < w.o.sections && rlock_election_is_leader(e) && mono_ns() < run_deadline &&
                      !g_stop_requested;
       ++k) {
    if (t.counter_fd >= 0) {
      bump_counter(t.counter_fd, w.o.hold_us, rng);
      w.history->line("wrote %s %s", owner.c_str(), t.name.c_str());
    }
    if (w.resource != nullptr) fenced_write(w, t, owner, term);
  }
  const int64_t leave = mono_ns();
  w.history->line("leave %s %s X %" PRId64, owner.c_str(), t.name.c_str(), leave);
  bool lost = false;
  {
    std::lock_guard<std::mutex> guard(c.mu);
    lost = c.ended;
  }
  rc = rlock_election_resign(e);
  w.history->line("rel %s %s X %" PRId64 " %" PRId64 " %d", owner.c_str(), t.name.c_str(), leave,
                  mono_ns(), lost ? RLOCK_ELOST : rc);
  rlock_election_free(e);
  return RLOCK_OK;
}

// The election kind of loop mode: each thread campaigns for the first name, leads, resigns.
int run_elections(World& w) {
  const Options& o = w.o;
  build(w, false);
  struct sigaction on_term {};
  on_term.sa_handler = request_stop;
  sigaction(SIGTERM, &on_term, nullptr);
  const int64_t deadline = o.duration_ms > 0 ? mono_ns() + o.duration_ms * 1000000 : INT64_MAX;
  std::atomic<int64_t> cycles{0}, led{0}, errors{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < o.threads; ++i) {
    pool.emplace_back([&, i] {
      const std::string owner = register_owner(w, i);
      std::mt19937 rng(o.seed * 7919u + static_cast<unsigned>(getpid()) * 131u +
                       static_cast<unsigned>(i));
      for (int64_t c = 0; c < o.cycles && mono_ns() < deadline && !g_stop_requested; ++c) {
        ++cycles;
        const int rc = lead_once(w, w.targets.front(), owner, deadline, rng);
        if (rc == RLOCK_OK) ++led;
        if (rc != RLOCK_OK && rc != RLOCK_ETIMEDOUT) {
          ++errors;
          usleep(5000);
        }
        usleep(1000);  // let another candidate in: the lock is not fair
      }
    });
  }
  for (std::thread& th : pool) th.join();
  teardown(w);
  say("done cycles=%" PRId64 " acquired=%" PRId64 " errors=%" PRId64, cycles.load(), led.load(),
      errors.load());
  return 0;
}

int run_hold(World& w) {
  build(w, true);
  Target& t = w.targets.front();
  const std::string owner = register_owner(w, 0);
  const char mode = w.o.kind == "rw" ? (w.o.read ? 'R' : 'W') : w.o.semaphore() ? 'S' : 'X';
  Held h;
  if (!w.o.defer_acquire) {
    h = acquire(w, t, mode, owner);
    say("acquired %d %" PRId64, h.rc, h.token);
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "acquire") {
      h = acquire(w, t, mode, owner);
      say("acquired %d %" PRId64, h.rc, h.token);
    } else if (line == "write") {
      say("write %d", w.resource != nullptr ? fenced_write(w, t, owner, h.token) : RLOCK_EINVAL);
    } else if (line == "release") {
      say("release %d", release(w, t, mode, owner));
    } else if (line == "held") {
      rlock_lock* handle = mode == 'W' ? t.write : t.lock;
      say("held %d", t.group != nullptr ? rlock_multi_is_held_for(t.group, RLOCK_THREAD_CURRENT)
                                        : rlock_is_held(handle));
    } else if (line.rfind("extend ", 0) == 0) {
      say("extend %d", rlock_extend(mode == 'W' ? t.write : t.lock, std::atoll(line.c_str() + 7)));
    } else if (line.rfind("spin ", 0) == 0) {
      // Keeps the owner's own thread busy: renewal must not depend on it.
      const int64_t until = mono_ns() + std::atoll(line.c_str() + 5) * 1000000;
      volatile uint64_t sink = 0;
      while (mono_ns() < until) sink = sink + 1;
      say("spin done");
    } else if (line == "quit") {
      break;
    } else {
      say("error unknown command '%s'", line.c_str());
    }
  }
  teardown(w);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  World w;
  w.o = parse(argc, argv);
  History history(w.o.log);
  w.history = &history;
  if (w.o.mode == "loop" && w.o.kind == "election") return run_elections(w);
  if (w.o.kind == "election") usage("--kind election is for loop mode");
  return w.o.mode == "loop" ? run_loop(w) : run_hold(w);
}
