// The C ABI of semaphores and count-down latches (rlock.h, "Semaphores and count-down
// latches"). Every entry point is noexcept and goes through guarded().
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "guard.hpp"
#include "objects.hpp"
#include "rlock/core/semaphore.hpp"
#include "rlock/rlock.h"

using rlock::capi::check_name;
using rlock::capi::check_version;
using rlock::capi::guarded;
using rlock::capi::invalid;
using rlock::capi::Pinned;
using rlock::capi::publish;
using rlock::capi::raw_enum;

static_assert(RLOCK_LEASE_NONE == core::kLeaseNone, "special leases must agree");
static_assert(RLOCK_PERMIT_ID_SIZE == core::kPermitIdHexLen + 1, "permit id sizes must agree");
static_assert(RLOCK_MAX_PERMITS_PER_CALL == core::kMaxPermitsPerCall, "permit limits must agree");
static_assert(int{RLOCK_SEMAPHORE_PLAIN} == static_cast<int>(core::SemaphoreKind::Plain) &&
                  int{RLOCK_SEMAPHORE_EXPIRABLE} ==
                      static_cast<int>(core::SemaphoreKind::Expirable),
              "semaphore kinds must agree");

namespace {

// Reads permit options; `keep` holds the cancel token's set for an asynchronous call.
int read_permit_options(const rlock_permit_options* opts, core::PermitArgs* args,
                        std::shared_ptr<core::CancelSet>* keep, rlock_permit_id** ids) {
  *ids = nullptr;
  if (opts == nullptr) return RLOCK_OK;
  if (int rc = check_version(opts->version, RLOCK_PERMIT_OPTIONS_VERSION, "rlock_permit_options"))
    return rc;
  Pinned<TokenObj> cancel(opts->cancel);
  if (opts->cancel != nullptr && !cancel) return cancel.bad("opts->cancel");
  if (cancel) *keep = cancel->set;
  args->permits = opts->permits;
  args->wait_ms = opts->wait_ms;
  args->lease_ms = opts->lease_ms;
  args->cancel = keep->get();
  *ids = opts->ids;
  return RLOCK_OK;
}

// The ids out-argument must match the kind: room for every id of an expirable acquire, none
// for a plain one.
int check_ids_place(const core::Semaphore& sem, const rlock_permit_id* ids) {
  if (sem.kind() == core::SemaphoreKind::Expirable && ids == nullptr) {
    return invalid(
        "opts->ids must not be NULL for a permit-expirable semaphore: it receives "
        "one id per permit");
  }
  if (sem.kind() == core::SemaphoreKind::Plain && ids != nullptr) {
    return invalid("opts->ids must be NULL for a plain semaphore: its permits have no ids");
  }
  return RLOCK_OK;
}

void copy_ids(const std::vector<std::string>& from, rlock_permit_id* to) {
  for (size_t i = 0; i < from.size(); ++i) {
    std::memcpy(to[i].hex, from[i].c_str(), RLOCK_PERMIT_ID_SIZE);  // 32 digits and the NUL
  }
}

// Runs `body` on the semaphore behind `sem`, or fails naming the bad handle.
template <class F>
int with_semaphore(rlock_semaphore* sem, F&& body) {
  return guarded([&]() -> int {
    if (sem == nullptr) return invalid("sem must not be NULL");
    Pinned<SemaphoreObj> s(sem);
    if (!s) return s.bad("sem");
    return body(*s->core);
  });
}

template <class F>
int with_latch(rlock_latch* latch, F&& body) {
  return guarded([&]() -> int {
    if (latch == nullptr) return invalid("latch must not be NULL");
    Pinned<LatchObj> l(latch);
    if (!l) return l.bad("latch");
    return body(*l->core);
  });
}

}  // namespace

extern "C" {

// ---- Semaphore -------------------------------------------------------------------------------

int rlock_semaphore_options_init(rlock_semaphore_options* opts, unsigned int version) {
  return guarded([&]() -> int {
    if (opts == nullptr) return invalid("opts must not be NULL");
    if (int rc = check_version(version, RLOCK_SEMAPHORE_OPTIONS_VERSION, "rlock_semaphore_options"))
      return rc;
    std::memset(opts, 0, sizeof *opts);
    opts->version = version;
    opts->kind = RLOCK_SEMAPHORE_PLAIN;
    opts->lease_ms = RLOCK_LEASE_WATCHDOG;
    return RLOCK_OK;
  });
}

int rlock_semaphore_new_n(rlock_semaphore** out, rlock_client* client, const char* name,
                          size_t name_len, const rlock_semaphore_options* opts) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    if (int rc = check_name(c->core->config(), name, name_len, "semaphore")) return rc;
    core::SemaphoreOptions options;
    if (opts != nullptr) {
      if (int rc = check_version(opts->version, RLOCK_SEMAPHORE_OPTIONS_VERSION,
                                 "rlock_semaphore_options"))
        return rc;
      const int kind = raw_enum(opts->kind);
      if (kind != RLOCK_SEMAPHORE_PLAIN && kind != RLOCK_SEMAPHORE_EXPIRABLE) {
        return invalid(
            ("kind " + std::to_string(kind) + " is not an rlock_semaphore_kind").c_str());
      }
      options.kind = static_cast<core::SemaphoreKind>(kind);
      if (opts->lease_ms != 0) options.lease_ms = opts->lease_ms;
    }
    auto sem = std::make_unique<SemaphoreObj>();
    sem->core = std::make_shared<core::Semaphore>(c->core, std::string(name, name_len), options);
    *out = publish(std::move(sem));
    return RLOCK_OK;
  });
}

int rlock_semaphore_new(rlock_semaphore** out, rlock_client* client, const char* name,
                        const rlock_semaphore_options* opts) {
  return rlock_semaphore_new_n(out, client, name, name == nullptr ? 0 : std::strlen(name), opts);
}

void rlock_semaphore_free(rlock_semaphore* sem) {
  if (sem == nullptr) return;
  guarded([&]() -> int {
    Pinned<SemaphoreObj> s(sem);
    if (!s || !s.kill()) return s.bad("sem");
    s->core->close_waits();
    return RLOCK_OK;
  });
}

int rlock_semaphore_try_set_permits(int* out_set, rlock_semaphore* sem, int64_t permits,
                                    int64_t ttl_ms) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    bool set = false;
    const int rc = s.try_set_permits(permits, ttl_ms, &set);
    if (rc == RLOCK_OK && out_set != nullptr) *out_set = set ? 1 : 0;
    return rc;
  });
}

int rlock_semaphore_add_permits(int64_t* out_available, rlock_semaphore* sem, int64_t delta) {
  return with_semaphore(
      sem, [&](core::Semaphore& s) -> int { return s.add_permits(delta, out_available); });
}

int rlock_permit_options_init(rlock_permit_options* opts, unsigned int version) {
  return guarded([&]() -> int {
    if (opts == nullptr) return invalid("opts must not be NULL");
    if (int rc = check_version(version, RLOCK_PERMIT_OPTIONS_VERSION, "rlock_permit_options"))
      return rc;
    std::memset(opts, 0, sizeof *opts);
    opts->version = version;
    opts->permits = 1;
    opts->wait_ms = RLOCK_WAIT_FOREVER;
    return RLOCK_OK;
  });
}

int rlock_semaphore_acquire_ex(rlock_semaphore* sem, const rlock_permit_options* opts) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    core::PermitArgs args;
    std::shared_ptr<core::CancelSet> keep;
    rlock_permit_id* ids = nullptr;
    if (int rc = read_permit_options(opts, &args, &keep, &ids)) return rc;
    if (int rc = check_ids_place(s, ids)) return rc;
    std::vector<std::string> taken;
    const int rc = s.acquire(args, &taken);
    if (rc == RLOCK_OK && ids != nullptr) copy_ids(taken, ids);
    return rc;
  });
}

int rlock_semaphore_acquire(rlock_semaphore* sem, int64_t permits, int64_t wait_ms) {
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;
  opts.permits = permits;
  opts.wait_ms = wait_ms;
  return rlock_semaphore_acquire_ex(sem, &opts);
}

int rlock_semaphore_acquire_async(rlock_semaphore* sem, const rlock_permit_options* opts,
                                  rlock_completion_cb done, void* user) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    if (done == nullptr) return invalid("done must not be NULL");
    core::PermitArgs args;
    std::shared_ptr<core::CancelSet> keep;
    rlock_permit_id* ids = nullptr;
    if (int rc = read_permit_options(opts, &args, &keep, &ids)) return rc;
    if (int rc = check_ids_place(s, ids)) return rc;
    const int64_t permits = args.permits;
    return s.acquire_async(
        args, std::move(keep),
        [done, user, ids, permits](int status, const std::vector<std::string>& taken) {
          if (status == RLOCK_OK && ids != nullptr) copy_ids(taken, ids);
          done(user, status, status == RLOCK_OK ? permits : 0);
        });
  });
}

int rlock_semaphore_release(rlock_semaphore* sem, int64_t permits) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int { return s.release(permits); });
}

int rlock_semaphore_release_if_exists(int* out_released, rlock_semaphore* sem, int64_t permits) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    bool released = false;
    const int rc = s.release_if_exists(permits, &released);
    if (rc == RLOCK_OK && out_released != nullptr) *out_released = released ? 1 : 0;
    return rc;
  });
}

int rlock_semaphore_set_permits(int64_t* out_available, rlock_semaphore* sem, int64_t permits) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    return s.set_permits(permits, out_available, nullptr);
  });
}

int rlock_semaphore_available(int64_t* out_available, int64_t* out_held, int* out_exists,
                              rlock_semaphore* sem) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    bool exists = false;
    const int rc = s.available(out_available, out_held, &exists);
    if (rc == RLOCK_OK && out_exists != nullptr) *out_exists = exists ? 1 : 0;
    return rc;
  });
}

int rlock_semaphore_drain(int64_t* out_drained, rlock_semaphore* sem) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int { return s.drain(out_drained); });
}

int rlock_semaphore_delete(int* out_deleted, rlock_semaphore* sem) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    bool deleted = false;
    const int rc = s.remove(&deleted);
    if (rc == RLOCK_OK && out_deleted != nullptr) *out_deleted = deleted ? 1 : 0;
    return rc;
  });
}

int rlock_semaphore_cancel(rlock_semaphore* sem) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    s.cancel_waits();
    return RLOCK_OK;
  });
}

int rlock_semaphore_held(int64_t* out_held, rlock_semaphore* sem) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    if (out_held == nullptr) return invalid("out_held must not be NULL");
    *out_held = s.permits_held();
    return RLOCK_OK;
  });
}

int rlock_permit_acquire(rlock_permit_id* out, rlock_semaphore* sem, int64_t wait_ms,
                         int64_t lease_ms) {
  if (out == nullptr) return guarded([] { return invalid("out must not be NULL"); });
  rlock_permit_options opts = RLOCK_PERMIT_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.ids = out;
  return rlock_semaphore_acquire_ex(sem, &opts);
}

int rlock_permit_release_n(rlock_semaphore* sem, const rlock_permit_id* ids, size_t count) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    if (ids == nullptr) return invalid("ids must not be NULL");
    if (count == 0 || count > RLOCK_MAX_PERMITS_PER_CALL) {
      return invalid(("count must be from 1 to " + std::to_string(RLOCK_MAX_PERMITS_PER_CALL) +
                      ", got " + std::to_string(count))
                         .c_str());
    }
    std::vector<std::string> list;
    for (size_t i = 0; i < count; ++i) {
      list.emplace_back(ids[i].hex, strnlen(ids[i].hex, RLOCK_PERMIT_ID_SIZE));
    }
    return s.release_ids(list);
  });
}

int rlock_permit_release(rlock_semaphore* sem, const char* id) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    if (id == nullptr) return invalid("id must not be NULL");
    return s.release_ids({std::string(id)});
  });
}

int rlock_permit_update_lease(rlock_semaphore* sem, const char* id, int64_t lease_ms) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    if (id == nullptr) return invalid("id must not be NULL");
    return s.update_lease(id, lease_ms);
  });
}

int rlock_permit_lease_time(int64_t* out_lease_ms, rlock_semaphore* sem, const char* id) {
  return with_semaphore(sem, [&](core::Semaphore& s) -> int {
    if (out_lease_ms == nullptr) return invalid("out_lease_ms must not be NULL");
    if (id == nullptr) return invalid("id must not be NULL");
    return s.lease_time(id, out_lease_ms);
  });
}

// ---- Latch -----------------------------------------------------------------------------------

int rlock_latch_new_n(rlock_latch** out, rlock_client* client, const char* name, size_t name_len) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    if (int rc = check_name(c->core->config(), name, name_len, "latch")) return rc;
    auto latch = std::make_unique<LatchObj>();
    latch->core = std::make_shared<core::Latch>(c->core, std::string(name, name_len));
    *out = publish(std::move(latch));
    return RLOCK_OK;
  });
}

int rlock_latch_new(rlock_latch** out, rlock_client* client, const char* name) {
  return rlock_latch_new_n(out, client, name, name == nullptr ? 0 : std::strlen(name));
}

void rlock_latch_free(rlock_latch* latch) {
  if (latch == nullptr) return;
  guarded([&]() -> int {
    Pinned<LatchObj> l(latch);
    if (!l || !l.kill()) return l.bad("latch");
    l->core->close_waits();
    return RLOCK_OK;
  });
}

int rlock_latch_try_set_count(int* out_set, rlock_latch* latch, int64_t count) {
  return with_latch(latch, [&](core::Latch& l) -> int {
    bool set = false;
    const int rc = l.try_set_count(count, &set);
    if (rc == RLOCK_OK && out_set != nullptr) *out_set = set ? 1 : 0;
    return rc;
  });
}

int rlock_latch_count_down(int64_t* out_left, rlock_latch* latch) {
  return with_latch(latch, [&](core::Latch& l) -> int { return l.count_down(out_left); });
}

int rlock_latch_count(int64_t* out_count, rlock_latch* latch) {
  return with_latch(latch, [&](core::Latch& l) -> int {
    if (out_count == nullptr) return invalid("out_count must not be NULL");
    return l.count(out_count);
  });
}

int rlock_latch_await(rlock_latch* latch, int64_t wait_ms, rlock_cancel_token* cancel) {
  return with_latch(latch, [&](core::Latch& l) -> int {
    Pinned<TokenObj> token(cancel);
    if (cancel != nullptr && !token) return token.bad("cancel");
    return l.await(wait_ms, cancel == nullptr ? nullptr : token->set.get());
  });
}

int rlock_latch_await_async(rlock_latch* latch, int64_t wait_ms, rlock_cancel_token* cancel,
                            rlock_completion_cb done, void* user) {
  return with_latch(latch, [&](core::Latch& l) -> int {
    if (done == nullptr) return invalid("done must not be NULL");
    Pinned<TokenObj> token(cancel);
    if (cancel != nullptr && !token) return token.bad("cancel");
    std::shared_ptr<core::CancelSet> keep = cancel == nullptr ? nullptr : token->set;
    core::CancelSet* set = keep.get();
    return l.await_async(
        wait_ms, set, std::move(keep),
        [done, user](int status, const std::vector<std::string>&) { done(user, status, 0); });
  });
}

int rlock_latch_delete(int* out_deleted, rlock_latch* latch) {
  return with_latch(latch, [&](core::Latch& l) -> int {
    bool deleted = false;
    const int rc = l.remove(&deleted);
    if (rc == RLOCK_OK && out_deleted != nullptr) *out_deleted = deleted ? 1 : 0;
    return rc;
  });
}

int rlock_latch_cancel(rlock_latch* latch) {
  return with_latch(latch, [&](core::Latch& l) -> int {
    l.cancel_waits();
    return RLOCK_OK;
  });
}

}  // extern "C"
