// Cluster slots: the CRC16 and hash-tag rule Redis uses, and which key of a command decides.
#include "rlock/core/cluster.hpp"

#include <gtest/gtest.h>

#include <string>

#include "rlock/core/names.hpp"

namespace rlock::core {
namespace {

TEST(KeySlot, MatchesRedis) {
  // Values from CLUSTER KEYSLOT on Redis 7.0.
  EXPECT_EQ(key_slot("123456789"), 12739);  // CRC16/XMODEM check value 0x31C3
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(key_slot(""), 0);
}

TEST(KeySlot, HashTags) {
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("a{b}c{d}"), key_slot("b"));  // the first tag counts
  EXPECT_EQ(key_slot("{}x"), key_slot("{}x"));     // an empty tag: the whole key
  EXPECT_NE(key_slot("{}x"), key_slot("x"));
  EXPECT_EQ(key_slot("a{b"), key_slot("a{b"));  // no closing brace: the whole key
  EXPECT_NE(key_slot("a{b"), key_slot("b"));
  EXPECT_EQ(key_slot(std::string("n\0{t}", 5)), key_slot("t"));  // binary-safe
}

TEST(KeySlot, EveryKeyOfAPlainLockSharesItsSlot) {
  for (const std::string name : {"orders", "stock:42", "{tag}rest", "a}b{c}"}) {
    SCOPED_TRACE(name);
    const int slot = key_slot(name);
    EXPECT_EQ(key_slot(lock_channel(name)), slot);
    EXPECT_EQ(key_slot(token_counter(name)), slot);
    EXPECT_EQ(key_slot(fair_queue(name)), slot);
    EXPECT_EQ(key_slot(unlock_latch(name, "abcd")), slot);
  }
  // Braces that defeat the rule, as in Redisson (the lock refuses such names on a cluster).
  EXPECT_NE(key_slot("a{}b{c"), key_slot(lock_channel("a{}b{c")));
  EXPECT_NE(key_slot("x}y"), key_slot(lock_channel("x}y")));
}

TEST(CommandSlot, FirstKeyOfAScriptOrTheKeyArgument) {
  EXPECT_EQ(command_slot({"EVALSHA", "0123", "2", "foo", "bar", "arg"}), key_slot("foo"));
  EXPECT_EQ(command_slot({"eval", "return 1", "1", "bar"}), key_slot("bar"));
  EXPECT_EQ(command_slot({"EVAL", "return 1", "0"}), -1);
  EXPECT_EQ(command_slot({"PING"}), -1);
  EXPECT_EQ(command_slot({"WAIT", "1", "100"}), -1);
  EXPECT_EQ(command_slot({"INFO", "replication"}), -1);
  EXPECT_EQ(command_slot({"PUBLISH", "ch", "0"}), -1);  // classic pub/sub reaches every node
  EXPECT_EQ(command_slot({"SPUBLISH", "ch", "0"}), key_slot("ch"));
  EXPECT_EQ(command_slot({"GET", "foo"}), key_slot("foo"));
}

}  // namespace
}  // namespace rlock::core
