// Checked parsing of the numbers that come from users and from servers: URL ports and options,
// the CLI's durations, counts and versions in Redis replies. Plain ASCII decimal only: no
// blanks, no '+', no hex or exponent, nothing after the number. No locale, no errno, no
// exceptions; overflow is an out-of-range result, never a wrapped value.
#pragma once

#include <cstdint>
#include <string_view>

namespace rlock::core {

enum class ParseStatus {
  kOk,
  kMalformed,   // empty, or not a number of the expected form
  kOutOfRange,  // a well-formed number outside the bounds (however many digits it has)
};

// An integer in [lo, hi]: digits, with a leading '-' only where negatives are allowed (lo < 0),
// so "-0" is no way to write 0 for a port or a count. *out is set only on kOk.
ParseStatus parse_int(std::string_view text, int64_t lo, int64_t hi, int64_t* out);

// The integer that starts `text`, up to its first non-digit ("7.2.4" gives 7, "2\r\n" gives 2):
// for numbers inside server replies. kMalformed if `text` does not start with a digit.
ParseStatus parse_leading_int(std::string_view text, int64_t hi, int64_t* out);

// A non-negative decimal ("5", "0.5", ".5", "5.") in units of 10^-scale (scale 3 reads seconds
// as milliseconds), rounded to the nearest unit, halves up; at most `max` units. Exact: no
// floating point.
ParseStatus parse_decimal(std::string_view text, int scale, int64_t max, int64_t* out);

}  // namespace rlock::core
