// rlock::core::printable: how binary names and URLs appear in messages.
#include <gtest/gtest.h>

#include <string>

#include "rlock/core/error.hpp"

namespace rlock::core {
namespace {

TEST(Printable, PlainTextIsQuoted) {
  EXPECT_EQ(printable("orders:42"), "'orders:42'");
  EXPECT_EQ(printable(""), "''");
  EXPECT_EQ(printable("a b~{c}"), "'a b~{c}'");
}

TEST(Printable, QuoteBackslashAndControlBytesAreEscaped) {
  EXPECT_EQ(printable("it's"), "'it\\x27s'");
  EXPECT_EQ(printable("a\\b"), "'a\\x5cb'");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(printable("\n\t\x1f\x7f"), "'\\x0a\\x09\\x1f\\x7f'");
}

TEST(Printable, HighBytesAreEscapedNotSignExtended) {
  EXPECT_EQ(printable("\xff\xfe\x80"), "'\\xff\\xfe\\x80'");
  EXPECT_EQ(printable("caf\xc3\xa9"), "'caf\\xc3\\xa9'");
}

TEST(Printable, LongInputIsCutAndItsLengthGiven) {
  std::string name(100, 'n');
  EXPECT_EQ(printable(name, 10), "'nnnnnnnnnn...' (100 bytes)");
  // The default limit is 64 bytes.
  EXPECT_EQ(printable(name), "'" + std::string(64, 'n') + "...' (100 bytes)");
}

TEST(Printable, InputOfExactlyTheLimitIsNotCut) {
  EXPECT_EQ(printable("abc", 3), "'abc'");
  EXPECT_EQ(printable(std::string(64, 'x')), "'" + std::string(64, 'x') + "'");
  EXPECT_EQ(printable("abcd", 3), "'abc...' (4 bytes)");
}

TEST(Printable, LimitCountsInputBytesNotEscapes) {
  EXPECT_EQ(printable(std::string("\0\0\0\0", 4), 2), "'\\x00\\x00...' (4 bytes)");
}

}  // namespace
}  // namespace rlock::core
