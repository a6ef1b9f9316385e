#include "replica_sync.hpp"

#include <chrono>
#include <utility>

namespace rlock::core {

Reply run_script_synced(Client& client, const Script& script, const Args& keys, const Args& argv,
                        Retry retry, Deadline deadline, int replicas, int64_t* acked) {
  if (replicas <= 0) {
    return eval_script(client.transport(), script, keys, argv, retry, Send::Sha, deadline);
  }
  if (deadline == Deadline{}) deadline = client.transport().deadline_from_now();
  const int64_t timeout = client.config().sync_timeout_ms;
  SyncedReply s = eval_script_synced(client.transport(), script, keys, argv, replicas, timeout,
                                     retry, deadline + std::chrono::milliseconds(timeout));
  *acked = s.acked;
  // Auto mode on a server that refuses WAIT now (a failover to one configured otherwise, an ACL
  // changed): from here on it runs without, as it would have from creation.
  if (s.wait_refused) *acked = client.give_up_wait() ? replicas : kWaitRefused;
  return std::move(s.reply);
}

std::string sync_shortfall(const Client& client, int wanted, int64_t acked, const char* it) {
  const std::string asked = std::to_string(wanted);
  if (acked == kWaitRefused)
    return "Redis now refuses WAIT, which sync_replicas=" + asked + " needs";
  return (acked < 0 ? std::string("WAIT failed: none of ") : std::to_string(acked) + " of ") +
         asked + " replicas confirmed " + it + " within " +
         std::to_string(client.config().sync_timeout_ms) + " ms (sync_replicas)";
}

}  // namespace rlock::core
