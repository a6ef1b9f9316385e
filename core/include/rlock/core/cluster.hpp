// Redis Cluster: which node owns a key's slot, and a transport that sends each command there.
//
// ClusterTransport learns the slot map with CLUSTER SLOTS (from the seeds, later from any node
// it knows) and keeps one pipelined transport per master node. A command goes to the node of
// its first key's slot (EVAL/EVALSHA: the first of its keys; keyless commands: any node). A
// MOVED reply moves that slot in the map, asks for a fresh map, and sends the command again
// to the node named; an ASK reply sends it once more to the node named, after ASKING, without
// changing the map. A connection failure also asks for a fresh map (a failover may be under
// way); the caller sees the failure and retries as it would on one server.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rlock/core/config.hpp"
#include "rlock/core/sentinel.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {

constexpr int kClusterSlots = 16384;

// The cluster slot of a key: CRC16 (XMODEM) of its hash tag if it has a non-empty one, else of
// the whole key, modulo 16384.
int key_slot(std::string_view key);

// The slot a command addresses, or -1 for a keyless one.
int command_slot(const Args& args);

class ClusterTransport final : public Transport, public MasterSource {
 public:
  explicit ClusterTransport(const ClientConfig& config);
  ~ClusterTransport() override;

  // Learns the slot map and settles the pub/sub mode. Throws Error(kConn) when no seed
  // answers, Error(kInvalid) when a seed is not a cluster node, Error(kUnsupported) when
  // sharded pub/sub is asked of a server older than Redis 7.
  void start();
  // PING and a no-op script on a node, as PipelinedTransport::warm_up does.
  void warm_up();

  using Transport::run;
  Reply run(const Args& args, Deadline deadline) override;
  std::vector<Reply> run_batch(const std::vector<Args>& commands, Deadline deadline) override;
  Deadline deadline_from_now() const override;
  void close() override;
  bool sharded_pubsub() const override { return sharded_; }

  // Replicas the master of `slot` had, per the last slot map.
  int replicas_of(int slot);
  // The master of `slot` now (for messages and tests).
  Endpoint node_of(int slot);
  // The masters of the slot map now, as "host:port", sorted (a listing walks them in order).
  std::vector<std::string> master_addresses();
  // Runs `commands` on the node at `address` ("host:port") as they are: for commands that
  // address the node itself (SCAN), so no routing and no redirect is followed.
  std::vector<Reply> run_batch_at(const std::string& address, const std::vector<Args>& commands,
                                  Deadline deadline);

  // MasterSource for the subscriber (classic pub/sub reaches every node): a node of the
  // cluster, another one after a failure.
  Endpoint master() const override;
  uint64_t generation() const override { return subscriber_generation_.load(); }
  void suspect() override;
  bool check_role() const override { return false; }

 private:
  struct Node {
    Endpoint endpoint;
    std::unique_ptr<PipelinedTransport> transport;
    int replicas = 0;
  };
  // Why no node gave a slot map: the last one's answer (a TLS failure's if there was one),
  // whether it said it is no cluster node, and whether a TLS handshake failed.
  struct RefreshFailure {
    std::string why;
    bool not_a_cluster = false;
    bool tls = false;
  };

  std::shared_ptr<Node> node_at(const std::string& host, int port);
  std::shared_ptr<Node> route(int slot);
  // Asks for a fresh slot map: at once when `force`, else at most every 100 ms. Returns false
  // when no node answered.
  bool refresh(bool force, RefreshFailure* failure = nullptr);
  bool apply_slots(const Reply& slots, const Endpoint& asked, std::string* why);
  // Sends `commands` to the master of `slot`, following the redirects that the reply to
  // commands[lead] (the keyed one) gives.
  std::vector<Reply> send(const std::vector<Args>& commands, size_t lead, int slot,
                          Deadline deadline);
  // A MOVED or ASK answer is being followed: counted, and told as an event.
  void note_redirect(const Redirect& to);

  const ClientConfig config_;
  mutable std::shared_mutex mutex_;  // guards slots_ and nodes_
  std::array<std::shared_ptr<Node>, kClusterSlots> slots_;
  std::map<std::string, std::shared_ptr<Node>> nodes_;  // by "host:port"
  std::mutex refresh_mutex_;
  std::chrono::steady_clock::time_point last_refresh_{};
  std::atomic<uint64_t> subscriber_generation_{1};
  std::atomic<size_t> subscriber_pick_{0};
  std::atomic<bool> closed_{false};
  bool sharded_ = false;  // decided by start()
};

}  // namespace rlock::core
