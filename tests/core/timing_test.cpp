// The shared time helpers: ms_until and the exponential Backoff.
#include "rlock/core/timing.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>

namespace rlock::core {
namespace {

TEST(MsUntil, PastAndNowAreZero) {
  EXPECT_EQ(ms_until(SteadyClock::now() - std::chrono::seconds(5)), 0);
  EXPECT_EQ(ms_until(SteadyClock::now()), 0);
}

TEST(MsUntil, FutureCountsDown) {
  int64_t ms = ms_until(SteadyClock::now() + std::chrono::seconds(10));
  EXPECT_LE(ms, 10000);
  EXPECT_GT(ms, 9000);  // generous: the machine may be loaded
}

TEST(Backoff, DoublesUpToTheCap) {
  Backoff b(50, 1000);
  EXPECT_EQ(b.next(), 50);
  EXPECT_EQ(b.next(), 100);
  EXPECT_EQ(b.next(), 200);
  EXPECT_EQ(b.next(), 400);
  EXPECT_EQ(b.next(), 800);
  EXPECT_EQ(b.next(), 1000);
  EXPECT_EQ(b.next(), 1000);
}

TEST(Backoff, CapThatIsNotAPowerOfTwoStep) {
  Backoff b(3, 7);
  EXPECT_EQ(b.next(), 3);
  EXPECT_EQ(b.next(), 6);
  EXPECT_EQ(b.next(), 7);
  EXPECT_EQ(b.next(), 7);
}

TEST(Backoff, FirstEqualToCapStaysThere) {
  Backoff b(5, 5);
  EXPECT_EQ(b.next(), 5);
  EXPECT_EQ(b.next(), 5);
}

TEST(Backoff, ResetStartsOver) {
  Backoff b(20, 1000);
  b.next();
  b.next();
  b.next();
  b.reset();
  EXPECT_EQ(b.next(), 20);
  EXPECT_EQ(b.next(), 40);
}

TEST(Backoff, HugeCapDoesNotOverflow) {
  const int64_t cap = std::numeric_limits<int64_t>::max();
  Backoff b(cap / 2 + 1, cap);
  EXPECT_EQ(b.next(), cap / 2 + 1);
  EXPECT_EQ(b.next(), cap);
  EXPECT_EQ(b.next(), cap);
}

}  // namespace
}  // namespace rlock::core
