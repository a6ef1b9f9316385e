#include "rlock/core/client.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <random>

#include "kinds/kind.hpp"
#include "permit_watchdog.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/parse.hpp"
#include "rlock/core/scripts.hpp"
#include "rlock/core/semaphore.hpp"
#include "rlock/core/tls.hpp"

namespace rlock::core {
namespace {

// The system call, not glibc's getrandom() wrapper (glibc 2.25+), so the released binaries ask
// for no newer glibc than they must.
void fill_random(unsigned char* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    long r = ::syscall(SYS_getrandom, out + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  if (got < n) {  // no getrandom (very old kernel): fall back to random_device
    std::random_device rd;
    for (size_t i = got; i < n; ++i) out[i] = static_cast<unsigned char>(rd());
  }
}

std::string hex(const unsigned char* bytes, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

ClientConfig with_telemetry(ClientConfig config) {
  attach_telemetry(&config);
  return config;
}

void check_duration(const char* field, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max) {
    throw Error(kInvalid, std::string(field) + " must be from " + std::to_string(min) + " to " +
                              std::to_string(max) + " ms, got " + std::to_string(value));
  }
}

}  // namespace

std::string random_uuid() {
  unsigned char b[16];
  fill_random(b, sizeof b);
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  std::string h = hex(b, sizeof b);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> b(bytes);
  fill_random(b.data(), bytes);
  return hex(b.data(), bytes);
}

int64_t current_thread_id() {
  // Not cached in a thread_local: the value would survive fork(), and the child's thread would
  // act as the parent's (whose id Linux may then give to another thread of the child).
  return static_cast<int64_t>(::syscall(SYS_gettid));
}

namespace {

void check_address(const Endpoint& ep, const std::string& what) {
  if (ep.unix_path.empty()) {
    if (ep.host.empty()) throw Error(kInvalid, what + "host must not be empty");
    if (ep.port < 1 || ep.port > 65535)
      throw Error(kInvalid, what + "port must be from 1 to 65535, got " + std::to_string(ep.port));
  } else if (ep.unix_path[0] != '/' || ep.unix_path.size() > 107) {
    throw Error(kInvalid, what + "unix_socket must be an absolute path of at most 107 bytes");
  }
}

}  // namespace

void validate_config(ClientConfig* c) {
  const Endpoint& ep = c->endpoint;
  if (c->topology == Topology::Standalone) {
    check_address(ep, "");
  } else {
    const char* kind = c->topology == Topology::Sentinel ? "sentinel" : "cluster node";
    if (c->seeds.empty()) throw Error(kInvalid, std::string("no ") + kind + " address given");
    for (const Endpoint& seed : c->seeds) check_address(seed, std::string(kind) + " ");
    if (c->topology == Topology::Sentinel && c->master_name.empty())
      throw Error(kInvalid, "the sentinel master name must not be empty");
  }
  if (ep.db < 0) throw Error(kInvalid, "db must not be negative, got " + std::to_string(ep.db));
  if (c->sync_replicas < kSyncNever || c->sync_replicas > 1000) {
    throw Error(kInvalid, "sync_replicas must be 0 (auto), -1 (never) or up to 1000, got " +
                              std::to_string(c->sync_replicas));
  }

  // Timeouts beyond a day are surely mistakes, and keep clock arithmetic far from overflow.
  constexpr int64_t kDayMs = int64_t{24} * 3600 * 1000;
  check_duration("connect_timeout_ms", c->connect_timeout_ms, 1, kDayMs);
  check_duration("command_timeout_ms", c->command_timeout_ms, 1, kDayMs);
  check_duration("watchdog_lease_ms", c->watchdog_lease_ms, 30, kMaxDurationMs);
  check_duration("poll_cap_ms", c->poll_cap_ms, 1, kDayMs);
  check_duration("sync_timeout_ms", c->sync_timeout_ms, 1, kDayMs);
  if (c->pool_size < 1 || c->pool_size > 1024)
    throw Error(kInvalid, "pool_size must be from 1 to 1024, got " + std::to_string(c->pool_size));
  if (c->max_name_len < 1 || c->max_name_len > (size_t{16} << 20))
    throw Error(kInvalid, "max_name_len must be from 1 to 16777216 bytes");
  validate_tls(*c);
}

namespace {

bool sentinels_use_tls(const ClientConfig& c) {
  return c.topology == Topology::Sentinel &&
         (c.tls.sentinels == SentinelTls::On ||
          (c.tls.sentinels == SentinelTls::Auto && c.tls.enabled));
}

}  // namespace

void validate_tls(const ClientConfig& c) {
  const TlsConfig& tls = c.tls;
  if (!tls.enabled && !sentinels_use_tls(c) && tls.any_setting()) {
    throw Error(kInvalid,
                "TLS settings given, but TLS is off: use a rediss:// URL (or tls = 1 in the "
                "options)");
  }
  if (tls.sentinels != SentinelTls::Auto && c.topology != Topology::Sentinel)
    throw Error(kInvalid, "sentinel_tls applies to Sentinel deployments only");
  if (!tls.key_file.empty() && tls.cert_file.empty())
    throw Error(kInvalid, "tls_key_file given without tls_cert_file");
  if (!tls.enabled && !sentinels_use_tls(c)) return;
  if (!c.endpoint.unix_path.empty())
    throw Error(kInvalid, "TLS is for TCP connections; a unix socket is plaintext");
  if (!tls_available())
    throw Error(kUnsupported, "TLS is not supported by this build (RLOCK_TLS=OFF)");
}

// Gives the endpoints reached over TLS the client's TLS context.
void attach_tls(ClientConfig* c) {
  const bool data = c->tls.enabled;
  const bool sentinels = sentinels_use_tls(*c);
  if (!data && !sentinels) return;
  // Loads the files once, for every connection; counts handshakes in the client's stats.
  auto context = TlsContext::create(c->tls, c->telemetry.stats);
  if (data) c->endpoint.tls = context;
  for (Endpoint& seed : c->seeds) {
    if (c->topology == Topology::Sentinel ? sentinels : data) seed.tls = context;
  }
}

std::shared_ptr<Client> Client::create(ClientConfig config) {
  validate_config(&config);
  attach_telemetry(&config);
  attach_tls(&config);
  if (config.topology == Topology::Cluster) return create_cluster(std::move(config));
  std::unique_ptr<MasterSource> master;
  SentinelWatch* watch = nullptr;
  if (config.topology == Topology::Sentinel) {
    auto w = std::make_unique<SentinelWatch>(config);
    watch = w.get();
    master = std::move(w);
  } else {
    master = std::make_unique<FixedMaster>(config.endpoint);
  }
  auto transport = std::make_unique<PipelinedTransport>(config, *master);
  PipelinedTransport* commands = transport.get();
  auto client =
      std::make_shared<Client>(std::move(config), std::move(transport), std::move(master));
  if (watch != nullptr) {
    // The watch is stopped in close(), before the transport and subscriber go.
    Subscriber* subscriber = &client->subscriber_;
    watch->add_listener([commands, subscriber] {
      commands->reconnect();
      subscriber->reconnect();
    });
    watch->start();
  }
  commands->warm_up();
  finish_start(client);
  return client;
}

namespace {

// Forwards to the cluster transport, which the client owns as its transport.
class ClusterNodeSource final : public MasterSource {
 public:
  explicit ClusterNodeSource(ClusterTransport* cluster) : cluster_(cluster) {}
  Endpoint master() const override { return cluster_->master(); }
  uint64_t generation() const override { return cluster_->generation(); }
  void suspect() override { cluster_->suspect(); }
  bool check_role() const override { return false; }

 private:
  ClusterTransport* cluster_;
};

}  // namespace

std::shared_ptr<Client> Client::create_cluster(ClientConfig config) {
  auto transport = std::make_unique<ClusterTransport>(config);
  ClusterTransport* cluster = transport.get();
  cluster->start();
  cluster->warm_up();
  auto source = std::make_unique<ClusterNodeSource>(cluster);
  auto client =
      std::make_shared<Client>(std::move(config), std::move(transport), std::move(source));
  client->cluster_ = cluster;
  finish_start(client);
  return client;
}

namespace {

// This process's command line, arguments joined by spaces, at most 256 bytes.
std::string command_line() {
  std::string text;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char buf[256];
    const size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    text.assign(buf, n);
  }
  while (!text.empty() && text.back() == '\0') text.pop_back();
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

// What the holder record says of this client: host, pid, command, start time.
std::vector<std::string> holder_fields() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const int64_t started = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  return {"host",    host,           "pid",     std::to_string(getpid()),
          "command", command_line(), "started", std::to_string(started)};
}

}  // namespace

std::string holder_record_key(const ClientConfig& config, const std::string& client_id) {
  return config.key_prefix + "rlock_holder:{" + client_id + "}";
}

void Client::finish_start(const std::shared_ptr<Client>& client) {
  const ClientConfig& config = client->config_;
  client->holds_.set_holder_record(holder_record_key(config, client->id_), client->id_ + ":",
                                   holder_fields());
  if (config.sync_replicas > 0 ||
      (config.sync_replicas == kSyncAuto && config.topology != Topology::Standalone)) {
    // Replica sync needs WAIT: fail now, not at every acquire, if it is renamed or refused.
    // Auto mode then runs without it (docs/servers.md: restricted servers).
    Reply reply = client->transport_->run({"WAIT", "0", "1"});
    if (reply.is_error() && config.sync_replicas == kSyncAuto) {
      client->wait_refused_ = true;
    } else if (reply.is_error()) {
      throw Error(reply.error.code == kRedis ? kUnsupported : reply.error.code,
                  "Redis refused WAIT, which replica sync needs; set sync_replicas=never to "
                  "run without it: " +
                      reply.str);
    }
  }
  std::weak_ptr<Client> weak = client;
  client->holds_.set_keep_alive([weak] { return std::shared_ptr<void>(weak.lock()); });
}

Client::Client(ClientConfig config, std::unique_ptr<Transport> transport,
               std::unique_ptr<MasterSource> master)
    : config_(with_telemetry(std::move(config))),
      id_(random_uuid()),
      master_(master ? std::move(master) : std::make_unique<FixedMaster>(config_.endpoint)),
      transport_(std::move(transport)),
      subscriber_(config_, *master_),
      holds_(config_, *transport_),
      permit_watchdog_(std::make_shared<PermitWatchdog>(*this)) {}

Client::~Client() { close(); }

namespace {

// Replicas connected to the master by INFO replication, or by ROLE where INFO is refused (an
// ACL without INFO, as managed services give); `otherwise` when neither answers.
int count_replicas(Transport& transport, int otherwise) {
  Reply r = transport.run({"INFO", "replication"});
  if (!r.is_error()) {
    const std::string field = "connected_slaves:";
    size_t at = r.str.find(field);
    if (at == std::string::npos) return otherwise;
    int64_t connected = 0;  // a field without a number counts none, as before
    parse_leading_int(std::string_view(r.str).substr(at + field.size()), INT32_MAX, &connected);
    return static_cast<int>(connected);
  }
  // ROLE of a master: "master", offset, one entry per connected replica.
  r = transport.run({"ROLE"});
  if (r.type == Reply::Type::Array && r.elements.size() >= 3 && r.elements[0].str == "master" &&
      r.elements[2].type == Reply::Type::Array) {
    return static_cast<int>(r.elements[2].elements.size());
  }
  return otherwise;
}

}  // namespace

int Client::sync_replicas(const std::string& name) {
  if (config_.sync_replicas == kSyncNever) return 0;
  if (config_.sync_replicas != kSyncAuto) return config_.sync_replicas;
  if (config_.topology == Topology::Standalone || wait_refused_) return 0;
  if (cluster_ != nullptr) return std::min(cluster_->replicas_of(key_slot(name)), 1);
  const auto now = std::chrono::steady_clock::now();
  const uint64_t generation = master_->generation();
  {
    std::lock_guard<std::mutex> lock(replicas_mutex_);
    if (replicas_ >= 0 && replicas_generation_ == generation &&
        now - replicas_counted_ < std::chrono::seconds(1)) {
      return std::min(replicas_, 1);
    }
  }
  int count = 1;  // when the master cannot tell, wait for one: never weaker than asked
  try {
    count = count_replicas(*transport_, count);
  } catch (const Error&) {
  }
  std::lock_guard<std::mutex> lock(replicas_mutex_);
  replicas_ = count;
  replicas_generation_ = generation;
  replicas_counted_ = now;
  return std::min(count, 1);
}

Subscriber& Client::subscriber_for(const std::string& channel) {
  if (cluster_ == nullptr || !cluster_->sharded_pubsub()) return subscriber_;
  Endpoint node;
  try {
    node = cluster_->node_of(key_slot(channel));
  } catch (const Error&) {
    // No node serves the slot right now (the cluster is failing over): the classic
    // subscriber hears no SPUBLISH, so waiters retry by their poll until the slot is back.
    return subscriber_;
  }
  const std::string key = node.host + ":" + std::to_string(node.port);
  std::lock_guard<std::mutex> lock(node_subscribers_mutex_);
  if (node_subscribers_stopped_) return subscriber_;  // stopped too: join() says kClosed
  NodeSubscriber& entry = node_subscribers_[key];
  if (!entry.subscriber) {
    entry.node = std::make_unique<FixedMaster>(node);
    entry.subscriber = std::make_unique<Subscriber>(config_, *entry.node, true, &marks_);
  }
  return *entry.subscriber;
}

bool Client::give_up_wait() {
  if (config_.sync_replicas != kSyncAuto) return false;
  wait_refused_ = true;
  return true;
}

void Client::recount_replicas() {
  std::lock_guard<std::mutex> lock(replicas_mutex_);
  replicas_ = -1;
}

uint64_t Client::add_close_hook(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(close_hooks_mutex_);
  if (closed_.load()) return 0;
  const uint64_t id = next_close_hook_++;
  close_hooks_.emplace(id, std::move(fn));
  return id;
}

void Client::remove_close_hook(uint64_t id) {
  std::lock_guard<std::mutex> lock(close_hooks_mutex_);
  close_hooks_.erase(id);
}

void Client::close() {
  std::map<uint64_t, std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(close_hooks_mutex_);
    if (closed_.exchange(true)) return;
    hooks.swap(close_hooks_);
  }
  for (auto& [id, hook] : hooks) {
    try {
      hook();
    } catch (...) {
      // A hook tells its owner; a failure there must not stop the close.
    }
  }
  holds_.stop();
  subscriber_.stop();
  {
    std::lock_guard<std::mutex> lock(node_subscribers_mutex_);
    node_subscribers_stopped_ = true;
    for (auto& [key, entry] : node_subscribers_) entry.subscriber->stop();
  }
  engine_->stop();
  std::unique_lock<std::shared_mutex> no_acquire_in_flight(acquire_gate_);
  // One last round of what calls left unknown (undos, releases), within the command timeout.
  if (holds_.cleanups_pending() > 0) holds_.run_cleanups(transport_->deadline_from_now());
  // Best effort: free what we still hold so others need not wait for the leases.
  bool reachable = true;
  for (const Holds::Active& hold : holds_.active()) {
    // A caller-given owner (LockOptions::owner_id) is not this client's: another process may
    // release or extend it, so its holds stay until their lease ends.
    if (hold.owner.compare(0, id_.size() + 1, id_ + ":") != 0) continue;
    try {
      release_at_close(hold);
      holds_.forget(hold.name, hold.owner);
    } catch (const Error&) {
      reachable = false;
      break;  // unreachable: the rest expire by lease
    }
  }
  if (reachable) reachable = release_permits_at_close();
  // The holder record goes with the client (else it expires a lease later).
  if (reachable && holds_.holder_written()) {
    try {
      (void)transport_->run({"DEL", holds_.holder_key()});
    } catch (const Error&) {
    }
  }
  transport_->close();
  if (auto* watch = dynamic_cast<SentinelWatch*>(master_.get())) watch->stop();
  events().stop();  // after the releases above, whose events are delivered first
}

namespace {

// The kind whose scripts release a hold of this layout.
LockKind kind_of(HoldLayout layout) {
  switch (layout) {
    case HoldLayout::Fair:
      return LockKind::Fair;
    case HoldLayout::Read:
      return LockKind::Read;
    case HoldLayout::Write:
      return LockKind::Write;
    case HoldLayout::Plain:
      break;
  }
  return LockKind::Reentrant;
}

}  // namespace

// Plain semaphores' permits this client still holds go back too: nothing on Redis records who
// holds them, so nobody else could ever give them back. So do the expirable permits the
// watchdog renews, which would otherwise stay taken for a watchdog lease, as a lock would.
// (Expirable permits with a lease of their own keep it: the caller chose how long.)
bool Client::release_permits_at_close() {
  std::map<std::string, int64_t> held;
  {
    std::lock_guard<std::mutex> lock(permits_mutex_);
    held.swap(permits_);
  }
  if (!permit_watchdog_->release_all()) return false;
  const std::string latch_ttl = std::to_string(unlock_latch_ttl_ms(config_));
  for (const auto& [name, permits] : held) {
    const std::string count = std::to_string(permits);
    try {
      eval_script(*transport_, scripts::sem_release,
                  {name, semaphore_channel(name), unlock_latch(name, random_hex(8))},
                  {count, latch_ttl}, Retry::Once);
    } catch (const Error&) {
      return false;  // unreachable: those permits stay taken
    }
  }
  return true;
}

void Client::release_at_close(const Holds::Active& hold) {
  // The kind's own release: a fair one wakes the queue's head, read-write ones fit their layout.
  const std::unique_ptr<const kinds::Kind> kind = kinds::make_kind(kind_of(hold.layout), hold.name);
  const std::string lease =
      std::to_string(std::max<int64_t>(1, holds_.lease(hold.name, hold.owner)));
  const std::string latch_ttl = std::to_string(unlock_latch_ttl_ms(config_));
  // A kind that counts holds on the server releases one per call.
  const bool one_by_one = kind->counts_holds_on_server();
  const std::string holds = one_by_one ? "1" : std::to_string(hold.count);
  for (int64_t i = 0; i < (one_by_one ? hold.count : 1); ++i) {
    const kinds::Call call = kind->release(
        {hold.owner, lease, holds, unlock_latch(hold.name, random_hex(8)), latch_ttl});
    const Reply r = eval_script(*transport_, *call.script, kinds::views(call.keys),
                                kinds::views(call.argv), Retry::No);
    if (r.type != Reply::Type::Integer || r.integer <= 0) break;  // released, or not held
  }
}

int fenced_write(Client& client, const std::string& resource_name, const std::string& value,
                 int64_t token, bool* accepted) {
  if (client.closed()) return fail(kClosed, "fenced write: the client was closed");
  if (resource_name.empty()) return fail(kInvalid, "fenced write: resource key must not be empty");
  // Like every key of the client: behind its key_prefix.
  const std::string resource = client.config().key_prefix + resource_name;
  if (resource.size() > client.config().max_name_len) {
    return fail(
        kInvalid,
        "fenced write: resource key is longer than max_name_len" +
            std::string(client.config().key_prefix.empty() ? "" : " (with the key_prefix)"));
  }
  if (token < 0) return fail(kInvalid, "fenced write: token must not be negative");
  Reply r;
  try {
    // Retrying is safe: a second delivery with the same token and value changes nothing.
    r = eval_script(client.transport(), scripts::fenced_write, {resource, fence_mark(resource)},
                    {std::to_string(token), value}, Retry::Once);
  } catch (const Error& e) {
    return fail(e.code(), "fenced write to " + printable(resource) + ": " + e.message());
  }
  if (r.is_error()) {
    return fail(code_for_redis_error(r.str),
                "fenced write to " + printable(resource) + ": Redis replied: " + r.str);
  }
  if (r.type != Reply::Type::Integer) {
    return fail(kRedis, "fenced write to " + printable(resource) + ": unexpected reply");
  }
  *accepted = r.integer == 1;
  return kOk;
}

int64_t Client::permits_held(const std::string& name) {
  std::lock_guard<std::mutex> lock(permits_mutex_);
  auto it = permits_.find(name);
  return it == permits_.end() ? 0 : it->second;
}

void Client::permits_taken(const std::string& name, int64_t permits) {
  std::lock_guard<std::mutex> lock(permits_mutex_);
  permits_[name] += permits;
}

bool Client::permits_given_back(const std::string& name, int64_t permits) {
  std::lock_guard<std::mutex> lock(permits_mutex_);
  auto it = permits_.find(name);
  if (it == permits_.end() || it->second < permits) return false;
  if ((it->second -= permits) == 0) permits_.erase(it);
  return true;
}

}  // namespace rlock::core
