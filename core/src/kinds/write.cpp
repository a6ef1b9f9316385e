// The write half of a read-write lock: the hash N of read.cpp, the writer's field
// "<owner>:write" = write count. The scripts count the holds.
#include "kind.hpp"
#include "rlock/core/names.hpp"

namespace rlock::core::kinds {
namespace {

class Write : public Kind {
 public:
  explicit Write(const std::string& name) : Kind(name, rw_channel(name)) {}

  std::string owner_field(const std::string& base_owner) const override {
    return base_owner + ":write";
  }
  HoldLayout layout() const override { return HoldLayout::Write; }
  const char* fencing_unavailable() const override {
    return "fencing tokens are not available for read-write locks";
  }
  bool counts_holds_on_server() const override { return true; }
  const char* refusal() const override {
    return "holds the read lock and asked for the write lock; upgrading is not supported "
           "(release the read lock first)";
  }

  // The plain owner lets the script see this owner's read holds (no upgrade: refused).
  Call acquire(const AcquireRequest& q) const override {
    return {&scripts::rw_write_acquire, {name_}, {q.lease_ms, q.owner, q.base_owner}};
  }

  Call release(const ReleaseRequest& q) const override {
    return {
        &scripts::rw_write_release, {name_, channel_, q.latch}, {q.lease_ms, q.owner, q.latch_ttl}};
  }

  Call force_unlock() const override {
    return {&scripts::rw_force_unlock, {name_, channel_}, {"write"}};
  }

  std::optional<Call> undo_acquire(const std::string& owner, int64_t expected_count,
                                   int64_t lease_ms) const override {
    return Call{&scripts::rw_write_undo_acquire,
                {name_, channel_},
                {owner, std::to_string(expected_count), std::to_string(lease_ms)}};
  }
};

}  // namespace

std::unique_ptr<const Kind> make_write(const std::string& name) {
  return std::make_unique<Write>(name);
}

}  // namespace rlock::core::kinds
