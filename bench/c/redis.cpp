#include <sys/time.h>

#include <algorithm>
#include <cstdlib>

#include "bench.hpp"

namespace bench {
namespace {

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path;
  std::string user;
  std::string password;
  int db = 0;
};

int parse_int(const std::string& text, const std::string& url, const char* what) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0 || v > 65535) {
    throw Failure("bad " + std::string(what) + " in URL " + url);
  }
  return static_cast<int>(v);
}

Endpoint parse_url(const std::string& url) {
  Endpoint ep;
  std::string rest;
  if (url.rfind("redis://", 0) == 0) {
    rest = url.substr(8);
  } else if (url.rfind("unix://", 0) == 0) {
    rest = url.substr(7);
  } else {
    throw Failure("URL must start with redis:// or unix://, got " + url);
  }
  size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    std::string auth = rest.substr(0, at);
    rest = rest.substr(at + 1);
    size_t colon = auth.find(':');
    if (colon == std::string::npos) {
      ep.password = auth;
    } else {
      ep.user = auth.substr(0, colon);
      ep.password = auth.substr(colon + 1);
    }
  }
  if (url.rfind("unix://", 0) == 0) {
    size_t q = rest.find("?db=");
    if (q != std::string::npos) {
      ep.db = parse_int(rest.substr(q + 4), url, "db");
      rest = rest.substr(0, q);
    }
    if (rest.empty()) throw Failure("no socket path in URL " + url);
    ep.unix_path = rest;
    return ep;
  }
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    if (slash + 1 < rest.size()) ep.db = parse_int(rest.substr(slash + 1), url, "db");
    rest = rest.substr(0, slash);
  }
  std::string port;
  if (!rest.empty() && rest.front() == '[') {  // [IPv6]:port
    size_t close = rest.find(']');
    if (close == std::string::npos) throw Failure("unclosed [ in URL " + url);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') throw Failure("bad host in URL " + url);
      port = rest.substr(close + 2);
    }
    rest = rest.substr(1, close - 1);
  } else if (size_t colon = rest.rfind(':'); colon != std::string::npos) {
    port = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
  }
  if (!port.empty()) ep.port = parse_int(port, url, "port");
  if (!rest.empty()) ep.host = rest;
  return ep;
}

}  // namespace

Reply command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  Reply r(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(args.size()), argv.data(), lens.data())));
  if (!r) throw Failure("redis " + args[0] + ": " + c->errstr);
  if (r->type == REDIS_REPLY_ERROR) {
    throw Failure("redis " + args[0] + ": " + std::string(r->str, r->len));
  }
  return r;
}

void delete_keys(redisContext* c, const std::string& pattern) {
  std::string cursor = "0";
  do {
    Reply r = command(c, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    cursor.assign(r->element[0]->str, r->element[0]->len);
    std::vector<std::string> del = {"UNLINK"};
    for (size_t i = 0; i < r->element[1]->elements; ++i) {
      del.emplace_back(r->element[1]->element[i]->str, r->element[1]->element[i]->len);
    }
    if (del.size() > 1) command(c, del);
  } while (cursor != "0");
}

int64_t count_existing(redisContext* c, const std::vector<std::string>& keys) {
  int64_t count = 0;
  for (size_t i = 0; i < keys.size(); i += 512) {
    std::vector<std::string> args = {"EXISTS"};
    args.insert(args.end(), keys.begin() + i, keys.begin() + std::min(i + 512, keys.size()));
    count += command(c, args)->integer;
  }
  return count;
}

std::map<std::string, int64_t> command_calls(redisContext* c) {
  Reply r = command(c, {"INFO", "commandstats"});
  std::map<std::string, int64_t> calls;
  std::string text(r->str, r->len);
  const std::string prefix = "cmdstat_";
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind(prefix, 0) != 0) continue;
    size_t colon = line.find(':');
    size_t at = line.find("calls=");
    if (colon == std::string::npos || at == std::string::npos) continue;
    calls[line.substr(prefix.size(), colon - prefix.size())] =
        std::strtoll(line.c_str() + at + 6, nullptr, 10);
  }
  return calls;
}

Context connect(const std::string& url) {
  Endpoint ep = parse_url(url);
  timeval timeout{5, 0};
  Context c(ep.unix_path.empty() ? redisConnectWithTimeout(ep.host.c_str(), ep.port, timeout)
                                 : redisConnectUnixWithTimeout(ep.unix_path.c_str(), timeout));
  if (!c) throw Failure("connecting to " + url + ": out of memory");
  if (c->err) throw Failure("connecting to " + url + ": " + c->errstr);
  redisSetTimeout(c.get(), timeout);
  if (!ep.password.empty()) {
    if (ep.user.empty()) {
      command(c.get(), {"AUTH", ep.password});
    } else {
      command(c.get(), {"AUTH", ep.user, ep.password});
    }
  }
  if (ep.db != 0) command(c.get(), {"SELECT", std::to_string(ep.db)});
  return c;
}

}  // namespace bench
