// The C ABI over the core. Every entry point is noexcept and goes through guarded().
#include "rlock/rlock.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "guard.hpp"
#include "handles.hpp"
#include "objects.hpp"
#include "rlock/core/client.hpp"
#include "rlock/core/config.hpp"
#include "rlock/core/error.hpp"
#include "rlock/core/inspect.hpp"
#include "rlock/core/lock.hpp"
#include "rlock/core/lock_group.hpp"

using rlock::capi::check_name;
using rlock::capi::check_version;
using rlock::capi::guarded;
using rlock::capi::invalid;
using rlock::capi::Pinned;
using rlock::capi::publish;
using rlock::capi::raw_enum;
namespace core = rlock::core;

static_assert(
    int{RLOCK_OK} == int{core::kOk} && int{RLOCK_ERROR} == int{core::kError} &&
        int{RLOCK_ETIMEDOUT} == int{core::kTimedOut} &&
        int{RLOCK_ENOTHELD} == int{core::kNotHeld} &&
        int{RLOCK_ECANCELED} == int{core::kCanceled} && int{RLOCK_ECONN} == int{core::kConn} &&
        int{RLOCK_EINVAL} == int{core::kInvalid} && int{RLOCK_ENOMEM} == int{core::kNoMemory} &&
        int{RLOCK_EVERSION} == int{core::kVersion} &&
        int{RLOCK_EINTERNAL} == int{core::kInternal} && int{RLOCK_EUSER} == int{core::kUser} &&
        int{RLOCK_ELOST} == int{core::kLost} && int{RLOCK_ENOTOWNER} == int{core::kNotOwner} &&
        int{RLOCK_EAUTH} == int{core::kAuth} && int{RLOCK_ENOPERM} == int{core::kNoPerm} &&
        int{RLOCK_EUNSUPPORTED} == int{core::kUnsupported} &&
        int{RLOCK_EREDIS} == int{core::kRedis} && int{RLOCK_EOOM} == int{core::kRedisOom} &&
        int{RLOCK_EBUSY} == int{core::kRedisBusy} && int{RLOCK_EREADONLY} == int{core::kReadOnly} &&
        int{RLOCK_ECLOSED} == int{core::kClosed} && int{RLOCK_EDEADLK} == int{core::kDeadlock} &&
        int{RLOCK_EBADHANDLE} == int{core::kBadHandle} &&
        int{RLOCK_ENOTSYNCED} == int{core::kNotSynced} &&
        int{RLOCK_EFORKED} == int{core::kForked} && int{RLOCK_ETLS} == int{core::kTls},
    "C status codes and core codes must agree");
static_assert(int{RLOCK_LOST_GONE} == int{core::kLostGone} &&
                  int{RLOCK_LOST_UNREACHABLE} == int{core::kLostUnreachable} &&
                  int{RLOCK_LOST_EXPIRED} == int{core::kLostExpired},
              "lost reasons must agree");
static_assert(RLOCK_MAX_DURATION_MS == core::kMaxDurationMs, "duration limits must agree");
static_assert(int{RLOCK_TLS_VERIFY_CA} == static_cast<int>(core::TlsVerify::Ca) &&
                  int{RLOCK_TLS_VERIFY_NONE} == static_cast<int>(core::TlsVerify::None) &&
                  int{RLOCK_TLS_1_3} == static_cast<int>(core::TlsVersion::V1_3) &&
                  int{RLOCK_SENTINEL_TLS_ON} == static_cast<int>(core::SentinelTls::On) &&
                  int{RLOCK_SENTINEL_TLS_OFF} == static_cast<int>(core::SentinelTls::Off),
              "TLS choices must agree");
static_assert(RLOCK_DEFAULT_MAX_NAME_LEN == core::kDefaultMaxNameLen, "name limits must agree");
static_assert(RLOCK_LEASE_WATCHDOG == core::kLeaseWatchdog &&
                  RLOCK_WAIT_FOREVER == core::kWaitForever,
              "special durations must agree");
static_assert(int{RLOCK_LOCK_REENTRANT} == static_cast<int>(core::LockKind::Reentrant) &&
                  int{RLOCK_LOCK_FENCED} == static_cast<int>(core::LockKind::Fenced) &&
                  int{RLOCK_LOCK_SPIN} == static_cast<int>(core::LockKind::Spin) &&
                  int{RLOCK_LOCK_FAIR} == static_cast<int>(core::LockKind::Fair) &&
                  int{RLOCK_LOCK_READ} == static_cast<int>(core::LockKind::Read) &&
                  int{RLOCK_LOCK_WRITE} == static_cast<int>(core::LockKind::Write) &&
                  int{RLOCK_LOCK_NON_REENTRANT} == static_cast<int>(core::LockKind::NonReentrant) &&
                  int{RLOCK_LOCK_NON_REENTRANT_FAIR} ==
                      static_cast<int>(core::LockKind::NonReentrantFair),
              "lock kinds must agree");

namespace {

thread_local rlock_error_info t_error_info;
thread_local std::string t_query_owner;

}  // namespace

extern "C" {

const rlock_error_info* rlock_last_error(void) {
  t_error_info.code = static_cast<rlock_error_code>(core::last_error_code());
  t_error_info.message = core::last_error_message().c_str();
  return &t_error_info;
}

const char* rlock_strerror(int code) {
  // Indexed by -code: codes are 0, -1, -2, ... with no gaps (the header says append-only).
  static const char* const texts[] = {
      "success",                                                 // RLOCK_OK
      "error",                                                   // RLOCK_ERROR
      "timed out waiting for the lock",                          // RLOCK_ETIMEDOUT
      "the lock is not held",                                    // RLOCK_ENOTHELD
      "the wait was cancelled",                                  // RLOCK_ECANCELED
      "Redis connection failed",                                 // RLOCK_ECONN
      "invalid argument",                                        // RLOCK_EINVAL
      "out of memory",                                           // RLOCK_ENOMEM
      "unknown options version",                                 // RLOCK_EVERSION
      "internal error",                                          // RLOCK_EINTERNAL
      "a user callback failed",                                  // RLOCK_EUSER
      "the lock was lost",                                       // RLOCK_ELOST
      "the lock is held by another owner",                       // RLOCK_ENOTOWNER
      "Redis authentication failed",                             // RLOCK_EAUTH
      "Redis permission denied",                                 // RLOCK_ENOPERM
      "not supported by the Redis server",                       // RLOCK_EUNSUPPORTED
      "Redis returned an error",                                 // RLOCK_EREDIS
      "Redis is out of memory",                                  // RLOCK_EOOM
      "Redis is busy",                                           // RLOCK_EBUSY
      "Redis server is read-only",                               // RLOCK_EREADONLY
      "the client was closed",                                   // RLOCK_ECLOSED
      "would deadlock: upgrading a read lock to a write lock",   // RLOCK_EDEADLK
      "not a live handle: freed already, or not made by rlock",  // RLOCK_EBADHANDLE
      "the replicas did not confirm the acquire in time",        // RLOCK_ENOTSYNCED
      "made before fork() in a parent process; make a new client in the child",     // RLOCK_EFORKED
      "TLS failed: handshake, certificate verification or a TLS/plaintext mix-up",  // RLOCK_ETLS
  };
  static_assert(sizeof texts / sizeof texts[0] == 1 - core::kLowestCode,
                "one rlock_strerror text per status code");
  if (code > 0 || code < core::kLowestCode) return "unknown error code";
  return texts[-code];
}

unsigned int rlock_version_number(void) { return RLOCK_VERSION_NUMBER; }
const char* rlock_version_string(void) { return RLOCK_VERSION_STRING; }

int64_t rlock_current_thread_id(void) { return core::current_thread_id(); }

// ---- Client ---------------------------------------------------------------------------------

int rlock_client_options_init(rlock_client_options* opts, unsigned int version) {
  return guarded([&]() -> int {
    if (opts == nullptr) return invalid("opts must not be NULL");
    if (int rc = check_version(version, RLOCK_CLIENT_OPTIONS_VERSION, "rlock_client_options"))
      return rc;
    // A caller's older struct ends where its version's fields end: write nothing past them.
    std::memset(opts, 0,
                version >= 5   ? sizeof *opts
                : version >= 4 ? offsetof(rlock_client_options, key_prefix)
                : version >= 3 ? offsetof(rlock_client_options, stats)
                : version >= 2 ? offsetof(rlock_client_options, tls)
                               : offsetof(rlock_client_options, sync_replicas));
    // The defaults are the core's: written once there, shown to callers and bindings here.
    // Never destroyed, so `host` stays valid even in code that runs at exit.
    static const core::ClientConfig& defaults = *new core::ClientConfig();
    opts->version = version;
    opts->host = defaults.endpoint.host.c_str();
    opts->port = defaults.endpoint.port;
    opts->db = defaults.endpoint.db;
    opts->connect_timeout_ms = defaults.connect_timeout_ms;
    opts->command_timeout_ms = defaults.command_timeout_ms;
    opts->pool_size = defaults.pool_size;
    opts->watchdog_lease_ms = defaults.watchdog_lease_ms;
    opts->poll_cap_ms = defaults.poll_cap_ms;
    opts->max_name_len = defaults.max_name_len;
    if (version >= 2) {
      opts->sync_replicas = RLOCK_SYNC_AUTO;
      opts->sync_timeout_ms = defaults.sync_timeout_ms;
    }
    return RLOCK_OK;
  });
}

namespace {

// Where to connect and as whom: the URL, or host/port/unix_socket; then the credentials and
// database the options add to it.
int apply_endpoint_options(const rlock_client_options& opts, core::ClientConfig* config) {
  core::Endpoint& endpoint = config->endpoint;
  if (opts.url != nullptr) {
    core::parse_client_url(opts.url, config);
  } else if (opts.unix_socket != nullptr) {
    endpoint.unix_path = opts.unix_socket;
  } else {
    if (opts.host != nullptr) endpoint.host = opts.host;
    if (opts.port != 0) endpoint.port = opts.port;
  }
  if (!endpoint.has_password && opts.password != nullptr) {
    endpoint.password = opts.password;
    endpoint.has_password = true;
    if (opts.username != nullptr) endpoint.username = opts.username;
  } else if (!endpoint.has_password && opts.username != nullptr) {
    return invalid("username given without a password");
  }
  if (opts.db != 0) {
    if (endpoint.db != 0 && endpoint.db != opts.db)
      return invalid("db given both in the URL and in the options, with different values");
    endpoint.db = opts.db;
  }
  return RLOCK_OK;
}

// Timeouts and sizes: 0 keeps the default.
void apply_tuning_options(const rlock_client_options& opts, core::ClientConfig* config) {
  if (opts.connect_timeout_ms != 0) config->connect_timeout_ms = opts.connect_timeout_ms;
  if (opts.command_timeout_ms != 0) config->command_timeout_ms = opts.command_timeout_ms;
  if (opts.pool_size != 0) config->pool_size = opts.pool_size;
  if (opts.watchdog_lease_ms != 0) config->watchdog_lease_ms = opts.watchdog_lease_ms;
  if (opts.poll_cap_ms != 0) config->poll_cap_ms = opts.poll_cap_ms;
  if (opts.max_name_len != 0) config->max_name_len = opts.max_name_len;
}

// The version 2 fields: replica sync.
int apply_sync_options(const rlock_client_options& opts, core::ClientConfig* config) {
  if (opts.sync_replicas < RLOCK_SYNC_NEVER) {
    return core::fail(core::kInvalid,
                      "sync_replicas must be 0 (auto), -1 (never) or a replica count, got " +
                          std::to_string(opts.sync_replicas));
  }
  if (opts.sync_replicas != RLOCK_SYNC_AUTO) {  // the same encoding as the core's
    if (config->sync_replicas != core::kSyncAuto && config->sync_replicas != opts.sync_replicas)
      return invalid(
          "sync_replicas given both in the URL and in the options, with "
          "different values");
    config->sync_replicas = opts.sync_replicas;
  }
  if (opts.sync_timeout_ms != 0) config->sync_timeout_ms = opts.sync_timeout_ms;
  return RLOCK_OK;
}

// A TLS file or name field onto the URL's: set in one place, or the same in both.
int merge_tls_text(const char* field, const char* name, std::string* value) {
  if (field == nullptr) return RLOCK_OK;
  if (*field == '\0')
    return core::fail(core::kInvalid, std::string(name) + " must not be empty (NULL for none)");
  if (!value->empty() && *value != field)
    return core::fail(core::kInvalid, std::string(name) +
                                          " given both in the URL and in the options, with "
                                          "different values");
  *value = field;
  return RLOCK_OK;
}

// A TLS choice (0 = the default) onto the URL's, *value.
int merge_tls_choice(int field, int highest, const char* name, int* value) {
  if (field < 0 || field > highest)
    return core::fail(core::kInvalid, std::string(name) + " must be from 0 to " +
                                          std::to_string(highest) + ", got " +
                                          std::to_string(field));
  if (field == 0) return RLOCK_OK;
  if (*value != 0 && *value != field)
    return core::fail(core::kInvalid, std::string(name) +
                                          " given both in the URL and in the options, with "
                                          "different values");
  *value = field;
  return RLOCK_OK;
}

// The version 3 fields: TLS.
int apply_tls_options(const rlock_client_options& opts, core::ClientConfig* config) {
  core::TlsConfig& tls = config->tls;
  if (opts.tls != 0 && opts.tls != 1) return invalid("tls must be 0 or 1");
  if (opts.tls == 1) {
    if (opts.url != nullptr && !tls.enabled)
      return invalid(
          "tls = 1, but the URL is plaintext: use rediss://, rediss-sentinel:// or "
          "rediss-cluster://");
    tls.enabled = true;
  }
  const std::pair<const char*, std::pair<const char*, std::string*>> texts[] = {
      {opts.tls_ca_file, {"tls_ca_file", &tls.ca_file}},
      {opts.tls_ca_dir, {"tls_ca_dir", &tls.ca_dir}},
      {opts.tls_cert_file, {"tls_cert_file", &tls.cert_file}},
      {opts.tls_key_file, {"tls_key_file", &tls.key_file}},
      {opts.tls_server_name, {"tls_server_name", &tls.server_name}},
  };
  for (const auto& [field, target] : texts) {
    if (int rc = merge_tls_text(field, target.first, target.second)) return rc;
  }
  int verify = static_cast<int>(tls.verify);
  int min_version = static_cast<int>(tls.min_version);
  int sentinels = static_cast<int>(tls.sentinels);
  if (int rc = merge_tls_choice(opts.tls_verify, RLOCK_TLS_VERIFY_NONE, "tls_verify", &verify))
    return rc;
  if (int rc =
          merge_tls_choice(opts.tls_min_version, RLOCK_TLS_1_3, "tls_min_version", &min_version))
    return rc;
  if (int rc =
          merge_tls_choice(opts.sentinel_tls, RLOCK_SENTINEL_TLS_OFF, "sentinel_tls", &sentinels))
    return rc;
  tls.verify = static_cast<core::TlsVerify>(verify);
  tls.min_version = static_cast<core::TlsVersion>(min_version);
  tls.sentinels = static_cast<core::SentinelTls>(sentinels);
  return RLOCK_OK;
}

// The client configuration `opts` describe, on top of the defaults.
int apply_client_options(const rlock_client_options& opts, core::ClientConfig* config) {
  if (int rc = check_version(opts.version, RLOCK_CLIENT_OPTIONS_VERSION, "rlock_client_options"))
    return rc;
  if (int rc = apply_endpoint_options(opts, config)) return rc;
  apply_tuning_options(opts, config);
  if (opts.version >= 2) {
    if (int rc = apply_sync_options(opts, config)) return rc;
  }
  if (opts.version >= 3) {
    if (int rc = apply_tls_options(opts, config)) return rc;
  }
  if (opts.version >= 4) {
    if (opts.stats != RLOCK_STATS_ON && opts.stats != RLOCK_STATS_OFF) {
      return core::fail(core::kInvalid,
                        "stats must be RLOCK_STATS_ON (0) or RLOCK_STATS_OFF (1), got " +
                            std::to_string(opts.stats));
    }
    // Off when either the URL (stats=off) or this field says so.
    if (opts.stats == RLOCK_STATS_OFF) config->keep_stats = false;
  }
  if (opts.version >= 5 && opts.key_prefix != nullptr) {
    const std::string prefix = opts.key_prefix;
    if (prefix.empty()) return invalid("key_prefix must not be empty (NULL: none)");
    core::check_key_prefix(prefix);
    if (!config->key_prefix.empty() && config->key_prefix != prefix) {
      return invalid("key_prefix given both in the URL and in the options, with different values");
    }
    config->key_prefix = prefix;
  }
  return RLOCK_OK;
}

}  // namespace

int rlock_client_new(rlock_client** out, const rlock_client_options* opts) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    core::ClientConfig config;
    if (opts != nullptr) {
      if (int rc = apply_client_options(*opts, &config)) return rc;
    }
    auto client = std::make_unique<ClientObj>();
    client->core = core::Client::create(std::move(config));
    *out = publish(std::move(client));
    return RLOCK_OK;
  });
}

int rlock_client_new_url(rlock_client** out, const char* url) {
  if (url == nullptr) {
    return guarded([&]() -> int {
      if (out != nullptr) *out = nullptr;
      return invalid("url must not be NULL");
    });
  }
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url;
  return rlock_client_new(out, &opts);
}

void rlock_client_free(rlock_client* client) {
  if (client == nullptr) return;
  guarded([&]() -> int {
    Pinned<ClientObj> c(client);
    if (!c || !c.kill()) return c.bad("client");  // a second free: recorded, nothing else
    c->core->close();
    return RLOCK_OK;  // the object goes with the last pin, this one or a call's in progress
  });
}

const char* rlock_client_id(const rlock_client* client) {
  if (client == nullptr) return nullptr;
  const char* id = nullptr;
  guarded([&]() -> int {
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    id = c->core->id().c_str();
    return RLOCK_OK;
  });
  return id;
}

// ---- Statistics and events ------------------------------------------------------------------

namespace {

void copy_histogram(const core::Histogram& from, rlock_histogram* to) {
  const core::Histogram::Snapshot s = from.read();
  to->count = s.count;
  to->sum_us = s.sum_us;
  static_assert(core::Histogram::kBuckets == RLOCK_HISTOGRAM_BUCKETS, "bucket count");
  for (size_t i = 0; i < RLOCK_HISTOGRAM_BUCKETS; ++i) to->buckets[i] = s.buckets[i];
}

}  // namespace

const int64_t* rlock_histogram_bounds_us(void) {
  static_assert(core::Histogram::kBounds == RLOCK_HISTOGRAM_BOUNDS, "bound count");
  return core::Histogram::bounds_us().data();
}

int rlock_client_stats(rlock_stats* out, rlock_client* client) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    if (int rc = check_version(out->version, RLOCK_STATS_VERSION, "rlock_stats")) return rc;
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    const unsigned int version = out->version;
    // An older caller's struct ends where the next version's fields begin.
    std::memset(out, 0,
                version >= 3   ? sizeof *out
                : version == 2 ? offsetof(rlock_stats, tls_handshakes)
                               : offsetof(rlock_stats, elections_won));
    out->version = version;
    const core::Stats* st = c->core->stats();
    if (st == nullptr) return RLOCK_OK;
    auto get = [](const core::Stats::Counter& n) { return n.load(std::memory_order_relaxed); };
    out->enabled = 1;
    out->acquires_granted = get(st->acquires_granted);
    out->acquires_timed_out = get(st->acquires_timed_out);
    out->acquires_canceled = get(st->acquires_canceled);
    out->acquires_failed = get(st->acquires_failed);
    static_assert(core::Stats::kCodes == RLOCK_STATS_CODES, "code slots");
    for (size_t i = 0; i < RLOCK_STATS_CODES; ++i) {
      out->acquires_failed_by_code[i] = get(st->acquires_failed_by_code[i]);
    }
    out->releases = get(st->releases);
    out->releases_failed = get(st->releases_failed);
    out->locks_lost_gone = get(st->lost_gone);
    out->locks_lost_unreachable = get(st->lost_unreachable);
    out->locks_lost_expired = get(st->lost_expired);
    out->renewals_sent = get(st->renewals_sent);
    out->renewals_failed = get(st->renewals_failed);
    out->reconnects = get(st->reconnects);
    out->failovers = get(st->failovers);
    out->cluster_redirects = get(st->cluster_redirects);
    out->scripts_sent = get(st->scripts_sent);
    out->events_dropped = get(st->events_dropped);
    out->holds = c->core->holds().live_count();
    out->waiters = st->waiters.load(std::memory_order_relaxed);
    copy_histogram(st->acquire_wait, &out->acquire_wait);
    copy_histogram(st->hold, &out->hold);
    copy_histogram(st->handoff, &out->handoff);
    copy_histogram(st->command_rtt, &out->command_rtt);
    if (version < 2) return RLOCK_OK;
    out->elections_won = get(st->elections_won);
    static_assert(core::Stats::kRevokeReasons == RLOCK_STATS_REVOKE_REASONS, "reason slots");
    for (size_t i = 0; i < RLOCK_STATS_REVOKE_REASONS; ++i) {
      out->leaderships_revoked_by_reason[i] = get(st->leaderships_revoked[i]);
      out->leaderships_revoked += out->leaderships_revoked_by_reason[i];
    }
    out->leaders = st->leaders.load(std::memory_order_relaxed);
    if (version < 3) return RLOCK_OK;
    out->tls_handshakes = get(st->tls_handshakes);
    out->tls_sessions_resumed = get(st->tls_resumed);
    return RLOCK_OK;
  });
}

int rlock_client_watch_key_events(rlock_client* client, int kinds) {
  return guarded([&]() -> int {
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    c->core->watch_key_events(kinds);
    return RLOCK_OK;
  });
}

int rlock_client_set_event_callback(rlock_client* client, rlock_event_cb cb, void* payload) {
  return guarded([&]() -> int {
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    if (cb == nullptr) {
      c->core->events().set(nullptr);
      return RLOCK_OK;
    }
    if (c->core->closed()) return core::fail(core::kClosed, "the client was closed");
    // Names as the caller gave them: without the client's key_prefix.
    const std::string prefix = c->core->config().key_prefix;
    c->core->events().set([cb, payload, prefix](const core::Event& e) {
      rlock_event event;
      std::memset(&event, 0, sizeof event);
      event.kind = static_cast<rlock_event_kind>(e.kind);
      event.unix_time_us = e.unix_time_us;
      const size_t skip = e.name.compare(0, prefix.size(), prefix) == 0 ? prefix.size() : 0;
      event.name = e.name.data() + skip;
      event.name_len = e.name.size() - skip;
      event.owner = e.owner.data();
      event.owner_len = e.owner.size();
      event.thread_id = e.thread_id;
      event.duration_us = e.duration_us;
      event.token = e.token;
      event.reason = e.reason;
      event.detail = e.detail.data();
      event.detail_len = e.detail.size();
      cb(&event, payload);
    });
    return RLOCK_OK;
  });
}

// ---- Lock -----------------------------------------------------------------------------------

int rlock_lock_options_init(rlock_lock_options* opts, unsigned int version) {
  return guarded([&]() -> int {
    if (opts == nullptr) return invalid("opts must not be NULL");
    if (int rc = check_version(version, RLOCK_LOCK_OPTIONS_VERSION, "rlock_lock_options"))
      return rc;
    std::memset(opts, 0,
                version >= 3   ? sizeof *opts
                : version == 2 ? offsetof(rlock_lock_options, owner_id)
                               : offsetof(rlock_lock_options, kind));
    static const core::LockOptions defaults;  // the core's, as for the client options
    opts->version = version;
    opts->lease_ms = defaults.lease_ms;
    if (version >= 2) {
      opts->kind = static_cast<rlock_lock_kind>(defaults.kind);
      opts->spin_initial_ms = defaults.spin_initial_ms;
      opts->spin_max_ms = defaults.spin_max_ms;
      opts->fair_wait_ms = defaults.fair_wait_ms;
    }
    return RLOCK_OK;
  });
}

int rlock_lock_new_n(rlock_lock** out, rlock_client* client, const char* name, size_t name_len,
                     const rlock_lock_options* opts) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    if (name == nullptr) return invalid("name must not be NULL");
    core::LockOptions options;
    if (opts != nullptr) {
      if (int rc = check_version(opts->version, RLOCK_LOCK_OPTIONS_VERSION, "rlock_lock_options"))
        return rc;
      if (opts->lease_ms != 0) options.lease_ms = opts->lease_ms;
      if (opts->version >= 2) {
        const int kind = raw_enum(opts->kind);
        if (kind < RLOCK_LOCK_REENTRANT || kind > RLOCK_LOCK_NON_REENTRANT_FAIR) {
          return invalid(("kind " + std::to_string(kind) + " is not an rlock_lock_kind").c_str());
        }
        options.kind = static_cast<core::LockKind>(kind);
        if (opts->spin_initial_ms != 0) options.spin_initial_ms = opts->spin_initial_ms;
        if (opts->fair_wait_ms != 0) options.fair_wait_ms = opts->fair_wait_ms;
        if (opts->spin_max_ms != 0) {
          options.spin_max_ms = opts->spin_max_ms;
        } else {  // only the first backoff given: let the cap follow it
          options.spin_max_ms = std::max(options.spin_max_ms, options.spin_initial_ms);
        }
      }
      if (opts->version >= 3 && opts->owner_id != nullptr) {
        if (opts->owner_id_len == 0) return invalid("owner_id must not be empty (NULL: none)");
        options.owner_id.assign(opts->owner_id, opts->owner_id_len);
      } else if (opts->version >= 3 && opts->owner_id_len != 0) {
        return invalid("owner_id is NULL but owner_id_len is not 0");
      }
    }
    if (int rc = check_name(c->core->config(), name, name_len, "lock")) return rc;
    auto lock = std::make_unique<LockObj>();
    lock->core = std::make_shared<core::Lock>(c->core, std::string(name, name_len), options);
    *out = publish(std::move(lock));
    return RLOCK_OK;
  });
}

int rlock_lock_new(rlock_lock** out, rlock_client* client, const char* name,
                   const rlock_lock_options* opts) {
  return rlock_lock_new_n(out, client, name, name == nullptr ? 0 : std::strlen(name), opts);
}

void rlock_lock_free(rlock_lock* lock) {
  if (lock == nullptr) return;
  guarded([&]() -> int {
    Pinned<LockObj> l(lock);
    if (!l || !l.kill()) return l.bad("lock");  // a second free: recorded, nothing else
    // The core lock may outlive the handle (in a group, or in a call still running on another
    // thread): no callback of this handle after we return, and no wait through it goes on.
    l->core->set_lost_callback(nullptr);
    l->core->close_waits();
    return RLOCK_OK;
  });
}

int rlock_acquire_options_init(rlock_acquire_options* opts, unsigned int version) {
  return guarded([&]() -> int {
    if (opts == nullptr) return invalid("opts must not be NULL");
    if (int rc = check_version(version, RLOCK_ACQUIRE_OPTIONS_VERSION, "rlock_acquire_options"))
      return rc;
    std::memset(opts, 0, version >= 2 ? sizeof *opts : offsetof(rlock_acquire_options, token));
    opts->version = version;
    opts->wait_ms = RLOCK_WAIT_FOREVER;
    opts->lease_ms = 0;
    opts->thread_id = RLOCK_THREAD_CURRENT;
    opts->cancel = nullptr;
    if (version >= 2) opts->token = nullptr;
    return RLOCK_OK;
  });
}

int rlock_acquire_ex(rlock_lock* lock, const rlock_acquire_options* opts) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    core::AcquireArgs args;
    Pinned<TokenObj> cancel(opts == nullptr ? nullptr : opts->cancel);
    if (opts != nullptr) {
      if (int rc =
              check_version(opts->version, RLOCK_ACQUIRE_OPTIONS_VERSION, "rlock_acquire_options"))
        return rc;
      if (opts->cancel != nullptr && !cancel) return cancel.bad("opts->cancel");
      args.wait_ms = opts->wait_ms;
      args.lease_ms = opts->lease_ms;
      args.thread_id = opts->thread_id;
      args.cancel = opts->cancel == nullptr ? nullptr : cancel->set.get();
      if (opts->version >= 2) args.token = opts->token;
    }
    return l->core->acquire(args);
  });
}

int rlock_acquire(rlock_lock* lock, int64_t wait_ms) {
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  return rlock_acquire_ex(lock, &opts);
}

int rlock_release_for(rlock_lock* lock, int64_t thread_id) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    return l->core->release(thread_id);
  });
}

int rlock_release(rlock_lock* lock) { return rlock_release_for(lock, RLOCK_THREAD_CURRENT); }

int rlock_extend_for(rlock_lock* lock, int64_t thread_id, int64_t lease_ms) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    return l->core->extend(lease_ms, thread_id);
  });
}

int rlock_extend_by_for(rlock_lock* lock, int64_t thread_id, int64_t add_ms) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    return l->core->extend_by(add_ms, thread_id);
  });
}

int rlock_extend(rlock_lock* lock, int64_t lease_ms) {
  return rlock_extend_for(lock, RLOCK_THREAD_CURRENT, lease_ms);
}

int rlock_force_unlock(int* out_deleted, rlock_lock* lock) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    bool deleted = false;
    int rc = l->core->force_unlock(&deleted);
    if (rc == RLOCK_OK && out_deleted != nullptr) *out_deleted = deleted ? 1 : 0;
    return rc;
  });
}

int rlock_cancel(rlock_lock* lock) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    l->core->cancel_waits();
    return RLOCK_OK;
  });
}

int rlock_is_held_for(const rlock_lock* lock, int64_t thread_id) {
  if (lock == nullptr) return 0;
  int held = 0;
  guarded([&]() -> int {
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    held = l->core->is_held(thread_id) ? 1 : 0;
    return RLOCK_OK;
  });
  return held;
}

int rlock_is_held(const rlock_lock* lock) { return rlock_is_held_for(lock, RLOCK_THREAD_CURRENT); }

int rlock_is_lost_for(const rlock_lock* lock, int64_t thread_id) {
  if (lock == nullptr) return 0;
  int lost = 0;
  guarded([&]() -> int {
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    lost = l->core->is_lost(thread_id) ? 1 : 0;
    return RLOCK_OK;
  });
  return lost;
}

int rlock_is_lost(const rlock_lock* lock) { return rlock_is_lost_for(lock, RLOCK_THREAD_CURRENT); }

int rlock_query_for(rlock_lock_state* out, rlock_lock* lock, int64_t thread_id) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    if (out == nullptr) return invalid("out must not be NULL");
    if (int rc = check_version(out->version, RLOCK_LOCK_STATE_VERSION, "rlock_lock_state"))
      return rc;
    core::LockState state;
    int rc = l->core->query(thread_id, &state);
    if (rc != RLOCK_OK) return rc;
    t_query_owner = std::move(state.owner);
    out->locked = state.locked ? 1 : 0;
    out->held_by_me = state.held_by_me ? 1 : 0;
    out->hold_count = state.hold_count;
    out->ttl_ms = state.ttl_ms;
    out->owner_count = state.owner_count;
    out->owner = t_query_owner.empty() ? nullptr : t_query_owner.c_str();
    out->owner_len = t_query_owner.size();
    out->owner_hold_count = state.owner_hold_count;
    if (out->version >= 2) {
      out->mode = state.mode == "read"    ? RLOCK_MODE_READ
                  : state.mode == "write" ? RLOCK_MODE_WRITE
                                          : RLOCK_MODE_NONE;
    }
    return RLOCK_OK;
  });
}

int rlock_query(rlock_lock_state* out, rlock_lock* lock) {
  return rlock_query_for(out, lock, RLOCK_THREAD_CURRENT);
}

int rlock_lock_token_for(int64_t* out, const rlock_lock* lock, int64_t thread_id) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    if (out == nullptr) return invalid("out must not be NULL");
    return l->core->token(thread_id, out);
  });
}

int rlock_lock_token(int64_t* out, const rlock_lock* lock) {
  return rlock_lock_token_for(out, lock, RLOCK_THREAD_CURRENT);
}

int rlock_fenced_write(int* out_accepted, rlock_client* client, const char* key, size_t key_len,
                       const char* value, size_t value_len, int64_t token) {
  return guarded([&]() -> int {
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    if (key == nullptr) return invalid("key must not be NULL");
    if (value == nullptr && value_len > 0) return invalid("value must not be NULL");
    if (out_accepted == nullptr) return invalid("out_accepted must not be NULL");
    if (key_len > c->core->config().max_name_len) {
      return invalid("key is longer than the client's max_name_len");
    }
    bool accepted = false;
    int rc =
        core::fenced_write(*c->core, std::string(key, key_len),
                           std::string(value == nullptr ? "" : value, value_len), token, &accepted);
    if (rc == RLOCK_OK) *out_accepted = accepted ? 1 : 0;
    return rc;
  });
}

int rlock_lock_set_lost_callback(rlock_lock* lock, rlock_lost_cb cb, void* payload) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    if (cb == nullptr) {
      l->core->set_lost_callback(nullptr);
    } else {
      // The name as the caller gave it: without the client's key_prefix.
      const std::string prefix = l->core->client().config().key_prefix;
      l->core->set_lost_callback(
          [lock, cb, payload, prefix](const std::string& name, int64_t thread_id, int reason) {
            const size_t skip = name.compare(0, prefix.size(), prefix) == 0 ? prefix.size() : 0;
            cb(lock, name.c_str() + skip, name.size() - skip, thread_id,
               static_cast<rlock_lost_reason>(reason), payload);
          });
    }
    return RLOCK_OK;
  });
}

// ---- Multi-lock and RedLock -----------------------------------------------------------------

namespace {

int new_group(rlock_multi** out, rlock_lock* const* members, size_t count,
              core::LockGroup::Policy policy) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    if (members == nullptr) return invalid("members must not be NULL");
    if (count == 0) return invalid("a lock group needs at least one member (count is 0)");
    std::vector<std::shared_ptr<core::Lock>> locks;
    locks.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      const std::string what = "members[" + std::to_string(i) + "]";
      if (members[i] == nullptr) return invalid((what + " must not be NULL").c_str());
      Pinned<LockObj> member(members[i]);
      if (!member) return member.bad(what.c_str());
      locks.push_back(member->core);
    }
    auto group = std::make_unique<MultiObj>();
    group->core = std::make_shared<core::LockGroup>(std::move(locks), policy);
    *out = publish(std::move(group));
    return RLOCK_OK;
  });
}

}  // namespace

int rlock_multi_lock_new(rlock_multi** out, rlock_lock* const* members, size_t count) {
  return new_group(out, members, count, core::LockGroup::Policy::All);
}

int rlock_redlock_new(rlock_multi** out, rlock_lock* const* members, size_t count) {
  return new_group(out, members, count, core::LockGroup::Policy::Majority);
}

void rlock_multi_free(rlock_multi* group) {
  if (group == nullptr) return;
  guarded([&]() -> int {
    Pinned<MultiObj> g(group);
    if (!g || !g.kill()) return g.bad("group");  // a second free: recorded, nothing else
    g->core->close_waits();  // a wait in progress on another thread must not go on unreachable
    return RLOCK_OK;
  });
}

int rlock_multi_acquire_ex(int64_t* out_validity_ms, rlock_multi* group,
                           const rlock_acquire_options* opts) {
  return guarded([&]() -> int {
    if (group == nullptr) return invalid("group must not be NULL");
    Pinned<MultiObj> g(group);
    if (!g) return g.bad("group");
    rlock_acquire_options o = RLOCK_ACQUIRE_OPTIONS_INIT;
    if (opts != nullptr) {
      if (int rc =
              check_version(opts->version, RLOCK_ACQUIRE_OPTIONS_VERSION, "rlock_acquire_options"))
        return rc;
      o.wait_ms = opts->wait_ms;
      o.lease_ms = opts->lease_ms;
      o.thread_id = opts->thread_id;
      o.cancel = opts->cancel;
      if (opts->version >= 2 && opts->token != nullptr) {
        return invalid("fencing tokens are not available for lock groups (opts->token)");
      }
    }
    Pinned<TokenObj> cancel(o.cancel);
    if (o.cancel != nullptr && !cancel) return cancel.bad("opts->cancel");
    return g->core->acquire(o.wait_ms, o.lease_ms, o.thread_id,
                            o.cancel == nullptr ? nullptr : cancel->set.get(), out_validity_ms);
  });
}

int rlock_multi_acquire(rlock_multi* group, int64_t wait_ms) {
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  return rlock_multi_acquire_ex(nullptr, group, &opts);
}

int rlock_multi_release_for(rlock_multi* group, int64_t thread_id) {
  return guarded([&]() -> int {
    if (group == nullptr) return invalid("group must not be NULL");
    Pinned<MultiObj> g(group);
    if (!g) return g.bad("group");
    return g->core->release(thread_id);
  });
}

int rlock_multi_release(rlock_multi* group) {
  return rlock_multi_release_for(group, RLOCK_THREAD_CURRENT);
}

int rlock_multi_extend_for(int64_t* out_validity_ms, rlock_multi* group, int64_t thread_id,
                           int64_t lease_ms, unsigned int flags) {
  return guarded([&]() -> int {
    if (group == nullptr) return invalid("group must not be NULL");
    if ((flags & ~RLOCK_EXTEND_REACQUIRE) != 0) {
      return invalid(
          ("flags must be 0 or RLOCK_EXTEND_REACQUIRE, got " + std::to_string(flags)).c_str());
    }
    Pinned<MultiObj> g(group);
    if (!g) return g.bad("group");
    return g->core->extend(lease_ms, thread_id, (flags & RLOCK_EXTEND_REACQUIRE) != 0,
                           out_validity_ms);
  });
}

int rlock_multi_extend(int64_t* out_validity_ms, rlock_multi* group, int64_t lease_ms,
                       unsigned int flags) {
  return rlock_multi_extend_for(out_validity_ms, group, RLOCK_THREAD_CURRENT, lease_ms, flags);
}

int rlock_multi_is_held_for(const rlock_multi* group, int64_t thread_id) {
  if (group == nullptr) return 0;
  int held = 0;
  guarded([&]() -> int {
    Pinned<MultiObj> g(group);
    if (!g) return g.bad("group");
    held = g->core->is_held(thread_id) ? 1 : 0;
    return RLOCK_OK;
  });
  return held;
}

int rlock_multi_is_held(const rlock_multi* group) {
  return rlock_multi_is_held_for(group, RLOCK_THREAD_CURRENT);
}

int rlock_multi_cancel(rlock_multi* group) {
  return guarded([&]() -> int {
    if (group == nullptr) return invalid("group must not be NULL");
    Pinned<MultiObj> g(group);
    if (!g) return g.bad("group");
    g->core->cancel_waits();
    return RLOCK_OK;
  });
}

// ---- Cancel tokens --------------------------------------------------------------------------

int rlock_cancel_token_new(rlock_cancel_token** out) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    *out = publish(std::make_unique<TokenObj>());
    return RLOCK_OK;
  });
}

int rlock_cancel_token_cancel(rlock_cancel_token* token) {
  return guarded([&]() -> int {
    if (token == nullptr) return invalid("token must not be NULL");
    Pinned<TokenObj> t(token);
    if (!t) return t.bad("token");
    t->set->cancel_all(true);
    return RLOCK_OK;
  });
}

int rlock_cancel_token_is_cancelled(const rlock_cancel_token* token) {
  if (token == nullptr) return 0;
  int cancelled = 0;
  guarded([&]() -> int {
    Pinned<TokenObj> t(token);
    if (!t) return t.bad("token");
    cancelled = t->set->cancelled() ? 1 : 0;
    return RLOCK_OK;
  });
  return cancelled;
}

void rlock_cancel_token_free(rlock_cancel_token* token) {
  if (token == nullptr) return;
  guarded([&]() -> int {
    Pinned<TokenObj> t(token);
    if (!t || !t.kill()) return t.bad("token");  // a second free: recorded, nothing else
    return RLOCK_OK;  // an acquire using it keeps it pinned until it returns
  });
}

// ---- Inspection -----------------------------------------------------------------------------

}  // extern "C"

namespace {

// A result and the storage its borrowed strings and arrays point into. The public struct comes
// back to *_free as a pointer to the member: live_results() maps it to its box.
struct InfoBox {
  rlock_lock_info info{};
  core::LockInfo data;
  std::vector<rlock_lock_owner> owners;
  std::vector<rlock_holder_info> holders;
  std::vector<rlock_lock_waiter> queue;
};

struct PageBox {
  rlock_lock_page page{};
  std::vector<std::unique_ptr<InfoBox>> boxes;
  std::vector<const rlock_lock_info*> pointers;
  std::string next_cursor;
};

// Results given out and not yet freed, so a double free or a foreign pointer is refused
// instead of corrupting memory. Never destroyed: frees may run during exit.
struct LiveResults {
  std::mutex mutex;
  std::map<const void*, std::function<void()>> deleters;
};
LiveResults& live_results() {
  static LiveResults& live = *new LiveResults();
  return live;
}

template <class Box>
void remember(Box* box, const void* key) {
  LiveResults& live = live_results();
  std::lock_guard<std::mutex> guard(live.mutex);
  live.deleters.emplace(key, [box] { delete box; });
}

// Deletes the box of a result; false when `key` is not a live result.
bool forget(const void* key) {
  std::function<void()> deleter;
  {
    LiveResults& live = live_results();
    std::lock_guard<std::mutex> guard(live.mutex);
    auto it = live.deleters.find(key);
    if (it == live.deleters.end()) return false;
    deleter = std::move(it->second);
    live.deleters.erase(it);
  }
  deleter();
  return true;
}

rlock_lock_mode mode_of(const std::string& mode) {
  return mode == "read" ? RLOCK_MODE_READ : mode == "write" ? RLOCK_MODE_WRITE : RLOCK_MODE_NONE;
}

std::unique_ptr<InfoBox> box_of(core::LockInfo data) {
  auto box = std::make_unique<InfoBox>();
  box->data = std::move(data);
  const core::LockInfo& d = box->data;
  box->owners.reserve(d.owners.size());
  box->holders.reserve(d.owners.size());
  box->queue.reserve(d.queue.size());
  for (const core::LockOwner& owner : d.owners) {
    box->owners.push_back(
        {owner.field.c_str(), owner.field.size(), owner.holds, mode_of(owner.mode)});
    const core::HolderInfo& h = owner.holder;
    box->holders.push_back(
        {h.known ? 1 : 0, h.host.c_str(), h.pid, h.command.c_str(), h.started_ms, h.since_ms});
  }
  for (const core::LockWaiter& waiter : d.queue) {
    box->queue.push_back({waiter.owner.c_str(), waiter.owner.size(), waiter.deadline_ms});
  }
  rlock_lock_info& info = box->info;
  info.version = RLOCK_LOCK_INFO_VERSION;
  info.name = d.name.c_str();
  info.name_len = d.name.size();
  info.kind = static_cast<rlock_found_kind>(d.kind);
  info.locked = d.locked ? 1 : 0;
  info.ttl_ms = d.ttl_ms;
  info.mode = mode_of(d.mode);
  info.owner_count = d.owner_count;
  info.owners = box->owners.empty() ? nullptr : box->owners.data();
  info.owners_len = box->owners.size();
  info.queue_length = d.queue_length;
  info.queue = box->queue.empty() ? nullptr : box->queue.data();
  info.queue_len = box->queue.size();
  info.subscribers = d.subscribers;
  info.token = d.token;
  info.permits_available = d.permits_available;
  info.permits_held = d.permits_held;
  info.earliest_deadline_ms = d.earliest_deadline_ms;
  info.holders = box->holders.empty() ? nullptr : box->holders.data();
  info.holders_len = box->holders.size();
  return box;
}

}  // namespace

static_assert(int{RLOCK_FOUND_NOTHING} == static_cast<int>(core::FoundKind::Nothing) &&
                  int{RLOCK_FOUND_REENTRANT} == static_cast<int>(core::FoundKind::Reentrant) &&
                  int{RLOCK_FOUND_FENCED} == static_cast<int>(core::FoundKind::Fenced) &&
                  int{RLOCK_FOUND_FAIR} == static_cast<int>(core::FoundKind::Fair) &&
                  int{RLOCK_FOUND_READ_WRITE} == static_cast<int>(core::FoundKind::ReadWrite) &&
                  int{RLOCK_FOUND_NOT_A_LOCK} == static_cast<int>(core::FoundKind::NotALock) &&
                  int{RLOCK_FOUND_SEMAPHORE} == static_cast<int>(core::FoundKind::Semaphore) &&
                  int{RLOCK_FOUND_COUNTER} == static_cast<int>(core::FoundKind::Counter),
              "found kinds must agree");
static_assert(RLOCK_INSPECT_MAX_LISTED == core::kMaxListed, "listing limits must agree");

extern "C" {

int rlock_inspect(rlock_lock_info** out, rlock_client* client, const char* name, size_t name_len) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    if (name == nullptr) return invalid("name must not be NULL");
    const std::string lock_name(name, name_len);
    core::check_lock_name(c->core->config(), lock_name);
    if (c->core->closed()) return core::fail(core::kClosed, "the rlock client was closed");
    std::unique_ptr<InfoBox> box = box_of(core::inspect_lock(*c->core, lock_name));
    remember(box.get(), &box->info);
    *out = &box.release()->info;
    return RLOCK_OK;
  });
}

void rlock_lock_info_free(rlock_lock_info* info) {
  if (info == nullptr) return;
  guarded([&]() -> int {
    if (!forget(info)) {
      return invalid("info is not an rlock_lock_info from rlock_inspect: freed already?");
    }
    return RLOCK_OK;
  });
}

int rlock_scan_options_init(rlock_scan_options* opts, unsigned int version) {
  return guarded([&]() -> int {
    if (opts == nullptr) return invalid("opts must not be NULL");
    if (int rc = check_version(version, RLOCK_SCAN_OPTIONS_VERSION, "rlock_scan_options"))
      return rc;
    std::memset(opts, 0, sizeof *opts);
    opts->version = version;
    return RLOCK_OK;
  });
}

int rlock_scan_locks(rlock_lock_page** out, rlock_client* client, const rlock_scan_options* opts) {
  return guarded([&]() -> int {
    if (out == nullptr) return invalid("out must not be NULL");
    *out = nullptr;
    if (client == nullptr) return invalid("client must not be NULL");
    Pinned<ClientObj> c(client);
    if (!c) return c.bad("client");
    const rlock_scan_options defaults = RLOCK_SCAN_OPTIONS_INIT;
    const rlock_scan_options& o = opts != nullptr ? *opts : defaults;
    if (int rc = check_version(o.version, RLOCK_SCAN_OPTIONS_VERSION, "rlock_scan_options"))
      return rc;
    if (o.match == nullptr && o.match_len != 0) {
      return invalid("opts->match is NULL but opts->match_len is not 0");
    }
    if (o.count < 0) return invalid("opts->count must not be negative");
    if (c->core->closed()) return core::fail(core::kClosed, "the rlock client was closed");
    const std::string match =
        o.match == nullptr ? std::string() : std::string(o.match, o.match_len);
    const std::string cursor = (o.cursor == nullptr || o.cursor[0] == '\0') ? "0" : o.cursor;
    core::LockPage found = core::scan_locks(*c->core, cursor, match, o.count);
    auto box = std::make_unique<PageBox>();
    box->boxes.reserve(found.locks.size());
    box->pointers.reserve(found.locks.size());
    for (core::LockInfo& info : found.locks) box->boxes.push_back(box_of(std::move(info)));
    for (const auto& info : box->boxes) box->pointers.push_back(&info->info);
    box->next_cursor = std::move(found.next_cursor);
    rlock_lock_page& page = box->page;
    page.version = RLOCK_LOCK_PAGE_VERSION;
    page.locks = box->pointers.empty() ? nullptr : box->pointers.data();
    page.count = box->pointers.size();
    page.next_cursor = box->next_cursor.c_str();
    page.done = box->next_cursor == "0" ? 1 : 0;
    remember(box.get(), &box->page);
    *out = &box.release()->page;
    return RLOCK_OK;
  });
}

void rlock_lock_page_free(rlock_lock_page* page) {
  if (page == nullptr) return;
  guarded([&]() -> int {
    if (!forget(page)) {
      return invalid("page is not an rlock_lock_page from rlock_scan_locks: freed already?");
    }
    return RLOCK_OK;
  });
}

// ---- Deprecated names (rlock.h) ---------------------------------------------------------------

int rlock_release_ex(rlock_lock* lock, int64_t thread_id) {
  return rlock_release_for(lock, thread_id);
}

int rlock_extend_ex(rlock_lock* lock, int64_t lease_ms, int64_t thread_id) {
  return rlock_extend_for(lock, thread_id, lease_ms);
}

int rlock_is_held_ex(const rlock_lock* lock, int64_t thread_id) {
  return rlock_is_held_for(lock, thread_id);
}

}  // extern "C"

// ---- Asynchronous calls ---------------------------------------------------------------------

namespace {

core::Lock::Completion completion(rlock_completion_cb done, void* user) {
  return [done, user](int status, int64_t value) { done(user, status, value); };
}

// Reads acquire options for an asynchronous call; the cancel token's set is kept alive by the
// operation (the token handle may be freed before the wait ends).
int read_async_options(const rlock_acquire_options* opts, core::AcquireArgs* args,
                       std::shared_ptr<core::CancelSet>* keep) {
  if (opts == nullptr) return RLOCK_OK;
  if (int rc = check_version(opts->version, RLOCK_ACQUIRE_OPTIONS_VERSION, "rlock_acquire_options"))
    return rc;
  Pinned<TokenObj> cancel(opts->cancel);
  if (opts->cancel != nullptr && !cancel) return cancel.bad("opts->cancel");
  if (cancel) *keep = cancel->set;
  args->wait_ms = opts->wait_ms;
  args->lease_ms = opts->lease_ms;
  args->thread_id = opts->thread_id;
  args->cancel = keep->get();
  if (opts->version >= 2) args->token = opts->token;
  return RLOCK_OK;
}

}  // namespace

int rlock_acquire_async(rlock_lock* lock, const rlock_acquire_options* opts,
                        rlock_completion_cb done, void* user) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    if (done == nullptr) return invalid("done must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    core::AcquireArgs args;
    std::shared_ptr<core::CancelSet> keep;
    if (int rc = read_async_options(opts, &args, &keep)) return rc;
    return l->core->acquire_async(args, std::move(keep), completion(done, user));
  });
}

int rlock_release_async(rlock_lock* lock, int64_t thread_id, rlock_completion_cb done, void* user) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    if (done == nullptr) return invalid("done must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    return l->core->release_async(thread_id, completion(done, user));
  });
}

int rlock_extend_async(rlock_lock* lock, int64_t thread_id, int64_t lease_ms,
                       rlock_completion_cb done, void* user) {
  return guarded([&]() -> int {
    if (lock == nullptr) return invalid("lock must not be NULL");
    if (done == nullptr) return invalid("done must not be NULL");
    Pinned<LockObj> l(lock);
    if (!l) return l.bad("lock");
    return l->core->extend_async(lease_ms, thread_id, completion(done, user));
  });
}

int rlock_multi_acquire_async(rlock_multi* group, const rlock_acquire_options* opts,
                              rlock_completion_cb done, void* user) {
  return guarded([&]() -> int {
    if (group == nullptr) return invalid("group must not be NULL");
    if (done == nullptr) return invalid("done must not be NULL");
    Pinned<MultiObj> g(group);
    if (!g) return g.bad("group");
    core::AcquireArgs args;
    std::shared_ptr<core::CancelSet> keep;
    if (int rc = read_async_options(opts, &args, &keep)) return rc;
    if (args.token != nullptr) {
      return invalid("fencing tokens are not available for lock groups (opts->token)");
    }
    return g->core->acquire_async(args.wait_ms, args.lease_ms, args.thread_id, std::move(keep),
                                  completion(done, user));
  });
}

int rlock_multi_release_async(rlock_multi* group, int64_t thread_id, rlock_completion_cb done,
                              void* user) {
  return guarded([&]() -> int {
    if (group == nullptr) return invalid("group must not be NULL");
    if (done == nullptr) return invalid("done must not be NULL");
    Pinned<MultiObj> g(group);
    if (!g) return g.bad("group");
    return g->core->release_async(thread_id, completion(done, user));
  });
}
