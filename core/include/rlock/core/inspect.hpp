// The operator's view of locks: what the Redisson layouts of docs/protocol.md hold for a name,
// and a bounded walk over a server (or every master of a cluster) finding the locks in it.
// Reads only; never writes a key and never runs a lock script.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rlock/core/client.hpp"

namespace rlock::core {

// What a name's keys look like. Spin and non-reentrant locks share the reentrant layout (a
// non-reentrant fair lock the fair one), and a fair lock with an empty queue looks like a
// reentrant one: the keys cannot tell them apart.
enum class FoundKind {
  Nothing = 0,    // no key of any layout
  Reentrant = 1,  // the lock hash alone (reentrant, spin or non-reentrant)
  Fenced = 2,     // the lock hash and a token counter
  Fair = 3,       // a fair queue or deadline set (with or without the hash)
  ReadWrite = 4,  // the hash has a `mode` field
  NotALock = 5,   // the key exists but is no lock: another type, or fields no lock has
  Semaphore = 6,  // a permit-expirable semaphore with permits held ("{N}:timeout")
  Counter = 7,    // N holds an integer and nothing else: a plain semaphore, a latch, a counter
};

// Who an owner is, from its client's holder record (Holds::set_holder_record), when the
// record exists: a Redisson JVM, a caller-given owner id or a client whose record could not be
// written has none. `since_ms` is -1 for a hold the record does not list (yet): holds are
// listed from one second old on.
struct HolderInfo {
  bool known = false;
  std::string host;
  int64_t pid = 0;
  std::string command;
  int64_t started_ms = -1;  // the client's start, epoch ms
  int64_t since_ms = -1;    // the hold's first acquire, epoch ms
};

struct LockOwner {
  std::string field;  // "<client-id>:<thread-id>", with ":write" for a writer
  int64_t holds = 0;
  std::string mode;  // read-write locks: "read" or "write"; empty for the other kinds
  HolderInfo holder;
};

struct LockWaiter {
  std::string owner;
  int64_t deadline_ms = -1;  // the place's deadline (epoch ms); -1 when not in the deadline set
};

struct LockInfo {
  std::string name;
  FoundKind kind = FoundKind::Nothing;
  bool locked = false;            // the lock hash exists
  int64_t ttl_ms = -2;            // PTTL of the hash: -1 no expiry, -2 not locked
  std::string mode;               // the hash's `mode` field ("read", "write") or empty
  int64_t owner_count = 0;        // owner fields in the hash (all of them, listed or not)
  std::vector<LockOwner> owners;  // at most kMaxListed, in the server's order
  int64_t queue_length = 0;       // fair queue length
  std::vector<LockWaiter> queue;  // its first kMaxListed entries, head first
  int64_t subscribers = 0;        // subscribers of the wake-up channel(s); for a fair lock, of the
                                  // listed queued owners' channels
  int64_t token = 0;              // last fencing token handed out; 0 when there is no counter
  // Semaphore and Counter only:
  int64_t permits_available = 0;      // N's value
  int64_t permits_held = 0;           // permit ids in "{N}:timeout", lapsed ones too
  int64_t earliest_deadline_ms = -1;  // the lowest lease deadline; -1 when none has a lease
};

// Owners and queue entries listed per lock at most; the counts are always complete.
constexpr size_t kMaxListed = 100;

// One step of a listing: the locks found and where the next step starts.
struct LockPage {
  std::vector<LockInfo> locks;
  std::string next_cursor;  // "0" when the walk is complete
};

// Whether `field` has the shape of an owner field: a UUID, ':', decimal digits, and for a
// writer ":write".
bool is_owner_field(const std::string& field);

// Reads every key of `name`'s layouts: one round trip for the keys, one more for the
// subscriber counts, and one for the listed owners' holder records. Throws Error (kConn, kRedis,
// ...) when the server fails.
LockInfo inspect_lock(Client& client, const std::string& name);

// One bounded step of the walk: SCAN `cursor` MATCH `pattern` COUNT `count` TYPE hash on one
// master, then the layouts of the hashes found (a round trip per 200). Hashes that are not
// locks are left out. Once the hashes of a master are done, a second pass scans its sorted sets
// named "*:timeout" for permit-expirable semaphores with permits held (their names are matched
// against `pattern` here, as SCAN would). Start with cursor "0"; the cursor names the pass
// ("s<cursor>" for the second) and on a cluster the master too ("<index>,<cursor>", masters
// ordered by address), so a walk visits every master once.
// Throws Error(kInvalid) for a cursor this function did not make.
LockPage scan_locks(Client& client, const std::string& cursor, const std::string& pattern,
                    int64_t count);

}  // namespace rlock::core
