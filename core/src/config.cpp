#include "rlock/core/config.hpp"

#include <algorithm>
#include <cctype>

#include "rlock/core/error.hpp"
#include "rlock/core/parse.hpp"
#include "rlock/core/tls.hpp"

namespace rlock::core {
namespace {

// The URL with its password replaced by "***", fit for error messages and logs. Everything up
// to the last '@' may be a password, even past a '/' (an unescaped '/' in it is a common
// mistake), so that much is hidden: sometimes more than the password, never less.
std::string redacted(const std::string& url) {
  std::string out = url;
  size_t start = out.find("://");
  if (start != std::string::npos) {
    start += 3;
    size_t at = out.rfind('@');
    if (at != std::string::npos && at >= start) {
      size_t colon = out.find(':', start);
      size_t secret = colon != std::string::npos && colon < at ? colon + 1 : start;
      out = out.substr(0, secret) + "***" + out.substr(at);
    }
  }
  // Then the sentinels' password in the query, up to the next option.
  const std::string option = "sentinel_password=";
  for (size_t p = out.find(option); p != std::string::npos; p = out.find(option, p + 1)) {
    size_t from = p + option.size();
    size_t to = out.find('&', from);
    out = out.substr(0, from) + "***" + (to == std::string::npos ? "" : out.substr(to));
  }
  return out;
}

[[noreturn]] void bad(const std::string& url, const std::string& why) {
  throw Error(kInvalid, "invalid Redis URL " + printable(redacted(url), 200) + ": " + why);
}

// A piece of the URL quoted for a message, unless the redacted URL hides it.
std::string shown(const std::string& url, const std::string& part) {
  if (redacted(url).find(part) == std::string::npos) return "(hidden with the password)";
  return printable(part, 40);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(const std::string& url, const std::string& s, const char* what) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) bad(url, std::string("bad %-escape in ") + what);
    int hi = hex_value(s[i + 1]);
    int lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) bad(url, std::string("bad %-escape in ") + what);
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// A decimal integer in [lo, hi], nothing else: no sign, blank or trailing text.
bool parse_number(const std::string& s, int64_t lo, int64_t hi, int64_t* out) {
  return parse_int(s, lo, hi, out) == ParseStatus::kOk;
}

void parse_db(const std::string& url, const std::string& s, Endpoint* ep) {
  int64_t db;
  if (!parse_number(s, 0, 1000000, &db))
    bad(url, "database must be a number from 0, got " + shown(url, s));
  ep->db = static_cast<int>(db);
}

void parse_sync_replicas(const std::string& url, const std::string& value, ClientConfig* config) {
  int64_t number;
  if (value == "auto") {
    config->sync_replicas = kSyncAuto;
  } else if (value == "never" || value == "-1") {  // the numbers of rlock_client_options
    config->sync_replicas = kSyncNever;
  } else if (parse_number(value, 0, 1000, &number)) {
    config->sync_replicas = static_cast<int>(number);  // 0 is auto, as in the options
  } else {
    bad(url, "sync_replicas must be 'auto', 'never' or a number from -1 to 1000, got " +
                 shown(url, value));
  }
}

PubSubMode parse_pubsub(const std::string& url, const std::string& value) {
  if (value == "auto") return PubSubMode::Auto;
  if (value == "sharded") return PubSubMode::Sharded;
  if (value == "classic") return PubSubMode::Classic;
  bad(url, "pubsub must be auto, sharded or classic, got " + shown(url, value));
}

// sentinel_user or sentinel_password: the same for every sentinel.
void set_sentinel_credential(const std::string& url, const std::string& key,
                             const std::string& value, ClientConfig* config) {
  std::string decoded = percent_decode(url, value, key.c_str());
  for (Endpoint& sentinel : config->seeds) {
    (key == "sentinel_user" ? sentinel.username : sentinel.password) = decoded;
    if (key == "sentinel_password") sentinel.has_password = true;
  }
}

TlsVerify parse_tls_verify(const std::string& url, const std::string& value) {
  if (value == "full") return TlsVerify::Full;
  if (value == "ca") return TlsVerify::Ca;
  if (value == "none") return TlsVerify::None;
  bad(url, "tls_verify must be full, ca or none, got " + shown(url, value));
}

// A tls_* option or sentinel_tls; false when `key` is neither.
bool parse_tls_option(const std::string& url, const std::string& key, const std::string& value,
                      ClientConfig* config) {
  const bool sentinel_tls = key == "sentinel_tls";
  if (key.compare(0, 4, "tls_") != 0 && !sentinel_tls) return false;
  if (!config->tls.enabled) {
    bad(url, shown(url, key) + " needs TLS: rediss://, rediss-sentinel:// or rediss-cluster://");
  }
  TlsConfig& tls = config->tls;
  std::string* path = key == "tls_ca_file"       ? &tls.ca_file
                      : key == "tls_ca_dir"      ? &tls.ca_dir
                      : key == "tls_cert_file"   ? &tls.cert_file
                      : key == "tls_key_file"    ? &tls.key_file
                      : key == "tls_server_name" ? &tls.server_name
                                                 : nullptr;
  if (path != nullptr) {
    *path = percent_decode(url, value, key.c_str());
    if (path->empty()) bad(url, key + " is empty");
    if (path->find('\0') != std::string::npos) bad(url, key + " contains a NUL byte");
  } else if (key == "tls_verify") {
    tls.verify = parse_tls_verify(url, value);
  } else if (key == "tls_min_version") {
    if (value != "1.2" && value != "1.3")
      bad(url, "tls_min_version must be 1.2 or 1.3, got " + shown(url, value));
    tls.min_version = value == "1.3" ? TlsVersion::V1_3 : TlsVersion::V1_2;
  } else if (sentinel_tls && config->topology == Topology::Sentinel) {
    if (value != "yes" && value != "no")
      bad(url, "sentinel_tls must be yes or no, got " + shown(url, value));
    tls.sentinels = value == "yes" ? SentinelTls::On : SentinelTls::Off;
  } else {
    bad(url, "unknown option " + shown(url, key) +
                 " (known TLS options: tls_ca_file, tls_ca_dir, tls_cert_file, tls_key_file, "
                 "tls_server_name, tls_verify, tls_min_version; with rediss-sentinel:// also "
                 "sentinel_tls)");
  }
  return true;
}

// One name=value of the query.
void parse_option(const std::string& url, const std::string& key, const std::string& value,
                  ClientConfig* config) {
  if (parse_tls_option(url, key, value, config)) return;
  if (key == "db") {
    parse_db(url, value, &config->endpoint);
  } else if (key == "sync_replicas") {
    parse_sync_replicas(url, value, config);
  } else if (key == "sync_timeout_ms") {
    int64_t number;
    if (!parse_number(value, 1, 24L * 3600 * 1000, &number))
      bad(url, "sync_timeout_ms must be a number from 1 to 86400000, got " + shown(url, value));
    config->sync_timeout_ms = number;
  } else if (key == "stats") {
    if (value != "on" && value != "off")
      bad(url, "stats must be on or off, got " + shown(url, value));
    config->keep_stats = value == "on";
  } else if (key == "key_prefix") {
    config->key_prefix = percent_decode(url, value, "key_prefix");
    if (config->key_prefix.empty()) bad(url, "key_prefix is empty");
    check_key_prefix(config->key_prefix);
  } else if (key == "pubsub" && config->topology == Topology::Cluster) {
    config->pubsub = parse_pubsub(url, value);
  } else if ((key == "sentinel_user" || key == "sentinel_password") &&
             config->topology == Topology::Sentinel) {
    set_sentinel_credential(url, key, value, config);
  } else {
    bad(url, "unknown option " + shown(url, key) +
                 " (known: db, sync_replicas, sync_timeout_ms, stats, key_prefix; with "
                 "redis-sentinel:// also "
                 "sentinel_user, sentinel_password; with redis-cluster:// also pubsub; with "
                 "rediss:// the tls_* options)");
  }
}

void parse_query(const std::string& url, const std::string& query, ClientConfig* config) {
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    std::string item = query.substr(start, end - start);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (eq == std::string::npos) {
      bad(url, "option " + shown(url, key) + " has no value (expected name=value)");
    }
    parse_option(url, key, item.substr(eq + 1), config);
    start = end + 1;
  }
}

void parse_userinfo(const std::string& url, const std::string& info, Endpoint* ep) {
  size_t colon = info.find(':');
  if (colon == std::string::npos) {
    // redis://secret@host: a lone userinfo is the password, as redis-cli and redis-py read it.
    ep->password = percent_decode(url, info, "password");
  } else {
    ep->username = percent_decode(url, info.substr(0, colon), "user name");
    ep->password = percent_decode(url, info.substr(colon + 1), "password");
  }
  ep->has_password = true;
}

}  // namespace

namespace {

// A host or socket path as given, unless it is too long or unprintable to show whole: then
// quoted, escaped and cut (a DNS name has at most 253 bytes, a socket path 107).
std::string shown_place(const std::string& place) {
  const bool plain = place.size() <= 255 && std::all_of(place.begin(), place.end(), [](char c) {
                       return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f &&
                              static_cast<unsigned char>(c) < 0x80;
                     });
  return plain ? place : printable(place, 64);
}

}  // namespace

std::string Endpoint::describe() const {
  if (!unix_path.empty()) return "unix:" + shown_place(unix_path);
  if (host.find(':') != std::string::npos) {
    return "[" + shown_place(host) + "]:" + std::to_string(port);
  }
  return shown_place(host) + ":" + std::to_string(port);
}

namespace {

// "[v6]" or "[v6]:port": the host between the brackets, and the port's text if any.
std::string split_bracketed_host(const std::string& url, const std::string& text,
                                 std::string* port_text) {
  size_t close = text.find(']');
  if (close == std::string::npos) bad(url, "unbalanced '[' in IPv6 host");
  std::string host = text.substr(1, close - 1);
  if (host.empty()) bad(url, "empty IPv6 host");
  std::string after = text.substr(close + 1);
  if (!after.empty()) {
    if (after[0] != ':') bad(url, "unexpected text after IPv6 host");
    *port_text = after.substr(1);
    if (port_text->empty()) bad(url, "empty port");
  }
  return host;
}

// "host" or "host:port": the host, and the port's text if any.
std::string split_plain_host(const std::string& url, const std::string& text,
                             std::string* port_text) {
  if (text.find(']') != std::string::npos) bad(url, "unbalanced ']' in host");
  size_t colon = text.find(':');
  if (colon == std::string::npos) return text;
  if (text.find(':', colon + 1) != std::string::npos)
    bad(url, "IPv6 hosts must be in brackets, e.g. redis://[::1]:6379");
  *port_text = text.substr(colon + 1);
  if (port_text->empty()) bad(url, "empty port");
  return text.substr(0, colon);
}

// host[:port] or [v6]:port, into ep.
void parse_host_port(const std::string& url, const std::string& text, int default_port,
                     Endpoint* ep) {
  std::string port_text;
  ep->host = !text.empty() && text[0] == '[' ? split_bracketed_host(url, text, &port_text)
                                             : split_plain_host(url, text, &port_text);
  if (ep->host.empty()) bad(url, "missing host");
  for (char c : ep->host) {
    if (std::isspace(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) < 0x20 ||
        c == 0x7f)
      bad(url, "host contains whitespace or control characters");
  }
  ep->port = default_port;
  if (!port_text.empty()) {
    int64_t port;
    if (!parse_number(port_text, 1, 65535, &port))
      bad(url, "port must be a number from 1 to 65535, got " + shown(url, port_text));
    ep->port = static_cast<int>(port);
  }
}

// "h1:p1,h2:p2,..." into seeds, each with the credentials of `base`.
std::vector<Endpoint> parse_host_list(const std::string& url, const std::string& text,
                                      int default_port, const Endpoint& base) {
  std::vector<Endpoint> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end == start) bad(url, "empty host in the host list");
    Endpoint ep = base;
    parse_host_port(url, text.substr(start, end - start), default_port, &ep);
    out.push_back(ep);
    if (out.size() > 64) bad(url, "more than 64 hosts in the host list");
    start = end + 1;
  }
  return out;
}

// The scheme, lower-cased; *rest is what follows "://".
std::string split_scheme(const std::string& url, std::string* rest) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    bad(url,
        "missing scheme (expected redis://, rediss://, unix://, redis-sentinel:// or "
        "redis-cluster://)");
  }
  std::string scheme = url.substr(0, scheme_end);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  *rest = url.substr(scheme_end + 3);
  return scheme;
}

// Cuts *text at the first `separator`: returns what follows it (empty if none), keeps what
// precedes it. *found tells whether there was one.
std::string cut_at(std::string* text, char separator, bool* found = nullptr) {
  size_t at = text->find(separator);
  if (found != nullptr) *found = at != std::string::npos;
  if (at == std::string::npos) return std::string();
  std::string after = text->substr(at + 1);
  text->resize(at);
  return after;
}

// unix://[userinfo@]/path : the path starts at the first '/', userinfo may precede it.
void parse_unix_target(const std::string& url, const std::string& rest, Endpoint* ep) {
  size_t slash = rest.find('/');
  if (slash == std::string::npos) bad(url, "unix socket path must be absolute (unix:///path)");
  std::string info = rest.substr(0, slash);
  if (!info.empty()) {
    if (info.back() != '@') bad(url, "unexpected text before the socket path");
    parse_userinfo(url, info.substr(0, info.size() - 1), ep);
  }
  ep->unix_path = percent_decode(url, rest.substr(slash), "socket path");
  if (ep->unix_path.size() < 2) bad(url, "unix socket path is empty");
  // The path goes to connect() as a C string: a NUL would silently cut it.
  if (ep->unix_path.find('\0') != std::string::npos)
    bad(url, "unix socket path contains a NUL byte");
  if (ep->unix_path.size() > 107) bad(url, "unix socket path is longer than 107 bytes");
}

// The scheme without its TLS 's' (rediss-cluster -> redis-cluster), telling whether it had one;
// rejects what is not one of the TCP schemes.
std::string tcp_scheme(const std::string& url, const std::string& scheme, bool* tls) {
  static const char* const kPlain[] = {"redis", "redis-sentinel", "redis-cluster"};
  for (const char* plain : kPlain) {
    const std::string secure = std::string("rediss") + (plain + 5);
    if (scheme == plain || scheme == secure) {
      *tls = scheme == secure;
      if (*tls && !tls_available()) {
        throw Error(kUnsupported, "invalid Redis URL " + printable(redacted(url), 200) + ": TLS (" +
                                      scheme +
                                      "://) is not supported by this build (RLOCK_TLS=OFF)");
      }
      return plain;
    }
  }
  bad(url, "unknown scheme " + shown(url, scheme) +
               " (expected redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, "
               "redis-cluster:// or rediss-cluster://)");
}

// The master name of a redis-sentinel:// URL: its path, one segment.
std::string master_name(const std::string& url, bool has_path, const std::string& path) {
  if (!has_path || path.empty()) {
    bad(url, "missing master name (redis-sentinel://host:port/master-name)");
  }
  std::string name = percent_decode(url, path, "master name");
  if (name.find('/') != std::string::npos || name.size() > 256) {
    bad(url, "master name must be one path segment of at most 256 bytes");
  }
  for (unsigned char c : name) {
    if (c <= 0x20 || c == 0x7f) bad(url, "master name contains whitespace or control bytes");
  }
  return name;
}

// [userinfo@]hosts[/path] of the redis://, redis-sentinel:// and redis-cluster:// forms.
void parse_tcp_target(const std::string& url, const std::string& scheme, std::string rest,
                      ClientConfig* config) {
  Endpoint& ep = config->endpoint;
  bool has_path = false;
  const std::string path = cut_at(&rest, '/', &has_path);
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    parse_userinfo(url, rest.substr(0, at), &ep);
    rest = rest.substr(at + 1);
  }
  if (scheme == "redis") {
    parse_host_port(url, rest, 6379, &ep);
    if (!path.empty()) parse_db(url, path, &ep);
    return;
  }
  if (scheme == "redis-sentinel") {
    config->topology = Topology::Sentinel;
    // The sentinels get no credentials unless sentinel_user/sentinel_password say so.
    config->seeds = parse_host_list(url, rest, kSentinelPort, Endpoint{});
    config->master_name = master_name(url, has_path, path);
  } else {
    config->topology = Topology::Cluster;
    config->seeds = parse_host_list(url, rest, 6379, ep);
    if (!path.empty()) bad(url, "a cluster has no databases: nothing may follow the hosts");
  }
  ep.host.clear();
  ep.port = 0;
}

// What only the whole URL can tell: the path and the query together.
void check_combination(const std::string& url, const ClientConfig& config) {
  if (config.topology == Topology::Cluster && config.endpoint.db != 0) {
    bad(url, "a cluster has only database 0, got db=" + std::to_string(config.endpoint.db));
  }
  for (const Endpoint& seed : config.seeds) {
    if (!seed.username.empty() && !seed.has_password) {
      bad(url, "sentinel_user needs sentinel_password");
    }
  }
}

}  // namespace

void parse_client_url(const std::string& url, ClientConfig* config) {
  config->endpoint = Endpoint{};
  config->topology = Topology::Standalone;
  config->seeds.clear();
  config->master_name.clear();
  config->tls = TlsConfig{};
  if (url.find('\0') != std::string::npos) bad(url, "contains a NUL byte");
  std::string rest;
  const std::string scheme = split_scheme(url, &rest);
  const std::string query = cut_at(&rest, '?');
  if (scheme == "unix") {
    parse_unix_target(url, rest, &config->endpoint);
  } else {
    parse_tcp_target(url, tcp_scheme(url, scheme, &config->tls.enabled), rest, config);
  }
  if (!query.empty()) parse_query(url, query, config);
  check_combination(url, *config);
}

void check_key_prefix(const std::string& prefix) {
  if (prefix.size() > kMaxKeyPrefixLen) {
    throw Error(kInvalid, "key_prefix is " + std::to_string(prefix.size()) +
                              " bytes, longer than " + std::to_string(kMaxKeyPrefixLen));
  }
  if (prefix.find('\0') != std::string::npos)
    throw Error(kInvalid, "key_prefix contains a NUL byte");
}

Endpoint parse_url(const std::string& url) {
  ClientConfig config;
  parse_client_url(url, &config);
  if (config.topology != Topology::Standalone) {
    bad(url, "expected a single-server URL (redis:// or unix://)");
  }
  return config.endpoint;
}

}  // namespace rlock::core
