// The watchdog of a client's expirable permits taken with the watchdog's lease: per client, as
// lock holds are, so a permit stays renewed whether or not the handle that took it lives, until
// it is given back, found lost, or the client closes (which gives it back).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace rlock::core {

class Client;

class PermitWatchdog : public std::enable_shared_from_this<PermitWatchdog> {
 public:
  explicit PermitWatchdog(Client& client) : client_(client) {}

  // Raw 16-byte ids of the semaphore `name` (its key, with the prefix) to renew, or to stop
  // renewing (given back, lost, or given a lease of their own).
  void watch(const std::string& name, const std::vector<std::string>& ids);
  void unwatch(const std::string& name, const std::vector<std::string>& ids);
  // The semaphore was deleted: none of its permits is renewed any more.
  void forget(const std::string& name);
  // The client closes: renewal ends, and every watched permit is given back, one call each;
  // false when Redis did not answer (the rest expire by their lease).
  bool release_all();

 private:
  class Round;
  bool renew(Round* by);

  Client& client_;
  std::mutex mutex_;
  std::map<std::string, std::vector<std::string>> watched_;
  std::shared_ptr<Round> round_;  // the running renewal task, while anything is watched
};

}  // namespace rlock::core
