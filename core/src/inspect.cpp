#include "rlock/core/inspect.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <utility>

#include "rlock/core/cluster.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/names.hpp"
#include "rlock/core/parse.hpp"

namespace rlock::core {
namespace {

// Fields sampled per hash: enough to see every field of a small (listpack) hash, which every
// lock is; a big hash is judged by its first HSCAN step, so one key never costs more.
constexpr const char* kFieldSample = "128";
constexpr const char* kListedRange = "99";  // kMaxListed - 1, for LRANGE and ZRANGE
// Names whose keys one round trip of a walk reads (13 commands each): a page of SCAN COUNT 1000
// takes several, each well within a command timeout even on a slow link.
constexpr size_t kNamesPerBatch = 200;

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
  kValue,
  kPermitCount,
  kFirstPermit,
  kReadCount
};

// The deadline Redisson gives a permit taken without a lease (Long.MAX_VALUE / 10000).
constexpr int64_t kNoLeaseScore = 922337203685477;

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
  const std::string& permits = commands.keep(permit_deadlines(name));
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
  commands.add({"GET", n});
  commands.add({"ZCARD", permits});
  commands.add({"ZRANGE", permits, "0", "0", "WITHSCORES"});
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
          {field, integer_of(fields[i + 1]), has_mode ? (writer ? "write" : "read") : "", {}});
    }
  }
  return true;
}

// Whether `id` has the shape of a permit id: 16 bytes (Redisson 4 and rlock), or their 32 hex
// digits (older Redisson).
bool is_permit_id(const std::string& id) {
  if (id.size() == 16) return true;
  if (id.size() != 32) return false;
  for (char c : id) {
    if (!is_hex(c)) return false;
  }
  return true;
}

// A number in a string reply, or false when the reply is no integer.
bool integer_text(const Reply& reply, int64_t* out) {
  return reply.type == Reply::Type::String &&
         parse_int(reply.str, INT64_MIN, INT64_MAX, out) == ParseStatus::kOk;
}

// The semaphore reading of a name that holds no hash: Semaphore when its permit set holds
// permit ids, Counter when N is an integer and nothing else; false when neither.
bool parse_semaphore(const Reply* r, const std::string& type, LockInfo* info) {
  int64_t value = 0;
  const bool counter = type == "string" && integer_text(r[kValue], &value);
  if (!counter && type != "none") return false;
  const Reply& first = r[kFirstPermit];
  const bool held = integer_of(r[kPermitCount]) > 0 && first.type == Reply::Type::Array &&
                    first.elements.size() == 2 && is_permit_id(first.elements[0].str);
  if (!held && !counter) return false;
  info->kind = held ? FoundKind::Semaphore : FoundKind::Counter;
  info->permits_available = value;
  if (held) {
    info->permits_held = integer_of(r[kPermitCount]);
    const auto score = static_cast<int64_t>(std::strtod(first.elements[1].str.c_str(), nullptr));
    info->earliest_deadline_ms = score >= kNoLeaseScore ? -1 : score;
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
  if (type != "hash") {  // a free lock, a semaphore, or no lock
    info->ttl_ms = -2;
    if (parse_semaphore(r, type, info)) return true;
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
    case FoundKind::Semaphore:
      return {semaphore_channel(info.name)};
    case FoundKind::Counter: {
      // A latch's channel leaves N's slot when N has a "{tag}": then it cannot be counted in
      // the same (sharded) request, and a cluster refuses such a latch anyway.
      std::vector<std::string> channels{semaphore_channel(info.name)};
      std::string latch = latch_channel(info.name);
      if (key_slot(latch) == key_slot(channels[0])) channels.push_back(std::move(latch));
      return channels;
    }
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

// Where one step of a walk scans: the master's index (cluster), the pass (the hashes of locks,
// then the sorted sets of semaphores) and its SCAN cursor.
struct WalkPlace {
  size_t node_index = 0;
  bool semaphores = false;
  uint64_t node_cursor = 0;
};

// Reads the part of a cursor after the master's index: "<cursor>" or "s<cursor>".
bool parse_pass_cursor(const std::string& text, WalkPlace* place) {
  place->semaphores = !text.empty() && text[0] == 's';
  return parse_cursor_number(place->semaphores ? text.substr(1) : text, &place->node_cursor);
}

// Reads a cursor scan_locks made: "[s]<cursor>" on one server, "0" or "<index>,[s]<cursor>" on
// a cluster. Throws Error(kInvalid) for anything else.
WalkPlace parse_walk_cursor(const std::string& cursor, bool cluster) {
  WalkPlace place;
  const size_t comma = cursor.find(',');
  bool valid;
  if (cluster && comma != std::string::npos) {
    valid = comma < 6 && all_digits(cursor, 0, comma) &&
            parse_pass_cursor(cursor.substr(comma + 1), &place);
    if (valid) place.node_index = std::strtoul(cursor.substr(0, comma).c_str(), nullptr, 10);
  } else if (cluster) {
    valid = cursor == "0";  // a cluster walk starts at "0"; every later cursor names its master
  } else {
    valid = parse_pass_cursor(cursor, &place);
  }
  if (!valid) {
    throw Error(kInvalid, "cursor " + printable(cursor) +
                              " was not made by a listing of this deployment (start with \"0\")");
  }
  return place;
}

// The cursor after a step that answered `next` at `place` (of `masters` masters; 0 = one
// server): the same pass goes on, or the semaphore pass of the same master starts, or the next
// master's first pass.
std::string next_walk_cursor(const WalkPlace& place, const std::string& next, size_t masters) {
  std::string pass;
  size_t index = place.node_index;
  if (next != "0") {
    pass = (place.semaphores ? "s" : "") + next;
  } else if (!place.semaphores) {
    pass = "s0";
  } else if (masters > 0 && index + 1 < masters) {
    pass = "0";
    ++index;
  } else {
    return "0";
  }
  return masters == 0 ? pass : std::to_string(index) + "," + pass;
}

// Whether `c` is in the class "[...]" that starts after `*p`'s '['; moves `*p` past its ']'.
bool class_has(const char** p, const char* p_end, char c) {
  const char* at = *p;
  const bool negate = at < p_end && *at == '^';
  if (negate) ++at;
  bool found = false;
  while (at < p_end && *at != ']') {
    if (*at == '\\' && at + 1 < p_end) {
      found = found || at[1] == c;
      at += 2;
    } else if (at + 2 < p_end && at[1] == '-') {
      auto lo = static_cast<unsigned char>(at[0]), hi = static_cast<unsigned char>(at[2]);
      if (lo > hi) std::swap(lo, hi);
      const auto u = static_cast<unsigned char>(c);
      found = found || (u >= lo && u <= hi);
      at += 3;
    } else {
      found = found || *at == c;
      ++at;
    }
  }
  *p = at < p_end ? at + 1 : at;  // past the ']'
  return found != negate;
}

// Whether the pattern element at `*p` (not '*') matches `c`; moves `*p` past it.
bool element_matches(const char** p, const char* p_end, char c) {
  const char* at = *p;
  if (*at == '?') {
    *p = at + 1;
    return true;
  }
  if (*at == '[') {
    *p = at + 1;
    return class_has(p, p_end, c);
  }
  if (*at == '\\' && at + 1 < p_end) ++at;
  *p = at + 1;
  return *at == c;
}

// Whether `text` matches the glob `pattern` as SCAN MATCH judges it: '*', '?', "[...]" with
// '^' and ranges, and a backslash quoting the next character. Every element but '*' matches
// one character, so on a mismatch only the last '*' needs to take one more: O(pattern * text).
bool glob_match(const char* p, const char* p_end, const char* s, const char* s_end) {
  const char* star = nullptr;  // the pattern just after the last '*' seen
  const char* star_text = s;   // where the text stood when that '*' matched nothing
  while (s < s_end) {
    if (p < p_end && *p == '*') {
      star = ++p;
      star_text = s;
      continue;
    }
    const char* next = p;
    if (p < p_end && element_matches(&next, p_end, *s)) {
      p = next;
      ++s;
    } else if (star != nullptr) {
      p = star;
      s = ++star_text;
    } else {
      return false;
    }
  }
  while (p < p_end && *p == '*') ++p;
  return p == p_end;
}

bool glob_match(const std::string& pattern, const std::string& text) {
  return glob_match(pattern.data(), pattern.data() + pattern.size(), text.data(),
                    text.data() + text.size());
}

// `text` as a glob that matches only itself.
std::string glob_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The keys a listing for `pattern` walks: with a key_prefix only the client's own names (which
// the listing gives back without it). Empty: every key.
std::string key_pattern(const ClientConfig& config, const std::string& pattern) {
  if (config.key_prefix.empty()) return pattern;
  return glob_escape(config.key_prefix) + (pattern.empty() ? "*" : pattern);
}

// The semaphore whose permit set is `key`, or false when `key` is no name's "{N}:timeout".
bool semaphore_of_key(const std::string& key, std::string* name) {
  static const std::string kSuffix = ":timeout";
  if (key.size() <= kSuffix.size() ||
      key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return false;
  }
  std::string base = key.substr(0, key.size() - kSuffix.size());
  // "{N}" for a name without braces; the name itself when it has a '{'.
  if (base.size() >= 2 && base.front() == '{' && base.back() == '}' &&
      base.find('{', 1) == std::string::npos) {
    base = base.substr(1, base.size() - 2);
  }
  if (permit_deadlines(base) != key) return false;
  *name = std::move(base);
  return true;
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

// Fills the listed owners' holder info from their clients' records: one HMGET per owner, in
// round trips of kNamesPerBatch (per slot on a cluster, where each record has its client's).
// Best effort: a record that cannot be read (refused by an ACL, say) leaves the owner unknown.
static void read_holders(Client& client, std::vector<LockInfo>& locks) {
  struct Want {
    LockOwner* owner;
    std::string key;
    std::string since;  // the hold's field
  };
  std::map<int, std::vector<Want>> by_slot;
  const bool cluster = client.config().topology == Topology::Cluster;
  for (LockInfo& info : locks) {
    for (LockOwner& owner : info.owners) {
      const size_t colon = owner.field.find(':');
      if (colon == std::string::npos || !is_owner_field(owner.field)) continue;
      std::string key = holder_record_key(client.config(), owner.field.substr(0, colon));
      const int slot = cluster ? key_slot(key) : 0;
      by_slot[slot].push_back(
          {&owner, std::move(key), Holds::since_field(owner.field.substr(colon + 1), info.name)});
    }
  }
  for (auto& [slot, wants] : by_slot) {
    for (size_t from = 0; from < wants.size(); from += kNamesPerBatch) {
      const size_t to = std::min(wants.size(), from + kNamesPerBatch);
      std::vector<Args> commands;
      for (size_t i = from; i < to; ++i) {
        commands.push_back(
            {"HMGET", wants[i].key, "host", "pid", "command", "started", wants[i].since});
      }
      std::vector<Reply> replies;
      try {
        replies = client.transport().run_batch(commands, client.transport().deadline_from_now());
      } catch (const Error&) {
        continue;
      }
      for (size_t i = from; i < to && i - from < replies.size(); ++i) {
        const Reply& r = replies[i - from];
        if (r.is_error() || r.elements.size() != 5 || r.elements[0].is_nil()) continue;
        HolderInfo& h = wants[i].owner->holder;
        h.known = true;
        h.host = r.elements[0].str;
        int64_t value = 0;
        if (integer_text(r.elements[1], &value)) h.pid = value;
        h.command = r.elements[2].str;
        if (integer_text(r.elements[3], &value)) h.started_ms = value;
        if (integer_text(r.elements[4], &value)) h.since_ms = value;
      }
    }
  }
}

LockInfo inspect_lock(Client& client, const std::string& given_name) {
  const std::string name = mapped_name(client.config(), given_name);
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
  read_holders(client, one);
  one[0].name = given_name;
  return std::move(one[0]);
}

LockPage scan_locks(Client& client, const std::string& cursor, const std::string& given_pattern,
                    int64_t count) {
  const std::string pattern = key_pattern(client.config(), given_pattern);
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
  // Each round trip gets a command timeout of its own: a page's reads are several.
  auto run = [&](const std::vector<Args>& list) {
    const Deadline deadline = client.transport().deadline_from_now();
    return cluster != nullptr ? cluster->run_batch_at(node, list, deadline)
                              : client.transport().run_batch(list, deadline);
  };

  const std::string cursor_text = std::to_string(place.node_cursor);
  const std::string count_text = std::to_string(count > 0 ? count : 1000);
  Args scan{"SCAN", cursor_text};
  if (place.semaphores) {
    scan.insert(scan.end(), {"MATCH", "*:timeout", "COUNT", count_text, "TYPE", "zset"});
  } else {
    if (!pattern.empty()) scan.insert(scan.end(), {"MATCH", pattern});
    scan.insert(scan.end(), {"COUNT", count_text, "TYPE", "hash"});
  }
  const Reply step = run({scan}).front();
  check_scan_reply(step, node);

  // The names to read: the hashes found, or the semaphores whose permit sets were found.
  std::vector<std::string> names;
  for (const Reply& key : step.elements[1].elements) {
    std::string name = key.str;
    if (place.semaphores &&
        (!semaphore_of_key(key.str, &name) || (!pattern.empty() && !glob_match(pattern, name)))) {
      continue;
    }
    names.push_back(std::move(name));
  }
  LockPage page;
  for (size_t from = 0; from < names.size(); from += kNamesPerBatch) {
    const size_t to = std::min(names.size(), from + kNamesPerBatch);
    Commands commands;
    for (size_t i = from; i < to; ++i) add_reads(commands, names[i]);
    const std::vector<Reply> replies = run(commands.list());
    for (size_t i = from; i < to; ++i) {
      LockInfo info;
      if (!parse_reads(&replies[(i - from) * kReadCount], names[i], &info)) continue;
      const bool lock = info.kind == FoundKind::Reentrant || info.kind == FoundKind::Fenced ||
                        info.kind == FoundKind::Fair || info.kind == FoundKind::ReadWrite;
      const bool wanted = place.semaphores ? info.kind == FoundKind::Semaphore : lock;
      if (wanted) page.locks.push_back(std::move(info));
    }
  }
  if (!page.locks.empty()) {
    count_subscribers(client, page.locks, node, client.transport().deadline_from_now());
    read_holders(client, page.locks);
  }
  for (LockInfo& info : page.locks) info.name = unmapped_name(client.config(), info.name);
  page.next_cursor = next_walk_cursor(place, step.elements[0].str, masters.size());
  return page;
}

}  // namespace rlock::core
