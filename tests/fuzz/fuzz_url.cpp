// Fuzzes parse_url, the parser of redis://, rediss:// and unix:// URLs (rlock_client_new_url and
// the bindings' url option), and validate_config, which a parsed endpoint must always pass.
//
// Input: the URL bytes. Checked on every input:
// - parse_url returns, or throws Error(kInvalid); nothing else (kUnsupported only for a TLS
//   scheme in a build without TLS).
// - An accepted endpoint is well-formed: a TCP host that is non-empty and free of whitespace
//   and control bytes, with a port in 1..65535, or an absolute socket path of 2..107 bytes with
//   no NUL (the path goes to connect() as a C string); db in 0..1000000; no credentials unless
//   the URL had a userinfo part.
// - It round-trips: the URL rebuilt from its fields (percent-encoded) parses to the same fields.
// - validate_config accepts it (the two checks agree).
// - A rejection's message never shows a password: text written as ":S3CRET@" after the scheme
//   (the marker is in the dictionary and the seeds) must not appear in it.
// - parse_client_url (every form, redis-sentinel:// and redis-cluster:// and their rediss*
//   twins too) returns or throws kInvalid (kUnsupported as above); what it accepts
//   validate_config accepts, except tls_key_file without tls_cert_file (a pairing checked once
//   the URL and the options struct are merged); a rejection never shows "sentinel_password=S3CRET".
// - TLS: on exactly when the scheme is rediss*; TLS settings only with TLS on; sentinel_tls only
//   on Sentinel URLs; no NUL in a TLS path or name; the TLS settings of an accepted
//   rediss:// URL round-trip through a URL rebuilt from them.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rlock/core/client.hpp"
#include "rlock/core/config.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/tls.hpp"

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
  const bool unsupported_tls =
      e.code() == rlock::core::kUnsupported && !rlock::core::tls_available();
  if (e.code() != rlock::core::kInvalid && !unsupported_tls)
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

// The scheme in lower case ("" without "://").
std::string lower_scheme(const std::string& url) {
  const size_t end = url.find("://");
  if (end == std::string::npos) return "";
  std::string scheme = url.substr(0, end);
  for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return scheme;
}

bool same_tls(const rlock::core::TlsConfig& a, const rlock::core::TlsConfig& b) {
  return a.enabled == b.enabled && a.ca_file == b.ca_file && a.ca_dir == b.ca_dir &&
         a.cert_file == b.cert_file && a.key_file == b.key_file && a.server_name == b.server_name &&
         a.verify == b.verify && a.min_version == b.min_version && a.sentinels == b.sentinels;
}

// A rediss:// URL of a standalone config's TLS settings (the endpoint's part is plain).
std::string rebuilt_tls(const rlock::core::ClientConfig& c) {
  using rlock::core::TlsVerify;
  const rlock::core::TlsConfig& t = c.tls;
  std::string query;
  auto add = [&query](const char* key, const std::string& value) {
    if (!value.empty()) query += std::string(query.empty() ? "?" : "&") + key + "=" + value;
  };
  add("tls_ca_file", encoded(t.ca_file, true));
  add("tls_ca_dir", encoded(t.ca_dir, true));
  add("tls_cert_file", encoded(t.cert_file, true));
  add("tls_key_file", encoded(t.key_file, true));
  add("tls_server_name", encoded(t.server_name, false));
  add("tls_verify", t.verify == TlsVerify::Ca ? "ca" : t.verify == TlsVerify::None ? "none" : "");
  add("tls_min_version", t.min_version == rlock::core::TlsVersion::V1_3 ? "1.3" : "");
  return "rediss://h" + query;
}

void check_tls(const std::string& url, const rlock::core::ClientConfig& c) {
  using rlock::core::Topology;
  const rlock::core::TlsConfig& t = c.tls;
  if (t.enabled != (lower_scheme(url).compare(0, 6, "rediss") == 0))
    failed(url, "TLS on without a rediss scheme, or off with one");
  if (!t.enabled && t.any_setting()) failed(url, "TLS settings while TLS is off");
  if (t.sentinels != rlock::core::SentinelTls::Auto && c.topology != Topology::Sentinel)
    failed(url, "sentinel_tls on a URL that is not Sentinel");
  for (const std::string* text :
       {&t.ca_file, &t.ca_dir, &t.cert_file, &t.key_file, &t.server_name}) {
    if (text->find('\0') != std::string::npos) failed(url, "NUL byte in a TLS setting");
  }
  if (!t.enabled || c.topology != Topology::Standalone) return;
  const std::string again = rebuilt_tls(c);
  rlock::core::ClientConfig parsed;
  try {
    rlock::core::parse_client_url(again, &parsed);
  } catch (const Error& e) {
    failed(url, "TLS round trip rejected " + again + ": " + e.message());
  }
  if (!same_tls(t, parsed.tls)) failed(url, "TLS round trip changed: " + again);
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
  check_tls(url, config);
  const bool key_without_cert = !config.tls.key_file.empty() && config.tls.cert_file.empty();
  try {
    rlock::core::validate_config(&config);
  } catch (const Error& e) {
    if (!key_without_cert) {
      failed(url, "validate_config rejects a parsed client URL: " + e.message());
    }
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
