#include "rlock/core/scripts.hpp"

#include <cstddef>
#include <iterator>
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
// reply; the tail's replies go to *tail_replies. Tries EVALSHA (or the source at once for
// Send::Source), then Load on NOSCRIPT, then Eval on NOSCRIPT again. Each of these tries is
// refused before the script runs or runs it; only a lost reply leaves that unknown, and then,
// with Retry::Once and time left, one more try goes (with the source: a lost NOSCRIPT answer
// must not lose the script again). One such resend per call at most, as the lock code expects
// of Retry::Once.
Reply run_script(Transport& transport, const Script& script, const Args& keys, const Args& argv,
                 const std::vector<Args>& tail, std::vector<Reply>* tail_replies, Retry retry,
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
    Reply reply;
    try {
      if (form == Form::Sha && tail.empty()) {
        reply = transport.run(call, deadline);  // the common case: no batch to build
      } else {
        std::vector<Args> batch;
        batch.reserve(2 + tail.size());
        if (form == Form::Load) batch.push_back({"SCRIPT", "LOAD", script.source});
        batch.push_back(call);
        if (form == Form::Eval) {
          batch.back()[0] = "EVAL";
          batch.back()[1] = script.source;
        }
        batch.insert(batch.end(), tail.begin(), tail.end());
        if (batch.size() == 1) {
          reply = transport.run(batch[0], deadline);
        } else {
          std::vector<Reply> replies = transport.run_batch(batch, deadline);
          const auto first = replies.begin() + (form == Form::Load ? 1 : 0);
          reply = std::move(*first);
          if (tail_replies != nullptr) {
            tail_replies->assign(std::make_move_iterator(first + 1),
                                 std::make_move_iterator(replies.end()));
          }
        }
      }
    } catch (const Error& e) {
      if (retry == Retry::No || resent || e.code() != kConn || Clock::now() >= deadline) throw;
      resent = true;
      if (form == Form::Sha) form = Form::Load;
      continue;
    }
    if (reply.error.kind == RedisErrorKind::kNoScript && form != Form::Eval) {
      form = form == Form::Sha ? Form::Load : Form::Eval;
      continue;
    }
    return reply;
  }
}

}  // namespace

Reply eval_script(Transport& transport, const Script& chosen, const Args& keys, const Args& argv,
                  Retry retry, Send send, Deadline deadline) {
  const Script& script =
      transport.sharded_pubsub() && chosen.sharded != nullptr ? *chosen.sharded : chosen;
  if (deadline == Deadline{}) deadline = transport.deadline_from_now();
  return run_script(transport, script, keys, argv, {}, nullptr, retry, send, deadline);
}

SyncedReply eval_script_synced(Transport& transport, const Script& chosen, const Args& keys,
                               const Args& argv, int replicas, int64_t timeout_ms, Retry retry,
                               Deadline deadline) {
  const Script& script =
      transport.sharded_pubsub() && chosen.sharded != nullptr ? *chosen.sharded : chosen;
  const std::string count = std::to_string(replicas);
  const std::string timeout = std::to_string(timeout_ms);
  const std::vector<Args> wait{{"WAIT", count, timeout}};
  std::vector<Reply> waited;
  SyncedReply out;
  out.reply = run_script(transport, script, keys, argv, wait, &waited, retry, Send::Sha, deadline);
  const Reply& acked = waited.at(0);
  if (acked.type == Reply::Type::Integer) out.acked = acked.integer;
  out.wait_refused = acked.error.kind == RedisErrorKind::kNoPerm ||
                     acked.error.kind == RedisErrorKind::kUnknownCommand;
  return out;
}

}  // namespace rlock::core
