// The facts rlock.h states in text, checked against the library: every status code of the enum
// has its own rlock_strerror text and a core code, and every "default N" in an options struct's
// comments is what the *_options_init function fills in (which takes it from the core). The
// bindings' tests parse the same header for their own tables (docs/errors.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "rlock/core/error.hpp"
#include "rlock/rlock.h"

namespace {

std::string header_text() {
  std::ifstream in(RLOCK_HEADER_PATH);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text between "typedef <what> <name> {" and "} <name>;".
std::string block(const std::string& header, const std::string& what, const std::string& name) {
  const std::string open = "typedef " + what + " " + name + " {";
  const std::string close = "} " + name + ";";
  size_t begin = header.find(open);
  size_t end = header.find(close);
  if (begin == std::string::npos || end == std::string::npos || end < begin) return "";
  return header.substr(begin + open.size(), end - begin - open.size());
}

// RLOCK_* = value, for every status code of the header's enum.
std::map<std::string, int> header_codes() {
  std::map<std::string, int> codes;
  const std::string body = block(header_text(), "enum", "rlock_error_code");
  const std::regex item(R"((RLOCK_[A-Z]+) = (-?[0-9]+))");
  for (std::sregex_iterator it(body.begin(), body.end(), item), end; it != end; ++it) {
    codes[(*it)[1]] = std::stoi((*it)[2]);
  }
  return codes;
}

// field -> what its comment gives after "default " (a number, a macro or a quoted string).
std::map<std::string, std::string> documented_defaults(const std::string& name) {
  std::map<std::string, std::string> defaults;
  const std::string body = block(header_text(), "struct", name);
  const std::regex field(R"((\w+);\s*/\*([^*]*)\*/)");
  const std::regex value(R"(default ("[^"]*"|-?[0-9]+|RLOCK_[A-Z_]+))");
  for (std::sregex_iterator it(body.begin(), body.end(), field), end; it != end; ++it) {
    const std::string comment = (*it)[2];
    std::smatch m;
    if (std::regex_search(comment, m, value)) defaults[(*it)[1]] = m[1];
  }
  return defaults;
}

// The macros and enum items a comment may name as a default, by their values.
std::string resolve(const std::string& documented) {
  static const std::map<std::string, std::string> macros = {
      {"RLOCK_DEFAULT_MAX_NAME_LEN", std::to_string(RLOCK_DEFAULT_MAX_NAME_LEN)},
      {"RLOCK_LEASE_WATCHDOG", std::to_string(RLOCK_LEASE_WATCHDOG)},
      {"RLOCK_LOCK_REENTRANT", std::to_string(RLOCK_LOCK_REENTRANT)},
  };
  auto it = macros.find(documented);
  return it == macros.end() ? documented : it->second;
}

// Every documented default is in `actual`, equal, and every entry of `actual` is documented.
void expect_documented(const std::string& name, const std::map<std::string, std::string>& actual) {
  const auto documented = documented_defaults(name);
  for (const auto& [field, text] : documented) {
    auto it = actual.find(field);
    ASSERT_NE(it, actual.end()) << name << "." << field << " documents a default (" << text
                                << ") this test does not know: add it to the table";
    EXPECT_EQ(resolve(text), it->second) << name << "." << field << ": rlock.h says " << text;
  }
  for (const auto& [field, value] : actual) {
    EXPECT_TRUE(documented.count(field)) << name << "." << field << " (default " << value
                                         << ") has no \"default ...\" in its rlock.h comment";
  }
}

// field -> default, as the options_init functions fill them in (durations in ms).
std::map<std::string, int64_t> library_defaults() {
  rlock_client_options c;
  rlock_lock_options l;
  if (rlock_client_options_init(&c, RLOCK_CLIENT_OPTIONS_VERSION) != RLOCK_OK ||
      rlock_lock_options_init(&l, RLOCK_LOCK_OPTIONS_VERSION) != RLOCK_OK) {
    return {};
  }
  return {{"port", c.port},
          {"connect_timeout_ms", c.connect_timeout_ms},
          {"command_timeout_ms", c.command_timeout_ms},
          {"pool_size", c.pool_size},
          {"watchdog_lease_ms", c.watchdog_lease_ms},
          {"poll_cap_ms", c.poll_cap_ms},
          {"max_name_len", static_cast<int64_t>(c.max_name_len)},
          {"sync_timeout_ms", c.sync_timeout_ms},
          {"spin_initial_ms", l.spin_initial_ms},
          {"spin_max_ms", l.spin_max_ms},
          {"fair_wait_ms", l.fair_wait_ms}};
}

TEST(HeaderFacts, EveryStatusCodeHasItsTextAndCoreCode) {
  const auto codes = header_codes();
  ASSERT_GE(codes.size(), 24u) << "the status code enum was not found in " RLOCK_HEADER_PATH;
  const std::string unknown = rlock_strerror(12345);
  std::map<std::string, int> texts;
  int lowest = 0;
  for (const auto& [name, value] : codes) {
    const std::string text = rlock_strerror(value);
    EXPECT_NE(text, unknown) << name
                             << " has no text in rlock_strerror's table (capi/src/rlock.cpp)";
    EXPECT_FALSE(text.empty()) << name;
    auto [it, added] = texts.emplace(text, value);
    EXPECT_TRUE(added) << name << " shares its rlock_strerror text with code " << it->second;
    lowest = std::min(lowest, value);
  }
  EXPECT_EQ(lowest, rlock::core::kLowestCode)
      << "rlock.h and core/include/rlock/core/error.hpp differ in their newest code: add it to "
         "the core's Code enum and the static_assert in capi/src/rlock.cpp";
  EXPECT_EQ(codes.size(), static_cast<size_t>(1 - lowest)) << "the codes are not 0, -1, ..., -N";
}

// docs/errors.md has one table row "| `RLOCK_X` | value | ..." per code.
TEST(HeaderFacts, ErrorsPageListsEveryCode) {
  std::ifstream in(std::string(RLOCK_DOCS_PATH) + "/errors.md");
  const std::regex row(R"(^\| `(RLOCK_[A-Z]+)` \| (-?[0-9]+) \|)");
  std::map<std::string, int> documented;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented[m[1]] = std::stoi(m[2]);
  }
  EXPECT_EQ(documented, header_codes()) << "docs/errors.md's table differs from rlock.h";
}

TEST(HeaderFacts, ClientOptionDefaultsAreTheDocumentedOnes) {
  rlock_client_options o;
  ASSERT_EQ(rlock_client_options_init(&o, RLOCK_CLIENT_OPTIONS_VERSION), RLOCK_OK);
  expect_documented("rlock_client_options",
                    {{"host", "\"" + std::string(o.host) + "\""},
                     {"port", std::to_string(o.port)},
                     {"db", std::to_string(o.db)},
                     {"connect_timeout_ms", std::to_string(o.connect_timeout_ms)},
                     {"command_timeout_ms", std::to_string(o.command_timeout_ms)},
                     {"pool_size", std::to_string(o.pool_size)},
                     {"watchdog_lease_ms", std::to_string(o.watchdog_lease_ms)},
                     {"poll_cap_ms", std::to_string(o.poll_cap_ms)},
                     {"max_name_len", std::to_string(o.max_name_len)},
                     {"sync_timeout_ms", std::to_string(o.sync_timeout_ms)}});
}

TEST(HeaderFacts, LockOptionDefaultsAreTheDocumentedOnes) {
  rlock_lock_options o;
  ASSERT_EQ(rlock_lock_options_init(&o, RLOCK_LOCK_OPTIONS_VERSION), RLOCK_OK);
  expect_documented("rlock_lock_options", {{"lease_ms", std::to_string(o.lease_ms)},
                                           {"kind", std::to_string(o.kind)},
                                           {"spin_initial_ms", std::to_string(o.spin_initial_ms)},
                                           {"spin_max_ms", std::to_string(o.spin_max_ms)},
                                           {"fair_wait_ms", std::to_string(o.fair_wait_ms)}});
}

}  // namespace

// The C documentation names defaults in prose too: "`poll_cap_ms` (default 1000 ms)".
// (The bindings' own names are checked by their tests.)
TEST(HeaderFacts, DocsStateTheLibraryDefaults) {
  const auto defaults = library_defaults();
  ASSERT_FALSE(defaults.empty());
  const std::regex mention(R"(`(\w+)`\s+\(default ([0-9]+)( ?ms| ?s)?\b)");
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator(RLOCK_DOCS_PATH)) {
    if (entry.path().extension() != ".md") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    for (std::sregex_iterator it(doc.begin(), doc.end(), mention), end; it != end; ++it) {
      const std::string field = (*it)[1];
      auto known = defaults.find(field);
      if (known == defaults.end()) continue;  // a binding's name
      int64_t value = std::stoll((*it)[2]);
      if ((*it)[3] == "s" || (*it)[3] == " s") value *= 1000;  // else ms, or a count
      EXPECT_EQ(value, known->second)
          << entry.path().filename().string() << ": \"" << (*it)[0] << "\"";
      ++found;
    }
  }
  EXPECT_GT(found, 0) << "no default found in " RLOCK_DOCS_PATH;
}
