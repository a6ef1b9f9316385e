// Which failures a waiting acquire retries, for single locks and lock groups alike: the same
// predicate (worth_retrying) over the classified error, never over a message's text. Over a
// fake server that refuses a lock's acquires a number of times (no Redis).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "rlock/core/client.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/lock_group.hpp"
#include "rlock/core/scripts.hpp"

namespace rlock::core {
namespace {

using Clock = std::chrono::steady_clock;

// Grants and releases reentrant locks; answers a lock's acquires with an error reply while it
// has refusals left.
class FakeServer : public Transport {
 public:
  using Transport::run;
  Reply run(const Args& args, Deadline) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (args.size() < 4) return Reply::of_error("ERR unexpected command");
    const std::string sha(args[1]), name(args[3]);
    if (sha == scripts::acquire.sha1) {
      ++acquires_[name];
      auto refusal = refusals_.find(name);
      if (refusal != refusals_.end() && refusal->second.left > 0) {
        --refusal->second.left;
        return Reply::of_error(refusal->second.error);
      }
      held_.insert(name);
      return Reply::of_array({Reply::of_int(1), Reply::of_int(1), Reply::of_int(0)});
    }
    if (sha == scripts::release.sha1) return Reply::of_int(held_.erase(name) > 0 ? 0 : -1);
    return Reply::of_error("ERR unexpected script");
  }
  Deadline deadline_from_now() const override { return Clock::now() + std::chrono::seconds(1); }
  void close() override {}

  void refuse(const std::string& name, int times, const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    refusals_[name] = {times, error};
  }
  int acquires(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    return acquires_[name];
  }

 private:
  struct Refusal {
    int left;
    std::string error;
  };
  std::mutex mutex_;
  std::map<std::string, Refusal> refusals_;
  std::map<std::string, int> acquires_;
  std::set<std::string> held_;
};

class Retries : public ::testing::Test {
 protected:
  void SetUp() override {
    auto transport = std::make_unique<FakeServer>();
    server_ = transport.get();
    client_ = std::make_shared<Client>(ClientConfig{}, std::move(transport));
  }
  void TearDown() override { client_->close(); }

  std::shared_ptr<Lock> lock(const std::string& name, LockKind kind = LockKind::Reentrant) {
    LockOptions options;
    options.kind = kind;
    options.lease_ms = 60000;
    return std::make_shared<Lock>(client_, name, options);
  }
  int acquire(Lock& l, int64_t wait_ms) {
    AcquireArgs args;
    args.wait_ms = wait_ms;
    return l.acquire(args);
  }
  LockGroup group(std::initializer_list<const char*> names, LockGroup::Policy policy) {
    std::vector<std::shared_ptr<Lock>> members;
    for (const char* name : names) members.push_back(lock(name));
    return LockGroup(std::move(members), policy);
  }

  FakeServer* server_ = nullptr;
  std::shared_ptr<Client> client_;
};

const char* const kTransient[] = {
    "LOADING Redis is loading the dataset in memory",
    "TRYAGAIN Multiple keys request during rehashing of slot",
    "CLUSTERDOWN The cluster is down",
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
};

TEST_F(Retries, GroupWaitsThroughTransientErrorsAsASingleLockDoes) {
  for (const char* error : kTransient) {
    SCOPED_TRACE(error);
    server_->refuse("b", 2, error);
    LockGroup g = group({"a", "b"}, LockGroup::Policy::All);
    // LOADING, TRYAGAIN and CLUSTERDOWN used to fail the group at once with kRedis.
    EXPECT_EQ(g.acquire(5000, 60000, 0, nullptr, nullptr), kOk) << last_error_message();
    EXPECT_EQ(server_->acquires("b") % 3, 0);  // two refused, then granted
    EXPECT_EQ(g.release(0), kOk) << last_error_message();

    server_->refuse("single", 2, error);
    std::shared_ptr<Lock> single = lock("single", LockKind::Spin);
    EXPECT_EQ(acquire(*single, 5000), kOk) << last_error_message();
    EXPECT_EQ(single->release(0), kOk) << last_error_message();
  }
}

TEST_F(Retries, TransientErrorsStillEndAtTheWait) {
  server_->refuse("b", 1000000, kTransient[0]);
  LockGroup all = group({"a", "b"}, LockGroup::Policy::All);
  const auto start = Clock::now();
  EXPECT_EQ(all.acquire(300, 60000, 0, nullptr, nullptr), kRedis);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(290));
  EXPECT_NE(last_error_message().find("LOADING"), std::string::npos) << last_error_message();
  EXPECT_TRUE(last_error_transient());
  EXPECT_GT(server_->acquires("b"), 2);

  // A RedLock short of its majority reports the transient failure too, as kConn always was.
  server_->refuse("c", 1000000, kTransient[0]);
  LockGroup majority = group({"a", "b", "c"}, LockGroup::Policy::Majority);
  EXPECT_EQ(majority.acquire(200, 60000, 0, nullptr, nullptr), kRedis);
  EXPECT_NE(last_error_message().find("LOADING"), std::string::npos) << last_error_message();

  // Try-once calls report it at once.
  EXPECT_EQ(all.acquire(0, 60000, 0, nullptr, nullptr), kRedis);
  std::shared_ptr<Lock> single = lock("b", LockKind::Spin);
  EXPECT_EQ(acquire(*single, 0), kRedis);
}

TEST_F(Retries, LastingErrorsEndTheWaitAtOnce) {
  server_->refuse("b", 1000000,
                  "WRONGTYPE Operation against a key holding the wrong kind of value");
  LockGroup all = group({"a", "b"}, LockGroup::Policy::All);
  const auto start = Clock::now();
  EXPECT_EQ(all.acquire(5000, 60000, 0, nullptr, nullptr), kRedis);
  EXPECT_FALSE(last_error_transient());
  EXPECT_EQ(server_->acquires("b"), 1);
  std::shared_ptr<Lock> single = lock("b", LockKind::Spin);
  EXPECT_EQ(acquire(*single, 5000), kRedis);
  EXPECT_EQ(server_->acquires("b"), 2);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2000));

  // A RedLock lacking its majority for a lasting reason reports not acquired, as before.
  server_->refuse("c", 1000000,
                  "WRONGTYPE Operation against a key holding the wrong kind of value");
  LockGroup majority = group({"a", "b", "c"}, LockGroup::Policy::Majority);
  EXPECT_EQ(majority.acquire(100, 60000, 0, nullptr, nullptr), kTimedOut);
}

// The retry used to be decided by searching the failure's message, which names the lock: a
// lock called "LOADING" retried every failure until its wait ended.
TEST_F(Retries, ALockNameIsNotAnErrorKind) {
  for (const char* name : {"LOADING", "TRYAGAIN", "CLUSTERDOWN"}) {
    server_->refuse(name, 1000000, "WRONGTYPE Operation against a key holding the wrong kind");
    std::shared_ptr<Lock> l = lock(name, LockKind::Spin);
    const auto start = Clock::now();
    EXPECT_EQ(acquire(*l, 3000), kRedis) << name;
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1500)) << name;
    EXPECT_EQ(server_->acquires(name), 1) << name;
  }
}

}  // namespace
}  // namespace rlock::core
