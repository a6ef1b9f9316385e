#include "kind.hpp"

#include "rlock/core/error.hpp"

namespace rlock::core::kinds {
namespace {

bool is_int(const Reply& r) { return r.type == Reply::Type::Integer; }

// Replies are read only in the shapes core/scripts/*.lua return; anything else (a proxy's or a
// broken server's answer) is an unexpected reply, never a result.
bool acquire_shape(const Reply& r) {
  if (r.type != Reply::Type::Array || r.elements.size() < 2) return false;
  for (const Reply& e : r.elements) {
    if (!is_int(e)) return false;
  }
  const int64_t verdict = r.elements[0].integer;
  if (verdict == 1) return r.elements.size() == 3 && r.elements[1].integer >= 1;
  return (verdict == 0 || verdict == -1) && r.elements.size() == 2;
}

}  // namespace

Call Kind::extend(const std::string& owner, const std::string& lease_ms) const {
  return {&scripts::extend, {name_}, {lease_ms, owner}};
}

Call Kind::extend_by(const std::string& owner, const std::string& add_ms,
                     const std::string& max_lease_ms) const {
  return {&scripts::extend_by, {name_}, {add_ms, owner, max_lease_ms}};
}

std::optional<Call> Kind::undo_acquire(const std::string& owner, int64_t expected_count,
                                       int64_t lease_ms) const {
  return Call{&scripts::undo_acquire,
              {name_, channel_},
              {owner, std::to_string(expected_count), std::to_string(lease_ms)}};
}

bool Kind::read_acquire(const Reply& reply, AcquireReply* out) const {
  if (!acquire_shape(reply)) return false;
  const std::vector<Reply>& e = reply.elements;
  if (e[0].integer == 1) {
    *out = {AcquireReply::Verdict::Granted, e[1].integer, e[2].integer, 0};
  } else if (e[0].integer == -1) {
    *out = {AcquireReply::Verdict::Refused, 0, 0, 0};
  } else {
    *out = {AcquireReply::Verdict::Taken, 0, 0, e[1].integer};
  }
  return true;
}

bool Kind::read_extend(const Reply& reply, int64_t* out) const {
  if (!is_int(reply)) return false;
  *out = reply.integer;
  return true;
}

std::unique_ptr<const Kind> make_kind(LockKind kind, const std::string& name, bool may_reenter) {
  if (!may_reenter && (kind == LockKind::Read || kind == LockKind::Write)) {
    throw Error(kInvalid, "owner_id is not available for read and write locks");
  }
  switch (kind) {
    case LockKind::Reentrant:
    case LockKind::Fenced:
    case LockKind::Spin:
    case LockKind::NonReentrant:
      return make_plain(kind, name, may_reenter);
    case LockKind::Fair:
    case LockKind::NonReentrantFair:
      return make_fair(kind, name, may_reenter);
    case LockKind::Read:
      return make_read(name);
    case LockKind::Write:
      return make_write(name);
  }
  throw Error(kInvalid, "lock kind " + std::to_string(static_cast<int>(kind)) + " is not known");
}

}  // namespace rlock::core::kinds
