// rlock::core::printable and capped_message: how binary names, URLs and long messages appear
// in messages.
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

// Whether `s` is well-formed UTF-8 as far as lead and continuation bytes go (enough to show a cut
// inside a character).
bool whole_characters(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80             ? 1
                       : (c & 0xe0) == 0xc0 ? 2
                       : (c & 0xf0) == 0xe0 ? 3
                       : (c & 0xf8) == 0xf0 ? 4
                                            : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

TEST(CappedMessage, MessagesUpToTheCapAreKept) {
  EXPECT_EQ(capped_message("lock 'x' is not locked"), "lock 'x' is not locked");
  const std::string full(kMaxErrorMessageLen, 'm');
  EXPECT_EQ(capped_message(full), full);
}

TEST(CappedMessage, LongMessagesKeepTheirStartAndEnd) {
  const std::string message =
      "cannot connect to Redis at " + std::string(100000, 'h') + ":1: Name or service not known";
  const std::string out = capped_message(message);
  EXPECT_LE(out.size(), kMaxErrorMessageLen);
  EXPECT_EQ(out.rfind("cannot connect to Redis at hhh", 0), 0u);
  EXPECT_EQ(out.substr(out.size() - 32), "hhh:1: Name or service not known");
  const size_t kept = out.size() - (out.find(" bytes elided ...] ") + 19 - out.find(" [... "));
  EXPECT_NE(out.find(" [... " + std::to_string(message.size() - kept) + " bytes elided ...] "),
            std::string::npos)
      << out.substr(0, 100);
  EXPECT_LE(capped_message(std::string(kMaxErrorMessageLen + 1, 'm')).size(), kMaxErrorMessageLen);
}

TEST(CappedMessage, CutsFallBetweenUtf8Characters) {
  for (size_t pad = 0; pad < 4; ++pad) {
    std::string message(pad, 'p');
    while (message.size() < 3 * kMaxErrorMessageLen)
      message += "\xc3\xa9\xe9\x94\x81\xf0\x9f\x94\x92";
    const std::string out = capped_message(message);
    EXPECT_LE(out.size(), kMaxErrorMessageLen);
    EXPECT_TRUE(whole_characters(out)) << "pad " << pad;
  }
}

TEST(CappedMessage, SetLastErrorKeepsTheCappedMessage) {
  set_last_error(kConn, "start " + std::string(100000, 'x') + " end");
  EXPECT_LE(last_error_message().size(), kMaxErrorMessageLen);
  EXPECT_EQ(last_error_message().rfind("start ", 0), 0u);
  EXPECT_EQ(last_error_message().substr(last_error_message().size() - 4), " end");
  EXPECT_EQ(last_error_code(), kConn);
}

}  // namespace
}  // namespace rlock::core
