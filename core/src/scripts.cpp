#include "rlock/core/scripts.hpp"

#include <string>

#include "rlock/core/error.hpp"
#include "rlock/core/transport.hpp"

namespace rlock::core {

using Clock = std::chrono::steady_clock;

Reply eval_script(Transport& transport, const Script& script, const Args& keys, const Args& argv,
                  Retry retry, Send send, Deadline deadline) {
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
  if (reply.is_error() && reply.str.compare(0, 8, "NOSCRIPT") == 0) {
    with_source();
    reply = retry == Retry::Once ? transport.run_retrying(cmd, deadline) : transport.run(cmd, deadline);
  }
  return reply;
}

}  // namespace rlock::core
