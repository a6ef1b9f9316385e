// One client per process per Redis deployment: the client id, the command transport, the
// subscriber, the holds and their watchdog. Thread-safe. Lock objects keep it alive through a
// shared_ptr, so a lock may outlive the user's handle to the client.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "rlock/core/cluster.hpp"
#include "rlock/core/config.hpp"
#include "rlock/core/engine.hpp"
#include "rlock/core/holds.hpp"
#include "rlock/core/sentinel.hpp"
#include "rlock/core/stats.hpp"
#include "rlock/core/subscriber.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {

class PermitWatchdog;

class Client {
 public:
  // Validates the config and connects once; throws Error (kInvalid, kConn, kAuth, ...).
  static std::shared_ptr<Client> create(ClientConfig config);
  // A client over a given transport (no connection check), whose subscriber follows `master`
  // (by default the configured endpoint). Tests give it a fake transport.
  Client(ClientConfig config, std::unique_ptr<Transport> transport,
         std::unique_ptr<MasterSource> master = nullptr);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientConfig& config() const { return config_; }
  const std::string& id() const { return id_; }
  Transport& transport() { return *transport_; }
  Subscriber& subscriber() { return subscriber_; }
  // The subscriber a lock's wake-up channel is heard on: the one subscriber, or with sharded
  // pub/sub the one of the node serving the channel's slot.
  Subscriber& subscriber_for(const std::string& channel);
  Holds& holds() { return holds_; }
  // The waiting engine: every waiting acquire and asynchronous call of this client.
  Engine& engine() { return *engine_; }
  const std::shared_ptr<Engine>& engine_ptr() { return engine_; }
  // What the client counts (null when made with keep_stats off) and its event hook.
  Stats* stats() const { return config_.telemetry.stats.get(); }
  Events& events() const { return *config_.telemetry.events; }

  // Replicas to WAIT for after an acquire or release of the lock `name` now (0 = none):
  // sync_replicas, or with auto, one on Sentinel and Cluster deployments while the master
  // (of the name's slot) has a replica (Sentinel: INFO replication, asked at most once a
  // second; Cluster: the slot map), none otherwise.
  int sync_replicas(const std::string& name);
  // The server refused WAIT: true in auto mode, which then stops sending it (docs/servers.md);
  // false with an explicit count, which stays strict.
  bool give_up_wait();
  // Auto mode: the next sync_replicas() asks the master again (a replica may have gone).
  void recount_replicas();

  std::string owner(int64_t thread_id) const { return id_ + ":" + std::to_string(thread_id); }

  // Permits of plain semaphores taken through this client and not yet given back, by name:
  // a release may give back no more than these (Semaphore::release).
  int64_t permits_held(const std::string& name);
  void permits_taken(const std::string& name, int64_t permits);
  // Takes `permits` off the count when that many are held; false (nothing changes) otherwise.
  bool permits_given_back(const std::string& name, int64_t permits);
  // Renews the expirable permits taken with the watchdog's lease, whichever handle took them;
  // close() gives back those it still renews.
  PermitWatchdog& permit_watchdog() { return *permit_watchdog_; }

  // Key events: bits of these, for watch_key_events.
  static constexpr int kKeyExpired = 1;
  static constexpr int kKeyDeleted = 2;
  // Emits an event (Event::KeyExpired, Event::KeyDeleted; its name the key) for
  // every key of the client's names (all keys without a prefix) that expires or is deleted on
  // the master, from Redis keyspace notifications (Redisson's ExpiredObjectListener and
  // DeletedObjectListener); 0 stops. The server must publish them (notify-keyspace-events
  // with E and x, g): checked when CONFIG GET is allowed. Throws Error (kInvalid, kUnsupported
  // on a Cluster deployment or a server that does not publish them, kClosed).
  void watch_key_events(int kinds);

  // Stops renewals, ends every waiting acquire with kClosed (asynchronous ones have had their
  // completion when it returns, unless called from one), releases what this client still holds
  // (locks, permits of plain semaphores, and expirable permits its watchdog renews)
  // (best effort, bounded by one command timeout per call and giving up at the first
  // unreachable answer; a read-write lock takes one call per hold), and closes connections.
  // Idempotent.
  void close();
  bool closed() const { return closed_.load(); }
  // Runs `fn` first thing in close(), on the closing thread, before anything is released (an
  // election tells its leader then). The id is for remove_close_hook; 0 when already closed
  // (`fn` is not kept).
  uint64_t add_close_hook(std::function<void()> fn);
  void remove_close_hook(uint64_t id);

  // Held shared by each acquire round trip; close() takes it exclusively before releasing, so a
  // grant that lands while the client closes is recorded first and released with the rest.
  std::shared_mutex& acquire_gate() { return acquire_gate_; }

 private:
  static std::shared_ptr<Client> create_cluster(ClientConfig config);
  // The last steps of create(): the WAIT check of replica sync, the watchdog's keep-alive.
  static void finish_start(const std::shared_ptr<Client>& client);
  // Releases every hold of one owner with its kind's script; throws Error when unreachable.
  void release_at_close(const Holds::Active& hold);
  // Gives back the permits of plain semaphores still held (permits_) and the watchdog's
  // expirable permits, best effort; false when Redis did not answer.
  bool release_permits_at_close();

  const ClientConfig config_;
  const std::string id_;
  std::unique_ptr<MasterSource> master_;  // before the transport and subscriber, which use it
  std::unique_ptr<Transport> transport_;
  ClusterTransport* cluster_ = nullptr;  // transport_, on a Cluster deployment
  Subscriber subscriber_;
  Holds holds_;
  const std::shared_ptr<Engine> engine_ = std::make_shared<Engine>();
  std::atomic<bool> closed_{false};
  std::mutex close_hooks_mutex_;
  std::map<uint64_t, std::function<void()>> close_hooks_;
  uint64_t next_close_hook_ = 1;
  std::shared_mutex acquire_gate_;
  // Sharded pub/sub: one subscriber per node ("host:port"), with the node as its master.
  struct NodeSubscriber {
    std::unique_ptr<FixedMaster> node;
    std::unique_ptr<Subscriber> subscriber;
  };
  std::mutex node_subscribers_mutex_;
  std::map<std::string, NodeSubscriber> node_subscribers_;
  bool node_subscribers_stopped_ = false;
  std::atomic<uint64_t> marks_{0};  // shared by the node subscribers
  // watch_key_events: the subscriptions to the key-event channels (after subscriber_, which
  // outlives them).
  struct KeyWatch;
  std::mutex key_watch_mutex_;
  std::shared_ptr<KeyWatch> key_watch_;
  std::mutex permits_mutex_;
  std::map<std::string, int64_t> permits_;
  std::shared_ptr<PermitWatchdog> permit_watchdog_;
  std::atomic<bool> wait_refused_{false};  // auto mode never WAITs once set
  std::mutex replicas_mutex_;
  int replicas_ = -1;                 // connected to the master as last counted; -1 = count again
  uint64_t replicas_generation_ = 0;  // of the master they were counted on
  std::chrono::steady_clock::time_point replicas_counted_;
};

// Writes `value` to the string key `resource` only if `token` is at least the highest fencing
// token seen for it (kept in "rlock_fence:{resource}"). *accepted tells which happened. Returns
// kOk or a negative Code with a message for the calling thread, as Lock's operations do.
int fenced_write(Client& client, const std::string& resource, const std::string& value,
                 int64_t token, bool* accepted);

// The key of a client's holder record (Holds::set_holder_record): "rlock_holder:{<client id>}",
// after the key_prefix.
std::string holder_record_key(const ClientConfig& config, const std::string& client_id);

// A random version-4 UUID, lower-case with dashes.
std::string random_uuid();
// `bytes` random bytes as lower-case hex.
std::string random_hex(size_t bytes);
// The calling OS thread's id.
int64_t current_thread_id();
// Checks a config's values, filling defaults for zeros; throws Error(kInvalid) naming the field.
void validate_config(ClientConfig* config);
// The TLS part of it: settings that need TLS on, files that go together (kInvalid), a build
// without TLS (kUnsupported). Files are read later, by attach_tls.
void validate_tls(const ClientConfig& config);
// Loads the TLS files (kInvalid naming one that fails) and gives every endpoint reached over TLS
// the context.
void attach_tls(ClientConfig* config);

}  // namespace rlock::core
