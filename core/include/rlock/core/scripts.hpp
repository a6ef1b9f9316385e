// The Lua scripts (core/scripts/*.lua, compiled in) and how they are run: EVALSHA first, and on
// NOSCRIPT (server restarted, failed over, SCRIPT FLUSH) SCRIPT LOAD and EVALSHA again in one
// round trip; EVAL with the source where SCRIPT LOAD is refused.
#pragma once

#include <string_view>

#include "rlock/core/connection.hpp"
#include "rlock/core/reply.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {

class Transport;

struct Script {
  std::string_view name;
  std::string_view source;
  std::string_view sha1;
  // The same script publishing with SPUBLISH, for sharded pub/sub; null if it publishes nothing.
  const Script* sharded;
};

namespace scripts {
extern const Script acquire;
extern const Script fenced_write;
extern const Script fair_acquire;
extern const Script fair_release;
extern const Script fair_leave;
extern const Script fair_force_unlock;
extern const Script fair_undo_acquire;
extern const Script rw_read_acquire;
extern const Script rw_read_release;
extern const Script rw_read_renew;
extern const Script rw_write_acquire;
extern const Script rw_write_release;
extern const Script rw_force_unlock;
extern const Script rw_read_undo_acquire;
extern const Script rw_write_undo_acquire;
extern const Script release;
extern const Script renew;
extern const Script extend;
extern const Script extend_by;
extern const Script force_unlock;
extern const Script status;
extern const Script undo_acquire;
// Semaphores and count-down latches (Redisson RSemaphore, RPermitExpirableSemaphore,
// RCountDownLatch): docs/protocol.md.
extern const Script sem_try_set;
extern const Script sem_try_acquire;
extern const Script sem_release;
extern const Script sem_add;
extern const Script sem_drain;
extern const Script sem_undo_acquire;
extern const Script psem_acquire;
extern const Script psem_release;
extern const Script psem_update_lease;
extern const Script psem_available;
extern const Script psem_set_permits;
extern const Script psem_lease_time;
extern const Script psem_undo_acquire;
extern const Script latch_try_set;
extern const Script latch_count_down;
extern const Script latch_delete;
}  // namespace scripts

enum class Retry { No, Once };

// How a script is sent: by its SHA1 (EVALSHA, then the source on NOSCRIPT), or with its source
// at once (SCRIPT LOAD and EVALSHA, or EVAL), for a script that must work even when no reply
// comes back to say NOSCRIPT.
enum class Send { Sha, Source };

// Runs a script. I/O failures throw Error(kConn); Redis error replies are returned as replies.
// Every try waits for its reply until `deadline` (by default the command timeout from now).
Reply eval_script(Transport& transport, const Script& script, const Args& keys, const Args& argv,
                  Retry retry, Send send = Send::Sha, Deadline deadline = Deadline{});

// A script followed by WAIT on the same connection (replica sync). `acked` is how many
// replicas confirmed the script's writes within `timeout_ms` (WAIT's answer), or -1 when WAIT
// answered with an error. `deadline` must leave room for the WAIT.
struct SyncedReply {
  Reply reply;
  int64_t acked = -1;
  bool wait_refused = false;  // WAIT answered NOPERM or unknown command (renamed away)
};
SyncedReply eval_script_synced(Transport& transport, const Script& script, const Args& keys,
                               const Args& argv, int replicas, int64_t timeout_ms, Retry retry,
                               Deadline deadline);

}  // namespace rlock::core
