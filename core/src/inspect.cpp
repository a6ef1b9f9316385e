#include "rlock/core/inspect.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>

#include "rlock/core/cluster.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/parse.hpp"

namespace rlock::core {
namespace {

// Fields sampled per hash: enough to see every field of a small (listpack) hash, which every
// lock is; a big hash is judged by its first HSCAN step, so one key never costs more.
constexpr const char* kFieldSample = "128";
constexpr const char* kListedRange = "99";  // kMaxListed - 1, for LRANGE and ZRANGE

// The reads of one name, in the order parse_reads expects them.
enum Read {
  kType,
  kPttl,
  kHashLength,
  kFields,
  kMode,
  kToken,
  kQueueLength,
  kQueue,
  kDeadlineCount,
  kDeadlines,
  kReadCount
};

// Commands hold string_views: this keeps the strings they point at alive and in place.
class Commands {
 public:
  const std::string& keep(std::string text) { return strings_.emplace_back(std::move(text)); }
  void add(Args args) { list_.push_back(std::move(args)); }
  const std::vector<Args>& list() const { return list_; }

 private:
  std::deque<std::string> strings_;
  std::vector<Args> list_;
};

void add_reads(Commands& commands, const std::string& name) {
  const std::string& n = commands.keep(name);
  const std::string& token = commands.keep(token_counter(name));
  const std::string& queue = commands.keep(fair_queue(name));
  const std::string& deadlines = commands.keep(fair_deadlines(name));
  commands.add({"TYPE", n});
  commands.add({"PTTL", n});
  commands.add({"HLEN", n});
  commands.add({"HSCAN", n, "0", "COUNT", kFieldSample});
  commands.add({"HGET", n, "mode"});
  commands.add({"GET", token});
  commands.add({"LLEN", queue});
  commands.add({"LRANGE", queue, "0", kListedRange});
  commands.add({"ZCARD", deadlines});
  commands.add({"ZRANGE", deadlines, "0", kListedRange, "WITHSCORES"});
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

bool all_digits(const std::string& text, size_t from, size_t to) {
  if (from >= to) return false;
  for (size_t i = from; i < to; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

int64_t integer_of(const Reply& reply) {
  if (reply.type == Reply::Type::Integer) return reply.integer;
  if (reply.type == Reply::Type::String || reply.type == Reply::Type::Status) {
    int64_t value = 0;
    if (parse_int(reply.str, INT64_MIN, INT64_MAX, &value) == ParseStatus::kOk) return value;
  }
  return 0;
}

// A reply the reads cannot do without: an error reply (other than WRONGTYPE, which only says
// the key is of another type) fails the call with the server's words.
void check(const Reply& reply, const std::string& name) {
  if (!reply.is_error() || reply.error.kind == RedisErrorKind::kWrongType) return;
  throw Error(reply.error.code, "reading the keys of lock " + printable(name) + ": " + reply.str);
}

// The fair queue's first entries with their deadlines (from ZRANGE ... WITHSCORES).
void parse_queue(const Reply& queue, const Reply& scored, LockInfo* info) {
  std::map<std::string, int64_t> deadlines;
  for (size_t i = 0; i + 1 < scored.elements.size(); i += 2) {
    deadlines[scored.elements[i].str] =
        static_cast<int64_t>(std::strtod(scored.elements[i + 1].str.c_str(), nullptr));
  }
  info->queue.reserve(queue.elements.size());
  for (const Reply& entry : queue.elements) {
    auto it = deadlines.find(entry.str);
    info->queue.push_back({entry.str, it == deadlines.end() ? -1 : it->second});
  }
}

// The owners of a lock hash from an HSCAN reply; false when a field or value is not one a lock
// has (then the hash is no lock).
bool parse_owners(const Reply& scan, bool has_mode, LockInfo* info) {
  if (scan.elements.size() != 2) return true;
  const auto& fields = scan.elements[1].elements;
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    const std::string& field = fields[i].str;
    const std::string& value = fields[i + 1].str;
    if (field == "mode") {
      if (value != "read" && value != "write") return false;
      continue;
    }
    if (!is_owner_field(field) || !all_digits(value, 0, value.size())) return false;
    if (info->owners.size() < kMaxListed) {
      const bool writer = field.size() > 6 && field.compare(field.size() - 6, 6, ":write") == 0;
      info->owners.push_back(
          {field, integer_of(fields[i + 1]), has_mode ? (writer ? "write" : "read") : ""});
    }
  }
  return true;
}

// Fills `info` from the replies of add_reads (starting at `r`); false when one of them is a
// redirect (the slot moved while a listing ran: the key is found on its new master, or missed).
bool parse_reads(const Reply* r, const std::string& name, LockInfo* info) {
  for (int i = 0; i < kReadCount; ++i) {
    if (r[i].error.redirect.kind != Redirect::Kind::kNone) return false;
    check(r[i], name);
  }
  info->name = name;
  const std::string& type = r[kType].str;
  const bool has_token = r[kToken].type != Reply::Type::Nil;
  info->token = integer_of(r[kToken]);
  info->queue_length = integer_of(r[kQueueLength]);
  parse_queue(r[kQueue], r[kDeadlines], info);
  const bool fair = info->queue_length > 0 || integer_of(r[kDeadlineCount]) > 0;
  if (type != "hash") {  // a free lock, or no lock
    info->ttl_ms = -2;
    info->kind = type != "none" ? FoundKind::NotALock
                 : fair         ? FoundKind::Fair
                 : has_token    ? FoundKind::Fenced
                                : FoundKind::Nothing;
    return true;
  }
  const bool has_mode = r[kMode].type == Reply::Type::String;
  if (!parse_owners(r[kFields], has_mode, info)) {
    *info = LockInfo{};
    info->name = name;
    info->kind = FoundKind::NotALock;
    return true;
  }
  info->locked = true;
  info->ttl_ms = integer_of(r[kPttl]);
  if (has_mode) info->mode = r[kMode].str;
  info->owner_count = integer_of(r[kHashLength]) - (has_mode ? 1 : 0);
  info->kind = has_mode    ? FoundKind::ReadWrite
               : fair      ? FoundKind::Fair
               : has_token ? FoundKind::Fenced
                           : FoundKind::Reentrant;
  return true;
}

// The channels a lock's waiters listen on.
std::vector<std::string> wake_up_channels(const LockInfo& info) {
  switch (info.kind) {
    case FoundKind::Reentrant:
    case FoundKind::Fenced:
      return {lock_channel(info.name)};
    case FoundKind::ReadWrite:
      return {rw_channel(info.name)};
    case FoundKind::Fair: {
      std::vector<std::string> channels;
      for (const LockWaiter& waiter : info.queue) {
        channels.push_back(lock_channel(info.name) + ":" + waiter.owner);
      }
      return channels;
    }
    default:
      return {};
  }
}

// Adds the counts of a PUBSUB NUMSUB / SHARDNUMSUB reply to `counts` by channel.
void add_counts(const Reply& reply, std::map<std::string, int64_t>* counts) {
  if (reply.is_error()) {
    throw Error(reply.error.code, "counting the subscribers of lock channels: " + reply.str);
  }
  for (size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    (*counts)[reply.elements[i].str] += integer_of(reply.elements[i + 1]);
  }
}

std::string address_of(const Endpoint& endpoint) {
  return endpoint.host + ":" + std::to_string(endpoint.port);
}

// Sets each lock's subscribers: one PUBSUB NUMSUB of every channel of `locks`. Classic pub/sub
// on a cluster counts only the node's own subscribers, so every master is asked and the counts
// added; sharded pub/sub is asked on the node of the channels' slot (`node`, or found per lock
// when empty).
void count_subscribers(Client& client, std::vector<LockInfo>& locks, const std::string& node,
                       Deadline deadline) {
  Commands commands;
  std::vector<std::vector<std::string>> channels;
  channels.reserve(locks.size());
  for (const LockInfo& info : locks) channels.push_back(wake_up_channels(info));
  auto* cluster = dynamic_cast<ClusterTransport*>(&client.transport());
  const bool sharded = client.transport().sharded_pubsub();
  std::map<std::string, int64_t> counts;
  if (cluster != nullptr && sharded) {
    // The channels of one lock share its slot; ask each lock's node (one per page in a walk).
    std::map<std::string, Commands> by_node;
    for (size_t i = 0; i < locks.size(); ++i) {
      if (channels[i].empty()) continue;
      const std::string where =
          node.empty() ? address_of(cluster->node_of(key_slot(channels[i].front()))) : node;
      Commands& c = by_node[where];
      Args args{"PUBSUB", "SHARDNUMSUB"};
      for (const std::string& channel : channels[i]) args.push_back(c.keep(channel));
      c.add(std::move(args));
    }
    for (auto& [where, c] : by_node) {
      for (const Reply& reply : cluster->run_batch_at(where, c.list(), deadline)) {
        add_counts(reply, &counts);
      }
    }
  } else {
    Args args{"PUBSUB", "NUMSUB"};
    for (const auto& list : channels) {
      for (const std::string& channel : list) args.push_back(commands.keep(channel));
    }
    if (args.size() > 2) {
      commands.add(std::move(args));
      if (cluster != nullptr) {
        for (const std::string& master : cluster->master_addresses()) {
          for (const Reply& reply : cluster->run_batch_at(master, commands.list(), deadline)) {
            add_counts(reply, &counts);
          }
        }
      } else {
        for (const Reply& reply : client.transport().run_batch(commands.list(), deadline)) {
          add_counts(reply, &counts);
        }
      }
    }
  }
  for (size_t i = 0; i < locks.size(); ++i) {
    locks[i].subscribers = 0;
    for (const std::string& channel : channels[i]) locks[i].subscribers += counts[channel];
  }
}

bool parse_cursor_number(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 20 || !all_digits(text, 0, text.size())) return false;
  errno = 0;
  *out = std::strtoull(text.c_str(), nullptr, 10);
  return errno == 0;
}

// Where one step of a walk scans: the master's index (cluster) and its SCAN cursor.
struct WalkPlace {
  size_t node_index = 0;
  uint64_t node_cursor = 0;
};

// Reads a cursor scan_locks made: "<cursor>" on one server, "0" or "<index>,<cursor>" on a
// cluster. Throws Error(kInvalid) for anything else.
WalkPlace parse_walk_cursor(const std::string& cursor, bool cluster) {
  WalkPlace place;
  const size_t comma = cursor.find(',');
  bool valid;
  if (cluster && comma != std::string::npos) {
    valid = comma < 6 && all_digits(cursor, 0, comma) &&
            parse_cursor_number(cursor.substr(comma + 1), &place.node_cursor);
    if (valid) place.node_index = std::strtoul(cursor.substr(0, comma).c_str(), nullptr, 10);
  } else {
    // A cluster walk starts at "0"; every later cluster cursor names its master.
    valid = parse_cursor_number(cursor, &place.node_cursor) && (!cluster || place.node_cursor == 0);
  }
  if (!valid) {
    throw Error(kInvalid, "cursor " + printable(cursor) +
                              " was not made by a listing of this deployment (start with \"0\")");
  }
  return place;
}

// The cursor after a step that answered `next` at `place` (of `masters` masters; 0 = one server).
std::string next_walk_cursor(const WalkPlace& place, const std::string& next, size_t masters) {
  if (masters == 0) return next;
  if (next != "0") return std::to_string(place.node_index) + "," + next;
  if (place.node_index + 1 < masters) return std::to_string(place.node_index + 1) + ",0";
  return "0";
}

// A SCAN reply the walk can use, or the failure it is (Error).
void check_scan_reply(const Reply& step, const std::string& node) {
  const std::string where = node.empty() ? "" : " on " + node;
  if (step.is_error()) {
    if (step.str.find("syntax error") != std::string::npos) {  // no TYPE option before Redis 6
      throw Error(kUnsupported, "listing locks needs Redis 6 or newer (SCAN ... TYPE); SCAN" +
                                    where + " answered: " + step.str);
    }
    throw Error(step.error.code, "SCAN" + where + ": " + step.str);
  }
  if (step.elements.size() != 2 || step.elements[1].type != Reply::Type::Array) {
    throw Error(kRedis, "SCAN" + where + " gave a reply of an unexpected shape");
  }
}

}  // namespace

bool is_owner_field(const std::string& field) {
  // <8>-<4>-<4>-<4>-<12> hex digits, ':', digits, optionally ":write"
  static const int kGroups[] = {8, 4, 4, 4, 12};
  size_t at = 0;
  for (int g = 0; g < 5; ++g) {
    for (int i = 0; i < kGroups[g]; ++i, ++at) {
      if (at >= field.size() || !is_hex(field[at])) return false;
    }
    const char separator = g < 4 ? '-' : ':';
    if (at >= field.size() || field[at] != separator) return false;
    ++at;
  }
  size_t end = field.size();
  if (end - at > 6 && field.compare(end - 6, 6, ":write") == 0) end -= 6;
  return all_digits(field, at, end);
}

LockInfo inspect_lock(Client& client, const std::string& name) {
  Commands commands;
  add_reads(commands, name);
  const Deadline deadline = client.transport().deadline_from_now();
  // Every key of a name shares its slot, so one batch reaches the right node of a cluster.
  const std::vector<Reply> replies = client.transport().run_batch(commands.list(), deadline);
  std::vector<LockInfo> one(1);
  if (replies.size() != kReadCount || !parse_reads(replies.data(), name, &one[0])) {
    throw Error(kConn, "the keys of lock " + printable(name) +
                           " moved to another cluster node while being read; try again");
  }
  count_subscribers(client, one, "", deadline);
  return std::move(one[0]);
}

LockPage scan_locks(Client& client, const std::string& cursor, const std::string& pattern,
                    int64_t count) {
  auto* cluster = dynamic_cast<ClusterTransport*>(&client.transport());
  const WalkPlace place = parse_walk_cursor(cursor, cluster != nullptr);
  std::vector<std::string> masters;
  if (cluster != nullptr) {
    masters = cluster->master_addresses();
    if (place.node_index >= masters.size()) {
      throw Error(kInvalid, "cursor " + printable(cursor) + " names master " +
                                std::to_string(place.node_index) + " but the cluster has " +
                                std::to_string(masters.size()) + " now");
    }
  }
  const std::string node = cluster != nullptr ? masters[place.node_index] : "";
  const Deadline deadline = client.transport().deadline_from_now();
  auto run = [&](const std::vector<Args>& list) {
    return cluster != nullptr ? cluster->run_batch_at(node, list, deadline)
                              : client.transport().run_batch(list, deadline);
  };

  const std::string cursor_text = std::to_string(place.node_cursor);
  const std::string count_text = std::to_string(count > 0 ? count : 1000);
  Args scan{"SCAN", cursor_text};
  if (!pattern.empty()) scan.insert(scan.end(), {"MATCH", pattern});
  scan.insert(scan.end(), {"COUNT", count_text, "TYPE", "hash"});
  const Reply step = run({scan}).front();
  check_scan_reply(step, node);

  Commands commands;
  const auto& keys = step.elements[1].elements;
  for (const Reply& key : keys) add_reads(commands, key.str);
  LockPage page;
  if (!keys.empty()) {
    const std::vector<Reply> replies = run(commands.list());
    for (size_t i = 0; i < keys.size(); ++i) {
      LockInfo info;
      if (!parse_reads(&replies[i * kReadCount], keys[i].str, &info)) continue;
      if (info.kind == FoundKind::NotALock || info.kind == FoundKind::Nothing) continue;
      page.locks.push_back(std::move(info));
    }
    count_subscribers(client, page.locks, node, deadline);
  }
  page.next_cursor = next_walk_cursor(place, step.elements[0].str, masters.size());
  return page;
}

}  // namespace rlock::core
