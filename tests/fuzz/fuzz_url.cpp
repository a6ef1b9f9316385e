// Fuzzes parse_url, the parser of redis:// and unix:// URLs (rlock_client_new_url and the
// bindings' url option), and validate_config, which a parsed endpoint must always pass.
//
// Input: the URL bytes. Checked on every input:
// - parse_url returns, or throws Error(kInvalid) (kUnsupported for rediss://); nothing else.
// - An accepted endpoint is well-formed: a TCP host that is non-empty and free of whitespace
//   and control bytes, with a port in 1..65535, or an absolute socket path of 2..107 bytes with
//   no NUL (the path goes to connect() as a C string); db in 0..1000000; no credentials unless
//   the URL had a userinfo part.
// - It round-trips: the URL rebuilt from its fields (percent-encoded) parses to the same fields.
// - validate_config accepts it (the two checks agree).
// - A rejection's message never shows a password: text written as ":S3CRET@" after the scheme
//   (the marker is in the dictionary and the seeds) must not appear in it.
// - parse_client_url (every form, redis-sentinel:// and redis-cluster:// too) returns or throws
//   kInvalid/kUnsupported; what it accepts validate_config accepts; a single-server URL gives
//   the endpoint parse_url gives; a rejection never shows "sentinel_password=S3CRET".
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rlock/core/client.hpp"
#include "rlock/core/config.hpp"
#include "rlock/core/error.hpp"

using rlock::core::Endpoint;
using rlock::core::Error;

namespace {

const char kSecret[] = "S3CRET";

[[noreturn]] void failed(const std::string& url, const std::string& what) {
  std::fprintf(stderr, "fuzz_url: %s\n  url: %s\n", what.c_str(),
               rlock::core::printable(url, 400).c_str());
  std::abort();
}

// Everything but unreserved characters (and '/' in socket paths) as %XX.
std::string encoded(const std::string& s, bool keep_slash) {
  static const char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

std::string rebuilt(const Endpoint& ep) {
  std::string auth;
  if (ep.has_password) auth = encoded(ep.username, false) + ":" + encoded(ep.password, false) + "@";
  const std::string db = std::to_string(ep.db);
  if (!ep.unix_path.empty()) return "unix://" + auth + encoded(ep.unix_path, true) + "?db=" + db;
  bool bracket = ep.host.find(':') != std::string::npos || ep.host[0] == '[';
  std::string host = bracket ? "[" + ep.host + "]" : ep.host;
  return "redis://" + auth + host + ":" + std::to_string(ep.port) + "/" + db;
}

bool same(const Endpoint& a, const Endpoint& b) {
  return a.host == b.host && a.port == b.port && a.unix_path == b.unix_path &&
         a.username == b.username && a.password == b.password && a.has_password == b.has_password &&
         a.db == b.db;
}

void check_accepted(const std::string& url, const Endpoint& ep) {
  if (ep.db < 0 || ep.db > 1000000) failed(url, "db out of range");
  if (!ep.has_password && (!ep.username.empty() || !ep.password.empty()))
    failed(url, "credentials without has_password");
  if (ep.has_password && url.find('@') == std::string::npos)
    failed(url, "has_password without '@' in the URL");
  if (!ep.unix_path.empty()) {
    if (ep.unix_path[0] != '/') failed(url, "relative socket path");
    if (ep.unix_path.size() < 2 || ep.unix_path.size() > 107) failed(url, "socket path length");
    if (ep.unix_path.find('\0') != std::string::npos) failed(url, "NUL byte in the socket path");
  } else {
    if (ep.host.empty()) failed(url, "empty host");
    for (unsigned char c : ep.host) {
      if (c <= 0x20 || c == 0x7f) failed(url, "whitespace or control byte in the host");
    }
    if (ep.port < 1 || ep.port > 65535) failed(url, "port out of range");
  }
  if (ep.describe().empty()) failed(url, "empty describe()");

  const std::string again = rebuilt(ep);
  try {
    if (!same(ep, rlock::core::parse_url(again))) failed(url, "round trip changed: " + again);
  } catch (const Error& e) {
    failed(url, "round trip rejected " + again + ": " + e.message());
  }

  rlock::core::ClientConfig config;
  config.endpoint = ep;
  try {
    rlock::core::validate_config(&config);
  } catch (const Error& e) {
    failed(url, "validate_config rejects a parsed endpoint: " + e.message());
  }
}

void check_rejected(const std::string& url, const Error& e) {
  if (e.code() != rlock::core::kInvalid && e.code() != rlock::core::kUnsupported)
    failed(url, "unexpected code " + std::to_string(e.code()));
  if (e.message().find("invalid Redis URL") == std::string::npos)
    failed(url, "message does not say what failed: " + e.message());
  // Unless the marker also stands elsewhere in the URL, it must not show at all.
  const std::string password = std::string(":") + kSecret + "@";
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return;
  if (url.find(password, scheme_end) == std::string::npos) return;
  std::string rest = url;  // the URL less the passwords (after the scheme, where they count)
  for (size_t at = rest.find(password, scheme_end); at != std::string::npos;
       at = rest.find(password, scheme_end))
    rest.erase(at, password.size());
  if (rest.find(kSecret) == std::string::npos && e.message().find(kSecret) != std::string::npos)
    failed(url, "the password is in the message: " + e.message());
}

}  // namespace

// The multi-host forms, through the parser the client uses.
void check_client_url(const std::string& url) {
  rlock::core::ClientConfig config;
  try {
    rlock::core::parse_client_url(url, &config);
  } catch (const Error& e) {
    check_rejected(url, e);
    // Unless the marker also stands elsewhere in the URL, the sentinels' password must not
    // show either.
    const std::string option = std::string("sentinel_password=") + kSecret;
    if (url.find(option) != std::string::npos) {
      std::string rest = url;
      for (size_t at = rest.find(option); at != std::string::npos; at = rest.find(option))
        rest.erase(at, option.size());
      if (rest.find(kSecret) == std::string::npos &&
          e.message().find(kSecret) != std::string::npos) {
        failed(url, "the sentinel password is in the message: " + e.message());
      }
    }
    return;
  }
  using rlock::core::Topology;
  if (config.topology != Topology::Standalone) {
    if (config.seeds.empty() || config.seeds.size() > 64) failed(url, "seed count");
    if (config.topology == Topology::Sentinel && config.master_name.empty())
      failed(url, "sentinel URL without a master name");
    if (config.topology == Topology::Cluster && config.endpoint.db != 0)
      failed(url, "cluster URL with a database");
  }
  try {
    rlock::core::validate_config(&config);
  } catch (const Error& e) {
    failed(url, "validate_config rejects a parsed client URL: " + e.message());
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  check_client_url(url);
  Endpoint ep;
  try {
    ep = rlock::core::parse_url(url);
  } catch (const Error& e) {
    check_rejected(url, e);
    return 0;
  }
  check_accepted(url, ep);
  return 0;
}
