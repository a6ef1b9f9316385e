#include "rlock/core/cluster.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <set>
#include <thread>

#include "rlock/core/connection.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/parse.hpp"
#include "rlock/core/stats.hpp"

namespace rlock::core {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxRedirects = 5;
constexpr auto kMinRefreshGap = std::chrono::milliseconds(100);

uint16_t crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (unsigned char b : bytes) {
    crc = static_cast<uint16_t>(crc ^ (b << 8));
    for (int i = 0; i < 8; ++i) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc;
}

bool equals_upper(std::string_view word, const char* upper) {
  size_t i = 0;
  for (; i < word.size() && upper[i] != '\0'; ++i) {
    if (std::toupper(static_cast<unsigned char>(word[i])) != upper[i]) return false;
  }
  return i == word.size() && upper[i] == '\0';
}

bool parse_number(std::string_view text, long max, long* out) {
  int64_t value = 0;
  if (parse_int(text, 0, max, &value) != ParseStatus::kOk) return false;
  *out = static_cast<long>(value);
  return true;
}

std::string node_key(const std::string& host, int port) {
  return host + ":" + std::to_string(port);
}

}  // namespace

int key_slot(std::string_view key) {
  size_t open = key.find('{');
  if (open != std::string_view::npos) {
    size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) & (kClusterSlots - 1);
}

int command_slot(const Args& args) {
  if (args.empty()) return -1;
  const std::string_view verb = args[0];
  if (equals_upper(verb, "EVAL") || equals_upper(verb, "EVALSHA")) {
    long keys = 0;
    if (args.size() < 4 || !parse_number(args[2], 1000000, &keys) || keys == 0) return -1;
    return key_slot(args[3]);
  }
  if (equals_upper(verb, "PING") || equals_upper(verb, "INFO") || equals_upper(verb, "WAIT") ||
      equals_upper(verb, "PUBLISH") || equals_upper(verb, "CLUSTER") ||
      equals_upper(verb, "SCRIPT") || equals_upper(verb, "ASKING")) {
    return -1;
  }
  return args.size() > 1 ? key_slot(args[1]) : -1;
}

ClusterTransport::ClusterTransport(const ClientConfig& config) : config_(config) {}

ClusterTransport::~ClusterTransport() { close(); }

std::shared_ptr<ClusterTransport::Node> ClusterTransport::node_at(const std::string& host,
                                                                  int port) {
  const std::string key = node_key(host, port);
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = nodes_.find(key);
    if (it != nodes_.end()) return it->second;
  }
  ClientConfig node_config = config_;
  node_config.topology = Topology::Standalone;
  node_config.endpoint.host = host;
  node_config.endpoint.port = port;
  node_config.endpoint.unix_path.clear();
  node_config.endpoint.db = 0;
  auto node = std::make_shared<Node>();
  node->endpoint = node_config.endpoint;
  node->transport = std::make_unique<PipelinedTransport>(node_config);
  std::unique_lock<std::shared_mutex> lock(mutex_);
  auto [it, inserted] = nodes_.emplace(key, node);
  return it->second;
}

bool ClusterTransport::apply_slots(const Reply& slots, const Endpoint& asked, std::string* why) {
  if (slots.type != Reply::Type::Array || slots.elements.empty()) {
    *why = "CLUSTER SLOTS from " + asked.describe() + " lists no slots";
    return false;
  }
  struct Range {
    int first, last, replicas;
    std::string host;
    int port;
  };
  std::vector<Range> ranges;
  for (const Reply& entry : slots.elements) {
    // [first, last, [host, port, id, ...], replica...]
    if (entry.type != Reply::Type::Array || entry.elements.size() < 3) continue;
    const Reply& master = entry.elements[2];
    if (entry.elements[0].type != Reply::Type::Integer ||
        entry.elements[1].type != Reply::Type::Integer || master.type != Reply::Type::Array ||
        master.elements.size() < 2 || master.elements[1].type != Reply::Type::Integer) {
      continue;
    }
    Range r;
    r.first = static_cast<int>(entry.elements[0].integer);
    r.last = static_cast<int>(entry.elements[1].integer);
    r.host = master.elements[0].str.empty() ? asked.host : master.elements[0].str;
    r.port = static_cast<int>(master.elements[1].integer);
    r.replicas = static_cast<int>(entry.elements.size()) - 3;
    if (r.first < 0 || r.last >= kClusterSlots || r.first > r.last || r.port < 1 ||
        r.port > 65535 || r.host == "?") {
      continue;
    }
    ranges.push_back(std::move(r));
  }
  if (ranges.empty()) {
    *why = "CLUSTER SLOTS from " + asked.describe() + " had no usable entry";
    return false;
  }
  std::vector<std::pair<Range*, std::shared_ptr<Node>>> resolved;
  resolved.reserve(ranges.size());
  for (Range& r : ranges) resolved.emplace_back(&r, node_at(r.host, r.port));
  std::unique_lock<std::shared_mutex> lock(mutex_);
  slots_.fill(nullptr);
  for (auto& [range, node] : resolved) {
    node->replicas = range->replicas;
    for (int s = range->first; s <= range->last; ++s) slots_[s] = node;
  }
  return true;
}

bool ClusterTransport::refresh(bool force, RefreshFailure* failure) {
  std::unique_lock<std::mutex> guard(refresh_mutex_, std::try_to_lock);
  if (!guard.owns_lock()) {
    if (!force) return true;  // one is under way
    guard.lock();
  }
  const auto now = Clock::now();
  if (!force && now - last_refresh_ < kMinRefreshGap) return true;
  last_refresh_ = now;
  // The nodes serving slots first, then the others known, then the seeds.
  std::vector<Endpoint> candidates;
  std::set<std::string> seen;
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    for (const auto& node : slots_) {
      if (node && seen.insert(node_key(node->endpoint.host, node->endpoint.port)).second) {
        candidates.push_back(node->endpoint);
      }
    }
    for (const auto& [key, node] : nodes_) {
      if (seen.insert(key).second) candidates.push_back(node->endpoint);
    }
  }
  for (const Endpoint& seed : config_.seeds) {
    if (seen.insert(node_key(seed.host, seed.port)).second) candidates.push_back(seed);
  }
  RefreshFailure last;
  std::string tls_why;
  for (const Endpoint& ep : candidates) {
    last.not_a_cluster = false;
    try {
      Connection conn(ep, config_.connect_timeout_ms, config_.command_timeout_ms);
      Reply r = conn.command({"CLUSTER", "SLOTS"});
      if (r.is_error()) {
        last.why = "Redis at " + ep.describe() + " answered CLUSTER SLOTS with: " + r.str;
        last.not_a_cluster = r.error.kind == RedisErrorKind::kClusterDisabled;
        continue;
      }
      if (apply_slots(r, ep, &last.why)) return true;
    } catch (const Error& e) {
      last.why = e.message();
      if (e.code() == kTls) tls_why = last.why;
    }
  }
  // A refused certificate or handshake is the TLS settings' doing, not a node down: say so.
  if (!tls_why.empty()) {
    last.why = std::move(tls_why);
    last.tls = true;
  }
  if (failure != nullptr) *failure = std::move(last);
  return false;
}

void ClusterTransport::start() {
  RefreshFailure failure;
  if (refresh(true, &failure)) {
    if (config_.pubsub == PubSubMode::Classic) return;
    // Sharded pub/sub came with Redis 7.
    std::shared_ptr<Node> node = route(-1);
    Reply info = node->transport->run({"INFO", "server"});
    const std::string field = "redis_version:";
    size_t at = info.is_error() ? std::string::npos : info.str.find(field);
    int64_t major = 0;  // 0: unknown
    if (at != std::string::npos) {
      parse_leading_int(std::string_view(info.str).substr(at + field.size()), 1000000, &major);
    } else if (info.is_error()) {
      // INFO refused (an ACL without it): scripts see the version from Redis 7 on.
      Reply v = node->transport->run({"EVAL", "return redis.REDIS_VERSION_NUM or 0", "0"});
      if (v.type == Reply::Type::Integer) major = v.integer / 65536;
    }
    if (config_.pubsub == PubSubMode::Sharded && major < 7) {
      throw Error(kUnsupported, "pubsub=sharded needs Redis 7 or newer; " +
                                    node->endpoint.describe() + " runs version " +
                                    (major > 0 ? std::to_string(major) : std::string("unknown")));
    }
    sharded_ = major >= 7;
    return;
  }
  if (failure.tls) {
    throw Error(kTls, "no cluster node could be reached over TLS (" +
                          std::to_string(config_.seeds.size()) + " seeds tried): " + failure.why);
  }
  if (failure.not_a_cluster) {
    throw Error(kInvalid,
                "redis-cluster:// names a server that is not a cluster node: " + failure.why);
  }
  throw Error(kConn, "no cluster node answered (" + std::to_string(config_.seeds.size()) +
                         " seeds tried); last: " + failure.why);
}

void ClusterTransport::warm_up() {
  std::shared_ptr<Node> node = route(-1);
  node->transport->warm_up(sharded_);
}

std::shared_ptr<ClusterTransport::Node> ClusterTransport::route(int slot) {
  for (int tries = 0; tries < 2; ++tries) {
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      if (slot >= 0 && slots_[slot]) return slots_[slot];
      if (slot < 0) {
        for (const auto& node : slots_) {
          if (node) return node;
        }
      }
    }
    if (tries == 0) refresh(true);
  }
  throw Error(kConn, slot >= 0 ? "no cluster node serves slot " + std::to_string(slot)
                               : std::string("no cluster node is known"));
}

void ClusterTransport::note_redirect(const Redirect& to) {
  if (Stats* stats = config_.telemetry.stats.get()) Stats::add(stats->cluster_redirects);
  Events* events = config_.telemetry.events.get();
  if (events == nullptr || !events->on()) return;
  Event e;
  e.kind = Event::Redirect;
  e.detail = std::string(to.kind == Redirect::Kind::kAsk ? "ASK " : "MOVED ") +
             std::to_string(to.slot) + " " + to.host + ":" + std::to_string(to.port);
  events->emit(std::move(e));
}

std::vector<Reply> ClusterTransport::send(const std::vector<Args>& commands, size_t lead, int slot,
                                          Deadline deadline) {
  if (closed_.load()) throw Error(kClosed, "the rlock client was closed");
  std::shared_ptr<Node> node = route(slot);
  bool asking = false;
  int64_t pause_ms = 5;
  for (int hop = 0;; ++hop) {
    std::vector<Reply> replies;
    try {
      if (asking) {
        // ASKING holds for the next command only: it goes right before the keyed one.
        std::vector<Args> with_asking = commands;
        with_asking.insert(with_asking.begin() + static_cast<std::ptrdiff_t>(lead), Args{"ASKING"});
        replies = node->transport->run_batch(with_asking, deadline);
        replies.erase(replies.begin() + static_cast<std::ptrdiff_t>(lead));
      } else if (commands.size() == 1) {
        replies.push_back(node->transport->run(commands[0], deadline));
      } else {
        replies = node->transport->run_batch(commands, deadline);
      }
    } catch (const Error& e) {
      if (e.code() == kConn) refresh(false);  // the node may have failed over
      throw;
    }
    const Reply& first = replies[lead];
    // TRYAGAIN: the slot is being migrated and the script's keys are split between the two
    // nodes for a moment (its channel key never exists, so every script on a migrating lock
    // sees this until the slot is handed over). Wait a little and send it again.
    if (first.error.kind == RedisErrorKind::kTryAgain &&
        Clock::now() + std::chrono::milliseconds(pause_ms) < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      pause_ms = std::min<int64_t>(pause_ms * 2, 100);
      node = route(slot);
      asking = false;
      hop = 0;
      continue;
    }
    const Redirect& to = first.error.redirect;
    if (to.kind == Redirect::Kind::kNone || hop >= kMaxRedirects || Clock::now() >= deadline) {
      if (first.error.kind == RedisErrorKind::kClusterDown) refresh(false);
      return replies;
    }
    note_redirect(to);
    node = node_at(to.host, to.port);
    asking = to.kind == Redirect::Kind::kAsk;
    if (!asking) {
      {
        std::unique_lock<std::shared_mutex> lock(mutex_);
        slots_[to.slot] = node;
      }
      refresh(false);  // a moved slot rarely moves alone
    }
  }
}

Reply ClusterTransport::run(const Args& args, Deadline deadline) {
  return std::move(send({args}, 0, command_slot(args), deadline).front());
}

std::vector<Reply> ClusterTransport::run_batch(const std::vector<Args>& commands,
                                               Deadline deadline) {
  if (commands.empty()) return {};
  // The first keyed command routes the batch (a SCRIPT LOAD before an EVALSHA has no key and
  // must reach the EVALSHA's node), and its reply tells of redirects.
  for (size_t i = 0; i < commands.size(); ++i) {
    const int slot = command_slot(commands[i]);
    if (slot >= 0) return send(commands, i, slot, deadline);
  }
  return send(commands, 0, -1, deadline);
}

Deadline ClusterTransport::deadline_from_now() const {
  return Clock::now() + std::chrono::milliseconds(config_.command_timeout_ms);
}

void ClusterTransport::close() {
  if (closed_.exchange(true)) return;
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (auto& [key, node] : nodes_) node->transport->close();
}

int ClusterTransport::replicas_of(int slot) {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  return slots_[slot] ? slots_[slot]->replicas : 0;
}

Endpoint ClusterTransport::node_of(int slot) { return route(slot)->endpoint; }

std::vector<std::string> ClusterTransport::master_addresses() {
  if (route(-1) == nullptr) return {};  // learns a map first if there is none
  std::set<std::string> addresses;
  std::shared_lock<std::shared_mutex> lock(mutex_);
  for (const auto& node : slots_) {
    if (node) addresses.insert(node_key(node->endpoint.host, node->endpoint.port));
  }
  return {addresses.begin(), addresses.end()};
}

std::vector<Reply> ClusterTransport::run_batch_at(const std::string& address,
                                                  const std::vector<Args>& commands,
                                                  Deadline deadline) {
  if (closed_.load()) throw Error(kClosed, "the rlock client was closed");
  if (commands.empty()) return {};
  std::shared_ptr<Node> node;
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = nodes_.find(address);
    if (it != nodes_.end()) node = it->second;
  }
  if (!node) throw Error(kConn, "the cluster node " + address + " is no longer known");
  try {
    return node->transport->run_batch(commands, deadline);
  } catch (const Error& e) {
    if (e.code() == kConn) refresh(false);  // the node may have failed over
    throw;
  }
}

Endpoint ClusterTransport::master() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  std::vector<const Node*> masters;
  for (const auto& node : slots_) {
    if (node && std::find(masters.begin(), masters.end(), node.get()) == masters.end()) {
      masters.push_back(node.get());
    }
  }
  if (masters.empty()) return config_.seeds.front();
  return masters[subscriber_pick_.load() % masters.size()]->endpoint;
}

void ClusterTransport::suspect() {
  subscriber_pick_.fetch_add(1);
  subscriber_generation_.fetch_add(1);
  refresh(false);
}

}  // namespace rlock::core
