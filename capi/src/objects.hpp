// The objects behind the C ABI's handles and the helpers every entry point file uses to reach
// them: a handle is decoded by Pinned, a new object gets its handle from publish.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "handles.hpp"
#include "rlock/core/client.hpp"
#include "rlock/core/election.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/lock_group.hpp"
#include "rlock/core/semaphore.hpp"
#include "rlock/rlock.h"

namespace core = rlock::core;

// What the handles stand for. The public types (rlock_client, ...) are never defined: their
// pointer values are handle-table entries (handles.hpp), decoded by Pinned below.
struct ClientObj {
  std::shared_ptr<core::Client> core;
};

struct LockObj {
  std::shared_ptr<core::Lock> core;  // shared with the groups it is a member of
};

struct MultiObj {
  std::shared_ptr<core::LockGroup> core;  // shared with asynchronous calls in progress
};

struct TokenObj {
  std::shared_ptr<core::CancelSet> set = std::make_shared<core::CancelSet>();  // shared likewise
};

struct SemaphoreObj {
  std::shared_ptr<core::Semaphore> core;  // shared with asynchronous calls in progress
};

struct LatchObj {
  std::shared_ptr<core::Latch> core;
};

struct ElectionObj {
  std::shared_ptr<core::Election> core;
};

namespace rlock::capi {

inline int invalid(const char* what) { return core::fail(core::kInvalid, what); }

inline int check_version(unsigned int version, unsigned int known, const char* what) {
  if (version == 0 || version > known) {
    return core::fail(core::kVersion, std::string(what) + " version " + std::to_string(version) +
                                          " is not known to this library (knows 1.." +
                                          std::to_string(known) + ")");
  }
  return RLOCK_OK;
}

// The name of a new object (`what`: "lock", "semaphore", ...): not NULL, and within the client's
// max_name_len, checked before the name is copied.
inline int check_name(const core::ClientConfig& config, const char* name, size_t name_len,
                      const char* what) {
  if (name == nullptr) return invalid("name must not be NULL");
  const size_t limit = config.max_name_len;
  if (name_len > limit) {
    return invalid((std::string(what) + " name is " + std::to_string(name_len) +
                    " bytes, longer than the limit of " + std::to_string(limit) +
                    " (client option max_name_len)")
                       .c_str());
  }
  return RLOCK_OK;
}

template <class T>
struct Traits;
template <>
struct Traits<ClientObj> {
  using Handle = rlock_client;
  static constexpr Kind kind = Kind::Client;
  static constexpr const char* type = "rlock_client";
};
template <>
struct Traits<LockObj> {
  using Handle = rlock_lock;
  static constexpr Kind kind = Kind::Lock;
  static constexpr const char* type = "rlock_lock";
};
template <>
struct Traits<MultiObj> {
  using Handle = rlock_multi;
  static constexpr Kind kind = Kind::Multi;
  static constexpr const char* type = "rlock_multi";
};
template <>
struct Traits<SemaphoreObj> {
  using Handle = rlock_semaphore;
  static constexpr Kind kind = Kind::Semaphore;
  static constexpr const char* type = "rlock_semaphore";
};
template <>
struct Traits<LatchObj> {
  using Handle = rlock_latch;
  static constexpr Kind kind = Kind::Latch;
  static constexpr const char* type = "rlock_latch";
};
template <>
struct Traits<ElectionObj> {
  using Handle = rlock_election;
  static constexpr Kind kind = Kind::Election;
  static constexpr const char* type = "rlock_election";
};
template <>
struct Traits<TokenObj> {
  using Handle = rlock_cancel_token;
  static constexpr Kind kind = Kind::Token;
  static constexpr const char* type = "rlock_cancel_token";
};

// Stores a new object in the handle table; its handle, or throws bad_alloc (-> RLOCK_ENOMEM).
template <class T>
typename Traits<T>::Handle* publish(std::unique_ptr<T> object) {
  uintptr_t h = Handles::instance().add(Traits<T>::kind, object.get(),
                                        [](void* p) { delete static_cast<T*>(p); });
  if (h == 0) throw std::bad_alloc();  // every slot in use
  (void)object.release();              // the table owns it now
  // NOLINTNEXTLINE(performance-no-int-to-ptr): a handle is a checked table key, never an address
  return reinterpret_cast<typename Traits<T>::Handle*>(h);
}

// The object behind a handle, kept alive for the scope (a concurrent free only marks it dead).
template <class T>
class Pinned {
 public:
  explicit Pinned(const typename Traits<T>::Handle* handle)
      : handle_(handle),
        slot_(handle == nullptr ? nullptr
                                : Handles::instance().pin(reinterpret_cast<uintptr_t>(handle),
                                                          Traits<T>::kind, &why_)) {}
  ~Pinned() {
    if (slot_ != nullptr) Handles::instance().unpin(slot_);
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;

  explicit operator bool() const { return slot_ != nullptr; }
  T* operator->() const { return static_cast<T*>(slot_->object); }
  // Frees the handle: false if another free got there first.
  bool kill() { return Handles::kill(slot_); }
  // Why the handle was refused: RLOCK_EFORKED for one made before fork() in the parent,
  // RLOCK_EBADHANDLE otherwise; the message names the argument and the handle's type.
  int bad(const char* what) const {
    char value[32];
    std::snprintf(value, sizeof value, "%p", static_cast<const void*>(handle_));
    if (why_ == Handles::Pin::Forked) {
      return core::fail(core::kForked, std::string(what) + " (" + value + ") is an " +
                                           Traits<T>::type +
                                           " handle made before fork() in a parent process; "
                                           "make a new client in the child");
    }
    return core::fail(core::kBadHandle, std::string(what) + " (" + value + ") is not a live " +
                                            Traits<T>::type +
                                            " handle: it was freed, or never made by rlock");
  }

 private:
  const typename Traits<T>::Handle* handle_;
  Handles::Pin why_ = Handles::Pin::Bad;
  Handles::Slot* slot_;
};

// The int a caller stored in an enum-typed field. C lets any int reach such a field; loading an
// out-of-range value as the C++ enum type would be undefined, so it is copied out as an int.
template <typename Enum>
int raw_enum(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int), "rlock.h enums have the size of an int");
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

}  // namespace rlock::capi
