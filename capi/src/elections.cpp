// The C ABI of leader elections (rlock.h, "Leader election"). Every entry point is noexcept and
// goes through guarded().
#include <cstring>
#include <memory>
#include <string>

#include "guard.hpp"
#include "objects.hpp"
#include "rlock/core/election.hpp"
#include "rlock/rlock.h"

using rlock::capi::check_name;
using rlock::capi::check_version;
using rlock::capi::guarded;
using rlock::capi::invalid;
using rlock::capi::Pinned;
using rlock::capi::publish;

static_assert(int{RLOCK_REVOKED_GONE} == core::kRevokedGone &&
                  int{RLOCK_REVOKED_UNREACHABLE} == core::kRevokedUnreachable &&
                  int{RLOCK_REVOKED_RESIGNED} == core::kRevokedResigned &&
                  int{RLOCK_REVOKED_CLOSED} == core::kRevokedClosed &&
                  int{RLOCK_REVOKED_FAILED} == core::kRevokedFailed,
              "revoke reasons must agree");
static_assert(int{RLOCK_REVOKED_GONE} == int{RLOCK_LOST_GONE} &&
                  int{RLOCK_REVOKED_UNREACHABLE} == int{RLOCK_LOST_UNREACHABLE},
              "revoke reasons 1..3 are the lost reasons");

int rlock_election_options_init(rlock_election_options* opts, unsigned int version) {
  return guarded([&]() -> int {
    if (opts == nullptr) return invalid("opts must not be NULL");
    if (int rc = check_version(version, RLOCK_ELECTION_OPTIONS_VERSION, "rlock_election_options"))
      return rc;
    std::memset(opts, 0, sizeof *opts);
    static const core::ElectionOptions defaults;
    opts->version = version;
    opts->requeue = defaults.requeue ? 1 : 0;
    return RLOCK_OK;
  });
}

int rlock_election_new(rlock_election** out, rlock_client* client, const char* name,
                       size_t name_len, const rlock_election_options* opts) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    if (int rc = check_name(c->core->config(), name, name_len, "election")) return rc;
    core::ElectionOptions options;
    if (opts != nullptr) {
      if (int rc = check_version(opts->version, RLOCK_ELECTION_OPTIONS_VERSION,
                                 "rlock_election_options"))
        return rc;
      if (opts->requeue != 0 && opts->requeue != 1) {
        return invalid(
            ("opts->requeue must be 0 or 1, not " + std::to_string(opts->requeue)).c_str());
      }
      options.requeue = opts->requeue == 1;
    }
    auto election = std::make_unique<ElectionObj>();
    election->core = core::Election::create(c->core, std::string(name, name_len), options);
    *out = publish(std::move(election));
    return RLOCK_OK;
  });
}

int rlock_election_campaign(rlock_election* election, rlock_elected_cb elected,
                            rlock_revoked_cb revoked, void* payload) {
  return guarded([&]() -> int {
    if (election == nullptr) return invalid("election must not be NULL");
    Pinned<ElectionObj> e(election);
    if (!e) return e.bad("election");
    core::Election::Elected on_elected;
    if (elected != nullptr) {
      on_elected = [election, elected, payload](int64_t term) { elected(election, term, payload); };
    }
    core::Election::Revoked on_revoked;
    if (revoked != nullptr) {
      on_revoked = [election, revoked, payload](int64_t term, int reason) {
        revoked(election, term, static_cast<rlock_revoke_reason>(reason), payload);
      };
    }
    return e->core->campaign(std::move(on_elected), std::move(on_revoked));
  });
}

int rlock_election_resign(rlock_election* election) {
  return guarded([&]() -> int {
    if (election == nullptr) return invalid("election must not be NULL");
    Pinned<ElectionObj> e(election);
    if (!e) return e.bad("election");
    return e->core->resign();
  });
}

int rlock_election_is_leader(const rlock_election* election) {
  if (election == nullptr) return 0;
  int leader = 0;
  (void)guarded([&]() -> int {
    Pinned<ElectionObj> e(election);
    if (e) leader = e->core->is_leader() ? 1 : 0;
    return RLOCK_OK;
  });
  return leader;
}

int rlock_election_term(int64_t* out, const rlock_election* election) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = 0;
    if (election == nullptr) return invalid("election must not be NULL");
    Pinned<ElectionObj> e(election);
    if (!e) return e.bad("election");
    const int64_t term = e->core->term();
    if (term == 0) {
      return core::fail(core::kNotHeld,
                        "election " + core::printable(e->core->name()) + ": not the leader");
    }
    *out = term;
    return RLOCK_OK;
  });
}

void rlock_election_free(rlock_election* election) {
  if (election == nullptr) return;
  guarded([&]() -> int {
    Pinned<ElectionObj> e(election);
    if (!e || !e.kill()) return e.bad("election");
    e->core->close();
    return RLOCK_OK;
  });
}
