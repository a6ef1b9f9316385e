// Key and channel names (core/include/rlock/core/names.hpp), Redisson's layout: a plain name N
// gets the hash tag {N} in every auxiliary name; a name containing '{' keeps the user's own tag.
#include "rlock/core/names.hpp"

#include <gtest/gtest.h>

#include <string>

namespace rlock::core {
namespace {

TEST(Names, PlainNameIsWrappedInAHashTag) {
  EXPECT_EQ(hash_tagged("orders"), "{orders}");
  EXPECT_EQ(hash_tagged("a}b"), "{a}b}");  // a '}' alone does not count as a tag
  EXPECT_EQ(hash_tagged("x"), "{x}");
}

TEST(Names, NameWithABraceKeepsTheUsersTag) {
  EXPECT_EQ(hash_tagged("a}b{c"), "a}b{c");
  EXPECT_EQ(hash_tagged("user:{42}:cart"), "user:{42}:cart");
  EXPECT_EQ(hash_tagged("{"), "{");
}

TEST(Names, BinaryNamesAreKeptByteForByte) {
  const std::string name("a\0b\xff", 4);
  const std::string tagged = hash_tagged(name);
  ASSERT_EQ(tagged.size(), 6u);
  EXPECT_EQ(tagged, std::string("{a\0b\xff}", 6));
  EXPECT_EQ(lock_channel(name), std::string("redisson_lock__channel:{a\0b\xff}", 29));
}

TEST(Names, LockChannel) {
  EXPECT_EQ(lock_channel("orders"), "redisson_lock__channel:{orders}");
  EXPECT_EQ(lock_channel("a}b{c"), "redisson_lock__channel:a}b{c");
  EXPECT_EQ(lock_channel("user:{42}"), "redisson_lock__channel:user:{42}");
}

TEST(Names, UnlockLatch) {
  EXPECT_EQ(unlock_latch("orders", "0af3"), "redisson_unlock_latch:{orders}:0af3");
  EXPECT_EQ(unlock_latch("a}b{c", "r1"), "redisson_unlock_latch:a}b{c:r1");
}

TEST(Names, PrefixedName) {
  EXPECT_EQ(prefixed_name("p", "n"), "p:{n}");
  EXPECT_EQ(prefixed_name("p", "{n}"), "p:{n}");
}

}  // namespace
}  // namespace rlock::core
