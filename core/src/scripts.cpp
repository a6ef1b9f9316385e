#include "rlock/core/scripts.hpp"

#include <string>

#include "rlock/core/error.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {

using Clock = std::chrono::steady_clock;

Reply eval_script(Transport& transport, const Script& chosen, const Args& keys, const Args& argv,
                  Retry retry, Send send, Deadline deadline) {
  const Script& script =
      transport.sharded_pubsub() && chosen.sharded != nullptr ? *chosen.sharded : chosen;
  if (deadline == Deadline{}) deadline = transport.deadline_from_now();
  std::string key_count = std::to_string(keys.size());
  Args cmd;
  cmd.reserve(3 + keys.size() + argv.size());
  cmd.push_back(send == Send::Sha ? "EVALSHA" : "EVAL");
  cmd.push_back(send == Send::Sha ? script.sha1 : script.source);
  cmd.push_back(key_count);
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), argv.begin(), argv.end());

  auto with_source = [&] {
    cmd[0] = "EVAL";
    cmd[1] = script.source;
  };
  Reply reply;
  try {
    reply = transport.run(cmd, deadline);
  } catch (const Error& e) {
    if (retry == Retry::No || e.code() != kConn || Clock::now() >= deadline) throw;
    // Once more, with the source: if replies are being lost, a NOSCRIPT answer to the first
    // try may be what was lost, and EVALSHA would fail the same way again.
    with_source();
    return transport.run(cmd, deadline);
  }
  if (reply.error.kind == RedisErrorKind::kNoScript) {
    with_source();
    reply =
        retry == Retry::Once ? transport.run_retrying(cmd, deadline) : transport.run(cmd, deadline);
  }
  return reply;
}

SyncedReply eval_script_synced(Transport& transport, const Script& chosen, const Args& keys,
                               const Args& argv, int replicas, int64_t timeout_ms, Retry retry,
                               Deadline deadline) {
  const Script& script =
      transport.sharded_pubsub() && chosen.sharded != nullptr ? *chosen.sharded : chosen;
  std::string key_count = std::to_string(keys.size());
  Args cmd;
  cmd.reserve(3 + keys.size() + argv.size());
  cmd.push_back("EVALSHA");
  cmd.push_back(script.sha1);
  cmd.push_back(key_count);
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  const std::string count = std::to_string(replicas);
  const std::string timeout = std::to_string(timeout_ms);
  const Args wait{"WAIT", count, timeout};

  auto with_source = [&] {
    cmd[0] = "EVAL";
    cmd[1] = script.source;
  };
  auto send = [&] { return transport.run_batch({cmd, wait}, deadline); };
  std::vector<Reply> replies;
  try {
    replies = send();
  } catch (const Error& e) {
    if (retry == Retry::No || e.code() != kConn || Clock::now() >= deadline) throw;
    with_source();  // as in eval_script: the NOSCRIPT answer may be what was lost
    replies = send();
  }
  if (replies[0].error.kind == RedisErrorKind::kNoScript) {
    with_source();
    try {
      replies = send();
    } catch (const Error& e) {
      if (retry == Retry::No || e.code() != kConn || Clock::now() >= deadline) throw;
      replies = send();
    }
  }
  SyncedReply out;
  out.reply = std::move(replies[0]);
  if (replies[1].type == Reply::Type::Integer) out.acked = replies[1].integer;
  out.wait_refused = replies[1].error.kind == RedisErrorKind::kNoPerm ||
                     replies[1].error.kind == RedisErrorKind::kUnknownCommand;
  return out;
}

}  // namespace rlock::core
