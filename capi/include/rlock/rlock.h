/*
 * rlock: distributed locks on Redis, compatible with Redisson's on-Redis layout.
 *
 * The stable C ABI. Contracts: docs/threading.md (who may call what from where), docs/errors.md
 * (status codes and messages), docs/abi.md (what stays stable). Valid C99 and C++.
 *
 * Conventions:
 *   - Every fallible function returns 0 (RLOCK_OK) or a negative rlock_error_code.
 *     The detail of the last failure on the calling thread is in rlock_last_error().
 *   - Durations are int64_t milliseconds (suffix _ms). Booleans are int 0/1.
 *   - Outputs come first: constructors return ownership through their first argument `out`,
 *     and every other function with out-arguments takes them before the handle. Optional
 *     out-arguments may be NULL. *_free(NULL) is a no-op.
 *   - Name suffixes, one meaning each:
 *       (none)  acts for the calling thread as the owner (rlock_release, rlock_query, ...);
 *       _for    the same for an explicit owner `thread_id`, the argument right after the handle
 *               (RLOCK_THREAD_CURRENT = the calling thread);
 *       _ex     takes an options struct in place of the plain arguments (rlock_acquire_ex);
 *       _n      takes a string as pointer and length instead of NUL-terminated (rlock_lock_new_n).
 *       _async  starts the call and returns at once; a completion callback gets its outcome
 *               (rlock_acquire_async; see "Asynchronous calls" below).
 *   - Enum-valued fields and arguments have their enum type (rlock_lock_kind, rlock_lock_mode,
 *     ...); the values fit an int.
 *   - Items marked RLOCK_DEPRECATED still work but go away in a later version; compile with
 *     RLOCK_DEPRECATE_HARD defined to hide them and find every remaining use.
 *   - Handles are checked values, not pointers (docs/abi.md): a call on a freed handle returns
 *     RLOCK_EBADHANDLE (0 from the 0/1 functions); freeing one twice does nothing and records
 *     RLOCK_EBADHANDLE in rlock_last_error().
 *   - fork(): in the child, every call on a handle made before the fork returns RLOCK_EFORKED
 *     (0 from the 0/1 functions) without I/O, and its *_free only records that code: the
 *     parent's locks and connections are never touched. Make a new client in the child
 *     (docs/threading.md, "fork()").
 *   - Input strings are copied; the library never keeps a caller's pointer after a call returns.
 */
#ifndef RLOCK_H
#define RLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "rlock/version.h"

#if defined(RLOCK_STATIC)
#  define RLOCK_API
#elif defined(_WIN32)
#  if defined(RLOCK_BUILDING)
#    define RLOCK_API __declspec(dllexport)
#  else
#    define RLOCK_API __declspec(dllimport)
#  endif
#else
#  define RLOCK_API __attribute__((visibility("default")))
#endif

/* RLOCK_DEPRECATED(msg): marks a declaration the compiler warns about when it is used. */
#if defined(__cplusplus) && __cplusplus >= 201402L
#  define RLOCK_DEPRECATED(msg) [[deprecated(msg)]]
#elif defined(__GNUC__) || defined(__clang__)
#  define RLOCK_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#  define RLOCK_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#  define RLOCK_DEPRECATED(msg)
#endif

#define RLOCK_STRINGIFY_(x) #x
#define RLOCK_STRINGIFY(x) RLOCK_STRINGIFY_(x)
#define RLOCK_VERSION_STRING           \
  RLOCK_STRINGIFY(RLOCK_VERSION_MAJOR) \
  "." RLOCK_STRINGIFY(RLOCK_VERSION_MINOR) "." RLOCK_STRINGIFY(RLOCK_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles ------------------------------------------------------------------------------ */

/* A connection to one Redis deployment: its connection pool, subscriber and watchdog threads,
 * and the client id that prefixes every owner it creates. Fully thread-safe. */
typedef struct rlock_client rlock_client;

/* One named lock on one client. Thread-safe. Ownership belongs to an owner (client id + thread
 * id), not to the handle: two threads acquiring through one handle contend like two processes. */
typedef struct rlock_lock rlock_lock;

/* A one-shot cancellation flag for acquire calls. Cancelling it makes every acquire that was
 * given it (in progress now or started later) return RLOCK_ECANCELED. Thread-safe. */
typedef struct rlock_cancel_token rlock_cancel_token;

/* ---- Status codes (append-only: values are never reused or renumbered) ------------------- */
/* Adding one: docs/errors.md lists the steps; the bindings' tests check their tables here. */

typedef enum rlock_error_code {
  RLOCK_OK = 0,
  RLOCK_ERROR = -1,         /* generic failure; see rlock_last_error() */
  RLOCK_ETIMEDOUT = -2,     /* expected: the wait time passed while someone else held the lock */
  RLOCK_ENOTHELD = -3,      /* expected: release/extend of a lock nobody holds */
  RLOCK_ECANCELED = -4,     /* expected: the acquire was cancelled from another thread */
  RLOCK_ECONN = -5,         /* Redis unreachable, I/O error, command timeout or protocol error */
  RLOCK_EINVAL = -6,        /* invalid argument; the message names it */
  RLOCK_ENOMEM = -7,        /* out of memory in this process */
  RLOCK_EVERSION = -8,      /* options struct version unknown to this library */
  RLOCK_EINTERNAL = -9,     /* a bug: an internal exception caught at the boundary */
  RLOCK_EUSER = -10,        /* reserved: a binding callback failed */
  RLOCK_ELOST = -11,        /* expected: this owner held the lock, but it expired or was taken */
  RLOCK_ENOTOWNER = -12,    /* expected: release/extend of a lock another owner holds */
  RLOCK_EAUTH = -13,        /* Redis rejected the credentials */
  RLOCK_ENOPERM = -14,      /* the Redis user lacks a needed permission (ACL) */
  RLOCK_EUNSUPPORTED = -15, /* the server lacks a needed command or feature */
  RLOCK_EREDIS = -16,       /* Redis answered with an error not covered by a code below */
  RLOCK_EOOM = -17,         /* Redis refused a write: maxmemory reached */
  RLOCK_EBUSY = -18,        /* Redis is busy running a long script */
  RLOCK_EREADONLY = -19,    /* the server is a read-only replica */
  RLOCK_ECLOSED = -20,      /* the client behind this handle was freed */
  RLOCK_EDEADLK = -21,      /* would wait for itself: a read holder asked for the write lock, or
                             * the holder of a non-reentrant lock asked for it again */
  RLOCK_EBADHANDLE = -22,   /* the handle was freed already, or is not one rlock made */
  RLOCK_ENOTSYNCED = -23,   /* the replicas did not confirm an acquire in time: taken back */
  RLOCK_EFORKED = -24,      /* the handle was made before fork() in a parent process */
  RLOCK_ETLS = -25          /* TLS failed: handshake, certificate verification, or a TLS/plaintext
                             * mix-up; the message gives OpenSSL's reason */
} rlock_error_code;

typedef struct rlock_error_info {
  rlock_error_code code; /* the rlock_error_code of the last failure on this thread, or RLOCK_OK */
  const char *message;   /* never NULL; "" when there is none. At most 1024 bytes: a longer
                            message keeps its start and end around "[... N bytes elided ...]" */
} rlock_error_info;

/* The last failure on the calling thread. Never NULL. Borrowed: valid until the next rlock call
 * on the same thread. A successful call does not clear it. */
RLOCK_API const rlock_error_info *rlock_last_error(void);

/* Static English text for a status code. Never NULL; needs no state. */
RLOCK_API const char *rlock_strerror(int code);

/* RLOCK_VERSION_NUMBER and RLOCK_VERSION_STRING of the library actually loaded. */
RLOCK_API unsigned int rlock_version_number(void);
RLOCK_API const char *rlock_version_string(void);

/* ---- Limits ------------------------------------------------------------------------------- */

/* The largest duration accepted anywhere (2^53 ms, about 285,000 years). Larger values are EINVAL.
 */
#define RLOCK_MAX_DURATION_MS ((int64_t)9007199254740992LL)
/* Default and hard limit for lock name length in bytes (configurable per client up to the hard
 * limit): names multiply into several keys and channels, so they are kept bounded. */
#define RLOCK_DEFAULT_MAX_NAME_LEN ((size_t)65536)
#define RLOCK_HARD_MAX_NAME_LEN ((size_t)(16u * 1024u * 1024u))

/* Special values. */
#define RLOCK_WAIT_FOREVER ((int64_t)-1) /* wait_ms: block until acquired or cancelled */
#define RLOCK_LEASE_WATCHDOG \
  ((int64_t)-1) /* lease_ms: hold until released, renewed by the watchdog */
#define RLOCK_THREAD_CURRENT ((int64_t)0) /* thread_id: the calling OS thread */

/* rlock_client_options.sync_replicas, and sync_replicas= in a URL, take a count N > 0 of
 * replicas to WAIT for, or one of these (the same numbers in both places).
 * RLOCK_SYNC_AUTO, the default: one replica on Sentinel and Cluster while the master has one,
 * none on a lone server (URL: auto). RLOCK_SYNC_NEVER: never WAIT (URL: never). */
#define RLOCK_SYNC_AUTO 0
#define RLOCK_SYNC_NEVER (-1)

/* ---- Client ------------------------------------------------------------------------------- */

typedef struct rlock_client_options {
  unsigned int version;
  /* Where to connect. `url` wins over host/port/unix_socket when set:
   *   redis://[[user]:password@]host[:port][/db]      (IPv6 hosts in brackets)
   *   unix://[[user]:password@]/path/to/socket[?db=N]
   *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...]/master-name[?db=N]
   *   redis-cluster://[[user]:password@]host[:port][,host[:port]...]
   *   each also with ?sync_replicas=N|auto|never&sync_timeout_ms=T (docs/deployments.md),
   *   stats=on|off and key_prefix=P (percent-encoded);
   *   rediss://, rediss-sentinel:// and rediss-cluster:// are the same over TLS, with
   *   tls_ca_file, tls_ca_dir, tls_cert_file, tls_key_file, tls_server_name,
   *   tls_verify=full|ca|none, tls_min_version=1.2|1.3 and sentinel_tls=yes|no (docs/tls.md) */
  const char *url;
  const char *host;           /* default "127.0.0.1" */
  int port;                   /* default 6379 */
  const char *unix_socket;    /* used instead of host/port when set */
  const char *username;       /* ACL user; NULL = default user */
  const char *password;       /* NULL = no AUTH */
  int db;                     /* SELECT index, default 0 */
  int64_t connect_timeout_ms; /* default 2000 */
  int64_t command_timeout_ms; /* default 3000; bounds every round trip */
  int pool_size;              /* command connections at most, shared by pipelining; default 8 */
  int64_t watchdog_lease_ms;  /* lease of watchdog holds, renewed every third; default 30000 */
  int64_t poll_cap_ms;        /* longest a waiter sleeps without retrying, default 1000 */
  size_t max_name_len;        /* default RLOCK_DEFAULT_MAX_NAME_LEN */
  /* version 2: replica sync (docs/deployments.md). Also settable in the URL
   * (?sync_replicas=N|auto|never&sync_timeout_ms=T); a value given both ways must agree. */
  int sync_replicas;       /* WAIT for this many replicas after each acquire and release:
                            * RLOCK_SYNC_AUTO (0, the default), RLOCK_SYNC_NEVER (-1), or a
                            * count N > 0 (strict) */
  int64_t sync_timeout_ms; /* how long each WAIT waits, default 1000 */
  /* version 3: TLS (docs/tls.md). A rediss://, rediss-sentinel:// or rediss-cluster:// URL turns
   * it on as well; its tls_* query options and these fields must agree where both are given. */
  int tls;                     /* 1 = TLS to every Redis server; 0 = as the URL says */
  const char *tls_ca_file;     /* PEM file of trusted CA certificates; NULL with tls_ca_dir NULL
                                * = the system's trust store */
  const char *tls_ca_dir;      /* directory of hashed CA certificates (openssl rehash) */
  const char *tls_cert_file;   /* client certificate chain (PEM), for mutual TLS */
  const char *tls_key_file;    /* its private key (PEM, unencrypted); NULL = in tls_cert_file */
  const char *tls_server_name; /* sent as SNI and verified; NULL = the host connected to */
  int tls_verify;              /* rlock_tls_verify: RLOCK_TLS_VERIFY_FULL (0, the default) */
  int tls_min_version;         /* rlock_tls_version: RLOCK_TLS_1_2 (0, the default) */
  int sentinel_tls;            /* rlock_sentinel_tls: RLOCK_SENTINEL_TLS_AUTO (0, the default) */
  /* version 4 */
  int stats; /* rlock_stats_mode: RLOCK_STATS_ON (0, the default) keeps the counters and
              * histograms of rlock_client_stats; RLOCK_STATS_OFF skips them (URL: stats=off) */
  /* version 5 */
  const char *key_prefix; /* put before every name (Redisson's NameMapper as a prefix): the
                           * keys and channels of name N are those of key_prefix + N. NULL = none;
                           * at most 1024 bytes; max_name_len bounds prefix + name. Names in
                           * events, lost callbacks and listings come back without it. Also
                           * settable in the URL (key_prefix=, percent-encoded); both must agree */
} rlock_client_options;

/* Whether a client keeps statistics (rlock_client_stats). They cost a few atomic additions per
 * call; off is for measuring that cost. */
typedef enum rlock_stats_mode { RLOCK_STATS_ON = 0, RLOCK_STATS_OFF = 1 } rlock_stats_mode;

/* How a TLS server's certificate is checked. */
typedef enum rlock_tls_verify {
  RLOCK_TLS_VERIFY_FULL = 0, /* a trusted chain naming the host (DNS name or IP address) */
  RLOCK_TLS_VERIFY_CA = 1,   /* a trusted chain, whatever names it gives (clusters announcing
                              * bare IPs that their certificates do not list) */
  RLOCK_TLS_VERIFY_NONE = 2  /* no check at all: encrypted, not authenticated (logged once) */
} rlock_tls_verify;

/* The oldest TLS version a connection accepts. */
typedef enum rlock_tls_version { RLOCK_TLS_1_2 = 0, RLOCK_TLS_1_3 = 1 } rlock_tls_version;

/* Sentinel deployments: whether the sentinels, too, are reached over TLS. */
typedef enum rlock_sentinel_tls {
  RLOCK_SENTINEL_TLS_AUTO = 0, /* like the master: TLS with rediss-sentinel:// or tls = 1 */
  RLOCK_SENTINEL_TLS_ON = 1,
  RLOCK_SENTINEL_TLS_OFF = 2 /* plaintext sentinels, TLS master (URL: sentinel_tls=no) */
} rlock_sentinel_tls;

#define RLOCK_CLIENT_OPTIONS_VERSION 5
#define RLOCK_CLIENT_OPTIONS_INIT                                                                \
  {                                                                                              \
    RLOCK_CLIENT_OPTIONS_VERSION, NULL, NULL, 0, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
        NULL, NULL, NULL, NULL, NULL, 0, 0, 0, 0, NULL                                           \
  }

/* Fills `opts` with defaults (zero fields mean "default" too). For bindings that cannot expand
 * RLOCK_CLIENT_OPTIONS_INIT. Returns RLOCK_EVERSION for an unknown version. */
RLOCK_API int rlock_client_options_init(rlock_client_options *opts, unsigned int version);

/* Creates a client and connects once to check address and credentials (fails fast with ECONN,
 * EAUTH, ENOPERM). NULL opts = defaults (127.0.0.1:6379). Owned: free with rlock_client_free. */
RLOCK_API int rlock_client_new(rlock_client **out, const rlock_client_options *opts);

/* Shorthand for rlock_client_new with only `url` set. */
RLOCK_API int rlock_client_new_url(rlock_client **out, const char *url);

/* Stops the watchdog, wakes waiters of its locks with RLOCK_ECLOSED, releases what the client
 * still holds (locks but those of an owner_id, plain semaphores' permits, the expirable permits
 * its watchdog renews; best effort: it stops at the first failed round trip, and the rest
 * expire by lease) and
 * closes connections. Lock handles may outlive the client; their calls then return
 * RLOCK_ECLOSED. In a child of fork(), for a client made before the fork: does none of this
 * (the parent's locks stay held) and records RLOCK_EFORKED. */
RLOCK_API void rlock_client_free(rlock_client *client);

/* The client's id (a UUID, the first half of every owner). Borrowed: valid while the client
 * lives. */
RLOCK_API const char *rlock_client_id(const rlock_client *client);

/* ---- Lock --------------------------------------------------------------------------------- */

/* Lock kinds. All share the Redisson RLock hash layout and every rlock_lock call. */
typedef enum rlock_lock_kind {
  RLOCK_LOCK_REENTRANT = 0, /* Redisson RLock: waiters woken by pub/sub */
  RLOCK_LOCK_FENCED = 1,    /* Redisson RFencedLock: every acquire returns a fencing token */
  RLOCK_LOCK_SPIN = 2,      /* Redisson RSpinLock: no pub/sub, retries with backoff + jitter */
  RLOCK_LOCK_FAIR = 3,      /* Redisson RFairLock: first come, first served across processes */
  /* The two halves of one read-write lock (Redisson RReadWriteLock): make one handle of each
   * kind on the same name. Readers share; a writer excludes everyone else; a writer may also
   * take the read lock (downgrade); a reader asking for the write lock gets RLOCK_EDEADLK. */
  RLOCK_LOCK_READ = 4,
  RLOCK_LOCK_WRITE = 5,
  /* Not reentrant (Redisson 4.4+ getNonReentrantLock / getNonReentrantFairLock): the reentrant
   * and fair layouts, but an owner that holds the lock and acquires it again gets RLOCK_EDEADLK
   * at once (nothing changes on Redis; its one hold stays), whatever the wait. */
  RLOCK_LOCK_NON_REENTRANT = 6,
  RLOCK_LOCK_NON_REENTRANT_FAIR = 7 /* first come, first served, as RLOCK_LOCK_FAIR */
} rlock_lock_kind;

typedef struct rlock_lock_options {
  unsigned int version;
  int64_t lease_ms; /* lease of acquires without one: default RLOCK_LEASE_WATCHDOG, or > 0 */
  /* version 2 */
  rlock_lock_kind kind;    /* default RLOCK_LOCK_REENTRANT */
  int64_t spin_initial_ms; /* spin lock: first backoff, default 1 */
  int64_t spin_max_ms;     /* spin lock: the backoff doubles up to this, default 128 */
  int64_t fair_wait_ms;    /* fair locks: how long a queued waiter keeps its place without
                              coming back (so a dead waiter stalls the queue at most this long),
                              when the acquire's own wait is unbounded; default 300000 */
  /* version 3 */
  /* A caller-given owner (NULL: the client's owners, "<client id>:<thread id>"). The handle
   * then has one owner, "<U>:1", U the version-5 UUID (RFC 4122) of the owner_id_len bytes in
   * the namespace RLOCK_OWNER_ID_NAMESPACE, whatever thread_id a call gives. Every handle, in
   * any process and on any client, naming the same owner_id is that owner: one process may
   * acquire and another release or extend. It never re-enters: an acquire while it holds the
   * lock is RLOCK_EDEADLK (as python-redis-lock's id= and redsync's WithValue). Its holds are
   * not released when the client is freed (another process may be the one to release them):
   * they last their lease. At most 1024 bytes, any bytes. Not for RLOCK_LOCK_READ/WRITE. */
  const char *owner_id;
  size_t owner_id_len;
} rlock_lock_options;

#define RLOCK_LOCK_OPTIONS_VERSION 3
#define RLOCK_LOCK_OPTIONS_INIT \
  { RLOCK_LOCK_OPTIONS_VERSION, RLOCK_LEASE_WATCHDOG, RLOCK_LOCK_REENTRANT, 0, 0, 0, NULL, 0 }
#define RLOCK_OWNER_ID_NAMESPACE "582a18c8-c685-423e-bc63-c2b861deff6c"

RLOCK_API int rlock_lock_options_init(rlock_lock_options *opts, unsigned int version);

/* A lock of opts->kind (default: the reentrant lock, Redisson's RLock layout) named by a
 * NUL-terminated string. Does no I/O. Owned: free with rlock_lock_free. */
RLOCK_API int rlock_lock_new(rlock_lock **out, rlock_client *client, const char *name,
                             const rlock_lock_options *opts);

/* The same for a binary name of `name_len` bytes (may contain NUL and invalid UTF-8). */
RLOCK_API int rlock_lock_new_n(rlock_lock **out, rlock_client *client, const char *name,
                               size_t name_len, const rlock_lock_options *opts);

/* Frees the handle without any network call: a lock still held expires by its lease (its
 * watchdog renewal stops, unless the same owner also acquired it through another live handle
 * of the client). Waits for a lost-lock callback of this handle running on another thread to
 * return; the callback never runs after this. A wait on this handle in progress on another
 * thread ends with RLOCK_ECANCELED. */
RLOCK_API void rlock_lock_free(rlock_lock *lock);

typedef struct rlock_acquire_options {
  unsigned int version;
  int64_t wait_ms;            /* 0 = try once, RLOCK_WAIT_FOREVER, or a bound; default: forever */
  int64_t lease_ms;           /* 0 = the lock's default lease; RLOCK_LEASE_WATCHDOG or > 0 */
  int64_t thread_id;          /* owner thread id; RLOCK_THREAD_CURRENT (0) = calling OS thread */
  rlock_cancel_token *cancel; /* optional; borrowed for the duration of the call */
  /* version 2 */
  int64_t *token; /* optional out: the fencing token of this acquire (> 0). On a lock that is
                     not RLOCK_LOCK_FENCED, asking for it makes the acquire advance the lock's
                     token sequence too (the one Redisson's RFencedLock uses). */
} rlock_acquire_options;

#define RLOCK_ACQUIRE_OPTIONS_VERSION 2
#define RLOCK_ACQUIRE_OPTIONS_INIT \
  { RLOCK_ACQUIRE_OPTIONS_VERSION, RLOCK_WAIT_FOREVER, 0, RLOCK_THREAD_CURRENT, NULL, NULL }

RLOCK_API int rlock_acquire_options_init(rlock_acquire_options *opts, unsigned int version);

/* Acquires for the calling thread with the lock's default lease. wait_ms: 0 = try once,
 * RLOCK_WAIT_FOREVER, or a bound. Reentrant: each success must be matched by a release.
 * RLOCK_ETIMEDOUT when the wait passed, RLOCK_ECANCELED after rlock_cancel. */
RLOCK_API int rlock_acquire(rlock_lock *lock, int64_t wait_ms);

/* Acquire with every option; NULL opts = RLOCK_ACQUIRE_OPTIONS_INIT. */
RLOCK_API int rlock_acquire_ex(rlock_lock *lock, const rlock_acquire_options *opts);

/* Releases one hold of the calling thread (or of `thread_id`). At zero the key is deleted and
 * waiters are woken. RLOCK_ENOTHELD if nobody holds it, RLOCK_ENOTOWNER if someone else does
 * (the lock is untouched), RLOCK_ELOST if this owner held it but lost it. */
RLOCK_API int rlock_release(rlock_lock *lock);
RLOCK_API int rlock_release_for(rlock_lock *lock, int64_t thread_id);

/* Resets the remaining lease of a hold of the calling thread (or of `thread_id`) to lease_ms
 * (> 0). The watchdog, if it renews this hold, keeps renewing. Same errors as release. */
RLOCK_API int rlock_extend(rlock_lock *lock, int64_t lease_ms);
RLOCK_API int rlock_extend_for(rlock_lock *lock, int64_t thread_id, int64_t lease_ms);

/* Adds add_ms to the remaining lease of the owner's hold (redis-py's extend; rlock_extend sets
 * it), read and changed in one script, one round trip (a reader: its own read lease, not the
 * longest reader's; the sum is capped at RLOCK_MAX_DURATION_MS). Same errors as
 * rlock_extend_for; RLOCK_EINVAL, nothing changed, when there is no lease to add to: a hold
 * under the watchdog (acquired without a lease; rlock_extend_for gives it one until the
 * watchdog's next renewal), or a key without expiry on Redis (kept without). Never sent twice:
 * a connection failure (RLOCK_ECONN) leaves unknown whether the time was added. */
RLOCK_API int rlock_extend_by_for(rlock_lock *lock, int64_t thread_id, int64_t add_ms);

/* Deletes the lock whoever holds it and wakes waiters. *out_deleted (optional) is set to 1 if
 * a lock was deleted. Holders find out at their next renewal or release. */
RLOCK_API int rlock_force_unlock(int *out_deleted, rlock_lock *lock);

/* Wakes every acquire currently waiting on this handle with RLOCK_ECANCELED. Callable from any
 * thread. Acquires that start later are not affected (use a cancel token for that). */
RLOCK_API int rlock_cancel(rlock_lock *lock);

/* ---- Fencing ------------------------------------------------------------------------------ */

/* Local view, no I/O: the fencing token of the current hold of the calling thread (or
 * `thread_id`). RLOCK_ENOTHELD if it holds none, or took it without a token. Tokens come from
 * the counter "redisson_lock_token:{N}", which never expires and only grows: created (or
 * re-created after Redis lost it) at the server's Unix time in milliseconds times 1,000. */
RLOCK_API int rlock_lock_token(int64_t *out, const rlock_lock *lock);
RLOCK_API int rlock_lock_token_for(int64_t *out, const rlock_lock *lock, int64_t thread_id);

/* A resource kept in Redis that rejects stale lock holders: sets the string key `key` to
 * `value` only if `token` is at least the highest token seen for `key` (kept in
 * "rlock_fence:{key}"), atomically. *out_accepted is 1 when written, 0 when refused because a
 * newer holder already wrote. Resources outside Redis should keep the same rule themselves:
 * accept a write only if its token is >= the highest one accepted so far. */
RLOCK_API int rlock_fenced_write(int *out_accepted, rlock_client *client, const char *key,
                                 size_t key_len, const char *value, size_t value_len,
                                 int64_t token);

/* ---- Status ------------------------------------------------------------------------------- */

/* Local view, no I/O: 1 if the calling thread (or `thread_id`) holds the lock through this
 * client and has not been told it was lost, else 0. Never fails (0 for a NULL lock). */
RLOCK_API int rlock_is_held(const rlock_lock *lock);
RLOCK_API int rlock_is_held_for(const rlock_lock *lock, int64_t thread_id);

/* Local view, no I/O: 1 if a hold of the calling thread (or `thread_id`) was found lost
 * (expired, deleted, taken or not renewable in time) and the owner has not released or
 * re-acquired since. */
RLOCK_API int rlock_is_lost(const rlock_lock *lock);
RLOCK_API int rlock_is_lost_for(const rlock_lock *lock, int64_t thread_id);

/* Which half of a read-write lock an owner field belongs to. */
typedef enum rlock_lock_mode {
  RLOCK_MODE_NONE = 0, /* not a read-write lock, or not locked */
  RLOCK_MODE_READ = 1,
  RLOCK_MODE_WRITE = 2
} rlock_lock_mode;

typedef struct rlock_lock_state {
  unsigned int version; /* set by the caller: RLOCK_LOCK_STATE_VERSION */
  int locked;           /* the lock key exists */
  int held_by_me;       /* the asked-for owner holds it (server view; for a read or write
                           handle: holds that half) */
  int64_t hold_count;   /* the asked-for owner's hold count (server view) */
  int64_t ttl_ms;       /* remaining TTL; -1 = locked without expiry; -2 = not locked */
  int64_t owner_count;  /* number of owner fields */
  const char *owner;    /* the first owner field ("<client-id>:<thread-id>", with ":write" for
                           the writer of a read-write lock), NULL if none.
                           Borrowed: valid until the next rlock_query on this thread */
  size_t owner_len;
  int64_t owner_hold_count;
  /* version 2 */
  rlock_lock_mode mode; /* the mode of a read-write lock's key; RLOCK_MODE_NONE otherwise */
} rlock_lock_state;

#define RLOCK_LOCK_STATE_VERSION 2
#define RLOCK_LOCK_STATE_INIT \
  { RLOCK_LOCK_STATE_VERSION, 0, 0, 0, 0, 0, NULL, 0, 0, RLOCK_MODE_NONE }

/* Reads the server-side state of the lock in one round trip, from the point of view of the
 * calling thread (or `thread_id`). `out->version` must be set. */
RLOCK_API int rlock_query(rlock_lock_state *out, rlock_lock *lock);
RLOCK_API int rlock_query_for(rlock_lock_state *out, rlock_lock *lock, int64_t thread_id);

/* ---- Lost-lock notification -------------------------------------------------------------- */

typedef enum rlock_lost_reason {
  RLOCK_LOST_GONE = 1,        /* renewal found the key deleted or held by someone else */
  RLOCK_LOST_UNREACHABLE = 2, /* Redis could not be reached before the lease ran out */
  RLOCK_LOST_EXPIRED = 3      /* an explicit lease ran out while the lock was still held */
} rlock_lost_reason;

/* Called once per lost hold, on one of the client's two watchdog threads (deadlines, renewals),
 * with no library lock held:
 * it may call rlock functions (on any handle). It must not block for long. `name` is borrowed
 * for the duration of the call. Exceptions or longjmp must not leave the callback. */
typedef void (*rlock_lost_cb)(rlock_lock *lock, const char *name, size_t name_len,
                              int64_t thread_id, rlock_lost_reason reason, void *payload);

/* Sets (or with cb NULL clears) the callback for holds acquired through this handle. */
RLOCK_API int rlock_lock_set_lost_callback(rlock_lock *lock, rlock_lost_cb cb, void *payload);

/* ---- Cancel tokens ------------------------------------------------------------------------ */

RLOCK_API int rlock_cancel_token_new(rlock_cancel_token **out);
/* Sets the token; wakes acquires waiting with it. Idempotent; callable from any thread. */
RLOCK_API int rlock_cancel_token_cancel(rlock_cancel_token *token);
/* 1 if cancelled, else 0. */
RLOCK_API int rlock_cancel_token_is_cancelled(const rlock_cancel_token *token);
/* Frees the token. An acquire in progress that uses it keeps it until it returns. NULL is a
 * no-op. */
RLOCK_API void rlock_cancel_token_free(rlock_cancel_token *token);

/* ---- Multi-lock and RedLock --------------------------------------------------------------- */

/* Several locks taken as one. A multi-lock holds only when every member is held; a RedLock
 * holds when a majority (count/2 + 1) of members, each on its own independent Redis server (its
 * own client), granted it within the lease. Members may live on different clients. Each
 * attempt tries every member at once and never waits while holding some, so callers locking
 * the same members in opposite orders cannot deadlock; an attempt that falls short releases
 * every member before retrying or returning, so a failed call leaves nothing held. A member's
 * client's command_timeout_ms bounds how long a slow server can delay an attempt.
 * Thread-safe; ownership is per owner as for rlock_lock. The group keeps its members alive:
 * they may be freed before the group. */
typedef struct rlock_multi rlock_multi;

RLOCK_API int rlock_multi_lock_new(rlock_multi **out, rlock_lock *const *members, size_t count);
RLOCK_API int rlock_redlock_new(rlock_multi **out, rlock_lock *const *members, size_t count);
/* A wait on the group in progress on another thread ends with RLOCK_ECANCELED. */
RLOCK_API void rlock_multi_free(rlock_multi *group);

/* Acquires the group for the calling thread with the members' default leases, as
 * rlock_acquire. */
RLOCK_API int rlock_multi_acquire(rlock_multi *group, int64_t wait_ms);
/* Acquires the group with opts' wait_ms, lease_ms (0 = the watchdog), thread_id and cancel
 * (NULL opts = RLOCK_ACQUIRE_OPTIONS_INIT; opts->token must be NULL). *out_validity_ms
 * (optional) receives how long the group is sure to be held: the shortest member lease minus
 * the time spent acquiring and a clock-drift allowance. */
RLOCK_API int rlock_multi_acquire_ex(int64_t *out_validity_ms, rlock_multi *group,
                                     const rlock_acquire_options *opts);
/* Releases every member of the calling thread (or `thread_id`). For a RedLock, members that are
 * down or were never granted are skipped: it succeeds when a majority was released. */
RLOCK_API int rlock_multi_release(rlock_multi *group);
RLOCK_API int rlock_multi_release_for(rlock_multi *group, int64_t thread_id);
/* Sets the lease of every member the calling thread (or `thread_id`) holds to `lease_ms` (> 0),
 * as rlock_extend_for, on all members at once. Succeeds when every member (a RedLock: a
 * majority) was extended within the lease; *out_validity_ms (optional) is then how long the
 * group is sure to be held: lease_ms minus the time spent and the clock-drift allowance. With
 * RLOCK_EXTEND_REACQUIRE in `flags`, a member whose key is gone (a node that restarted without
 * it) is taken again with one try, never from another owner (redsync's WithSetNXOnExtend).
 * On failure (the most telling member error: RLOCK_ELOST, RLOCK_ENOTOWNER, RLOCK_ECONN, ...)
 * the members extended stay extended. */
#define RLOCK_EXTEND_REACQUIRE 1u
RLOCK_API int rlock_multi_extend(int64_t *out_validity_ms, rlock_multi *group, int64_t lease_ms,
                                 unsigned int flags);
RLOCK_API int rlock_multi_extend_for(int64_t *out_validity_ms, rlock_multi *group,
                                     int64_t thread_id, int64_t lease_ms, unsigned int flags);
/* Local view, no I/O: 1 if the calling thread (or `thread_id`) holds the group (every member,
 * or a majority). */
RLOCK_API int rlock_multi_is_held(const rlock_multi *group);
RLOCK_API int rlock_multi_is_held_for(const rlock_multi *group, int64_t thread_id);
/* Wakes every acquire waiting on this group with RLOCK_ECANCELED. Any thread. */
RLOCK_API int rlock_multi_cancel(rlock_multi *group);

/* ---- Asynchronous calls ------------------------------------------------------------------- */
/* Each _async call starts an operation and returns at once. It returns 0 when started: `done`
 * is then called exactly once, on a library thread, with no library lock held, whatever
 * happens (granted, timed out, cancelled by a token or rlock_cancel, handle freed, client
 * freed, Redis failure). It returns a negative code when it could not start (bad arguments, a
 * freed handle, a closed client, no memory): `done` is then never called. Inside `done`,
 * rlock_last_error() describes a failing `status`. Owners: `thread_id` (or opts->thread_id)
 * RLOCK_THREAD_CURRENT means the thread calling the _async function. A waiting operation holds
 * no thread of yours and none of its own: waits are timers and pub/sub wake-ups of the
 * client's few library threads (docs/threading.md gives the budget and what `done` may call).
 * `done` must not block for long: it delays other completions of the client. */

/* status: 0 or a negative rlock_error_code. value: the fencing token of a granted acquire (0
 * when none was asked for), the validity of a granted group acquire in ms (as
 * rlock_multi_acquire_ex's out_validity_ms), else 0. */
typedef void (*rlock_completion_cb)(void *user, int status, int64_t value);

/* rlock_acquire_ex, asynchronously. NULL opts = RLOCK_ACQUIRE_OPTIONS_INIT. opts is read during
 * the call; opts->cancel may be freed after it returns (the operation keeps it); opts->token,
 * if not NULL, must stay valid until `done` runs and is written before it (the token is also
 * `done`'s value). A grant that races a cancel is reported (status 0: the caller holds the
 * lock), except after rlock_lock_free of the handle: then it is released and the status is
 * RLOCK_ECANCELED. */
RLOCK_API int rlock_acquire_async(rlock_lock *lock, const rlock_acquire_options *opts,
                                  rlock_completion_cb done, void *user);
/* rlock_release_for and rlock_extend_for, asynchronously. */
RLOCK_API int rlock_release_async(rlock_lock *lock, int64_t thread_id, rlock_completion_cb done,
                                  void *user);
RLOCK_API int rlock_extend_async(rlock_lock *lock, int64_t thread_id, int64_t lease_ms,
                                 rlock_completion_cb done, void *user);
/* rlock_multi_acquire_ex and rlock_multi_release_for, asynchronously (`done`'s value is the
 * validity in ms of a granted group acquire). opts->token must be NULL. */
RLOCK_API int rlock_multi_acquire_async(rlock_multi *group, const rlock_acquire_options *opts,
                                        rlock_completion_cb done, void *user);
RLOCK_API int rlock_multi_release_async(rlock_multi *group, int64_t thread_id,
                                        rlock_completion_cb done, void *user);

/* ---- Statistics --------------------------------------------------------------------------- */
/* Each client counts what it does, from any thread, at the cost of a few relaxed atomic
 * additions per call (docs/metrics.md: what each figure means, and their names as OpenTelemetry
 * and Prometheus metrics). Lock names never appear here: they are unbounded; events carry them. */

/* A histogram of durations in fixed buckets, the same for every histogram: buckets[i] counts
 * samples above the bound i-1 and at most rlock_histogram_bounds_us()[i]; the last bucket counts
 * those above every bound. Counts since the client was made; they only grow. */
#define RLOCK_HISTOGRAM_BOUNDS 22
#define RLOCK_HISTOGRAM_BUCKETS (RLOCK_HISTOGRAM_BOUNDS + 1)
typedef struct rlock_histogram {
  uint64_t count;  /* samples */
  uint64_t sum_us; /* their total, in microseconds */
  uint64_t buckets[RLOCK_HISTOGRAM_BUCKETS];
} rlock_histogram;

/* The RLOCK_HISTOGRAM_BOUNDS upper bounds of the buckets, in microseconds, ascending: 25 us to
 * 1 hour. Static; needs no client. */
RLOCK_API const int64_t *rlock_histogram_bounds_us(void);

/* Indexes of rlock_stats.acquires_failed_by_code: the negated status code (ECONN -> 5). */
#define RLOCK_STATS_CODES 32
/* Slots of rlock_stats.leaderships_revoked_by_reason (version 2): rlock_revoke_reason values. */
#define RLOCK_STATS_REVOKE_REASONS 8

typedef struct rlock_stats {
  unsigned int version; /* set by the caller: RLOCK_STATS_VERSION */
  int enabled;          /* 0 when the client was made with RLOCK_STATS_OFF: everything is 0 */
  /* Counters since the client was made. An acquire is one call of rlock_acquire* (blocking
   * or _async); each round of a group acquire counts as a try-once acquire of every member, on
   * the member's client, and its release as a release of each. */
  uint64_t acquires_granted;
  uint64_t acquires_timed_out; /* ended with RLOCK_ETIMEDOUT (a try-once on a held lock too) */
  uint64_t acquires_canceled;  /* ended with RLOCK_ECANCELED */
  uint64_t acquires_failed;    /* ended with any other error; by code just below */
  uint64_t acquires_failed_by_code[RLOCK_STATS_CODES]; /* [-code]; [2] and [4] stay 0 */
  uint64_t releases;                                   /* release calls that released a hold */
  uint64_t releases_failed; /* release calls that failed (ENOTHELD, ENOTOWNER, ELOST, ECONN...) */
  uint64_t locks_lost_gone; /* holds lost, by rlock_lost_reason */
  uint64_t locks_lost_unreachable;
  uint64_t locks_lost_expired;
  uint64_t renewals_sent;     /* holds renewed by the watchdog (one script renews many) */
  uint64_t renewals_failed;   /* of those: no answer or an error reply (found gone: lost) */
  uint64_t reconnects;        /* connections opened again after one was lost or replaced */
  uint64_t failovers;         /* Sentinel: the master moved to another address */
  uint64_t cluster_redirects; /* Cluster: MOVED and ASK answers followed */
  uint64_t scripts_sent;      /* EVALSHA and EVAL commands sent (renewals included) */
  uint64_t events_dropped;    /* events not delivered because the queue was full */
  /* Gauges, now. */
  int64_t holds;   /* (lock, owner) holds this client keeps, not lost */
  int64_t waiters; /* acquires waiting for a lock (a group waits between rounds: not counted) */
  /* Histograms. */
  rlock_histogram acquire_wait; /* granted acquires: from the call to the grant */
  rlock_histogram hold;         /* from a hold's first acquire to its last release */
  rlock_histogram handoff;      /* acquires woken by an unlock message: from the message's
                                   arrival to the grant */
  rlock_histogram command_rtt;  /* commands (a pipelined batch counts once): from the send to
                                   the reply */
  /* version 2: leader elections of this client (rlock_election_*, docs/leader.md). Counted
   * whether or not the election has callbacks. */
  uint64_t elections_won;       /* times one of its candidates became leader */
  uint64_t leaderships_revoked; /* leaderships that ended, for any reason (the sum below) */
  /* [rlock_revoke_reason]; [0] and reasons not used stay 0 */
  uint64_t leaderships_revoked_by_reason[RLOCK_STATS_REVOKE_REASONS];
  int64_t leaders; /* gauge: its elections that lead now (won minus revoked) */
  /* version 3: TLS connections of every kind (commands, subscriber, sentinels, cluster nodes);
   * both stay 0 in plaintext */
  uint64_t tls_handshakes;       /* TLS handshakes completed, full or resumed */
  uint64_t tls_sessions_resumed; /* of those, resuming an earlier connection's session (an
                                  * abbreviated handshake: docs/tls.md) */
} rlock_stats;

#define RLOCK_STATS_VERSION 3

/* Fills `out` (out->version must be set; fields of later versions are left alone) with a
 * snapshot of the client's statistics. Any thread; no I/O; costs about a microsecond. Counters
 * are read one by one, so a snapshot taken during calls may be a few calls apart between
 * fields. */
RLOCK_API int rlock_client_stats(rlock_stats *out, rlock_client *client);

/* ---- Events -------------------------------------------------------------------------------- */

typedef enum rlock_event_kind {
  RLOCK_EVENT_ACQUIRED = 1,       /* name, owner, duration_us = time waited, token */
  RLOCK_EVENT_RELEASED = 2,       /* name, owner, duration_us = time held (first acquire to
                                     last release) */
  RLOCK_EVENT_LOST = 3,           /* name, owner, reason = rlock_lost_reason */
  RLOCK_EVENT_RENEWAL_FAILED = 4, /* name, owner, reason = rlock_error_code, detail = message */
  RLOCK_EVENT_FAILOVER = 5,       /* detail = the new master "host:port" */
  RLOCK_EVENT_REDIRECT = 6,       /* detail = "MOVED <slot> <host:port>" or "ASK ..." */
  RLOCK_EVENT_KEY_EXPIRED = 7,    /* name: a key that expired (rlock_client_watch_key_events) */
  RLOCK_EVENT_KEY_DELETED = 8,    /* name: a key that was deleted (DEL, UNLINK, an unlock) */
  RLOCK_EVENT_ELECTED = 9,        /* name, owner: an election of the client became leader;
                                     token = the term */
  RLOCK_EVENT_REVOKED = 10        /* name, owner: its leadership ended, token = the term,
                                     reason = rlock_revoke_reason; token 0 when a campaign ended
                                     without leading (reasons CLOSED, FAILED) */
} rlock_event_kind;

/* Made by the library, borrowed by the callback for the duration of the call. Fields are only
 * ever appended. Strings are not NUL-terminated: use the lengths. */
typedef struct rlock_event {
  rlock_event_kind kind;
  int64_t unix_time_us; /* when it happened (wall clock) */
  const char *name;     /* the lock; empty for FAILOVER and REDIRECT */
  size_t name_len;
  const char *owner; /* the hold's owner field ("<client-id>:<thread-id>", ":write" for a
                        writer); empty when none */
  size_t owner_len;
  int64_t thread_id;   /* the owner's thread id, 0 when none */
  int64_t duration_us; /* ACQUIRED: waited; RELEASED: held; else 0 */
  int64_t token;       /* ACQUIRED: the fencing token, 0 when none; ELECTED, REVOKED: the term */
  int reason;          /* LOST: rlock_lost_reason; RENEWAL_FAILED: rlock_error_code;
                          REVOKED: rlock_revoke_reason; else 0 */
  const char *detail;  /* see the kinds; empty when none */
  size_t detail_len;
} rlock_event;

typedef void (*rlock_event_cb)(const rlock_event *event, void *payload);

/* Sets (or with cb NULL clears) the client's event callback. Off by default. While one is set,
 * events are queued (a copy of the strings and a queue push, about a microsecond each) and
 * handed to `cb`, in the order they happened, on one library thread of the client started for
 * it (docs/metrics.md "Events"). Up to 65536 events wait; beyond that they are dropped and
 * counted (rlock_stats.events_dropped). `cb` may call rlock functions, must not block for long
 * and must not let exceptions or longjmp out. Returns once a callback running on another thread
 * has returned; queued events go to the new callback. rlock_client_free delivers the events
 * already queued, then stops the thread. */
RLOCK_API int rlock_client_set_event_callback(rlock_client *client, rlock_event_cb cb,
                                              void *payload);

/* Key events for rlock_client_watch_key_events: a bit mask of these. */
#define RLOCK_KEY_EXPIRED 1
#define RLOCK_KEY_DELETED 2

/* Reports keys of the client's names that expire (RLOCK_KEY_EXPIRED) or are deleted
 * (RLOCK_KEY_DELETED: DEL or UNLINK, an unlock included) as events RLOCK_EVENT_KEY_EXPIRED and
 * RLOCK_EVENT_KEY_DELETED to the event callback, named as the caller names them (without the
 * key_prefix; with one, only keys under it are reported; without, every key of the database):
 * Redisson's ExpiredObjectListener and DeletedObjectListener. `kinds` 0 stops. They come from
 * Redis keyspace notifications, which the server publishes only when its
 * notify-keyspace-events has E and x (expired) or g (deleted): RLOCK_EUNSUPPORTED names what
 * is missing when CONFIG GET shows it (when CONFIG is refused the client subscribes anyway).
 * Notifications are fire and forget: none is sent again after a lost connection. Not on a
 * Cluster deployment (RLOCK_EUNSUPPORTED). */
RLOCK_API int rlock_client_watch_key_events(rlock_client *client, int kinds);

/* ---- Inspection --------------------------------------------------------------------------- */
/* The operator's view: what a deployment holds for a lock name, and a walk over a server (or
 * every master of a cluster) finding the locks in it, held by rlock or Redisson alike. Reads
 * only: nothing is written and no lock script runs. Results are allocated by the library and
 * carry the version they were filled at in `version` (read only the fields of that version and
 * older); every string and array in them is borrowed from the result, valid until it is freed. */

/* What a name's keys look like. A spin lock has the reentrant layout, and a fair lock with an
 * empty queue looks like a reentrant one: the keys cannot tell them apart. Nor can they tell a
 * non-reentrant lock from a reentrant one held once (or a non-reentrant fair lock from a fair
 * one): those are found as REENTRANT and FAIR. Kinds are only ever appended: treat a value you
 * do not know as RLOCK_FOUND_NOT_A_LOCK. */
typedef enum rlock_found_kind {
  RLOCK_FOUND_NOTHING = 0,    /* no key of any lock layout */
  RLOCK_FOUND_REENTRANT = 1,  /* the lock hash alone (reentrant, spin or non-reentrant) */
  RLOCK_FOUND_FENCED = 2,     /* a token counter (with or without the hash) */
  RLOCK_FOUND_FAIR = 3,       /* a fair queue or deadline set (with or without the hash) */
  RLOCK_FOUND_READ_WRITE = 4, /* the hash has a `mode` field */
  RLOCK_FOUND_NOT_A_LOCK = 5, /* the key exists but is no lock (another type, other fields) */
  /* version 2: */
  RLOCK_FOUND_SEMAPHORE = 6, /* a permit-expirable semaphore with permits held: the sorted set
                                "{N}:timeout" of permit ids (N, the free permits, may be absent) */
  RLOCK_FOUND_COUNTER = 7    /* N is a string holding an integer and no permit is held: a plain
                                semaphore's free permits, a latch's count, an expirable semaphore
                                with none held, or any other counter (the keys cannot tell) */
} rlock_found_kind;

/* One owner field of a lock hash. */
typedef struct rlock_lock_owner {
  const char *owner; /* "<client-id>:<thread-id>", with ":write" for a writer; not NUL-safe:
                        use owner_len (NUL-terminated all the same) */
  size_t owner_len;
  int64_t hold_count;
  rlock_lock_mode mode; /* read-write locks: RLOCK_MODE_WRITE for the writer's field, else
                           RLOCK_MODE_READ; RLOCK_MODE_NONE for other kinds */
} rlock_lock_owner;

/* One place in a fair lock's queue. */
typedef struct rlock_lock_waiter {
  const char *owner; /* "<client-id>:<thread-id>" (NUL-terminated; owner_len bytes) */
  size_t owner_len;
  int64_t deadline_ms; /* when the place lapses, epoch ms; -1 if it has no deadline entry */
} rlock_lock_waiter;

/* Who an owner is (version 3 of rlock_lock_info), from the small record every rlock client
 * keeps while it holds anything a second or longer: the hash "rlock_holder:{<client id>}"
 * (after the key_prefix), written by the watchdog's threads, never on a caller's path, and
 * expiring a watchdog lease after the client stops holding or dies; the lock's own keys are
 * Redisson's, unchanged (docs/operators.md). Owners with no record (a Redisson JVM, a
 * caller-given owner id, a client whose record an ACL refuses, a hold under a second old) have
 * known 0; a hold under a second old of a client that has a record has since_ms -1. */
typedef struct rlock_holder_info {
  int known;           /* 1 when the owner's client record was found */
  const char *host;    /* the client's host name; "" when unknown (NUL-terminated) */
  int64_t pid;         /* its process id; 0 when unknown */
  const char *command; /* its command line, arguments joined by spaces, at most 256 bytes */
  int64_t started_ms;  /* when the client was made, epoch ms; -1 when unknown */
  int64_t since_ms;    /* when this hold was first acquired, epoch ms; -1 when not listed */
} rlock_holder_info;

/* Owners and queue entries listed per lock at most (the counts are always complete). */
#define RLOCK_INSPECT_MAX_LISTED 100

typedef struct rlock_lock_info {
  unsigned int version; /* set by the library: RLOCK_LOCK_INFO_VERSION it was filled at */
  const char *name;     /* the lock name (NUL-terminated; name_len bytes, may hold NULs) */
  size_t name_len;
  rlock_found_kind kind;
  int locked;                     /* the lock hash exists */
  int64_t ttl_ms;                 /* its remaining lease (PTTL): -1 no expiry, -2 not locked */
  rlock_lock_mode mode;           /* a read-write lock's `mode` field; RLOCK_MODE_NONE otherwise */
  int64_t owner_count;            /* owner fields in the hash, listed or not */
  const rlock_lock_owner *owners; /* the first owners (at most RLOCK_INSPECT_MAX_LISTED) */
  size_t owners_len;
  int64_t queue_length;           /* fair locks: waiters queued */
  const rlock_lock_waiter *queue; /* the queue from its head (at most ..._MAX_LISTED) */
  size_t queue_len;
  int64_t subscribers; /* clients subscribed to the wake-up channel (PUBSUB NUMSUB);
                          fair locks: to the channels of the listed queued owners */
  int64_t token;       /* the last fencing token handed out; 0 when there is no counter */
  /* version 2: semaphores (kinds SEMAPHORE and COUNTER; 0, 0 and -1 for the other kinds). For
     them `subscribers` counts the clients subscribed to the semaphore channel (and, for a
     COUNTER, the latch channel too): the waiting acquires and awaits. */
  int64_t permits_available;    /* N's value: free permits (a COUNTER: its value) */
  int64_t permits_held;         /* SEMAPHORE: permit ids in the sorted set, lapsed ones too */
  int64_t earliest_deadline_ms; /* SEMAPHORE: the first lease to end, epoch ms (in the past when
                                   it lapsed and is not reclaimed yet); -1 when every permit
                                   held has no lease */
  /* version 3: who the listed owners are: holders[i] is owners[i] (holders_len == owners_len) */
  const rlock_holder_info *holders;
  size_t holders_len;
} rlock_lock_info;

#define RLOCK_LOCK_INFO_VERSION 3

/* Reads every key of the name's layouts (two round trips, and one for the owners' holder
 * records; on a cluster with classic pub/sub the subscriber count asks every master). A name with
 * no keys gives kind RLOCK_FOUND_NOTHING, not an error. Owned: free with rlock_lock_info_free. */
RLOCK_API int rlock_inspect(rlock_lock_info **out, rlock_client *client, const char *name,
                            size_t name_len);
/* NULL is a no-op; a pointer rlock did not make, or freed already, records RLOCK_EINVAL. */
RLOCK_API void rlock_lock_info_free(rlock_lock_info *info);

typedef struct rlock_scan_options {
  unsigned int version; /* RLOCK_SCAN_OPTIONS_VERSION */
  const char *match;    /* a Redis glob (SCAN MATCH) over lock names; NULL = every name */
  size_t match_len;
  const char *cursor; /* NULL or "0" = start; else the next_cursor of the previous page */
  int64_t count;      /* SCAN COUNT: keys looked at per step (a hint); 0 = 1000 */
} rlock_scan_options;

#define RLOCK_SCAN_OPTIONS_VERSION 1
#define RLOCK_SCAN_OPTIONS_INIT \
  { RLOCK_SCAN_OPTIONS_VERSION, NULL, 0, NULL, 0 }

/* Fills `opts` with defaults, for bindings that cannot expand RLOCK_SCAN_OPTIONS_INIT. */
RLOCK_API int rlock_scan_options_init(rlock_scan_options *opts, unsigned int version);

typedef struct rlock_lock_page {
  unsigned int version;                /* set by the library: RLOCK_LOCK_PAGE_VERSION */
  const rlock_lock_info *const *locks; /* the locks found in this step */
  size_t count;
  const char *next_cursor; /* pass it as opts->cursor for the next step */
  int done;                /* 1 when the walk is complete (next_cursor is "0") */
} rlock_lock_page;

#define RLOCK_LOCK_PAGE_VERSION 1

/* One bounded step of a walk over the deployment: SCAN with opts->count and TYPE hash on one
 * master (Redis >= 6), then the layouts of the hashes found, as rlock_inspect reads them, in
 * three round trips (one more per 200 names found beyond the first 200, each with a command
 * timeout of its own). Hashes that are not locks are left out (judged by a bounded sample of
 * their fields), and so are free locks. When a master's hashes are done, a second pass on it
 * scans TYPE zset MATCH "*:timeout" for permit-expirable semaphores with permits held (kind
 * RLOCK_FOUND_SEMAPHORE; opts->match is matched against their names). Plain semaphores and
 * latches are plain integers under the name: a walk cannot tell them from other strings, so it
 * leaves them out (rlock_inspect of the name shows them as RLOCK_FOUND_COUNTER). A page may be
 * empty while done is 0: call again with next_cursor until done. On a cluster the cursor names
 * the master too, so the walk visits every master in turn; a topology change during a walk may
 * skip or repeat keys, as SCAN may; SCAN also returns a key twice at times while Redis resizes
 * its table, so a walk may list a name twice. NULL opts = RLOCK_SCAN_OPTIONS_INIT. Owned: free with
 * rlock_lock_page_free. */
RLOCK_API int rlock_scan_locks(rlock_lock_page **out, rlock_client *client,
                               const rlock_scan_options *opts);
/* NULL is a no-op; a pointer rlock did not make, or freed already, records RLOCK_EINVAL. */
RLOCK_API void rlock_lock_page_free(rlock_lock_page *page);

/* ---- Semaphores and count-down latches ---------------------------------------------------- */
/* Redisson's RSemaphore, RPermitExpirableSemaphore and RCountDownLatch on their on-Redis
 * layouts (docs/semaphores.md), so rlock and Redisson processes share them. Waiting acquires and
 * awaits cost no thread: they wait on the client's engine as lock acquires do (rlock_cancel_token
 * and the _cancel functions stop them, RLOCK_ECANCELED). Handles are thread-safe. */

/* A counting semaphore: a plain one (anonymous permits) or a permit-expirable one (each permit
 * has an id and a lease). */
typedef struct rlock_semaphore rlock_semaphore;
/* A count-down latch. */
typedef struct rlock_latch rlock_latch;

typedef enum rlock_semaphore_kind {
  RLOCK_SEMAPHORE_PLAIN = 0,    /* Redisson RSemaphore */
  RLOCK_SEMAPHORE_EXPIRABLE = 1 /* Redisson RPermitExpirableSemaphore */
} rlock_semaphore_kind;

/* lease_ms of an expirable permit that never expires (Redisson's lease -1). */
#define RLOCK_LEASE_NONE ((int64_t)-2)
/* A permit id: 32 lower-case hex digits and a NUL. */
#define RLOCK_PERMIT_ID_SIZE 33
/* Permits one call of a permit-expirable semaphore may take or give back (a plain one: up to
 * 2^31-1). */
#define RLOCK_MAX_PERMITS_PER_CALL 1000

typedef struct rlock_permit_id {
  char hex[RLOCK_PERMIT_ID_SIZE];
} rlock_permit_id;

typedef struct rlock_semaphore_options {
  unsigned int version;
  rlock_semaphore_kind kind; /* default RLOCK_SEMAPHORE_PLAIN */
  int64_t lease_ms;          /* expirable: the lease of acquires that give none:
                                RLOCK_LEASE_WATCHDOG (default: renewed while the client
                                lives, like a lock's), RLOCK_LEASE_NONE, or > 0 */
} rlock_semaphore_options;

#define RLOCK_SEMAPHORE_OPTIONS_VERSION 1
#define RLOCK_SEMAPHORE_OPTIONS_INIT \
  { RLOCK_SEMAPHORE_OPTIONS_VERSION, RLOCK_SEMAPHORE_PLAIN, RLOCK_LEASE_WATCHDOG }

RLOCK_API int rlock_semaphore_options_init(rlock_semaphore_options *opts, unsigned int version);

/* A semaphore named by a NUL-terminated string (or `name_len` bytes with _n). Does no I/O.
 * NULL opts = RLOCK_SEMAPHORE_OPTIONS_INIT. Owned: free with rlock_semaphore_free. */
RLOCK_API int rlock_semaphore_new(rlock_semaphore **out, rlock_client *client, const char *name,
                                  const rlock_semaphore_options *opts);
RLOCK_API int rlock_semaphore_new_n(rlock_semaphore **out, rlock_client *client, const char *name,
                                    size_t name_len, const rlock_semaphore_options *opts);
/* Frees the handle without any network call: permits it took stay held (the client's watchdog
 * goes on renewing its own until released or the client is freed); waits in progress end with
 * RLOCK_ECANCELED. */
RLOCK_API void rlock_semaphore_free(rlock_semaphore *sem);

/* Sets the permits (0 to 2147483647) of a semaphore that does not exist yet; *out_set is 1 when
 * set, 0 when it existed. ttl_ms > 0 also makes it expire (plain only), 0 = never. */
RLOCK_API int rlock_semaphore_try_set_permits(int *out_set, rlock_semaphore *sem, int64_t permits,
                                              int64_t ttl_ms);
/* Adds `delta` permits (a negative delta takes them away; the count may go below 0). A missing
 * semaphore counts as 0. *out_available (optional) gets the new count. */
RLOCK_API int rlock_semaphore_add_permits(int64_t *out_available, rlock_semaphore *sem,
                                          int64_t delta);

typedef struct rlock_permit_options {
  unsigned int version;
  int64_t permits;            /* default 1; a plain semaphore: 0 (granted at once, no round
                                 trip, as Redisson) to 2^31-1; expirable: 1 to
                                 RLOCK_MAX_PERMITS_PER_CALL */
  int64_t wait_ms;            /* 0 = try once, RLOCK_WAIT_FOREVER (default), or a bound */
  int64_t lease_ms;           /* expirable: 0 = the semaphore's lease_ms; RLOCK_LEASE_WATCHDOG,
                                 RLOCK_LEASE_NONE or > 0. Plain: must be 0 */
  rlock_cancel_token *cancel; /* optional; borrowed for the duration of the call */
  rlock_permit_id *ids;       /* expirable: receives `permits` ids; plain: must be NULL */
} rlock_permit_options;

#define RLOCK_PERMIT_OPTIONS_VERSION 1
#define RLOCK_PERMIT_OPTIONS_INIT \
  { RLOCK_PERMIT_OPTIONS_VERSION, 1, RLOCK_WAIT_FOREVER, 0, NULL, NULL }

RLOCK_API int rlock_permit_options_init(rlock_permit_options *opts, unsigned int version);

/* Takes `permits` permits of a plain semaphore, waiting up to wait_ms for them: RLOCK_ETIMEDOUT
 * when too few became available in time (the message says when the semaphore does not
 * exist). The permits count as held by the client until given back. With replica sync, a grant
 * the replicas did not confirm is given back: RLOCK_ENOTSYNCED (as for every acquire here). */
RLOCK_API int rlock_semaphore_acquire(rlock_semaphore *sem, int64_t permits, int64_t wait_ms);
/* Acquire with every option, for either kind (NULL opts = RLOCK_PERMIT_OPTIONS_INIT, plain). */
RLOCK_API int rlock_semaphore_acquire_ex(rlock_semaphore *sem, const rlock_permit_options *opts);
/* Gives back permits (0 to 2^31-1; 0 does nothing) of a plain semaphore that this client took:
 * RLOCK_ENOTHELD (nothing changes) for more than it holds; RLOCK_ELOST when the semaphore was
 * deleted or expired. */
RLOCK_API int rlock_semaphore_release(rlock_semaphore *sem, int64_t permits);
/* As rlock_semaphore_release, but a semaphore that no longer exists is no failure: *out_released
 * (optional) is 1 when the permits were given back, 0 when the semaphore did not exist (nothing
 * is created) or `permits` is 0 (no round trip). Redisson's releaseIfExists. Since 0.3. */
RLOCK_API int rlock_semaphore_release_if_exists(int *out_released, rlock_semaphore *sem,
                                                int64_t permits);
/* Available permits now (expirable: after giving expired permits back). Optional outputs:
 * *out_held the expirable permits held (0 for plain), *out_exists whether the semaphore exists. */
RLOCK_API int rlock_semaphore_available(int64_t *out_available, int64_t *out_held, int *out_exists,
                                        rlock_semaphore *sem);
/* Takes every available permit of a plain semaphore (*out_drained: how many; may be < 0). */
RLOCK_API int rlock_semaphore_drain(int64_t *out_drained, rlock_semaphore *sem);
/* Deletes the semaphore (the permits' ids too); *out_deleted: whether it existed. */
RLOCK_API int rlock_semaphore_delete(int *out_deleted, rlock_semaphore *sem);
/* Wakes every acquire in progress on this handle with RLOCK_ECANCELED. */
RLOCK_API int rlock_semaphore_cancel(rlock_semaphore *sem);
/* Permits of this plain semaphore held by the handle's client (taken, not given back). */
RLOCK_API int rlock_semaphore_held(int64_t *out_held, rlock_semaphore *sem);

/* Expirable: takes one permit with `lease_ms` (0 = the semaphore's), waiting up to wait_ms;
 * *out gets its id. */
RLOCK_API int rlock_permit_acquire(rlock_permit_id *out, rlock_semaphore *sem, int64_t wait_ms,
                                   int64_t lease_ms);
/* Expirable: gives back permits by id (any case of hex), all or none: RLOCK_ENOTHELD when one is
 * not held (never taken, released, reclaimed after expiry), RLOCK_ELOST when one's lease ran
 * out (it goes back to the semaphore anyway); nothing changes then. */
RLOCK_API int rlock_permit_release(rlock_semaphore *sem, const char *id);
RLOCK_API int rlock_permit_release_n(rlock_semaphore *sem, const rlock_permit_id *ids,
                                     size_t count);
/* Expirable: gives a held permit a new lease from now (RLOCK_LEASE_WATCHDOG: renewed by the
 * client from now on; RLOCK_LEASE_NONE: never expires). RLOCK_ENOTHELD when not held. */
RLOCK_API int rlock_permit_update_lease(rlock_semaphore *sem, const char *id, int64_t lease_ms);
/* Expirable: *out_lease_ms gets the ms left on a held permit's lease (1 or more), or
 * RLOCK_LEASE_NONE for a permit that never expires (Redisson's getLeaseTime answers -1 then).
 * RLOCK_ENOTHELD when the permit is not held (never taken, released, or its lease ran out;
 * Redisson throws IllegalArgumentException). Expired permits go back first. Since 0.3. */
RLOCK_API int rlock_permit_lease_time(int64_t *out_lease_ms, rlock_semaphore *sem, const char *id);
/* Expirable: sets the total of permits (0 to 2147483647), available plus held, as Redisson's
 * setPermits: expired permits go back, then the available count moves by the difference
 * between `permits` and available + held, so it is below 0 while more are held than the new
 * total. A semaphore that does not exist is made with `permits` available. *out_available
 * (optional) gets the available count after it. Since 0.3. */
RLOCK_API int rlock_semaphore_set_permits(int64_t *out_available, rlock_semaphore *sem,
                                          int64_t permits);

/* rlock_semaphore_acquire_ex, asynchronously (see "Asynchronous calls"): `done`'s value is the
 * number of permits taken. opts->ids, for an expirable semaphore, must stay valid until `done`
 * runs and is written before it. */
RLOCK_API int rlock_semaphore_acquire_async(rlock_semaphore *sem, const rlock_permit_options *opts,
                                            rlock_completion_cb done, void *user);

/* A count-down latch named by a NUL-terminated string (or `name_len` bytes). Does no I/O. On a
 * Redis Cluster the name must not contain braces (Redisson's channel for it always adds its own,
 * which would put it in another slot). Owned: free with rlock_latch_free. */
RLOCK_API int rlock_latch_new(rlock_latch **out, rlock_client *client, const char *name);
RLOCK_API int rlock_latch_new_n(rlock_latch **out, rlock_client *client, const char *name,
                                size_t name_len);
/* Waits in progress end with RLOCK_ECANCELED. */
RLOCK_API void rlock_latch_free(rlock_latch *latch);
/* Sets the count (1 to 999999999999999) of a latch that does not exist (is open): *out_set is
 * 1 when set, 0 when it existed. */
RLOCK_API int rlock_latch_try_set_count(int *out_set, rlock_latch *latch, int64_t count);
/* Counts down by one; at 0 the latch opens and wakes every waiter. *out_left (optional): the
 * count left. An open latch stays open (0). Never resent: on RLOCK_ECONN it may or may not
 * have counted. With replica sync it waits for the replicas but answers 0 unconfirmed too (it
 * cannot be taken back; docs/semaphores.md). */
RLOCK_API int rlock_latch_count_down(int64_t *out_left, rlock_latch *latch);
/* The count now (0: open). */
RLOCK_API int rlock_latch_count(int64_t *out_count, rlock_latch *latch);
/* Waits until the count is 0: 0, or RLOCK_ETIMEDOUT after wait_ms (RLOCK_WAIT_FOREVER: no
 * bound), RLOCK_ECANCELED by `cancel` (optional) or rlock_latch_cancel. */
RLOCK_API int rlock_latch_await(rlock_latch *latch, int64_t wait_ms, rlock_cancel_token *cancel);
RLOCK_API int rlock_latch_await_async(rlock_latch *latch, int64_t wait_ms,
                                      rlock_cancel_token *cancel, rlock_completion_cb done,
                                      void *user);
/* Deletes the latch (so it is open); *out_deleted: whether it existed. */
RLOCK_API int rlock_latch_delete(int *out_deleted, rlock_latch *latch);
RLOCK_API int rlock_latch_cancel(rlock_latch *latch);

/* ---- Leader election (docs/leader.md) ---------------------------------------------------- */
/* Candidates on one name wait for the name's fenced lock (RLOCK_LOCK_FENCED, so Redisson's
 * RFencedLock and rlock_inspect see it as one) as an asynchronous acquire: a candidate costs no
 * thread. The one that gets it is the leader until it resigns, its client is freed, or its
 * hold is lost; the watchdog renews it (the client's watchdog_lease_ms is the lease: a dead
 * leader is replaced within about that long). Its term is the fencing token of its acquire:
 * it grows with every new leader of the name, in any process or language, so a store that
 * accepts a write only with a term at least the highest it has seen (rlock_fenced_write)
 * refuses an old leader's writes. */
typedef struct rlock_election rlock_election;

/* Why a leadership, or a campaign, ended. 1..3 are the rlock_lost_reason values. */
typedef enum rlock_revoke_reason {
  RLOCK_REVOKED_GONE = 1,        /* the key was deleted, or is held by another owner */
  RLOCK_REVOKED_UNREACHABLE = 2, /* renewals failed until the hold's validity deadline, which
                                    comes before the lease can run out on Redis */
  RLOCK_REVOKED_RESIGNED = 4,    /* rlock_election_resign or rlock_election_free */
  RLOCK_REVOKED_CLOSED = 5,      /* the client was freed (told before it releases the lock) */
  RLOCK_REVOKED_FAILED = 6       /* the campaign met an error that does not pass by itself (a
                                    wrong-type key, an ACL refusal): rlock_last_error() inside
                                    the callback says which. Connection failures do pass: the
                                    campaign waits them out. */
} rlock_revoke_reason;

/* Called when this candidate becomes leader of `term` (> 0). */
typedef void (*rlock_elected_cb)(rlock_election *election, int64_t term, void *payload);
/* Called when the leadership of `term` ends, or a campaign ends without one (term 0: reasons
 * CLOSED or FAILED; a resign while campaigning calls nothing). */
typedef void (*rlock_revoked_cb)(rlock_election *election, int64_t term, rlock_revoke_reason reason,
                                 void *payload);
/* Both run with no library lock held, one at a time and in order (elected, then the revoked of
 * that term): elected on a waiting-engine thread, revoked on a watchdog thread (a loss), on the
 * thread calling rlock_election_resign / rlock_election_free (RESIGNED) or rlock_client_free
 * (CLOSED). They may call any rlock function, rlock_election_resign of their own election
 * included, and must not block for long. A revoked leader must stop acting at once: the
 * callback for a loss runs at the hold's validity deadline at the latest, and another
 * candidate can take over from then on. */

typedef struct rlock_election_options {
  unsigned int version;
  /* After a leadership ends by loss (GONE, UNREACHABLE), campaign again: 1 (the default) or 0
   * (the election then stops; rlock_election_campaign starts it again). */
  int requeue;
} rlock_election_options;

#define RLOCK_ELECTION_OPTIONS_VERSION 1
#define RLOCK_ELECTION_OPTIONS_INIT \
  { RLOCK_ELECTION_OPTIONS_VERSION, 1 }

RLOCK_API int rlock_election_options_init(rlock_election_options *opts, unsigned int version);

/* An election on a name of `name_len` bytes (the lock name: the client's key_prefix applies).
 * Does no I/O. NULL opts = RLOCK_ELECTION_OPTIONS_INIT. Owned: free with rlock_election_free. */
RLOCK_API int rlock_election_new(rlock_election **out, rlock_client *client, const char *name,
                                 size_t name_len, const rlock_election_options *opts);

/* Starts campaigning and returns at once; `elected` and `revoked` (either may be NULL) are
 * called as leaderships come and go. RLOCK_EINVAL while this election campaigns or leads,
 * RLOCK_ECLOSED once the client is freed. */
RLOCK_API int rlock_election_campaign(rlock_election *election, rlock_elected_cb elected,
                                      rlock_revoked_cb revoked, void *payload);

/* Stops campaigning, or leading: a leader's revoked(term, RLOCK_REVOKED_RESIGNED) runs on this
 * thread (or, when its leadership had already lapsed, revoked with that loss's reason), then
 * the lock is released (one round trip) so another candidate takes over at once.
 * Returns the release's status (RLOCK_OK when there was nothing to release, or the hold was
 * already lost). Idempotent. */
RLOCK_API int rlock_election_resign(rlock_election *election);

/* Local view, no I/O: 1 while this election leads and its hold is within its validity deadline
 * (checked against the clock on every call: a process paused past its lease sees 0 as soon as
 * it runs again, before the watchdog has told it), else 0. Never fails (0 for NULL). Check it
 * before each action of a leader, and fence the action with the term. */
RLOCK_API int rlock_election_is_leader(const rlock_election *election);

/* The term of the current leadership, under the same check; RLOCK_ENOTHELD when not leader. */
RLOCK_API int rlock_election_term(int64_t *out, const rlock_election *election);

/* Resigns (as rlock_election_resign, errors ignored), waits for a callback running on another
 * thread to return, and frees. No callback runs after it. NULL is a no-op. */
RLOCK_API void rlock_election_free(rlock_election *election);

/* ---- Deprecated ----------------------------------------------------------------------------- */

#if !defined(RLOCK_DEPRECATE_HARD)
/* The names of 0.1, when `_ex` also meant "explicit thread id". */
RLOCK_DEPRECATED("use rlock_release_for")
RLOCK_API int rlock_release_ex(rlock_lock *lock, int64_t thread_id);
RLOCK_DEPRECATED("use rlock_extend_for (thread_id before lease_ms)")
RLOCK_API int rlock_extend_ex(rlock_lock *lock, int64_t lease_ms, int64_t thread_id);
RLOCK_DEPRECATED("use rlock_is_held_for")
RLOCK_API int rlock_is_held_ex(const rlock_lock *lock, int64_t thread_id);
#endif

/* ---- Helpers ------------------------------------------------------------------------------ */

/* The calling OS thread's id, the default owner thread id. */
RLOCK_API int64_t rlock_current_thread_id(void);

#ifdef __cplusplus
}
#endif

#endif /* RLOCK_H */
