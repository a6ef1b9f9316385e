// Shared pieces of rlock-bench: options, the contender interface, and hiredis helpers.
#pragma once

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

struct Options {
  std::string contender;
  std::string url;
  std::string admin_url;  // the harness's own hiredis connection; empty: url
  std::string scenario;
  double seconds = 10;
  int threads = 16;
  int names = 256;
  int processes = 8;   // herd: processes, each with --threads threads
  int locks = 10000;   // watchdog and memory: held locks / lock handles; many-waiters: 1
  int waiters = 1000;  // memory: threads blocked in acquire; many-waiters: async acquires
  std::string scripts_dir = RLOCK_BENCH_SCRIPTS_DIR;
};

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One thread's side of a contender. Created on the thread that uses it, since a lock owner is
// a thread.
// One result line: the scenario and contender come from Options.
struct Result {
  std::string metric = "pairs_per_s";
  double value = 0;
  std::string unit = "pairs/s";
  std::vector<std::pair<std::string, std::string>> extra;  // values already JSON (numbers)
};

std::string number(double v);
std::string number(int64_t v);

// Scenarios 3-11 (handoff, herd, herd-fair, watchdog, memory, many-waiters, semaphore, latch,
// leader, reconnect), rlock-c only: scenarios.cpp.
bool is_rlock_only_scenario(const std::string& scenario);
std::vector<Result> run_rlock_scenario(const Options& o, redisContext* admin);

class Worker {
 public:
  virtual ~Worker() = default;
  // Acquires lock `k` (blocking, the contender's default way) and releases it. Returns false
  // when the acquire gave up without the lock; throws Failure on anything unexpected.
  virtual bool pair(size_t k) = 0;
  // Times an acquire found the lock taken and tried again (only counted by hiredis-floor).
  int64_t retries = 0;
};

class Contender {
 public:
  virtual ~Contender() = default;
  virtual std::unique_ptr<Worker> worker() = 0;
};

// rlock-c, or rlock-c-tls: the same contender on a rediss:// URL.
bool is_rlock(const Options& o);

std::unique_ptr<Contender> make_rlock_c(const Options& o, const std::vector<std::string>& names);
std::unique_ptr<Contender> make_hiredis_floor(const Options& o,
                                              const std::vector<std::string>& names);

// ---- hiredis ----

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// Connects to redis://[[user]:password@]host[:port][/db] or unix://path[?db=N], with AUTH and
// SELECT as the URL asks.
Context connect(const std::string& url);

// Sends one command; throws Failure on I/O errors and error replies.
Reply command(redisContext* c, const std::vector<std::string>& args);

// UNLINKs every key matching the SCAN pattern.
void delete_keys(redisContext* c, const std::string& pattern);

// How many of these keys exist.
int64_t count_existing(redisContext* c, const std::vector<std::string>& keys);

// INFO commandstats as command name -> calls ("config|resetstat" style names for subcommands).
std::map<std::string, int64_t> command_calls(redisContext* c);

}  // namespace bench
