// The check every call on a lock, semaphore or latch starts with: its client is still open.
#pragma once

#include <string>

#include "rlock/core/client.hpp"
#include "rlock/core/error.hpp"

namespace rlock::core {

// kOk, or kClosed with "<kind> <name>: the client was closed" (`kind`: "lock", "semaphore"...).
inline int check_client_open(const Client& client, const char* kind, const std::string& name) {
  if (client.closed()) {
    return fail(kClosed, std::string(kind) + " " + printable(name) + ": the client was closed");
  }
  return kOk;
}

}  // namespace rlock::core
