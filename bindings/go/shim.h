/* Static inline shims between Go and the rlock C ABI.
 *
 * rlock_last_error() is thread-local and a goroutine may move to another OS thread between two
 * cgo calls, so every shim that can fail reads the message in the same C call as the failing
 * function and hands it back as a malloc'd copy (freed by Go). That avoids LockOSThread.
 * C never keeps a Go pointer: the lost-lock payload and the `user` of asynchronous calls are
 * cgo.Handles passed as uintptr_t. */
#ifndef RLOCK_GO_SHIM_H
#define RLOCK_GO_SHIM_H

#define RLOCK_DEPRECATE_HARD /* only the current names */
#include <rlock/rlock.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The API this binding was written for: rlock 0.3.x (0.2 lacks the asynchronous calls, 0.1 had
 * other names and argument orders). */
#if !defined(RLOCK_VERSION_NUMBER) || RLOCK_VERSION_NUMBER < 300 || RLOCK_VERSION_NUMBER >= 400
#  error "the rlock Go binding needs the rlock 0.3.x headers (check PKG_CONFIG_PATH)"
#endif
/* WithTLS fills the TLS fields of rlock_client_options version 3. */
#if RLOCK_CLIENT_OPTIONS_VERSION < 4
#  error "the rlock Go binding needs rlock.h with statistics (rlock_client_options version 4)"
#endif

typedef struct rlock_go_result {
  int rc;
  char *message; /* NULL on success; else owned by the caller, free() it */
} rlock_go_result;

static inline rlock_go_result rlock_go_result_of(int rc) {
  rlock_go_result r;
  r.rc = rc;
  r.message = NULL;
  if (rc != RLOCK_OK) {
    const rlock_error_info *info = rlock_last_error();
    /* The thread-local message belongs to this call only if its code matches. */
    const char *text =
        (info->code == rc && info->message[0] != '\0') ? info->message : rlock_strerror(rc);
    size_t len = strlen(text);
    r.message = (char *)malloc(len + 1);
    if (r.message != NULL) memcpy(r.message, text, len + 1);
  }
  return r;
}

/* WithTLS's settings (tls.go); strings NULL when unset. */
typedef struct rlock_go_tls {
  const char *ca_file;
  const char *ca_dir;
  const char *cert_file;
  const char *key_file;
  const char *server_name;
  int verify;
  int min_version;
  int sentinels;
} rlock_go_tls;

/* tls: NULL = TLS only as the URL says. */
static inline rlock_go_result rlock_go_watch_key_events(rlock_client *client, int kinds) {
  return rlock_go_result_of(rlock_client_watch_key_events(client, kinds));
}

static inline rlock_go_result rlock_go_client_new(rlock_client **out, const char *url,
                                                  int64_t connect_timeout_ms,
                                                  int64_t command_timeout_ms, int pool_size,
                                                  int64_t watchdog_lease_ms, int64_t poll_cap_ms,
                                                  size_t max_name_len, int stats_off,
                                                  const char *key_prefix, const rlock_go_tls *tls) {
  rlock_client_options opts;
  int rc = rlock_client_options_init(&opts, RLOCK_CLIENT_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  opts.url = url;
  opts.connect_timeout_ms = connect_timeout_ms;
  opts.command_timeout_ms = command_timeout_ms;
  opts.pool_size = pool_size;
  opts.watchdog_lease_ms = watchdog_lease_ms;
  opts.poll_cap_ms = poll_cap_ms;
  opts.max_name_len = max_name_len;
  opts.stats = stats_off ? RLOCK_STATS_OFF : RLOCK_STATS_ON;
  opts.key_prefix = key_prefix;
  if (tls != NULL) {
    opts.tls = 1;
    opts.tls_ca_file = tls->ca_file;
    opts.tls_ca_dir = tls->ca_dir;
    opts.tls_cert_file = tls->cert_file;
    opts.tls_key_file = tls->key_file;
    opts.tls_server_name = tls->server_name;
    opts.tls_verify = tls->verify;
    opts.tls_min_version = tls->min_version;
    opts.sentinel_tls = tls->sentinels;
  }
  return rlock_go_result_of(rlock_client_new(out, &opts));
}

static inline rlock_go_result rlock_go_lock_new(rlock_lock **out, rlock_client *client,
                                                const char *name, size_t name_len,
                                                rlock_lock_kind kind, int64_t lease_ms,
                                                int64_t spin_initial_ms, int64_t spin_max_ms,
                                                int64_t fair_wait_ms, const char *owner_id,
                                                size_t owner_id_len) {
  rlock_lock_options opts;
  int rc = rlock_lock_options_init(&opts, RLOCK_LOCK_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  opts.kind = kind;
  opts.lease_ms = lease_ms;
  opts.spin_initial_ms = spin_initial_ms;
  opts.spin_max_ms = spin_max_ms;
  opts.fair_wait_ms = fair_wait_ms;
  opts.owner_id = owner_id; /* NULL: the value is its own owner */
  opts.owner_id_len = owner_id_len;
  return rlock_go_result_of(rlock_lock_new_n(out, client, name, name_len, &opts));
}

static inline rlock_go_result rlock_go_cancel_token_new(rlock_cancel_token **out) {
  return rlock_go_result_of(rlock_cancel_token_new(out));
}

/* token_out: NULL unless the caller wants a fencing token. */
/* A fenced lock's acquire takes a token by its kind; Token() reads it afterwards. */
static inline rlock_go_result rlock_go_acquire(rlock_lock *lock, int64_t wait_ms, int64_t lease_ms,
                                               int64_t thread_id, rlock_cancel_token *cancel) {
  rlock_acquire_options opts;
  int rc = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  return rlock_go_result_of(rlock_acquire_ex(lock, &opts));
}

static inline rlock_go_result rlock_go_release(rlock_lock *lock, int64_t thread_id) {
  return rlock_go_result_of(rlock_release_for(lock, thread_id));
}

static inline rlock_go_result rlock_go_extend(rlock_lock *lock, int64_t lease_ms,
                                              int64_t thread_id) {
  return rlock_go_result_of(rlock_extend_for(lock, thread_id, lease_ms));
}

static inline rlock_go_result rlock_go_extend_by(rlock_lock *lock, int64_t add_ms,
                                                 int64_t thread_id) {
  return rlock_go_result_of(rlock_extend_by_for(lock, thread_id, add_ms));
}

static inline rlock_go_result rlock_go_force_unlock(rlock_lock *lock, int *deleted) {
  return rlock_go_result_of(rlock_force_unlock(deleted, lock));
}

static inline rlock_go_result rlock_go_token(rlock_lock *lock, int64_t thread_id, int64_t *out) {
  return rlock_go_result_of(rlock_lock_token_for(out, lock, thread_id));
}

/* The owner string is borrowed from thread-local storage: copied here into owner_out
 * (malloc'd, freed by Go) before anything else can overwrite it. */
static inline rlock_go_result rlock_go_inspect(rlock_lock_info **out, rlock_client *client,
                                               const char *name, size_t name_len) {
  return rlock_go_result_of(rlock_inspect(out, client, name, name_len));
}

static inline rlock_go_result rlock_go_query(rlock_lock *lock, int64_t thread_id,
                                             rlock_lock_state *state, char **owner_out) {
  state->version = RLOCK_LOCK_STATE_VERSION;
  *owner_out = NULL;
  int rc = rlock_query_for(state, lock, thread_id);
  if (rc == RLOCK_OK && state->owner != NULL) {
    *owner_out = (char *)malloc(state->owner_len + 1);
    if (*owner_out == NULL) return rlock_go_result_of(RLOCK_ENOMEM);
    memcpy(*owner_out, state->owner, state->owner_len);
    (*owner_out)[state->owner_len] = '\0';
  }
  return rlock_go_result_of(rc);
}

static inline rlock_go_result rlock_go_multi_new(rlock_multi **out, rlock_lock **members,
                                                 size_t count, int redlock) {
  return rlock_go_result_of(redlock ? rlock_redlock_new(out, members, count)
                                    : rlock_multi_lock_new(out, members, count));
}

static inline rlock_go_result rlock_go_multi_acquire(rlock_multi *group, int64_t wait_ms,
                                                     int64_t lease_ms, int64_t thread_id,
                                                     rlock_cancel_token *cancel,
                                                     int64_t *validity_ms) {
  rlock_acquire_options opts;
  int rc = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  return rlock_go_result_of(rlock_multi_acquire_ex(validity_ms, group, &opts));
}

static inline rlock_go_result rlock_go_multi_release(rlock_multi *group, int64_t thread_id) {
  return rlock_go_result_of(rlock_multi_release_for(group, thread_id));
}

static inline rlock_go_result rlock_go_multi_extend(rlock_multi *group, int64_t thread_id,
                                                    int64_t lease_ms, int reacquire,
                                                    int64_t *validity_ms) {
  return rlock_go_result_of(rlock_multi_extend_for(validity_ms, group, thread_id, lease_ms,
                                                   reacquire ? RLOCK_EXTEND_REACQUIRE : 0u));
}

/* ---- Asynchronous calls: the goroutine waits on a channel, not on an OS thread ----------- */

/* Defined in Go (async.go). message: as rlock_go_result's, NULL on success. */
extern void rlockGoDone(uintptr_t user, int status, int64_t value, char *message);

/* Runs on a library thread. The message is copied here because rlock_last_error() describes
 * `status` only inside this call. */
static inline void rlock_go_done_trampoline(void *user, int status, int64_t value) {
  rlock_go_result r = rlock_go_result_of(status);
  rlockGoDone((uintptr_t)user, r.rc, value, r.message);
}

static inline rlock_go_result rlock_go_acquire_async(rlock_lock *lock, int64_t wait_ms,
                                                     int64_t lease_ms, int64_t thread_id,
                                                     rlock_cancel_token *cancel, uintptr_t user) {
  rlock_acquire_options opts;
  int rc = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  return rlock_go_result_of(
      rlock_acquire_async(lock, &opts, rlock_go_done_trampoline, (void *)user));
}

static inline rlock_go_result rlock_go_release_async(rlock_lock *lock, int64_t thread_id,
                                                     uintptr_t user) {
  return rlock_go_result_of(
      rlock_release_async(lock, thread_id, rlock_go_done_trampoline, (void *)user));
}

static inline rlock_go_result rlock_go_extend_async(rlock_lock *lock, int64_t lease_ms,
                                                    int64_t thread_id, uintptr_t user) {
  return rlock_go_result_of(
      rlock_extend_async(lock, thread_id, lease_ms, rlock_go_done_trampoline, (void *)user));
}

static inline rlock_go_result rlock_go_multi_acquire_async(rlock_multi *group, int64_t wait_ms,
                                                           int64_t lease_ms, int64_t thread_id,
                                                           rlock_cancel_token *cancel,
                                                           uintptr_t user) {
  rlock_acquire_options opts;
  int rc = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rlock_go_result_of(rc);
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  return rlock_go_result_of(
      rlock_multi_acquire_async(group, &opts, rlock_go_done_trampoline, (void *)user));
}

static inline rlock_go_result rlock_go_multi_release_async(rlock_multi *group, int64_t thread_id,
                                                           uintptr_t user) {
  return rlock_go_result_of(
      rlock_multi_release_async(group, thread_id, rlock_go_done_trampoline, (void *)user));
}

/* Defined in Go (lost.go). */
extern void rlockGoLost(int reason, uintptr_t payload);

static inline void rlock_go_lost_trampoline(rlock_lock *lock, const char *name, size_t name_len,
                                            int64_t thread_id, rlock_lost_reason reason,
                                            void *payload) {
  /* Each handle has one owner, so the handle's hook is all Go needs. */
  (void)lock;
  (void)name;
  (void)name_len;
  (void)thread_id;
  rlockGoLost((int)reason, (uintptr_t)payload);
}

static inline rlock_go_result rlock_go_set_lost_callback(rlock_lock *lock, uintptr_t handle) {
  return rlock_go_result_of(
      rlock_lock_set_lost_callback(lock, rlock_go_lost_trampoline, (void *)handle));
}

/* ---- Statistics and events (stats.go, events.go) ------------------------------------------ */

static inline rlock_go_result rlock_go_client_stats(rlock_client *client, rlock_stats *out) {
  out->version = RLOCK_STATS_VERSION;
  return rlock_go_result_of(rlock_client_stats(out, client));
}

/* Defined in Go (events.go); the event is borrowed for the duration of the call. */
extern void rlockGoEvent(rlock_event *event, uintptr_t payload);

static inline void rlock_go_event_trampoline(const rlock_event *event, void *payload) {
  rlockGoEvent((rlock_event *)event, (uintptr_t)payload);
}

/* handle 0 clears the callback. */
static inline rlock_go_result rlock_go_set_event_callback(rlock_client *client, uintptr_t handle) {
  return rlock_go_result_of(rlock_client_set_event_callback(
      client, handle != 0 ? rlock_go_event_trampoline : NULL, (void *)handle));
}

#endif
