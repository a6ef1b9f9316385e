// Replica sync (sync_replicas): a script followed by WAIT on the same connection, shared by
// locks, semaphores and latches.
#pragma once

#include <cstdint>
#include <string>

#include "rlock/core/client.hpp"
#include "rlock/core/scripts.hpp"

namespace rlock::core {

// A replica count that says the server refused the WAIT sent after the script.
constexpr int64_t kWaitRefused = -2;

// Runs a script (by `deadline`, Deadline{}: the command timeout from now) and, with replicas
// above 0, `WAIT replicas sync_timeout_ms` after it, given that much more time. *acked gets how
// many replicas confirmed (-1: WAIT failed; kWaitRefused: refused, strict mode). In auto mode a
// refused WAIT is given up for good and counts as confirmed.
Reply run_script_synced(Client& client, const Script& script, const Args& keys, const Args& argv,
                        Retry retry, Deadline deadline, int replicas, int64_t* acked);

// Why a grant is not confirmed, for a kNotSynced message: "Redis now refuses WAIT, which
// sync_replicas=1 needs", or "0 of 1 replicas confirmed <it> within 1000 ms (sync_replicas)".
std::string sync_shortfall(const Client& client, int wanted, int64_t acked, const char* it);

}  // namespace rlock::core
