// How Lock reads its scripts' replies, over a transport that answers from a list (no Redis).
// A reply not of its script's shape is kRedis "unexpected reply", never a result: the cases
// below were found by tests/fuzz/fuzz_reply, where such replies read as success or as "not held".
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <string>

#include "rlock/core/client.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"

namespace rlock::core {
namespace {

class ListTransport : public Transport {
 public:
  explicit ListTransport(std::deque<Reply>* replies) : replies_(replies) {}
  using Transport::run;
  Reply run(const Args&, Deadline) override {
    if (replies_->empty()) throw Error(kConn, "no reply left");
    Reply r = replies_->front();
    replies_->pop_front();
    return r;
  }
  Deadline deadline_from_now() const override {
    return std::chrono::steady_clock::now() + std::chrono::seconds(1);
  }
  void close() override {}

 private:
  std::deque<Reply>* replies_;
};

Reply status(const std::string& text) {
  Reply r;
  r.type = Reply::Type::Status;
  r.str = text;
  return r;
}

Reply ints(std::initializer_list<int64_t> values) {
  std::vector<Reply> e;
  for (int64_t v : values) e.push_back(Reply::of_int(v));
  return Reply::of_array(std::move(e));
}

class Replies : public ::testing::Test {
 protected:
  std::unique_ptr<Lock> lock(LockKind kind = LockKind::Reentrant) {
    if (!client_) {
      auto transport = std::make_unique<ListTransport>(&replies_);
      client_ = std::make_shared<Client>(ClientConfig{}, std::move(transport));
    }
    LockOptions options;
    options.kind = kind;
    options.lease_ms = 60000;
    return std::make_unique<Lock>(client_, "orders", options);
  }
  int acquire(Lock& l) {
    AcquireArgs args;
    args.wait_ms = 0;
    return l.acquire(args);
  }
  void expect_unexpected(int rc) {
    EXPECT_EQ(rc, kRedis) << last_error_message();
    EXPECT_NE(last_error_message().find("unexpected reply"), std::string::npos)
        << last_error_message();
  }
  void TearDown() override {
    replies_.clear();  // the client's close() finds the connection gone
    if (client_) client_->close();
  }

  std::deque<Reply> replies_;
  std::shared_ptr<Client> client_;
};

TEST_F(Replies, WellFormedRepliesStillWork) {
  auto l = lock();
  replies_ = {ints({1, 1, 0}), Reply::of_int(1), Reply::of_int(0)};
  EXPECT_EQ(acquire(*l), kOk) << last_error_message();
  EXPECT_TRUE(l->is_held(0));
  EXPECT_EQ(l->extend(30000, 0), kOk) << last_error_message();
  EXPECT_EQ(l->release(0), kOk) << last_error_message();
  EXPECT_FALSE(l->is_held(0));
  replies_ = {ints({0, 2500})};
  EXPECT_EQ(acquire(*l), kTimedOut);
}

TEST_F(Replies, ReleaseAnsweredWithoutACountIsNotASuccess) {
  auto l = lock();
  replies_ = {ints({1, 1, 0}), status("OK"), Reply::nil()};
  ASSERT_EQ(acquire(*l), kOk) << last_error_message();
  expect_unexpected(l->release(0));  // was kOk
  expect_unexpected(l->release(0));  // was kOk
  EXPECT_TRUE(l->is_held(0));
}

TEST_F(Replies, ExtendAnsweredWithoutACountKeepsTheHold) {
  auto l = lock();
  replies_ = {ints({1, 1, 0}), Reply::nil()};
  ASSERT_EQ(acquire(*l), kOk) << last_error_message();
  expect_unexpected(l->extend(30000, 0));  // was kLost, and the hold forgotten
  EXPECT_TRUE(l->is_held(0));
}

TEST_F(Replies, ReadLockExtendAnsweredWithAPlainInteger) {
  auto l = lock(LockKind::Read);
  replies_ = {ints({1, 1, 0}), Reply::of_int(-2)};
  ASSERT_EQ(acquire(*l), kOk) << last_error_message();
  expect_unexpected(l->extend(30000, 0));  // was kLost
  EXPECT_TRUE(l->is_held(0));
}

TEST_F(Replies, AcquireGrantOfNoHoldsOrNonIntegers) {
  auto l = lock();
  Reply text_count = ints({1, 1, 0});
  text_count.elements[1] = Reply::of_string("1");
  replies_ = {ints({1, 0, 0}), text_count, ints({1, 1}), ints({7, 0}), ints({0, 2500, 1})};
  expect_unexpected(acquire(*l));  // was kOk, and not held
  expect_unexpected(acquire(*l));  // was kOk
  expect_unexpected(acquire(*l));  // was kTimedOut
  expect_unexpected(acquire(*l));  // was kTimedOut
  expect_unexpected(acquire(*l));  // was kTimedOut
  EXPECT_FALSE(l->is_held(0));
}

TEST_F(Replies, QueryForceUnlockAndFencedWriteCheckTheShape) {
  auto l = lock();
  Reply state = ints({900, 1, 1, 0, 1, 0});  // owner and mode must be strings or nil
  bool deleted = false, accepted = false;
  LockState out;
  replies_ = {state, Reply::nil(), status("OK")};
  expect_unexpected(l->query(0, &out));
  expect_unexpected(l->force_unlock(&deleted));                            // was kOk
  expect_unexpected(fenced_write(*client_, "orders", "v", 1, &accepted));  // was kOk
}

}  // namespace
}  // namespace rlock::core
