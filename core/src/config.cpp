#include "rlock/core/config.hpp"

#include <cctype>

#include "rlock/core/error.hpp"

namespace rlock::core {
namespace {

// The URL with its password replaced by "***", fit for error messages and logs. Everything up
// to the last '@' may be a password, even past a '/' (an unescaped '/' in it is a common
// mistake), so that much is hidden: sometimes more than the password, never less.
std::string redacted(const std::string& url) {
  size_t start = url.find("://");
  if (start == std::string::npos) return url;
  start += 3;
  size_t at = url.rfind('@');
  if (at == std::string::npos || at < start) return url;
  size_t colon = url.find(':', start);
  size_t secret = colon != std::string::npos && colon < at ? colon + 1 : start;
  return url.substr(0, secret) + "***" + url.substr(at);
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

// Parses a decimal integer in [lo, hi]; the whole string must be digits.
bool parse_int(const std::string& s, long lo, long hi, long* out) {
  if (s.empty() || s.size() > 10) return false;
  long v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}

void parse_db(const std::string& url, const std::string& s, Endpoint* ep) {
  long db;
  if (!parse_int(s, 0, 1000000, &db))
    bad(url, "database must be a number from 0, got " + shown(url, s));
  ep->db = static_cast<int>(db);
}

void parse_query(const std::string& url, const std::string& query, Endpoint* ep) {
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string::npos) end = query.size();
    std::string item = query.substr(start, end - start);
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (key == "db" && eq != std::string::npos) {
      parse_db(url, item.substr(eq + 1), ep);
    } else {
      bad(url, "unknown option " + shown(url, key) + " (only db=N is supported)");
    }
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

std::string Endpoint::describe() const {
  if (!unix_path.empty()) return "unix:" + unix_path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Endpoint parse_url(const std::string& url) {
  Endpoint ep;
  if (url.find('\0') != std::string::npos) bad(url, "contains a NUL byte");
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) bad(url, "missing scheme (expected redis:// or unix://)");
  std::string scheme = url.substr(0, scheme_end);
  for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string rest = url.substr(scheme_end + 3);

  std::string query;
  if (size_t q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }

  if (scheme == "unix") {
    // unix://[userinfo@]/path : the path starts at the first '/', userinfo may precede it.
    size_t slash = rest.find('/');
    if (slash == std::string::npos) bad(url, "unix socket path must be absolute (unix:///path)");
    std::string info = rest.substr(0, slash);
    if (!info.empty()) {
      if (info.back() != '@') bad(url, "unexpected text before the socket path");
      parse_userinfo(url, info.substr(0, info.size() - 1), &ep);
    }
    ep.unix_path = percent_decode(url, rest.substr(slash), "socket path");
    if (ep.unix_path.size() < 2) bad(url, "unix socket path is empty");
    // The path goes to connect() as a C string: a NUL would silently cut it.
    if (ep.unix_path.find('\0') != std::string::npos)
      bad(url, "unix socket path contains a NUL byte");
    if (ep.unix_path.size() > 107) bad(url, "unix socket path is longer than 107 bytes");
    if (!query.empty()) parse_query(url, query, &ep);
    return ep;
  }
  if (scheme == "rediss") {
    throw Error(kUnsupported, "invalid Redis URL " + printable(redacted(url), 200) +
                                  ": TLS (rediss://) is not supported by this build");
  }
  if (scheme != "redis") bad(url, "unknown scheme '" + scheme + "' (expected redis:// or unix://)");

  std::string path;
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    parse_userinfo(url, rest.substr(0, at), &ep);
    rest = rest.substr(at + 1);
  }
  std::string port_text;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) bad(url, "unbalanced '[' in IPv6 host");
    ep.host = rest.substr(1, close - 1);
    if (ep.host.empty()) bad(url, "empty IPv6 host");
    std::string after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') bad(url, "unexpected text after IPv6 host");
      port_text = after.substr(1);
      if (port_text.empty()) bad(url, "empty port");
    }
  } else {
    if (rest.find(']') != std::string::npos) bad(url, "unbalanced ']' in host");
    size_t colon = rest.find(':');
    if (colon != std::string::npos) {
      if (rest.find(':', colon + 1) != std::string::npos)
        bad(url, "IPv6 hosts must be in brackets, e.g. redis://[::1]:6379");
      port_text = rest.substr(colon + 1);
      if (port_text.empty()) bad(url, "empty port");
      rest = rest.substr(0, colon);
    }
    ep.host = rest;
  }
  if (ep.host.empty()) bad(url, "missing host");
  for (char c : ep.host) {
    if (std::isspace(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) < 0x20 ||
        c == 0x7f)
      bad(url, "host contains whitespace or control characters");
  }
  if (!port_text.empty()) {
    long port;
    if (!parse_int(port_text, 1, 65535, &port))
      bad(url, "port must be a number from 1 to 65535, got " + shown(url, port_text));
    ep.port = static_cast<int>(port);
  }
  if (!path.empty()) parse_db(url, path, &ep);
  if (!query.empty()) parse_query(url, query, &ep);
  return ep;
}

}  // namespace rlock::core
