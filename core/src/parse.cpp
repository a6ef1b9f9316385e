#include "rlock/core/parse.hpp"

namespace rlock::core {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view text) {
  for (char c : text) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// *value = *value * 10 + digit, unless that would pass `limit`.
bool append_digit(uint64_t* value, unsigned digit, uint64_t limit) {
  if (*value > limit / 10 || *value * 10 + digit > limit) return false;
  *value = *value * 10 + digit;
  return true;
}

// Appends the digits of `digits` to *value, unless the result would pass `limit`.
bool append_digits(std::string_view digits, uint64_t limit, uint64_t* value) {
  for (char c : digits) {
    if (!append_digit(value, static_cast<unsigned>(c - '0'), limit)) return false;
  }
  return true;
}

}  // namespace

ParseStatus parse_int(std::string_view text, int64_t lo, int64_t hi, int64_t* out) {
  const bool negative = lo < 0 && !text.empty() && text[0] == '-';
  const std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty() || !all_digits(digits)) return ParseStatus::kMalformed;
  // The largest magnitude the bounds allow on this side of zero.
  const uint64_t limit =
      negative ? 0 - static_cast<uint64_t>(lo) : static_cast<uint64_t>(hi < 0 ? 0 : hi);
  uint64_t magnitude = 0;
  if (!append_digits(digits, limit, &magnitude)) return ParseStatus::kOutOfRange;
  // -magnitude in unsigned arithmetic, then back: well defined down to INT64_MIN.
  const int64_t value =
      negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
  if (value < lo || value > hi) return ParseStatus::kOutOfRange;
  *out = value;
  return ParseStatus::kOk;
}

ParseStatus parse_leading_int(std::string_view text, int64_t hi, int64_t* out) {
  size_t end = 0;
  while (end < text.size() && is_digit(text[end])) ++end;
  return parse_int(text.substr(0, end), 0, hi, out);
}

ParseStatus parse_decimal(std::string_view text, int scale, int64_t max, int64_t* out) {
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const std::string_view fraction =
      dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if ((whole.empty() && fraction.empty()) || !all_digits(whole) || !all_digits(fraction) ||
      scale < 0 || max < 0) {
    return ParseStatus::kMalformed;
  }
  const uint64_t limit = static_cast<uint64_t>(max);
  const size_t places = static_cast<size_t>(scale);
  // The whole part, then `scale` digits of the fraction, padded with zeros.
  uint64_t units = 0;
  bool fits = append_digits(whole, limit, &units) &&
              append_digits(fraction.substr(0, places), limit, &units);
  for (size_t i = fraction.size(); fits && i < places; ++i) fits = append_digit(&units, 0, limit);
  // Rounds on the first digit left out.
  if (fits && fraction.size() > places && fraction[places] >= '5') {
    fits = units < limit;
    ++units;
  }
  if (!fits) return ParseStatus::kOutOfRange;
  *out = static_cast<int64_t>(units);
  return ParseStatus::kOk;
}

}  // namespace rlock::core
