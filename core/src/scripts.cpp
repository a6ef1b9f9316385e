#include "rlock/core/scripts.hpp"

#include <cstddef>
#include <string>
#include <vector>

#include "rlock/core/error.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {

using Clock = std::chrono::steady_clock;

namespace {

// How a try sends the script. Load (SCRIPT LOAD, then EVALSHA in the same batch) reloads it for
// good: Redis 7.4+ and Valkey 8.1+ evict scripts that EVAL loaded, never those SCRIPT LOAD did.
// Eval is for a server that refuses SCRIPT LOAD (ACL, renamed): there EVALSHA answers NOSCRIPT
// again.
enum class Form { Sha, Load, Eval };

// Runs a script, with `tail` (WAIT) after it on the same connection, and returns the script's
// reply followed by the tail's. Tries EVALSHA (or the source at once for Send::Source), then
// Load on NOSCRIPT, then Eval on NOSCRIPT again. Each of these tries is refused before the
// script runs or runs it; only a lost reply leaves that unknown, and then, with Retry::Once and
// time left, one more try goes (with the source: a lost NOSCRIPT answer must not lose the
// script again). One such resend per call at most, as the lock code expects of Retry::Once.
std::vector<Reply> run_script(Transport& transport, const Script& script, const Args& keys,
                              const Args& argv, const std::vector<Args>& tail, Retry retry,
                              Send send, Deadline deadline) {
  const std::string key_count = std::to_string(keys.size());  // Args are views: kept alive here
  Args call;
  call.reserve(3 + keys.size() + argv.size());
  call.emplace_back("EVALSHA");
  call.emplace_back(script.sha1);
  call.emplace_back(key_count);
  call.insert(call.end(), keys.begin(), keys.end());
  call.insert(call.end(), argv.begin(), argv.end());

  Form form = send == Send::Sha ? Form::Sha : Form::Load;
  bool resent = false;
  for (;;) {
    std::vector<Args> batch;
    batch.reserve(2 + tail.size());
    if (form == Form::Load) batch.push_back({"SCRIPT", "LOAD", script.source});
    batch.push_back(call);
    if (form == Form::Eval) {
      batch.back()[0] = "EVAL";
      batch.back()[1] = script.source;
    }
    batch.insert(batch.end(), tail.begin(), tail.end());
    std::vector<Reply> replies;
    try {
      replies = batch.size() == 1 ? std::vector<Reply>{transport.run(batch[0], deadline)}
                                  : transport.run_batch(batch, deadline);
    } catch (const Error& e) {
      if (retry == Retry::No || resent || e.code() != kConn || Clock::now() >= deadline) throw;
      resent = true;
      if (form == Form::Sha) form = Form::Load;
      continue;
    }
    if (form == Form::Load) replies.erase(replies.begin());
    if (replies[0].error.kind == RedisErrorKind::kNoScript && form != Form::Eval) {
      form = form == Form::Sha ? Form::Load : Form::Eval;
      continue;
    }
    return replies;
  }
}

}  // namespace

Reply eval_script(Transport& transport, const Script& chosen, const Args& keys, const Args& argv,
                  Retry retry, Send send, Deadline deadline) {
  const Script& script =
      transport.sharded_pubsub() && chosen.sharded != nullptr ? *chosen.sharded : chosen;
  if (deadline == Deadline{}) deadline = transport.deadline_from_now();
  return std::move(run_script(transport, script, keys, argv, {}, retry, send, deadline).front());
}

SyncedReply eval_script_synced(Transport& transport, const Script& chosen, const Args& keys,
                               const Args& argv, int replicas, int64_t timeout_ms, Retry retry,
                               Deadline deadline) {
  const Script& script =
      transport.sharded_pubsub() && chosen.sharded != nullptr ? *chosen.sharded : chosen;
  const std::string count = std::to_string(replicas);
  const std::string timeout = std::to_string(timeout_ms);
  const std::vector<Args> wait{{"WAIT", count, timeout}};
  std::vector<Reply> replies =
      run_script(transport, script, keys, argv, wait, retry, Send::Sha, deadline);
  SyncedReply out;
  out.reply = std::move(replies[0]);
  if (replies[1].type == Reply::Type::Integer) out.acked = replies[1].integer;
  out.wait_refused = replies[1].error.kind == RedisErrorKind::kNoPerm ||
                     replies[1].error.kind == RedisErrorKind::kUnknownCommand;
  return out;
}

}  // namespace rlock::core
