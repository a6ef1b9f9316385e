#include "rlock/core/scripts.hpp"

#include <string>

#include "rlock/core/transport.hpp"

namespace rlock::core {

Reply eval_script(Transport& transport, const Script& script, const Args& keys, const Args& argv,
                  Retry retry) {
  std::string key_count = std::to_string(keys.size());
  Args cmd;
  cmd.reserve(3 + keys.size() + argv.size());
  cmd.push_back("EVALSHA");
  cmd.push_back(script.sha1);
  cmd.push_back(key_count);
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), argv.begin(), argv.end());

  auto run = [&](const Args& c) {
    return retry == Retry::Once ? transport.run_retrying(c) : transport.run(c);
  };
  Reply reply = run(cmd);
  if (reply.is_error() && reply.str.compare(0, 8, "NOSCRIPT") == 0) {
    cmd[0] = "EVAL";
    cmd[1] = script.source;
    reply = run(cmd);
  }
  return reply;
}

}  // namespace rlock::core
