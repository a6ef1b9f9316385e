// rlock::core::parse_int, parse_leading_int and parse_decimal: the one number parser of the
// URL, the CLI and the replies read from servers.
#include "rlock/core/parse.hpp"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

namespace rlock::core {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kUntouched = 424242;

// The status of parse_int, and the value read (kUntouched when *out was not written).
std::pair<ParseStatus, int64_t> int_of(std::string_view text, int64_t lo, int64_t hi) {
  int64_t out = kUntouched;
  ParseStatus status = parse_int(text, lo, hi, &out);
  return {status, out};
}

std::pair<ParseStatus, int64_t> decimal_of(std::string_view text, int scale, int64_t max) {
  int64_t out = kUntouched;
  ParseStatus status = parse_decimal(text, scale, max, &out);
  return {status, out};
}

const auto kOk = ParseStatus::kOk;
const auto kMalformed = ParseStatus::kMalformed;
const auto kOutOfRange = ParseStatus::kOutOfRange;

TEST(ParseInt, ReadsDecimalIntegers) {
  EXPECT_EQ(int_of("0", 0, 10), std::make_pair(kOk, int64_t{0}));
  EXPECT_EQ(int_of("6379", 1, 65535), std::make_pair(kOk, int64_t{6379}));
  EXPECT_EQ(int_of("007", 0, 10), std::make_pair(kOk, int64_t{7}));
  EXPECT_EQ(int_of("00000000000000000000000000065535", 1, 65535),
            std::make_pair(kOk, int64_t{65535}));
}

TEST(ParseInt, Bounds) {
  EXPECT_EQ(int_of("1", 1, 65535).first, kOk);
  EXPECT_EQ(int_of("65535", 1, 65535).first, kOk);
  EXPECT_EQ(int_of("0", 1, 65535), std::make_pair(kOutOfRange, kUntouched));
  EXPECT_EQ(int_of("65536", 1, 65535), std::make_pair(kOutOfRange, kUntouched));
  EXPECT_EQ(int_of("5", 6, 9).first, kOutOfRange);
  EXPECT_EQ(int_of("5", 9, 6).first, kOutOfRange);  // empty range
  EXPECT_EQ(int_of("0", -10, -1).first, kOutOfRange);
  EXPECT_EQ(int_of("5", -10, -1).first, kOutOfRange);
}

TEST(ParseInt, Signs) {
  EXPECT_EQ(int_of("-5", -10, 10), std::make_pair(kOk, int64_t{-5}));
  EXPECT_EQ(int_of("-0", -10, 10), std::make_pair(kOk, int64_t{0}));
  EXPECT_EQ(int_of("-10", -10, 10).first, kOk);
  EXPECT_EQ(int_of("-11", -10, 10).first, kOutOfRange);
  EXPECT_EQ(int_of("-3", -10, -5).first, kOutOfRange);
  // Where negatives are not allowed a '-' is no number at all, not even "-0".
  EXPECT_EQ(int_of("-5", 0, 10), std::make_pair(kMalformed, kUntouched));
  EXPECT_EQ(int_of("-0", 0, 10).first, kMalformed);
  EXPECT_EQ(int_of("+5", 0, 10).first, kMalformed);
  EXPECT_EQ(int_of("+5", -10, 10).first, kMalformed);
  EXPECT_EQ(int_of("-", -10, 10).first, kMalformed);
  EXPECT_EQ(int_of("--5", -10, 10).first, kMalformed);
  EXPECT_EQ(int_of("-+5", -10, 10).first, kMalformed);
}

TEST(ParseInt, Overflow) {
  EXPECT_EQ(int_of("9223372036854775807", kMin, kMax), std::make_pair(kOk, kMax));
  EXPECT_EQ(int_of("-9223372036854775808", kMin, kMax), std::make_pair(kOk, kMin));
  EXPECT_EQ(int_of("9223372036854775808", kMin, kMax).first, kOutOfRange);
  EXPECT_EQ(int_of("-9223372036854775809", kMin, kMax).first, kOutOfRange);
  EXPECT_EQ(int_of("18446744073709551616", kMin, kMax).first, kOutOfRange);  // 2^64
  EXPECT_EQ(int_of("18446744073709551617", 0, kMax).first, kOutOfRange);     // 2^64 + 1
  EXPECT_EQ(int_of(std::string(400, '9'), 0, kMax).first, kOutOfRange);
  EXPECT_EQ(int_of("4294967296", 0, 65535).first, kOutOfRange);  // 2^32 does not wrap to 0
  EXPECT_EQ(int_of("4294967297", 0, 65535).first, kOutOfRange);
}

TEST(ParseInt, TrailingAndLeadingJunk) {
  for (const char* text :
       {"5 ", " 5", "5x", "x5", "5\n", "5\r\n", "0x10", "1e3", "5.0", "5,0", "1_000", "\t5"}) {
    EXPECT_EQ(int_of(text, kMin, kMax).first, kMalformed) << "'" << text << "'";
  }
  EXPECT_EQ(int_of(std::string_view("5\0", 2), 0, 10).first, kMalformed);
  EXPECT_EQ(int_of("٣", 0, 10).first, kMalformed);  // non-ASCII digits are not digits
}

TEST(ParseInt, Empty) {
  EXPECT_EQ(int_of("", 0, 10), std::make_pair(kMalformed, kUntouched));
  EXPECT_EQ(int_of("", -10, 10).first, kMalformed);
  EXPECT_EQ(int_of(std::string_view(), 0, 10).first, kMalformed);
}

// What parse_int must answer, from std::from_chars (which also reads a '-' where no negative
// is allowed, so that is excluded first).
ParseStatus reference_int(const std::string& text, int64_t lo, int64_t hi, int64_t* out) {
  if (text.empty() || text[0] == '+' || (text[0] == '-' && lo >= 0)) {
    return ParseStatus::kMalformed;
  }
  const char* end = text.data() + text.size();
  int64_t value = 0;
  auto [stop, error] = std::from_chars(text.data(), end, value);
  if (stop != end || error == std::errc::invalid_argument) return ParseStatus::kMalformed;
  if (error == std::errc::result_out_of_range || value < lo || value > hi) {
    return ParseStatus::kOutOfRange;
  }
  *out = value;
  return ParseStatus::kOk;
}

TEST(ParseInt, AgreesWithFromCharsOnRandomText) {
  std::mt19937_64 random(17);
  const std::string alphabet = "0123456789000999-+ .x";
  const int64_t bounds[] = {kMin, -65536, -1, 0, 1, 9, 65535, 2147483647, kMax};
  for (int i = 0; i < 200000; ++i) {
    std::string text;
    for (size_t n = random() % 24; n > 0; --n) text += alphabet[random() % alphabet.size()];
    int64_t lo = bounds[random() % std::size(bounds)], hi = bounds[random() % std::size(bounds)];
    int64_t got = kUntouched, want = kUntouched;
    ASSERT_EQ(parse_int(text, lo, hi, &got), reference_int(text, lo, hi, &want))
        << "'" << text << "' in [" << lo << ", " << hi << "]";
    ASSERT_EQ(got, want) << "'" << text << "'";
  }
}

TEST(ParseLeadingInt, StopsAtTheFirstNonDigit) {
  int64_t out = kUntouched;
  EXPECT_EQ(parse_leading_int("7.2.4\r\n", 1000, &out), kOk);
  EXPECT_EQ(out, 7);
  EXPECT_EQ(parse_leading_int("12\r\nnext:1", 1000, &out), kOk);
  EXPECT_EQ(out, 12);
  EXPECT_EQ(parse_leading_int("3", 1000, &out), kOk);
  EXPECT_EQ(out, 3);
  out = kUntouched;
  EXPECT_EQ(parse_leading_int("", 1000, &out), kMalformed);
  EXPECT_EQ(parse_leading_int("\r\n", 1000, &out), kMalformed);
  EXPECT_EQ(parse_leading_int("-1", 1000, &out), kMalformed);
  EXPECT_EQ(parse_leading_int(" 1", 1000, &out), kMalformed);
  EXPECT_EQ(parse_leading_int("1001.0", 1000, &out), kOutOfRange);
  EXPECT_EQ(parse_leading_int(std::string(30, '9') + ".0", kMax, &out), kOutOfRange);
  EXPECT_EQ(out, kUntouched);
}

TEST(ParseDecimal, ReadsWholeAndFractionalValues) {
  EXPECT_EQ(decimal_of("5", 3, 1000000), std::make_pair(kOk, int64_t{5000}));
  EXPECT_EQ(decimal_of("0.5", 3, 1000000), std::make_pair(kOk, int64_t{500}));
  EXPECT_EQ(decimal_of(".5", 3, 1000000), std::make_pair(kOk, int64_t{500}));
  EXPECT_EQ(decimal_of("5.", 3, 1000000), std::make_pair(kOk, int64_t{5000}));
  EXPECT_EQ(decimal_of("0", 3, 1000000), std::make_pair(kOk, int64_t{0}));
  EXPECT_EQ(decimal_of("0.000", 3, 1000000), std::make_pair(kOk, int64_t{0}));
  EXPECT_EQ(decimal_of("1.234", 3, 1000000), std::make_pair(kOk, int64_t{1234}));
  EXPECT_EQ(decimal_of("007.5", 3, 1000000), std::make_pair(kOk, int64_t{7500}));
  EXPECT_EQ(decimal_of("12", 0, 100), std::make_pair(kOk, int64_t{12}));
}

TEST(ParseDecimal, RoundsToTheNearestUnitHalvesUp) {
  EXPECT_EQ(decimal_of("0.0004", 3, 1000).second, 0);
  EXPECT_EQ(decimal_of("0.0005", 3, 1000).second, 1);
  EXPECT_EQ(decimal_of("0.0014999999", 3, 1000).second, 1);
  EXPECT_EQ(decimal_of("0.0015", 3, 1000).second, 2);
  EXPECT_EQ(decimal_of("1.9996", 3, 10000).second, 2000);
  EXPECT_EQ(decimal_of("2.5", 0, 10).second, 3);
  EXPECT_EQ(decimal_of("0.1234567890123456789012345", 3, 1000).second, 123);
}

TEST(ParseDecimal, Bounds) {
  EXPECT_EQ(decimal_of("1", 3, 1000), std::make_pair(kOk, int64_t{1000}));
  EXPECT_EQ(decimal_of("1.0004", 3, 1000), std::make_pair(kOk, int64_t{1000}));
  EXPECT_EQ(decimal_of("1.0005", 3, 1000), std::make_pair(kOutOfRange, kUntouched));
  EXPECT_EQ(decimal_of("1.001", 3, 1000).first, kOutOfRange);
  EXPECT_EQ(decimal_of("2", 3, 1000).first, kOutOfRange);
  const int64_t two_to_53 = int64_t{1} << 53;
  EXPECT_EQ(decimal_of("9007199254740.992", 3, two_to_53), std::make_pair(kOk, two_to_53));
  EXPECT_EQ(decimal_of("9007199254740.993", 3, two_to_53).first, kOutOfRange);
  EXPECT_EQ(decimal_of("9007199254741", 3, two_to_53).first, kOutOfRange);
}

TEST(ParseDecimal, Overflow) {
  EXPECT_EQ(decimal_of("9223372036854775.807", 3, kMax), std::make_pair(kOk, kMax));
  EXPECT_EQ(decimal_of("9223372036854775.808", 3, kMax).first, kOutOfRange);
  EXPECT_EQ(decimal_of("9223372036854775.8075", 3, kMax).first, kOutOfRange);
  EXPECT_EQ(decimal_of("99999999999999999999", 3, kMax).first, kOutOfRange);
  EXPECT_EQ(decimal_of("1" + std::string(400, '0'), 3, kMax).first, kOutOfRange);
}

TEST(ParseDecimal, SignsAndJunk) {
  for (const char* text : {"-1", "-0", "-0.5", "+1", "nan", "NaN", "inf", "infinity", "0x10", "1e3",
                           " 1", "1 ", "1.2.3", ".", "..", "5s", "1,5", "0.5\n"}) {
    EXPECT_EQ(decimal_of(text, 3, kMax), std::make_pair(kMalformed, kUntouched))
        << "'" << text << "'";
  }
  // Syntax is judged before size: a long number with junk is malformed, not out of range.
  EXPECT_EQ(decimal_of(std::string(400, '9') + "x", 3, kMax).first, kMalformed);
}

TEST(ParseDecimal, Empty) {
  EXPECT_EQ(decimal_of("", 3, 1000), std::make_pair(kMalformed, kUntouched));
  EXPECT_EQ(decimal_of(std::string_view(), 3, 1000).first, kMalformed);
}

}  // namespace
}  // namespace rlock::core
