#include "rlock/core/sentinel.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <system_error>

#include "rlock/core/connection.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/parse.hpp"
#include "rlock/core/stats.hpp"
#include "rlock/core/timing.hpp"

namespace rlock::core {
namespace {

using Clock = SteadyClock;

// How often the sentinels are asked even when nothing seems wrong: a +switch-master message
// can be lost with the connection that carried it.
constexpr auto kRefresh = std::chrono::milliseconds(2000);
// The least time between two rounds of asking, however many commands fail meanwhile.
constexpr auto kMinAskGap = std::chrono::milliseconds(100);
// After a +switch-master, how long the sentinels are asked every kMinAskGap until a majority
// names the announced address (the others learn of a failover a little after its leader).
constexpr auto kChaseSwitch = std::chrono::milliseconds(5000);
constexpr int64_t kMinBackoffMs = 50;
constexpr int64_t kMaxBackoffMs = 1000;
constexpr const char* kSwitchChannel = "+switch-master";

bool parse_port(const std::string& text, int* port) {
  int64_t value = 0;
  if (parse_int(text, 1, 65535, &value) != ParseStatus::kOk) return false;
  *port = static_cast<int>(value);
  return true;
}

// Every word between single spaces, empty ones included.
std::vector<std::string> split_on_spaces(const std::string& text) {
  std::vector<std::string> words;
  for (size_t p = 0; p <= text.size();) {
    size_t space = text.find(' ', p);
    if (space == std::string::npos) space = text.size();
    words.push_back(text.substr(p, space - p));
    p = space + 1;
  }
  return words;
}

// The "config-epoch" field of a SENTINEL MASTER reply (field, value, ... pairs), or -1.
int64_t config_epoch(const Reply& r) {
  if (r.type != Reply::Type::Array) return -1;
  for (size_t i = 0; i + 1 < r.elements.size(); i += 2) {
    if (r.elements[i].str != "config-epoch") continue;
    int64_t epoch = -1;
    if (parse_int(r.elements[i + 1].str, 0, INT64_MAX, &epoch) != ParseStatus::kOk) return -1;
    return epoch;
  }
  return -1;
}

}  // namespace

SentinelWatch::SentinelWatch(const ClientConfig& config)
    : config_(std::make_shared<const ClientConfig>(config)) {}

SentinelWatch::~SentinelWatch() { stop(); }

Endpoint SentinelWatch::master() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return master_;
}

void SentinelWatch::suspect() {
  if (!suspected_.exchange(true)) doorbell_.ring();
}

SentinelWatch::View SentinelWatch::ask_one(const ClientConfig& config, size_t index) {
  const Endpoint& sentinel = config.seeds[index];
  View view;
  try {
    Connection conn(sentinel, config.connect_timeout_ms, config.command_timeout_ms);
    Reply r = conn.command({"SENTINEL", "get-master-addr-by-name", config.master_name});
    if (r.is_error()) {
      // NOAUTH: it wants a password we did not give (sentinel_password).
      view.why = "sentinel " + sentinel.describe() + " answered: " + r.str;
      view.kind = r.error.code == kAuth ? View::Kind::kRefused : View::Kind::kFailed;
      return view;
    }
    int port = 0;
    if (r.type != Reply::Type::Array || r.elements.size() != 2 ||
        r.elements[0].type != Reply::Type::String || r.elements[0].str.empty() ||
        !parse_port(r.elements[1].str, &port)) {
      view.kind = View::Kind::kNoMaster;
      view.why = "sentinel " + sentinel.describe() + " does not know a master named " +
                 printable(config.master_name, 80);
      return view;
    }
    view.kind = View::Kind::kNamed;
    view.master = config.endpoint;
    view.master.host = r.elements[0].str;
    view.master.port = port;
    view.master.unix_path.clear();
    try {
      view.epoch = config_epoch(conn.command({"SENTINEL", "master", config.master_name}));
    } catch (const Error&) {
      // The address stands without its epoch (-1), which only breaks ties.
    }
  } catch (const Error& e) {
    view.why = e.message();
    view.tls_failed = e.code() == kTls;
    if (e.code() == kAuth || e.code() == kNoPerm) {
      view.kind = View::Kind::kRefused;
    } else if (e.code() != kConn) {
      view.kind = View::Kind::kFailed;
    }
  } catch (const std::exception& e) {
    view.kind = View::Kind::kFailed;
    view.why = "asking sentinel " + sentinel.describe() + " failed: " + e.what();
  }
  return view;
}

// One round of asking: the askers' answers as they come, shared with askers that may still
// be waiting on a silent sentinel after the round was decided.
struct SentinelWatch::Round {
  explicit Round(size_t n) : views(n), done(n, false) {}
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<View> views;
  std::vector<bool> done;
  size_t finished = 0;

  void finish(size_t index, View view) {
    std::lock_guard<std::mutex> lock(mutex);
    views[index] = std::move(view);
    done[index] = true;
    ++finished;
    changed.notify_all();
  }
  // Whether more than half of all sentinels have named one address already.
  bool majority_named() const {
    for (size_t i = 0; i < views.size(); ++i) {
      if (!done[i] || views[i].kind != View::Kind::kNamed) continue;
      size_t votes = 0;
      for (size_t j = 0; j < views.size(); ++j) {
        if (done[j] && views[j].kind == View::Kind::kNamed &&
            views[j].master.host == views[i].master.host &&
            views[j].master.port == views[i].master.port) {
          ++votes;
        }
      }
      if (votes * 2 > views.size()) return true;
    }
    return false;
  }
};

std::vector<SentinelWatch::View> SentinelWatch::ask_all() const {
  const size_t n = config_->seeds.size();
  auto round = std::make_shared<Round>(n);
  // All at once, each on its own thread, so a silent sentinel costs one timeout, not one per
  // sentinel; the round ends as soon as a majority agrees, and an asker still waiting then
  // finishes alone (within its timeouts) on the shared round.
  for (size_t i = 0; i < n; ++i) {
    bool started = false;
    if (n > 1) {
      try {
        std::thread([round, config = config_, i] {
          round->finish(i, ask_one(*config, i));
        }).detach();
        started = true;
      } catch (const std::system_error&) {
      }
    }
    if (!started) round->finish(i, ask_one(*config_, i));  // one sentinel, or no thread left
  }
  std::unique_lock<std::mutex> lock(round->mutex);
  round->changed.wait(lock, [&] { return round->finished == n || round->majority_named(); });
  return round->views;  // those not done yet count as silent
}

SentinelWatch::Answer SentinelWatch::ask(Endpoint* found, std::string* why) {
  const std::vector<View> views = ask_all();
  size_t winner = 0;
  switch (choose(views, &winner, why)) {
    case Choice::kChosen: {
      *found = views[winner].master;
      std::lock_guard<std::mutex> lock(mutex_);
      preferred_ = winner;
      return Answer::Found;
    }
    case Choice::kSplit:
      return Answer::Split;
    case Choice::kNone:
      break;
  }
  bool someone_answered = false;
  size_t refused = 0, reached = 0;
  const View* tls_failed = nullptr;
  for (const View& v : views) {
    if (v.kind == View::Kind::kNoMaster) someone_answered = true;
    if (v.kind == View::Kind::kRefused || v.kind == View::Kind::kFailed) ++reached;
    if (v.kind == View::Kind::kRefused) ++refused;
    if (v.tls_failed) tls_failed = &v;
    if (!v.why.empty()) *why = v.why;
  }
  if (someone_answered) return Answer::Unknown;
  // A refused certificate or handshake is the TLS settings' doing: it is what to report.
  if (tls_failed != nullptr) {
    *why = tls_failed->why;
    return Answer::TlsFailed;
  }
  return refused > 0 && refused == reached ? Answer::Refused : Answer::Unreachable;
}

SentinelWatch::Choice SentinelWatch::choose(const std::vector<View>& views, size_t* winner,
                                            std::string* why) const {
  // The addresses named, each with how many sentinels name it, the highest config epoch one
  // of them reports, and the first of them.
  struct Named {
    const View* view;
    size_t votes;
    int64_t epoch;
    size_t first;
  };
  std::vector<Named> named;
  for (size_t i = 0; i < views.size(); ++i) {
    const View& v = views[i];
    if (v.kind != View::Kind::kNamed) continue;
    auto same = std::find_if(named.begin(), named.end(), [&](const Named& x) {
      return x.view->master.host == v.master.host && x.view->master.port == v.master.port;
    });
    if (same == named.end()) {
      named.push_back({&v, 1, v.epoch, i});
    } else {
      ++same->votes;
      same->epoch = std::max(same->epoch, v.epoch);
    }
  }
  if (named.empty()) return Choice::kNone;
  // A majority of the configured sentinels decides; a stale one alone cannot.
  for (const Named& x : named) {
    if (x.votes * 2 > views.size()) {
      *winner = x.first;
      return Choice::kChosen;
    }
  }
  // Otherwise the newest configuration: a failover raises the epoch, and only a majority of
  // the sentinels can authorize one. One address named, by however few, is no disagreement.
  std::sort(named.begin(), named.end(),
            [](const Named& a, const Named& b) { return a.epoch > b.epoch; });
  if (named.size() == 1 || (named[0].epoch >= 0 && named[0].epoch > named[1].epoch)) {
    *winner = named[0].first;
    return Choice::kChosen;
  }
  std::string list;
  for (const Named& x : named) {
    if (!list.empty()) list += ", ";
    list += x.view->master.describe() + " (" + std::to_string(x.votes) + " of " +
            std::to_string(views.size()) + " sentinels, config epoch " +
            (x.epoch >= 0 ? std::to_string(x.epoch) : std::string("unknown")) + ")";
  }
  *why = "the sentinels disagree on the master " + printable(config_->master_name, 80) +
         " and no address has a majority of the " + std::to_string(views.size()) +
         " configured or the highest config epoch: " + list;
  return Choice::kSplit;
}

bool SentinelWatch::adopt(const Endpoint& found) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation_.load() != 0 && master_.host == found.host && master_.port == found.port) {
    return false;
  }
  const bool moved = generation_.load() != 0;
  master_ = found;
  generation_.fetch_add(1);
  if (moved) {
    if (Stats* stats = config_->telemetry.stats.get()) Stats::add(stats->failovers);
    Events* events = config_->telemetry.events.get();
    if (events != nullptr && events->on()) {
      Event e;
      e.kind = Event::Failover;
      e.detail = found.describe();
      events->emit(std::move(e));
    }
  }
  return true;
}

void SentinelWatch::start() {
  Endpoint found;
  std::string why;
  switch (ask(&found, &why)) {
    case Answer::Found:
      adopt(found);
      break;
    case Answer::Unknown:
      throw Error(kInvalid, "no sentinel knows a master named " +
                                printable(config_->master_name, 80) + ": " + why);
    case Answer::Split:
      throw Error(kConn, why);
    case Answer::Unreachable:
      throw Error(kConn, "no sentinel answered (" + std::to_string(config_->seeds.size()) +
                             " tried); last: " + why);
    case Answer::TlsFailed:
      throw Error(kTls, "no sentinel could be reached over TLS (" +
                            std::to_string(config_->seeds.size()) + " tried): " + why);
    case Answer::Refused:
      throw Error(kAuth,
                  "the sentinels refused the credentials given for them "
                  "(sentinel_user, sentinel_password); last: " +
                      why);
  }
  thread_ = std::thread([this] { run(); });
}

void SentinelWatch::stop() {
  stop_.store(true);
  doorbell_.ring();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void SentinelWatch::run() {
  std::unique_ptr<Connection> sub;
  Backoff backoff(kMinBackoffMs, kMaxBackoffMs);
  Clock::time_point last_ask = Clock::now();
  Clock::time_point next_ask = last_ask + kRefresh;

  while (!stop_.load()) {
    if (!sub) {
      sub = subscribe_to_switches();
      if (!sub) {
        doorbell_.wait(backoff.next());
        continue;
      }
      backoff.reset();
      suspected_.store(true);  // a switch may have gone by while nobody listened
    }

    Clock::time_point now = Clock::now();
    const bool eager = suspected_.load() || now < chase_until_;
    if (now >= next_ask || (eager && now - last_ask >= kMinAskGap)) {
      suspected_.store(false);
      last_ask = now;
      next_ask = now + kRefresh;
      ask_again();
      const Endpoint current = master();
      if (current.host == announced_.host && current.port == announced_.port) chase_until_ = {};
      continue;
    }

    Clock::time_point wake = next_ask;
    if (eager) wake = std::min(wake, last_ask + kMinAskGap);
    if (!wait_for_switches(*sub, wake)) sub.reset();
  }
}

std::unique_ptr<Connection> SentinelWatch::subscribe_to_switches() {
  size_t first;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    first = preferred_;
  }
  std::unique_ptr<Connection> sub;
  for (size_t i = 0; i < config_->seeds.size() && !sub && !stop_.load(); ++i) {
    try {
      sub = std::make_unique<Connection>(config_->seeds[(first + i) % config_->seeds.size()],
                                         config_->connect_timeout_ms, config_->command_timeout_ms);
      sub->send({"SUBSCRIBE", kSwitchChannel});
    } catch (const Error&) {
      sub.reset();
    }
  }
  return sub;
}

void SentinelWatch::ask_again() {
  Endpoint found;
  std::string why;
  if (ask(&found, &why) == Answer::Found && adopt(found)) tell_listeners();
}

void SentinelWatch::tell_listeners() {
  for (auto& fn : listeners_) fn();
}

bool SentinelWatch::wait_for_switches(Connection& sub, Clock::time_point wake) {
  pollfd pfds[2] = {{sub.fd(), POLLIN, 0}, {doorbell_.fd(), POLLIN, 0}};
  ::poll(pfds, 2, static_cast<int>(ms_until(wake)) + 1);
  if (pfds[1].revents & POLLIN) doorbell_.clear();
  if (!(pfds[0].revents & (POLLIN | POLLHUP | POLLERR))) return true;
  std::vector<Reply> replies;
  try {
    replies = sub.read_available();
  } catch (const Error&) {
    return false;
  }
  // A switch announced by one sentinel is news to check, not to follow: that one may be
  // stale or watch another deployment under the same name. The sentinels are asked soon, and
  // again until a majority names the new address or kChaseSwitch passes.
  for (const Reply& r : replies) {
    Endpoint found;
    if (switched_to(r, &found)) {
      announced_ = found;
      chase_until_ = Clock::now() + kChaseSwitch;
      suspected_.store(true);
    }
  }
  return true;
}

bool SentinelWatch::switched_to(const Reply& r, Endpoint* found) const {
  // "message" "+switch-master" "<name> <old-ip> <old-port> <new-ip> <new-port>"
  if (r.type != Reply::Type::Array || r.elements.size() != 3 || r.elements[0].str != "message" ||
      r.elements[1].str != kSwitchChannel) {
    return false;
  }
  std::vector<std::string> words = split_on_spaces(r.elements[2].str);
  int port = 0;
  if (words.size() != 5 || words[0] != config_->master_name || !parse_port(words[4], &port)) {
    return false;
  }
  *found = config_->endpoint;
  found->host = words[3];
  found->port = port;
  found->unix_path.clear();
  return true;
}

}  // namespace rlock::core
