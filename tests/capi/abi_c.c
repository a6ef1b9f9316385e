/* The public header as a C99 program sees it (built with -std=c99 -pedantic-errors -Wall
 * -Wextra -Werror), and the functions that need no Redis: status texts, version, options
 * initialisers, NULL handling, the v1 struct layouts and the status code values, which are all
 * part of the stable ABI (docs/abi.md). Prints every failed check; exits 1 if any failed. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "rlock/rlock.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                                      \
  do {                                                                                          \
    long long a_ = (long long)(a), b_ = (long long)(b);                                         \
    if (a_ != b_) {                                                                             \
      fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__, #a, \
              #b, a_, b_);                                                                      \
      ++failures;                                                                               \
    }                                                                                           \
  } while (0)

/* The last error must be `code`, with a non-empty message containing `needle`. */
static void check_last_error(int code, const char *needle, int line) {
  const rlock_error_info *e = rlock_last_error();
  if (e == NULL) {
    fprintf(stderr, "line %d: rlock_last_error() returned NULL\n", line);
    ++failures;
    return;
  }
  if (e->code != code) {
    fprintf(stderr, "line %d: last error code %d, expected %d\n", line, e->code, code);
    ++failures;
  }
  if (e->message == NULL || e->message[0] == '\0') {
    fprintf(stderr, "line %d: last error message is NULL or empty\n", line);
    ++failures;
  } else if (strstr(e->message, needle) == NULL) {
    fprintf(stderr, "line %d: last error message \"%s\" does not contain \"%s\"\n", line,
            e->message, needle);
    ++failures;
  }
}

/* A completion for calls that must not start: counts, so a call that did start shows. */
static int never_done_calls = 0;
static void never_done(void *user, int status, int64_t value) {
  (void)user;
  (void)status;
  (void)value;
  ++never_done_calls;
}

static void lost_cb(rlock_lock *lock, const char *name, size_t name_len, int64_t thread_id,
                    rlock_lost_reason reason, void *payload) {
  (void)lock;
  (void)name;
  (void)name_len;
  (void)thread_id;
  (void)reason;
  (void)payload;
}

static void test_last_error_before_any_failure(void) {
  const rlock_error_info *e = rlock_last_error();
  CHECK(e != NULL);
  if (e != NULL) {
    CHECK_EQ_INT(e->code, RLOCK_OK);
    CHECK(e->message != NULL);
    if (e->message != NULL) CHECK(e->message[0] == '\0');
  }
}

static void test_status_codes(void) {
  /* Append-only values: renumbering any of them breaks every compiled caller. */
  static const struct {
    int code;
    int value;
  } codes[] = {
      {RLOCK_OK, 0},           {RLOCK_ERROR, -1},
      {RLOCK_ETIMEDOUT, -2},   {RLOCK_ENOTHELD, -3},
      {RLOCK_ECANCELED, -4},   {RLOCK_ECONN, -5},
      {RLOCK_EINVAL, -6},      {RLOCK_ENOMEM, -7},
      {RLOCK_EVERSION, -8},    {RLOCK_EINTERNAL, -9},
      {RLOCK_EUSER, -10},      {RLOCK_ELOST, -11},
      {RLOCK_ENOTOWNER, -12},  {RLOCK_EAUTH, -13},
      {RLOCK_ENOPERM, -14},    {RLOCK_EUNSUPPORTED, -15},
      {RLOCK_EREDIS, -16},     {RLOCK_EOOM, -17},
      {RLOCK_EBUSY, -18},      {RLOCK_EREADONLY, -19},
      {RLOCK_ECLOSED, -20},    {RLOCK_EDEADLK, -21},
      {RLOCK_EBADHANDLE, -22}, {RLOCK_ENOTSYNCED, -23},
      {RLOCK_EFORKED, -24},    {RLOCK_ETLS, -25},
  };
  const size_t n = sizeof codes / sizeof codes[0];
  const char *unknown = rlock_strerror(12345);
  size_t i, j;
  static const int unknown_codes[] = {1, -1000, INT_MIN, INT_MAX};

  CHECK(unknown != NULL && unknown[0] != '\0');
  for (i = 0; i < n; ++i) {
    const char *text = rlock_strerror(codes[i].code);
    CHECK_EQ_INT(codes[i].code, codes[i].value);
    CHECK(text != NULL);
    if (text == NULL) continue;
    if (text[0] == '\0') {
      fprintf(stderr, "rlock_strerror(%d) is empty\n", codes[i].code);
      ++failures;
    }
    /* Every known code has its own text, not the fallback. */
    if (unknown != NULL && strcmp(text, unknown) == 0) {
      fprintf(stderr, "rlock_strerror(%d) is the unknown-code text \"%s\"\n", codes[i].code, text);
      ++failures;
    }
    for (j = 0; j < i; ++j) {
      const char *other = rlock_strerror(codes[j].code);
      if (other != NULL && strcmp(text, other) == 0) {
        fprintf(stderr, "codes %d and %d share the text \"%s\"\n", codes[i].code, codes[j].code,
                text);
        ++failures;
      }
    }
  }
  for (i = 0; i < sizeof unknown_codes / sizeof unknown_codes[0]; ++i) {
    const char *text = rlock_strerror(unknown_codes[i]);
    CHECK(text != NULL && text[0] != '\0');
  }
  CHECK_EQ_INT(RLOCK_LOST_GONE, 1);
  CHECK_EQ_INT(RLOCK_LOST_UNREACHABLE, 2);
  CHECK_EQ_INT(RLOCK_LOST_EXPIRED, 3);
}

static void test_limits_and_special_values(void) {
  CHECK(RLOCK_MAX_DURATION_MS == (int64_t)1 << 53);
  CHECK(RLOCK_MAX_DURATION_MS == 9007199254740992LL);
  CHECK(RLOCK_DEFAULT_MAX_NAME_LEN == 65536u);
  CHECK(RLOCK_HARD_MAX_NAME_LEN == 16u * 1024u * 1024u);
  CHECK_EQ_INT(RLOCK_WAIT_FOREVER, -1);
  CHECK_EQ_INT(RLOCK_LEASE_WATCHDOG, -1);
  CHECK_EQ_INT(RLOCK_THREAD_CURRENT, 0);
}

static void test_version(void) {
  unsigned int major = 99, minor = 99, patch = 99;
  char extra = 0;
  const char *v = rlock_version_string();
  CHECK(v != NULL);
  if (v == NULL) return;
  CHECK_EQ_INT(rlock_version_number(), RLOCK_VERSION_NUMBER);
  CHECK(strcmp(v, RLOCK_VERSION_STRING) == 0);
  CHECK(sscanf(v, "%u.%u.%u%c", &major, &minor, &patch, &extra) == 3);
  CHECK_EQ_INT(major, RLOCK_VERSION_MAJOR);
  CHECK_EQ_INT(minor, RLOCK_VERSION_MINOR);
  CHECK_EQ_INT(patch, RLOCK_VERSION_PATCH);
  CHECK_EQ_INT(rlock_version_number(), major * 10000u + minor * 100u + patch);
  CHECK(rlock_version_string() == v); /* static storage */
}

static void test_initializer_macros(void) {
  rlock_client_options co = RLOCK_CLIENT_OPTIONS_INIT;
  rlock_lock_options lo = RLOCK_LOCK_OPTIONS_INIT;
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  rlock_lock_options lo2;
  rlock_acquire_options ao2;

  CHECK_EQ_INT(co.version, RLOCK_CLIENT_OPTIONS_VERSION);
  CHECK_EQ_INT(RLOCK_CLIENT_OPTIONS_VERSION, 5);
  CHECK(co.url == NULL && co.host == NULL && co.unix_socket == NULL);
  CHECK(co.username == NULL && co.password == NULL);
  CHECK(co.port == 0 && co.db == 0 && co.pool_size == 0);
  CHECK(co.connect_timeout_ms == 0 && co.command_timeout_ms == 0);
  CHECK(co.watchdog_lease_ms == 0 && co.poll_cap_ms == 0 && co.max_name_len == 0);
  CHECK(co.sync_replicas == 0 && co.sync_timeout_ms == 0); /* version 2 */
  CHECK_EQ_INT(co.sync_replicas, RLOCK_SYNC_AUTO);         /* zero is the default: auto */
  CHECK_EQ_INT(RLOCK_SYNC_NEVER, -1);
  /* version 3: TLS off, every TLS setting at its default (zero) */
  CHECK(co.tls == 0 && co.tls_ca_file == NULL && co.tls_ca_dir == NULL);
  CHECK(co.tls_cert_file == NULL && co.tls_key_file == NULL && co.tls_server_name == NULL);
  CHECK(co.tls_verify == 0 && co.tls_min_version == 0 && co.sentinel_tls == 0);
  CHECK_EQ_INT(RLOCK_TLS_VERIFY_FULL, 0);
  CHECK_EQ_INT(RLOCK_TLS_VERIFY_CA, 1);
  CHECK_EQ_INT(RLOCK_TLS_VERIFY_NONE, 2);
  CHECK_EQ_INT(RLOCK_TLS_1_2, 0);
  CHECK_EQ_INT(RLOCK_TLS_1_3, 1);
  CHECK_EQ_INT(RLOCK_SENTINEL_TLS_AUTO, 0);
  CHECK_EQ_INT(RLOCK_SENTINEL_TLS_ON, 1);
  CHECK_EQ_INT(RLOCK_SENTINEL_TLS_OFF, 2);
  /* version 4: statistics on */
  CHECK_EQ_INT(co.stats, RLOCK_STATS_ON);
  CHECK_EQ_INT(RLOCK_STATS_ON, 0);
  CHECK_EQ_INT(RLOCK_STATS_OFF, 1);
  CHECK(co.key_prefix == NULL); /* version 5: no key prefix */

  CHECK_EQ_INT(lo.version, RLOCK_LOCK_OPTIONS_VERSION);
  CHECK_EQ_INT(RLOCK_LOCK_OPTIONS_VERSION, 3);
  CHECK(lo.owner_id == NULL); /* version 3: the client's owners */
  CHECK_EQ_INT(lo.owner_id_len, 0);
  CHECK_EQ_INT(lo.kind, RLOCK_LOCK_REENTRANT);
  CHECK_EQ_INT(RLOCK_LOCK_FENCED, 1);
  CHECK_EQ_INT(RLOCK_LOCK_SPIN, 2);
  CHECK_EQ_INT(RLOCK_LOCK_FAIR, 3);
  CHECK_EQ_INT(lo.lease_ms, RLOCK_LEASE_WATCHDOG);

  CHECK_EQ_INT(ao.version, RLOCK_ACQUIRE_OPTIONS_VERSION);
  CHECK_EQ_INT(RLOCK_ACQUIRE_OPTIONS_VERSION, 2);
  CHECK(ao.token == NULL);
  CHECK_EQ_INT(ao.wait_ms, RLOCK_WAIT_FOREVER);
  CHECK_EQ_INT(ao.lease_ms, 0);
  CHECK_EQ_INT(ao.thread_id, RLOCK_THREAD_CURRENT);
  CHECK(ao.cancel == NULL);

  CHECK_EQ_INT(st.version, RLOCK_LOCK_STATE_VERSION);
  CHECK_EQ_INT(RLOCK_LOCK_STATE_VERSION, 2);
  CHECK_EQ_INT(RLOCK_LOCK_READ, 4);
  CHECK_EQ_INT(RLOCK_LOCK_WRITE, 5);
  CHECK_EQ_INT(RLOCK_LOCK_NON_REENTRANT, 6);
  CHECK_EQ_INT(RLOCK_LOCK_NON_REENTRANT_FAIR, 7);
  CHECK_EQ_INT(RLOCK_EDEADLK, -21);
  CHECK(st.locked == 0 && st.held_by_me == 0 && st.hold_count == 0 && st.ttl_ms == 0);
  CHECK(st.owner_count == 0 && st.owner == NULL && st.owner_len == 0 && st.owner_hold_count == 0);
  CHECK_EQ_INT(st.mode, RLOCK_MODE_NONE);
  CHECK_EQ_INT(RLOCK_MODE_NONE, 0);
  CHECK_EQ_INT(RLOCK_MODE_READ, 1);
  CHECK_EQ_INT(RLOCK_MODE_WRITE, 2);
  /* Enum-typed fields keep the size of the int they replaced. */
  CHECK_EQ_INT(sizeof lo.kind, sizeof(int));
  CHECK_EQ_INT(sizeof st.mode, sizeof(int));
  CHECK_EQ_INT(sizeof rlock_last_error()->code, sizeof(int));

  /* The *_options_init functions agree with the macros. */
  memset(&lo2, 0x5a, sizeof lo2);
  CHECK_EQ_INT(rlock_lock_options_init(&lo2, RLOCK_LOCK_OPTIONS_VERSION), RLOCK_OK);
  CHECK_EQ_INT(lo2.version, lo.version);
  CHECK_EQ_INT(lo2.lease_ms, lo.lease_ms);
  memset(&ao2, 0x5a, sizeof ao2);
  CHECK_EQ_INT(rlock_acquire_options_init(&ao2, RLOCK_ACQUIRE_OPTIONS_VERSION), RLOCK_OK);
  CHECK_EQ_INT(ao2.version, ao.version);
  CHECK_EQ_INT(ao2.wait_ms, ao.wait_ms);
  CHECK_EQ_INT(ao2.lease_ms, ao.lease_ms);
  CHECK_EQ_INT(ao2.thread_id, ao.thread_id);
  CHECK(ao2.cancel == ao.cancel);
}

static void test_client_options_init_defaults(void) {
  rlock_client_options co;
  memset(&co, 0x5a, sizeof co);
  CHECK_EQ_INT(rlock_client_options_init(&co, RLOCK_CLIENT_OPTIONS_VERSION), RLOCK_OK);
  CHECK_EQ_INT(co.version, RLOCK_CLIENT_OPTIONS_VERSION);
  CHECK(co.url == NULL && co.unix_socket == NULL && co.username == NULL && co.password == NULL);
  CHECK(co.host != NULL && strcmp(co.host, "127.0.0.1") == 0);
  CHECK_EQ_INT(co.port, 6379);
  CHECK_EQ_INT(co.db, 0);
  CHECK_EQ_INT(co.connect_timeout_ms, 2000);
  CHECK_EQ_INT(co.command_timeout_ms, 3000);
  CHECK_EQ_INT(co.pool_size, 8);
  CHECK_EQ_INT(co.watchdog_lease_ms, 30000);
  CHECK_EQ_INT(co.poll_cap_ms, 1000);
  CHECK(co.max_name_len == RLOCK_DEFAULT_MAX_NAME_LEN);
}

/* Version 0 and versions newer than the library's are refused, and the struct is not written:
 * a newer struct may be larger than what this library knows. */
static void test_options_init_versions(void) {
  static const unsigned int bad[] = {0u, 6u, 99u, UINT_MAX}; /* 6: newer than every struct */
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    rlock_client_options co;
    rlock_lock_options lo;
    rlock_acquire_options ao;
    unsigned char before[sizeof co];

    memset(&co, 0x5a, sizeof co);
    memcpy(before, &co, sizeof co);
    CHECK_EQ_INT(rlock_client_options_init(&co, bad[i]), RLOCK_EVERSION);
    check_last_error(RLOCK_EVERSION, "version", __LINE__);
    CHECK(memcmp(before, &co, sizeof co) == 0);

    memset(&lo, 0x5a, sizeof lo);
    memcpy(before, &lo, sizeof lo);
    CHECK_EQ_INT(rlock_lock_options_init(&lo, bad[i]), RLOCK_EVERSION);
    check_last_error(RLOCK_EVERSION, "version", __LINE__);
    CHECK(memcmp(before, &lo, sizeof lo) == 0);

    memset(&ao, 0x5a, sizeof ao);
    memcpy(before, &ao, sizeof ao);
    CHECK_EQ_INT(rlock_acquire_options_init(&ao, bad[i]), RLOCK_EVERSION);
    check_last_error(RLOCK_EVERSION, "version", __LINE__);
    CHECK(memcmp(before, &ao, sizeof ao) == 0);
  }
  CHECK_EQ_INT(rlock_client_options_init(NULL, RLOCK_CLIENT_OPTIONS_VERSION), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "opts", __LINE__);
  CHECK_EQ_INT(rlock_lock_options_init(NULL, RLOCK_LOCK_OPTIONS_VERSION), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "opts", __LINE__);
  CHECK_EQ_INT(rlock_acquire_options_init(NULL, RLOCK_ACQUIRE_OPTIONS_VERSION), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "opts", __LINE__);
}

/* Calls that fail before any connection is made. */
/* A version-1 struct, as a program built against version 1 has it, ends where the version-1
 * fields end: *_options_init with version 1 must not write past that (the canary after it). */
static void test_options_init_writes_only_its_version(void) {
  unsigned char buf[256];
  size_t sizes[3];
  size_t i, j;
  int rc[3];
  sizes[0] = offsetof(rlock_client_options, sync_replicas);
  sizes[1] = offsetof(rlock_lock_options, kind);
  sizes[2] = offsetof(rlock_acquire_options, token);
  for (i = 0; i < 3; i++) {
    memset(buf, 0xa5, sizeof buf);
    if (i == 0)
      rc[i] = rlock_client_options_init((rlock_client_options *)(void *)buf, 1);
    else if (i == 1)
      rc[i] = rlock_lock_options_init((rlock_lock_options *)(void *)buf, 1);
    else
      rc[i] = rlock_acquire_options_init((rlock_acquire_options *)(void *)buf, 1);
    CHECK_EQ_INT(rc[i], RLOCK_OK);
    CHECK_EQ_INT(*(unsigned int *)(void *)buf, 1);
    for (j = sizes[i]; j < sizeof buf; j++) {
      if (buf[j] != 0xa5) {
        CHECK(!"a version-1 init wrote past the version-1 fields");
        break;
      }
    }
  }
}

/* The same for a version-2 client options struct: it ends before the version-3 TLS fields. */
static void test_client_options_v2_init_stops_before_tls(void) {
  unsigned char buf[256];
  const size_t v2_size = offsetof(rlock_client_options, tls);
  size_t j;
  memset(buf, 0xa5, sizeof buf);
  CHECK_EQ_INT(rlock_client_options_init((rlock_client_options *)(void *)buf, 2), RLOCK_OK);
  CHECK_EQ_INT(*(unsigned int *)(void *)buf, 2);
  for (j = v2_size; j < sizeof buf; j++) {
    if (buf[j] != 0xa5) {
      CHECK(!"a version-2 init wrote past the version-2 fields");
      break;
    }
  }
}

/* A version-2 lock options struct ends before the version-3 owner id. */
static void test_lock_options_v2_init_stops_before_owner_id(void) {
  unsigned char buf[256];
  const size_t v2_size = offsetof(rlock_lock_options, owner_id);
  size_t j;
  memset(buf, 0xa5, sizeof buf);
  CHECK_EQ_INT(rlock_lock_options_init((rlock_lock_options *)(void *)buf, 2), RLOCK_OK);
  CHECK_EQ_INT(*(unsigned int *)(void *)buf, 2);
  for (j = v2_size; j < sizeof buf; j++) {
    if (buf[j] != 0xa5) {
      CHECK(!"a version-2 lock options init wrote past the version-2 fields");
      break;
    }
  }
}

/* A version-3 client options struct ends before the version-4 stats field. */
static void test_client_options_v3_init_stops_before_stats(void) {
  unsigned char buf[256];
  const size_t v3_size = offsetof(rlock_client_options, stats);
  size_t j;
  memset(buf, 0xa5, sizeof buf);
  CHECK_EQ_INT(rlock_client_options_init((rlock_client_options *)(void *)buf, 3), RLOCK_OK);
  CHECK_EQ_INT(*(unsigned int *)(void *)buf, 3);
  for (j = v3_size; j < sizeof buf; j++) {
    if (buf[j] != 0xa5) {
      CHECK(!"a version-3 init wrote past the version-3 fields");
      break;
    }
  }
}

/* A version-4 client options struct ends before the version-5 key_prefix field. */
static void test_client_options_v4_init_stops_before_key_prefix(void) {
  unsigned char buf[256];
  const size_t v4_size = offsetof(rlock_client_options, key_prefix);
  size_t j;
  memset(buf, 0xa5, sizeof buf);
  CHECK_EQ_INT(rlock_client_options_init((rlock_client_options *)(void *)buf, 4), RLOCK_OK);
  CHECK_EQ_INT(*(unsigned int *)(void *)buf, 4);
  for (j = v4_size; j < sizeof buf; j++) {
    if (buf[j] != 0xa5) {
      CHECK(!"a version-4 init wrote past the version-4 fields");
      break;
    }
  }
}

/* Statistics and events without a server: bad arguments, and the histogram bounds. */
static void test_stats_without_redis(void) {
  rlock_stats st;
  const int64_t *bounds = rlock_histogram_bounds_us();
  int i;
  memset(&st, 0, sizeof st);
  st.version = RLOCK_STATS_VERSION;
  CHECK_EQ_INT(rlock_client_stats(NULL, NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_client_stats(&st, NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "client", __LINE__);
  st.version = 0;
  CHECK_EQ_INT(rlock_client_stats(&st, (rlock_client *)&failures), RLOCK_EVERSION);
  st.version = RLOCK_STATS_VERSION + 1;
  CHECK_EQ_INT(rlock_client_stats(&st, (rlock_client *)&failures), RLOCK_EVERSION);
  check_last_error(RLOCK_EVERSION, "rlock_stats", __LINE__);
  CHECK_EQ_INT(rlock_client_set_event_callback(NULL, NULL, NULL), RLOCK_EINVAL);
  CHECK(bounds != NULL);
  CHECK_EQ_INT(RLOCK_HISTOGRAM_BUCKETS, RLOCK_HISTOGRAM_BOUNDS + 1);
  CHECK_EQ_INT(bounds[0], 25);
  CHECK(bounds[RLOCK_HISTOGRAM_BOUNDS - 1] == (int64_t)3600 * 1000000);
  for (i = 1; i < RLOCK_HISTOGRAM_BOUNDS; ++i) CHECK(bounds[i] > bounds[i - 1]);
  CHECK_EQ_INT(RLOCK_EVENT_ACQUIRED, 1);
  CHECK_EQ_INT(RLOCK_EVENT_RELEASED, 2);
  CHECK_EQ_INT(RLOCK_EVENT_LOST, 3);
  CHECK_EQ_INT(RLOCK_EVENT_RENEWAL_FAILED, 4);
  CHECK_EQ_INT(RLOCK_EVENT_FAILOVER, 5);
  CHECK_EQ_INT(RLOCK_EVENT_REDIRECT, 6);
  CHECK_EQ_INT(RLOCK_EVENT_KEY_EXPIRED, 7);
  CHECK_EQ_INT(RLOCK_EVENT_KEY_DELETED, 8);
  CHECK_EQ_INT(RLOCK_EVENT_ELECTED, 9);
  CHECK_EQ_INT(RLOCK_EVENT_REVOKED, 10);
  CHECK_EQ_INT(RLOCK_STATS_VERSION, 3);
  CHECK_EQ_INT(RLOCK_STATS_REVOKE_REASONS, 8);
}

static void test_no_redis_failures(void) {
  rlock_client *client = (rlock_client *)&failures; /* a non-NULL sentinel the call must reset */
  rlock_lock *lock = (rlock_lock *)&failures;
  rlock_client_options co = RLOCK_CLIENT_OPTIONS_INIT;
  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  int deleted = 7;
  int accepted = 7;
  int64_t token = 0;
  int64_t validity = 0;

  co.version = 0;
  CHECK_EQ_INT(rlock_client_new(&client, &co), RLOCK_EVERSION);
  check_last_error(RLOCK_EVERSION, "rlock_client_options", __LINE__);
  CHECK(client == NULL);
  co.version = RLOCK_CLIENT_OPTIONS_VERSION + 1;
  client = (rlock_client *)&failures;
  CHECK_EQ_INT(rlock_client_new(&client, &co), RLOCK_EVERSION);
  CHECK(client == NULL);

  CHECK_EQ_INT(rlock_client_new(NULL, NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "out", __LINE__);
  client = (rlock_client *)&failures;
  CHECK_EQ_INT(rlock_client_new_url(&client, NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "url", __LINE__);
  CHECK(client == NULL);
  client = (rlock_client *)&failures;
  CHECK_EQ_INT(rlock_client_new_url(&client, "localhost:6379"), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "scheme", __LINE__);
  CHECK(client == NULL);

  CHECK_EQ_INT(rlock_lock_new(&lock, NULL, "name", NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "client", __LINE__);
  CHECK(lock == NULL);

  CHECK_EQ_INT(rlock_acquire(NULL, 0), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "lock", __LINE__);
  CHECK_EQ_INT(rlock_release(NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_extend(NULL, 1000), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_force_unlock(&deleted, NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(deleted, 7);
  CHECK_EQ_INT(rlock_cancel(NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_query(&st, NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_query_for(&st, NULL, 0), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_release_for(NULL, 42), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_extend_for(NULL, 42, 1000), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_lock_token(&token, NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_lock_token_for(&token, NULL, 42), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_fenced_write(&accepted, NULL, "k", 1, "v", 1, 1), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "client", __LINE__);
  CHECK_EQ_INT(accepted, 7);
  CHECK_EQ_INT(rlock_multi_acquire(NULL, 0), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_multi_acquire_ex(&validity, NULL, NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "group", __LINE__);
  CHECK_EQ_INT(rlock_multi_release(NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_multi_release_for(NULL, 42), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_lock_set_lost_callback(NULL, lost_cb, NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "lock", __LINE__);
  CHECK_EQ_INT(rlock_acquire_async(NULL, NULL, never_done, NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "lock", __LINE__);
  CHECK_EQ_INT(rlock_release_async(NULL, 42, never_done, NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_extend_async(NULL, 42, 1000, never_done, NULL), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_multi_acquire_async(NULL, NULL, never_done, NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "group", __LINE__);
  CHECK_EQ_INT(rlock_multi_release_async(NULL, 42, never_done, NULL), RLOCK_EINVAL);

  CHECK(rlock_client_id(NULL) == NULL);
  CHECK_EQ_INT(rlock_is_held(NULL), 0);
  CHECK_EQ_INT(rlock_is_held_for(NULL, 42), 0);
  CHECK_EQ_INT(rlock_is_lost(NULL), 0);
  CHECK_EQ_INT(rlock_is_lost_for(NULL, 0), 0);
  CHECK_EQ_INT(rlock_multi_is_held(NULL), 0);
  CHECK_EQ_INT(rlock_multi_is_held_for(NULL, 42), 0);
  CHECK_EQ_INT(rlock_cancel_token_is_cancelled(NULL), 0);
  CHECK_EQ_INT(rlock_cancel_token_new(NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "out", __LINE__);
  CHECK_EQ_INT(rlock_cancel_token_cancel(NULL), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "token", __LINE__);
}

static void test_null_frees(void) {
  rlock_client_free(NULL);
  rlock_lock_free(NULL);
  rlock_cancel_token_free(NULL);
}

static void test_cancel_token(void) {
  rlock_cancel_token *token = NULL;
  CHECK_EQ_INT(rlock_cancel_token_new(&token), RLOCK_OK);
  CHECK(token != NULL);
  if (token == NULL) return;
  CHECK_EQ_INT(rlock_cancel_token_is_cancelled(token), 0);
  CHECK_EQ_INT(rlock_cancel_token_cancel(token), RLOCK_OK);
  CHECK_EQ_INT(rlock_cancel_token_is_cancelled(token), 1);
  CHECK_EQ_INT(rlock_cancel_token_cancel(token), RLOCK_OK); /* idempotent */
  CHECK_EQ_INT(rlock_cancel_token_is_cancelled(token), 1);
  rlock_cancel_token_free(token);
}

/* Inspection: the values of its enum, its macros, and the calls that need no Redis. */
static void test_inspection_without_redis(void) {
  rlock_scan_options so = RLOCK_SCAN_OPTIONS_INIT;
  rlock_lock_info *info = NULL;
  rlock_lock_page *page = NULL;
  CHECK_EQ_INT(RLOCK_FOUND_NOTHING, 0);
  CHECK_EQ_INT(RLOCK_FOUND_REENTRANT, 1);
  CHECK_EQ_INT(RLOCK_FOUND_FENCED, 2);
  CHECK_EQ_INT(RLOCK_FOUND_FAIR, 3);
  CHECK_EQ_INT(RLOCK_FOUND_READ_WRITE, 4);
  CHECK_EQ_INT(RLOCK_FOUND_NOT_A_LOCK, 5);
  CHECK_EQ_INT(RLOCK_FOUND_SEMAPHORE, 6);
  CHECK_EQ_INT(RLOCK_FOUND_COUNTER, 7);
  CHECK_EQ_INT(RLOCK_LOCK_INFO_VERSION, 3);
  CHECK_EQ_INT(RLOCK_INSPECT_MAX_LISTED, 100);
  CHECK_EQ_INT(so.version, RLOCK_SCAN_OPTIONS_VERSION);
  CHECK(so.match == NULL && so.match_len == 0 && so.cursor == NULL && so.count == 0);
  CHECK_EQ_INT(rlock_scan_options_init(&so, 0), RLOCK_EVERSION);
  CHECK_EQ_INT(rlock_inspect(&info, NULL, "x", 1), RLOCK_EINVAL);
  CHECK(info == NULL);
  CHECK_EQ_INT(rlock_scan_locks(&page, NULL, NULL), RLOCK_EINVAL);
  CHECK(page == NULL);
  rlock_lock_info_free(NULL);
  rlock_lock_page_free(NULL);
}

static void test_helpers(void) {
  int64_t tid = rlock_current_thread_id();
  CHECK(tid > 0);
  CHECK(rlock_current_thread_id() == tid);
}

/* The v1 layouts on LP64 targets, spelled out: reordering or resizing a field is an ABI break. */
static void test_struct_layouts(void) {
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu && INT_MAX == 2147483647
  CHECK_EQ_INT(offsetof(rlock_error_info, code), 0);
  CHECK_EQ_INT(offsetof(rlock_error_info, message), 8);
  CHECK_EQ_INT(sizeof(rlock_error_info), 16);

  CHECK_EQ_INT(offsetof(rlock_client_options, version), 0);
  CHECK_EQ_INT(offsetof(rlock_client_options, url), 8);
  CHECK_EQ_INT(offsetof(rlock_client_options, host), 16);
  CHECK_EQ_INT(offsetof(rlock_client_options, port), 24);
  CHECK_EQ_INT(offsetof(rlock_client_options, unix_socket), 32);
  CHECK_EQ_INT(offsetof(rlock_client_options, username), 40);
  CHECK_EQ_INT(offsetof(rlock_client_options, password), 48);
  CHECK_EQ_INT(offsetof(rlock_client_options, db), 56);
  CHECK_EQ_INT(offsetof(rlock_client_options, connect_timeout_ms), 64);
  CHECK_EQ_INT(offsetof(rlock_client_options, command_timeout_ms), 72);
  CHECK_EQ_INT(offsetof(rlock_client_options, pool_size), 80);
  CHECK_EQ_INT(offsetof(rlock_client_options, watchdog_lease_ms), 88);
  CHECK_EQ_INT(offsetof(rlock_client_options, poll_cap_ms), 96);
  CHECK_EQ_INT(offsetof(rlock_client_options, max_name_len), 104);
  CHECK_EQ_INT(offsetof(rlock_client_options, sync_replicas), 112); /* version 2 */
  CHECK_EQ_INT(offsetof(rlock_client_options, sync_timeout_ms), 120);
  CHECK_EQ_INT(offsetof(rlock_client_options, tls), 128); /* version 3 */
  CHECK_EQ_INT(offsetof(rlock_client_options, tls_ca_file), 136);
  CHECK_EQ_INT(offsetof(rlock_client_options, tls_ca_dir), 144);
  CHECK_EQ_INT(offsetof(rlock_client_options, tls_cert_file), 152);
  CHECK_EQ_INT(offsetof(rlock_client_options, tls_key_file), 160);
  CHECK_EQ_INT(offsetof(rlock_client_options, tls_server_name), 168);
  CHECK_EQ_INT(offsetof(rlock_client_options, tls_verify), 176);
  CHECK_EQ_INT(offsetof(rlock_client_options, tls_min_version), 180);
  CHECK_EQ_INT(offsetof(rlock_client_options, sentinel_tls), 184);
  CHECK_EQ_INT(offsetof(rlock_client_options, stats), 188);      /* version 4 */
  CHECK_EQ_INT(offsetof(rlock_client_options, key_prefix), 192); /* version 5 */
  CHECK_EQ_INT(sizeof(rlock_client_options), 200);

  CHECK_EQ_INT(sizeof(rlock_histogram), 8 * (2 + 23));
  CHECK_EQ_INT(offsetof(rlock_stats, version), 0);
  CHECK_EQ_INT(offsetof(rlock_stats, enabled), 4);
  CHECK_EQ_INT(offsetof(rlock_stats, acquires_granted), 8);
  CHECK_EQ_INT(offsetof(rlock_stats, acquires_failed_by_code), 40);
  CHECK_EQ_INT(offsetof(rlock_stats, releases), 40 + 8 * 32);
  CHECK_EQ_INT(offsetof(rlock_stats, events_dropped), 296 + 8 * 11);
  CHECK_EQ_INT(offsetof(rlock_stats, holds), 392);
  CHECK_EQ_INT(offsetof(rlock_stats, waiters), 400);
  CHECK_EQ_INT(offsetof(rlock_stats, acquire_wait), 408);
  CHECK_EQ_INT(offsetof(rlock_stats, elections_won), 408 + 4 * 200); /* version 2 */
  CHECK_EQ_INT(offsetof(rlock_stats, leaderships_revoked), 1216);
  CHECK_EQ_INT(offsetof(rlock_stats, leaderships_revoked_by_reason), 1224);
  CHECK_EQ_INT(offsetof(rlock_stats, leaders), 1224 + 8 * 8);
  CHECK_EQ_INT(offsetof(rlock_stats, tls_handshakes), 1296); /* version 3 */
  CHECK_EQ_INT(offsetof(rlock_stats, tls_sessions_resumed), 1304);
  CHECK_EQ_INT(sizeof(rlock_stats), 1312);

  CHECK_EQ_INT(offsetof(rlock_event, kind), 0);
  CHECK_EQ_INT(offsetof(rlock_event, unix_time_us), 8);
  CHECK_EQ_INT(offsetof(rlock_event, name), 16);
  CHECK_EQ_INT(offsetof(rlock_event, owner), 32);
  CHECK_EQ_INT(offsetof(rlock_event, thread_id), 48);
  CHECK_EQ_INT(offsetof(rlock_event, duration_us), 56);
  CHECK_EQ_INT(offsetof(rlock_event, token), 64);
  CHECK_EQ_INT(offsetof(rlock_event, reason), 72);
  CHECK_EQ_INT(offsetof(rlock_event, detail), 80);
  CHECK_EQ_INT(sizeof(rlock_event), 96);

  CHECK_EQ_INT(offsetof(rlock_lock_options, version), 0);
  CHECK_EQ_INT(offsetof(rlock_lock_options, lease_ms), 8);
  CHECK_EQ_INT(offsetof(rlock_lock_options, kind), 16); /* version 2 */
  CHECK_EQ_INT(offsetof(rlock_lock_options, spin_initial_ms), 24);
  CHECK_EQ_INT(offsetof(rlock_lock_options, spin_max_ms), 32);
  CHECK_EQ_INT(offsetof(rlock_lock_options, fair_wait_ms), 40);
  CHECK_EQ_INT(offsetof(rlock_lock_options, owner_id), 48); /* version 3 */
  CHECK_EQ_INT(offsetof(rlock_lock_options, owner_id_len), 56);
  CHECK_EQ_INT(sizeof(rlock_lock_options), 64);

  CHECK_EQ_INT(offsetof(rlock_acquire_options, version), 0);
  CHECK_EQ_INT(offsetof(rlock_acquire_options, wait_ms), 8);
  CHECK_EQ_INT(offsetof(rlock_acquire_options, lease_ms), 16);
  CHECK_EQ_INT(offsetof(rlock_acquire_options, thread_id), 24);
  CHECK_EQ_INT(offsetof(rlock_acquire_options, cancel), 32);
  CHECK_EQ_INT(offsetof(rlock_acquire_options, token), 40); /* version 2 */
  CHECK_EQ_INT(sizeof(rlock_acquire_options), 48);

  CHECK_EQ_INT(offsetof(rlock_lock_state, version), 0);
  CHECK_EQ_INT(offsetof(rlock_lock_state, locked), 4);
  CHECK_EQ_INT(offsetof(rlock_lock_state, held_by_me), 8);
  CHECK_EQ_INT(offsetof(rlock_lock_state, hold_count), 16);
  CHECK_EQ_INT(offsetof(rlock_lock_state, ttl_ms), 24);
  CHECK_EQ_INT(offsetof(rlock_lock_state, owner_count), 32);
  CHECK_EQ_INT(offsetof(rlock_lock_state, owner), 40);
  CHECK_EQ_INT(offsetof(rlock_lock_state, owner_len), 48);
  CHECK_EQ_INT(offsetof(rlock_lock_state, owner_hold_count), 56);
  CHECK_EQ_INT(offsetof(rlock_lock_state, mode), 64); /* version 2 */
  CHECK_EQ_INT(sizeof(rlock_lock_state), 72);

  CHECK_EQ_INT(offsetof(rlock_lock_owner, owner), 0);
  CHECK_EQ_INT(offsetof(rlock_lock_owner, owner_len), 8);
  CHECK_EQ_INT(offsetof(rlock_lock_owner, hold_count), 16);
  CHECK_EQ_INT(offsetof(rlock_lock_owner, mode), 24);
  CHECK_EQ_INT(sizeof(rlock_lock_owner), 32);

  CHECK_EQ_INT(offsetof(rlock_lock_waiter, owner), 0);
  CHECK_EQ_INT(offsetof(rlock_lock_waiter, owner_len), 8);
  CHECK_EQ_INT(offsetof(rlock_lock_waiter, deadline_ms), 16);
  CHECK_EQ_INT(sizeof(rlock_lock_waiter), 24);

  CHECK_EQ_INT(offsetof(rlock_lock_info, version), 0);
  CHECK_EQ_INT(offsetof(rlock_lock_info, name), 8);
  CHECK_EQ_INT(offsetof(rlock_lock_info, name_len), 16);
  CHECK_EQ_INT(offsetof(rlock_lock_info, kind), 24);
  CHECK_EQ_INT(offsetof(rlock_lock_info, locked), 28);
  CHECK_EQ_INT(offsetof(rlock_lock_info, ttl_ms), 32);
  CHECK_EQ_INT(offsetof(rlock_lock_info, mode), 40);
  CHECK_EQ_INT(offsetof(rlock_lock_info, owner_count), 48);
  CHECK_EQ_INT(offsetof(rlock_lock_info, owners), 56);
  CHECK_EQ_INT(offsetof(rlock_lock_info, owners_len), 64);
  CHECK_EQ_INT(offsetof(rlock_lock_info, queue_length), 72);
  CHECK_EQ_INT(offsetof(rlock_lock_info, queue), 80);
  CHECK_EQ_INT(offsetof(rlock_lock_info, queue_len), 88);
  CHECK_EQ_INT(offsetof(rlock_lock_info, subscribers), 96);
  CHECK_EQ_INT(offsetof(rlock_lock_info, token), 104);
  CHECK_EQ_INT(offsetof(rlock_lock_info, permits_available), 112); /* version 2 */
  CHECK_EQ_INT(offsetof(rlock_lock_info, permits_held), 120);
  CHECK_EQ_INT(offsetof(rlock_lock_info, earliest_deadline_ms), 128);
  CHECK_EQ_INT(offsetof(rlock_lock_info, holders), 136); /* version 3 */
  CHECK_EQ_INT(offsetof(rlock_lock_info, holders_len), 144);
  CHECK_EQ_INT(sizeof(rlock_lock_info), 152);

  CHECK_EQ_INT(offsetof(rlock_holder_info, known), 0);
  CHECK_EQ_INT(offsetof(rlock_holder_info, host), 8);
  CHECK_EQ_INT(offsetof(rlock_holder_info, pid), 16);
  CHECK_EQ_INT(offsetof(rlock_holder_info, command), 24);
  CHECK_EQ_INT(offsetof(rlock_holder_info, started_ms), 32);
  CHECK_EQ_INT(offsetof(rlock_holder_info, since_ms), 40);
  CHECK_EQ_INT(sizeof(rlock_holder_info), 48);

  CHECK_EQ_INT(offsetof(rlock_scan_options, version), 0);
  CHECK_EQ_INT(offsetof(rlock_scan_options, match), 8);
  CHECK_EQ_INT(offsetof(rlock_scan_options, match_len), 16);
  CHECK_EQ_INT(offsetof(rlock_scan_options, cursor), 24);
  CHECK_EQ_INT(offsetof(rlock_scan_options, count), 32);
  CHECK_EQ_INT(sizeof(rlock_scan_options), 40);

  CHECK_EQ_INT(offsetof(rlock_lock_page, version), 0);
  CHECK_EQ_INT(offsetof(rlock_lock_page, locks), 8);
  CHECK_EQ_INT(offsetof(rlock_lock_page, count), 16);
  CHECK_EQ_INT(offsetof(rlock_lock_page, next_cursor), 24);
  CHECK_EQ_INT(offsetof(rlock_lock_page, done), 32);
  CHECK_EQ_INT(sizeof(rlock_lock_page), 40);
#else
  printf("struct layout checks skipped: not an LP64 target\n");
#endif
}

/* Every function of the header resolves from C (a missing export fails the link) and the
 * callback type matches a C function of the documented signature. */
static void test_every_function_links(void) {
  typedef void (*any_fn)(void);
  rlock_lost_cb cb = lost_cb;
  const any_fn fns[] = {
      (any_fn)rlock_last_error,
      (any_fn)rlock_strerror,
      (any_fn)rlock_version_number,
      (any_fn)rlock_version_string,
      (any_fn)rlock_client_options_init,
      (any_fn)rlock_client_new,
      (any_fn)rlock_client_new_url,
      (any_fn)rlock_client_free,
      (any_fn)rlock_client_id,
      (any_fn)rlock_lock_options_init,
      (any_fn)rlock_lock_new,
      (any_fn)rlock_lock_new_n,
      (any_fn)rlock_lock_free,
      (any_fn)rlock_acquire_options_init,
      (any_fn)rlock_acquire,
      (any_fn)rlock_acquire_ex,
      (any_fn)rlock_release,
      (any_fn)rlock_release_for,
      (any_fn)rlock_extend,
      (any_fn)rlock_extend_for,
      (any_fn)rlock_force_unlock,
      (any_fn)rlock_cancel,
      (any_fn)rlock_lock_token,
      (any_fn)rlock_lock_token_for,
      (any_fn)rlock_fenced_write,
      (any_fn)rlock_is_held,
      (any_fn)rlock_is_held_for,
      (any_fn)rlock_is_lost,
      (any_fn)rlock_is_lost_for,
      (any_fn)rlock_query,
      (any_fn)rlock_query_for,
      (any_fn)rlock_lock_set_lost_callback,
      (any_fn)rlock_cancel_token_new,
      (any_fn)rlock_cancel_token_cancel,
      (any_fn)rlock_cancel_token_is_cancelled,
      (any_fn)rlock_cancel_token_free,
      (any_fn)rlock_multi_lock_new,
      (any_fn)rlock_redlock_new,
      (any_fn)rlock_multi_free,
      (any_fn)rlock_multi_acquire,
      (any_fn)rlock_multi_acquire_ex,
      (any_fn)rlock_multi_release,
      (any_fn)rlock_multi_release_for,
      (any_fn)rlock_multi_is_held,
      (any_fn)rlock_multi_is_held_for,
      (any_fn)rlock_multi_cancel,
      (any_fn)rlock_acquire_async,
      (any_fn)rlock_release_async,
      (any_fn)rlock_extend_async,
      (any_fn)rlock_multi_acquire_async,
      (any_fn)rlock_multi_release_async,
      (any_fn)rlock_inspect,
      (any_fn)rlock_lock_info_free,
      (any_fn)rlock_scan_options_init,
      (any_fn)rlock_scan_locks,
      (any_fn)rlock_lock_page_free,
      (any_fn)rlock_current_thread_id,
      (any_fn)rlock_histogram_bounds_us,
      (any_fn)rlock_client_stats,
      (any_fn)rlock_client_set_event_callback,
  };
  size_t i;
  CHECK(cb != NULL);
  for (i = 0; i < sizeof fns / sizeof fns[0]; ++i) CHECK(fns[i] != NULL);
}

#if defined(RLOCK_DEPRECATE_HARD)
/* The deprecated names are compiled out: a declaration left in rlock.h would conflict with
 * these (a static function after an extern declaration of the same name does not compile). */
static int rlock_release_ex(void) { return 1; }
static int rlock_extend_ex(void) { return 1; }
static int rlock_is_held_ex(void) { return 1; }

static void test_deprecated_names(void) {
  CHECK_EQ_INT(rlock_release_ex() + rlock_extend_ex() + rlock_is_held_ex(), 3);
}
#else
/* The deprecated names still link and forward to their replacements. */
#  if defined(__GNUC__)
#    pragma GCC diagnostic push
#    pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#  endif
static void test_deprecated_names(void) {
  CHECK_EQ_INT(rlock_release_ex(NULL, 42), RLOCK_EINVAL);
  check_last_error(RLOCK_EINVAL, "lock", __LINE__);
  CHECK_EQ_INT(rlock_extend_ex(NULL, 1000, 42), RLOCK_EINVAL);
  CHECK_EQ_INT(rlock_is_held_ex(NULL, 42), 0);
}
#  if defined(__GNUC__)
#    pragma GCC diagnostic pop
#  endif
#endif

int main(void) {
  test_last_error_before_any_failure(); /* first: nothing has failed on this thread yet */
  test_status_codes();
  test_limits_and_special_values();
  test_version();
  test_initializer_macros();
  test_client_options_init_defaults();
  test_options_init_versions();
  test_options_init_writes_only_its_version();
  test_client_options_v2_init_stops_before_tls();
  test_lock_options_v2_init_stops_before_owner_id();
  test_client_options_v3_init_stops_before_stats();
  test_client_options_v4_init_stops_before_key_prefix();
  test_stats_without_redis();
  test_no_redis_failures();
  test_null_frees();
  test_cancel_token();
  test_helpers();
  test_inspection_without_redis();
  test_struct_layouts();
  test_every_function_links();
  test_deprecated_names();
  CHECK_EQ_INT(never_done_calls, 0);
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("C ABI checks passed (rlock %s)\n", rlock_version_string());
  return 0;
}
