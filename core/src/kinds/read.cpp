// The read half of a read-write lock: hash N with field mode = "read" or "write", readers'
// fields "<owner>" = read count, each read hold k with its lease key
// "{N}:<owner>:rwlock_timeout:<k>"; wake-ups on redisson_rwlock:{N}. The scripts count the holds.
#include "kind.hpp"
#include "rlock/core/names.hpp"

namespace rlock::core::kinds {
namespace {

class Read : public Kind {
 public:
  explicit Read(const std::string& name) : Kind(name, rw_channel(name)) {}

  HoldLayout layout() const override { return HoldLayout::Read; }
  const char* fencing_unavailable() const override {
    return "fencing tokens are not available for read-write locks";
  }
  bool counts_holds_on_server() const override { return true; }

  // The owner's write field: a write holder may also take the read lock (a downgrade).
  Call acquire(const AcquireRequest& q) const override {
    return {&scripts::rw_read_acquire,
            {name_, read_lease_prefix(name_, q.base_owner)},
            {q.lease_ms, q.base_owner, q.base_owner + ":write"}};
  }

  Call release(const ReleaseRequest& q) const override {
    return {&scripts::rw_read_release,
            {name_, channel_, read_lease_prefix(name_, q.owner), hash_tagged(name_), q.latch},
            {q.owner, q.latch_ttl}};
  }

  // The read renewal script, with one owner.
  Call extend(const std::string& owner, const std::string& lease_ms) const override {
    return {&scripts::rw_read_renew, {name_, read_lease_prefix(name_, owner)}, {lease_ms, owner}};
  }

  // Adds to the owner's own read leases (the hash's PTTL is the longest reader's).
  Call extend_by(const std::string& owner, const std::string& add_ms,
                 const std::string& max_lease_ms) const override {
    return {&scripts::extend_by,
            {name_, read_lease_prefix(name_, owner)},
            {add_ms, owner, max_lease_ms}};
  }

  Call force_unlock() const override {
    return {&scripts::rw_force_unlock, {name_, channel_}, {"read"}};
  }

  // Takes back the owner's newest read hold, with its lease key, as its release would.
  std::optional<Call> undo_acquire(const std::string& owner, int64_t expected_count,
                                   int64_t /*lease_ms*/) const override {
    return Call{&scripts::rw_read_undo_acquire,
                {name_, channel_, read_lease_prefix(name_, owner), hash_tagged(name_)},
                {owner, std::to_string(expected_count)}};
  }

  // The renewal's one result: 1 renewed, else not held (read as -1).
  bool read_extend(const Reply& r, int64_t* out) const override {
    if (r.type != Reply::Type::Array || r.elements.size() != 1 ||
        r.elements[0].type != Reply::Type::Integer) {
      return false;
    }
    *out = r.elements[0].integer == 1 ? 1 : -1;
    return true;
  }
};

}  // namespace

std::unique_ptr<const Kind> make_read(const std::string& name) {
  return std::make_unique<Read>(name);
}

}  // namespace rlock::core::kinds
