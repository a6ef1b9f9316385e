// rlock-bench: runs one contender through one scenario and prints its result as JSON lines.
// The command line and output follow the contender contract in bench/README.md.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "bench.hpp"

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

constexpr size_t kUncontendedNames = 1024;

constexpr char kUsage[] =
    "usage: rlock-bench --contender rlock-c|rlock-c-tls|rlock-c-nostats|hiredis-floor|ping\n"
    "                   --url redis://HOST:PORT [--admin-url redis://HOST:PORT]\n"
    "                   --scenario SCENARIO --seconds S [--threads T] [--names N]\n"
    "                   [--processes P] [--locks N] [--waiters N] [--scripts DIR]\n"
    "  ping goes with scenario ping (PING round trips); hiredis-floor with uncontended or\n"
    "  throughput; rlock-c with those and handoff, herd, herd-fair, watchdog, memory,\n"
    "  many-waiters, semaphore, latch, leader, reconnect. rlock-c-tls is rlock-c on a\n"
    "  rediss:// --url; it needs --admin-url, a plaintext URL of the same server for the\n"
    "  harness's own connection (hiredis 0.14 has no TLS). rlock-c-nostats is rlock-c with\n"
    "  its client's statistics off.\n"
    "  --threads (default 16): throughput and semaphore, and threads per process in herd;\n"
    "  --names (default 256): throughput; --processes (default 8): herd;\n"
    "  --locks (default 10000): watchdog and memory; in many-waiters the locks the waiters\n"
    "  spread over (default 1);\n"
    "  --waiters (default 1000): memory and many-waiters; leader: the candidates.\n";

struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double parse_number(const std::string& flag, const std::string& text, double max) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > max) {
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", max);
    throw Usage(flag + " must be a positive number up to " + limit + ", got '" + text + "'");
  }
  return v;
}

int parse_count(const std::string& flag, const std::string& text, int max) {
  double v = parse_number(flag, text, max);
  if (v != std::floor(v)) throw Usage(flag + " must be a whole number, got '" + text + "'");
  return static_cast<int>(v);
}

using Setter = void (*)(Options& o, const std::string& flag, const std::string& value);

// The options and how each sets its value.
constexpr int kMaxWaiters = 100000;

const std::pair<const char*, Setter> kFlags[] = {
    {"--contender", [](Options& o, const std::string&, const std::string& v) { o.contender = v; }},
    {"--url", [](Options& o, const std::string&, const std::string& v) { o.url = v; }},
    {"--admin-url", [](Options& o, const std::string&, const std::string& v) { o.admin_url = v; }},
    {"--scenario", [](Options& o, const std::string&, const std::string& v) { o.scenario = v; }},
    {"--seconds", [](Options& o, const std::string& f,
                     const std::string& v) { o.seconds = parse_number(f, v, 86400); }},
    {"--threads", [](Options& o, const std::string& f,
                     const std::string& v) { o.threads = parse_count(f, v, 1024); }},
    {"--names", [](Options& o, const std::string& f,
                   const std::string& v) { o.names = parse_count(f, v, 1000000); }},
    {"--processes", [](Options& o, const std::string& f,
                       const std::string& v) { o.processes = parse_count(f, v, 64); }},
    {"--locks", [](Options& o, const std::string& f,
                   const std::string& v) { o.locks = parse_count(f, v, 1000000); }},
    {"--waiters", [](Options& o, const std::string& f,
                     const std::string& v) { o.waiters = parse_count(f, v, kMaxWaiters); }},
    {"--scripts", [](Options& o, const std::string&, const std::string& v) { o.scripts_dir = v; }},
};

// The scenario must be one the contender runs.
void check_scenario(const Options& o) {
  bool basic = o.scenario == "uncontended" || o.scenario == "throughput";
  bool ok = o.contender == "ping"            ? o.scenario == "ping"
            : o.contender == "hiredis-floor" ? basic
                                             : basic || is_rlock_only_scenario(o.scenario);
  if (!ok) {
    throw Usage("--scenario for " + o.contender + " must be " +
                (o.contender == "ping"            ? "ping"
                 : o.contender == "hiredis-floor" ? "uncontended or throughput"
                                                  : "uncontended, throughput, handoff, herd, "
                                                    "herd-fair, watchdog, memory, "
                                                    "many-waiters, semaphore, latch, leader or "
                                                    "reconnect") +
                ", got '" + o.scenario + "'");
  }
}

// rlock-c-tls, and only it, runs on a rediss:// URL; the harness's hiredis connection cannot.
void check_tls(const Options& o) {
  const bool tls = o.contender == "rlock-c-tls";
  if (tls != (o.url.rfind("rediss://", 0) == 0)) {
    throw Usage(tls ? "rlock-c-tls needs a rediss:// --url, got '" + o.url + "'"
                    : "only rlock-c-tls takes a rediss:// --url (rlock-c is the plaintext run; "
                      "hiredis-floor and ping have no TLS), got '" +
                          o.url + "'");
  }
  if (tls && o.admin_url.empty()) {
    throw Usage("rlock-c-tls needs --admin-url, a plaintext redis:// URL of the same server");
  }
}

Options parse_args(int argc, char** argv) {
  Options o;
  bool seconds_given = false, locks_given = false;
  for (int i = 1; i < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) throw Usage(flag + " needs a value");
    const auto known = std::find_if(std::begin(kFlags), std::end(kFlags),
                                    [&](const auto& entry) { return flag == entry.first; });
    if (known == std::end(kFlags)) throw Usage("unknown option " + flag);
    known->second(o, flag, argv[i + 1]);
    seconds_given = seconds_given || flag == "--seconds";
    locks_given = locks_given || flag == "--locks";
  }
  if (!is_rlock(o) && o.contender != "hiredis-floor" && o.contender != "ping") {
    throw Usage(
        "--contender must be rlock-c, rlock-c-tls, rlock-c-nostats, hiredis-floor or "
        "ping, got '" +
        o.contender + "'");
  }
  if (o.url.empty()) throw Usage("--url is required");
  check_tls(o);
  if (!seconds_given) throw Usage("--seconds is required");
  check_scenario(o);
  if (o.scenario == "many-waiters") {
    if (!locks_given) o.locks = 1;
    if (o.locks > o.waiters) throw Usage("many-waiters: --locks must not exceed --waiters");
  }
  return o;
}

// ---- output ----

}  // namespace

bool is_rlock(const Options& o) {
  return o.contender == "rlock-c" || o.contender == "rlock-c-tls" ||
         o.contender == "rlock-c-nostats";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string number(int64_t v) { return std::to_string(v); }

namespace {

// Contender names and units are plain ASCII chosen here, so no escaping is needed.
void print(const Options& o, const Result& r) {
  std::string extra;
  for (const auto& [key, value] : r.extra) {
    extra += (extra.empty() ? "\"" : ", \"") + key + "\": " + value;
  }
  std::printf(
      "{\"scenario\": \"%s\", \"contender\": \"%s\", \"metric\": \"%s\", \"value\": %.3f, "
      "\"unit\": \"%s\", \"extra\": {%s}}\n",
      o.scenario.c_str(), o.contender.c_str(), r.metric.c_str(), r.value, r.unit.c_str(),
      extra.c_str());
}

// ---- scenarios ----

Result uncontended(Contender& contender, double seconds) {
  std::unique_ptr<Worker> w = contender.worker();
  size_t i = 0;
  int64_t failed = 0;
  auto loop = [&](double span) {
    Clock::time_point start = Clock::now();
    Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(Seconds(span));
    Clock::time_point now;
    int64_t pairs = 0;
    while ((now = Clock::now()) < end) {
      if (w->pair(i % kUncontendedNames)) {
        ++pairs;
      } else {
        ++failed;
      }
      ++i;
    }
    return std::make_pair(pairs, Seconds(now - start).count());
  };
  loop(std::max(seconds / 10, 0.2));
  failed = 0;
  w->retries = 0;
  auto [pairs, elapsed] = loop(seconds);
  Result r;
  r.value = pairs / elapsed;
  r.extra = {
      {"pairs", number(pairs)}, {"seconds", number(elapsed)}, {"failed_acquires", number(failed)}};
  return r;
}

struct alignas(64) Counters {  // one cache line per thread
  int64_t pairs = 0;
  int64_t failed = 0;
  int64_t retries = 0;
};

Result throughput(Contender& contender, const Options& o) {
  std::vector<Counters> counters(o.threads);
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::promise<void> start;
  std::shared_future<void> started = start.get_future().share();
  std::mutex error_mutex;
  std::string error;
  auto record = [&](const char* what) {
    std::lock_guard<std::mutex> g(error_mutex);
    if (error.empty()) error = what;
    stop = true;
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<Worker> w;
      try {
        w = contender.worker();
      } catch (const std::exception& e) {
        record(e.what());
      }
      ++ready;
      started.wait();
      if (!w) return;
      std::minstd_rand rng(std::random_device{}());
      std::uniform_int_distribution<size_t> pick(0, static_cast<size_t>(o.names) - 1);
      Counters local;
      try {
        while (!stop.load(std::memory_order_relaxed)) {
          if (w->pair(pick(rng))) {
            ++local.pairs;
          } else {
            ++local.failed;
          }
        }
      } catch (const std::exception& e) {
        record(e.what());
      }
      local.retries = w->retries;
      counters[t] = local;
    });
  }
  while (ready.load() < o.threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Clock::time_point begin = Clock::now();
  start.set_value();
  if (!stop.load()) std::this_thread::sleep_for(Seconds(o.seconds));
  stop = true;
  for (std::thread& t : threads) t.join();
  double elapsed = Seconds(Clock::now() - begin).count();
  if (!error.empty()) throw Failure(error);

  Counters total;
  for (const Counters& c : counters) {
    total.pairs += c.pairs;
    total.failed += c.failed;
    total.retries += c.retries;
  }
  Result r;
  r.value = total.pairs / elapsed;
  r.extra = {{"threads", number(int64_t{o.threads})},
             {"names", number(int64_t{o.names})},
             {"pairs", number(total.pairs)},
             {"seconds", number(elapsed)},
             {"failed_acquires", number(total.failed)}};
  if (o.contender == "hiredis-floor") r.extra.emplace_back("retries", number(total.retries));
  return r;
}

// PING round trips on one connection, in a histogram of 0.1 us buckets up to 10 ms.
std::vector<Result> ping(const Options& o) {
  constexpr double kBucketUs = 0.1;
  std::vector<int64_t> histogram(100000 + 1);
  Context c = connect(o.url);
  const char* argv[] = {"PING"};
  const size_t lens[] = {4};
  auto round_trip = [&] {
    Reply r(static_cast<redisReply*>(redisCommandArgv(c.get(), 1, argv, lens)));
    if (!r || r->type != REDIS_REPLY_STATUS) throw Failure("PING failed");
  };
  Clock::time_point warm_end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                  Seconds(std::max(o.seconds / 10, 0.2)));
  while (Clock::now() < warm_end) round_trip();

  int64_t samples = 0;
  double total_us = 0;
  Clock::time_point start = Clock::now();
  Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(Seconds(o.seconds));
  for (Clock::time_point t0 = start; t0 < end;) {
    round_trip();
    Clock::time_point t1 = Clock::now();
    double us = std::chrono::duration<double, std::micro>(t1 - t0).count();
    ++histogram[std::min(static_cast<size_t>(us / kBucketUs), histogram.size() - 1)];
    ++samples;
    total_us += us;
    t0 = t1;
  }
  auto percentile = [&](double q) {
    int64_t rank = static_cast<int64_t>(std::ceil(q * samples));
    int64_t seen = 0;
    for (size_t b = 0; b < histogram.size(); ++b) {
      seen += histogram[b];
      if (seen >= rank) return (b + 1) * kBucketUs;  // the bucket's upper edge
    }
    return histogram.size() * kBucketUs;
  };
  std::vector<std::pair<std::string, std::string>> extra = {
      {"samples", number(samples)}, {"mean_us", number(total_us / samples)}};
  return {{"rtt_p50", percentile(0.50), "us", extra}, {"rtt_p99", percentile(0.99), "us", extra}};
}

int run(const Options& o) {
  if (o.contender == "ping") {
    for (const Result& r : ping(o)) print(o, r);
    return 0;
  }
  Context admin = connect(o.admin_url.empty() ? o.url : o.admin_url);
  // Every key of ours contains the lock name (latches and channels wrap it in {}).
  const std::string pattern = "*bench:*:" + o.contender + ":*";
  delete_keys(admin.get(), pattern);  // leftovers of an earlier run would stall this one
  if (is_rlock_only_scenario(o.scenario)) {
    std::vector<Result> results;
    try {
      results = run_rlock_scenario(o, admin.get());
    } catch (const Failure&) {
      delete_keys(admin.get(), pattern);  // best effort: the next run deletes them too
      throw;
    }
    delete_keys(admin.get(), pattern);
    for (const Result& r : results) print(o, r);
    return 0;
  }

  bool single = o.scenario == "uncontended";
  std::vector<std::string> names;
  for (size_t k = 0; k < (single ? kUncontendedNames : static_cast<size_t>(o.names)); ++k) {
    names.push_back("bench:" + std::string(single ? "u" : "t") + ":" + o.contender + ":" +
                    std::to_string(k));
  }
  std::unique_ptr<Contender> contender =
      is_rlock(o) ? make_rlock_c(o, names) : make_hiredis_floor(o, names);
  Result r;
  try {
    r = single ? uncontended(*contender, o.seconds) : throughput(*contender, o);
  } catch (const Failure&) {
    contender.reset();
    delete_keys(admin.get(), pattern);  // best effort: the next run deletes them too
    throw;
  }
  // Before the contender goes: freeing the rlock client would release what is still held.
  int64_t left = count_existing(admin.get(), names);
  contender.reset();
  delete_keys(admin.get(), pattern);
  if (left != 0) throw Failure(std::to_string(left) + " lock(s) still locked after the run");
  print(o, r);
  return 0;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  try {
    return bench::run(bench::parse_args(argc, argv));
  } catch (const bench::Usage& e) {
    std::fprintf(stderr, "rlock-bench: %s\n%s", e.what(), bench::kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlock-bench: %s\n", e.what());
    return 1;
  }
}
