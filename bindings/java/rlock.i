/* The JNI layer of the Java binding: SWIG generates it at build time into the build tree as
 * package-private classes of io.rlock.internal (RlockNative, RlockNativeJNI and the enum
 * constant classes). The hand-written classes of io.rlock.internal own the handles; io.rlock
 * is the public API.
 *
 * Rules kept here:
 * - Only what is named below is wrapped (everything else is ignored first).
 * - A failing call throws its Java exception inside the JNI call, built from rlock_last_error()
 *   read right there (the message is thread-local). Errors.fromCode is the one code table.
 * - Handles cross JNI as plain longs; their lifetime is managed on the Java side.
 * - No Java exception leaves the lost-lock or event trampoline or a completion into C.
 * - An asynchronous call's NativeCompletion is held by one global reference, deleted exactly
 *   once: in its completion, or by the starter when the call did not start.
 */
%module RlockNative

%include "stdint.i"
%include "enumtypeunsafe.swg"
%javaconst(1);

%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) moduleclassmodifiers="final class"
%typemap(javaclassmodifiers) enum SWIGTYPE "final class"
/* The generated classes free nothing: handles are freed by the hand-written owners. */
%typemap(javafinalize) SWIGTYPE ""
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }

  private RlockNativeJNI() {}
%}
%pragma(java) modulecode=%{
  private RlockNative() {}
%}

%{
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RLOCK_DEPRECATE_HARD /* only the current names */
#include "rlock/rlock.h"

static JavaVM *rlockj_vm;
static jclass rlockj_errors;            /* io.rlock.internal.Errors */
static jmethodID rlockj_errors_from_code;
static jclass rlockj_lock_state;       /* io.rlock.internal.LockState */
static jmethodID rlockj_lock_state_new;
static jclass rlockj_completion;       /* io.rlock.internal.NativeCompletion */
static jmethodID rlockj_completion_done;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
  JNIEnv *env = NULL;
  jclass cls;
  (void)reserved;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  cls = (*env)->FindClass(env, "io/rlock/internal/Errors");
  if (cls == NULL) return JNI_ERR;
  rlockj_errors_from_code =
      (*env)->GetStaticMethodID(env, cls, "fromCode", "(I[B)Ljava/lang/RuntimeException;");
  if (rlockj_errors_from_code == NULL) return JNI_ERR;
  rlockj_errors = (jclass)(*env)->NewGlobalRef(env, cls);
  if (rlockj_errors == NULL) return JNI_ERR;
  cls = (*env)->FindClass(env, "io/rlock/internal/LockState");
  if (cls == NULL) return JNI_ERR;
  rlockj_lock_state_new = (*env)->GetMethodID(env, cls, "<init>", "(ZZJJJI)V");
  if (rlockj_lock_state_new == NULL) return JNI_ERR;
  rlockj_lock_state = (jclass)(*env)->NewGlobalRef(env, cls);
  if (rlockj_lock_state == NULL) return JNI_ERR;
  cls = (*env)->FindClass(env, "io/rlock/internal/NativeCompletion");
  if (cls == NULL) return JNI_ERR;
  rlockj_completion_done = (*env)->GetMethodID(env, cls, "done", "(IJ[B)V");
  if (rlockj_completion_done == NULL) return JNI_ERR;
  rlockj_completion = (jclass)(*env)->NewGlobalRef(env, cls);
  if (rlockj_completion == NULL) return JNI_ERR;
  rlockj_vm = vm;
  return JNI_VERSION_1_8;
}

/* This thread's message for status `rc` (its own text if the last error is about rc), as bytes:
 * it may quote a binary lock name, which is not modified UTF-8. NULL when out of memory. */
static jbyteArray rlockj_message(JNIEnv *env, int rc) {
  const rlock_error_info *info = rlock_last_error();
  const char *message =
      (info->code == rc && info->message[0] != '\0') ? info->message : rlock_strerror(rc);
  jsize len = (jsize)strlen(message);
  jbyteArray bytes = (*env)->NewByteArray(env, len);
  if (bytes == NULL) return NULL; /* OutOfMemoryError pending */
  (*env)->SetByteArrayRegion(env, bytes, 0, len, (const jbyte *)message);
  return bytes;
}

/* Throws the exception Errors.fromCode makes of `rc` and `bytes` (a message as UTF-8). */
static void rlockj_throw_bytes(JNIEnv *env, int rc, jbyteArray bytes) {
  jobject error;
  if (bytes == NULL) return;
  error = (*env)->CallStaticObjectMethod(env, rlockj_errors, rlockj_errors_from_code, (jint)rc,
                                         bytes);
  if (error != NULL && !(*env)->ExceptionCheck(env)) (*env)->Throw(env, (jthrowable)error);
}

/* Throws the exception for status `rc`, with this thread's message if it is about rc. */
static void rlockj_throw(JNIEnv *env, int rc) {
  if ((*env)->ExceptionCheck(env)) return;
  rlockj_throw_bytes(env, rc, rlockj_message(env, rc));
}

/* Throws the exception for status `rc` with a message of this layer's own (ASCII). */
static void rlockj_throw_text(JNIEnv *env, int rc, const char *text) {
  jsize len = (jsize)strlen(text);
  jbyteArray bytes;
  if ((*env)->ExceptionCheck(env)) return;
  bytes = (*env)->NewByteArray(env, len);
  if (bytes == NULL) return; /* OutOfMemoryError pending */
  (*env)->SetByteArrayRegion(env, bytes, 0, len, (const jbyte *)text);
  rlockj_throw_bytes(env, rc, bytes);
}

/* ---- constructors: NULL means failed, with the error on this thread ---------------------- */

/* A NUL-terminated copy of `len` bytes in *out (NULL stays NULL: an unset field). The bytes are
 * UTF-8 made by io.rlock.internal.Utf8, not JNI's modified UTF-8; a NUL inside would cut the C
 * string short, so it is refused, naming `what`. 0, or -1 with an exception pending. */
static int rlockj_copy_text(JNIEnv *jenv, const char *bytes, size_t len, const char *what,
                            char **out) {
  char message[128];
  *out = NULL;
  if (bytes == NULL) return 0;
  if (memchr(bytes, '\0', len) != NULL) {
    snprintf(message, sizeof message,
             "%s contains a NUL character; it cannot be passed to the C library", what);
    rlockj_throw_text(jenv, RLOCK_EINVAL, message);
    return -1;
  }
  *out = (char *)malloc(len + 1);
  if (*out == NULL) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"),
                      "rlock: no memory for the client options");
    return -1;
  }
  memcpy(*out, bytes, len);
  (*out)[len] = '\0';
  return 0;
}

/* The client options' strings, as C strings: [0] the URL, then the TLS files and server name,
 * then the key prefix. */
enum { RLOCKJ_URL, RLOCKJ_CA_FILE, RLOCKJ_CA_DIR, RLOCKJ_CERT, RLOCKJ_KEY, RLOCKJ_SNI,
       RLOCKJ_KEY_PREFIX, RLOCKJ_TEXTS };

/* url (required) and the tls_* strings (NULL = unset): UTF-8 bytes with their lengths. The
 * choices are rlock.h's numbers, checked by the C library. */
static rlock_client *rlockj_client_new(
    JNIEnv *jenv, const char *url, size_t url_len, int64_t connect_timeout_ms,
    int64_t command_timeout_ms, int pool_size, int64_t watchdog_lease_ms, int64_t poll_cap_ms,
    int64_t max_name_len, int tls, const char *tls_ca_file, size_t tls_ca_file_len,
    const char *tls_ca_dir, size_t tls_ca_dir_len, const char *tls_cert_file,
    size_t tls_cert_file_len, const char *tls_key_file, size_t tls_key_file_len,
    const char *tls_server_name, size_t tls_server_name_len, int tls_verify,
    int tls_min_version, int sentinel_tls, int stats, const char *key_prefix,
    size_t key_prefix_len) {
  rlock_client_options opts;
  rlock_client *client = NULL;
  char *texts[RLOCKJ_TEXTS] = {NULL};
  int i;
  if (url == NULL) {
    rlockj_throw_text(jenv, RLOCK_EINVAL, "url must not be null");
    return NULL;
  }
  if (rlockj_copy_text(jenv, url, url_len, "url", &texts[RLOCKJ_URL]) == 0 &&
      rlockj_copy_text(jenv, tls_ca_file, tls_ca_file_len, "tls_ca_file",
                       &texts[RLOCKJ_CA_FILE]) == 0 &&
      rlockj_copy_text(jenv, tls_ca_dir, tls_ca_dir_len, "tls_ca_dir", &texts[RLOCKJ_CA_DIR]) ==
          0 &&
      rlockj_copy_text(jenv, tls_cert_file, tls_cert_file_len, "tls_cert_file",
                       &texts[RLOCKJ_CERT]) == 0 &&
      rlockj_copy_text(jenv, tls_key_file, tls_key_file_len, "tls_key_file",
                       &texts[RLOCKJ_KEY]) == 0 &&
      rlockj_copy_text(jenv, tls_server_name, tls_server_name_len, "tls_server_name",
                       &texts[RLOCKJ_SNI]) == 0 &&
      rlockj_copy_text(jenv, key_prefix, key_prefix_len, "key_prefix",
                       &texts[RLOCKJ_KEY_PREFIX]) == 0 &&
      rlock_client_options_init(&opts, RLOCK_CLIENT_OPTIONS_VERSION) == RLOCK_OK) {
    opts.url = texts[RLOCKJ_URL];
    opts.connect_timeout_ms = connect_timeout_ms;
    opts.command_timeout_ms = command_timeout_ms;
    opts.pool_size = pool_size;
    opts.watchdog_lease_ms = watchdog_lease_ms;
    opts.poll_cap_ms = poll_cap_ms;
    opts.max_name_len = (size_t)max_name_len;
    opts.tls = tls;
    opts.tls_ca_file = texts[RLOCKJ_CA_FILE];
    opts.tls_ca_dir = texts[RLOCKJ_CA_DIR];
    opts.tls_cert_file = texts[RLOCKJ_CERT];
    opts.tls_key_file = texts[RLOCKJ_KEY];
    opts.tls_server_name = texts[RLOCKJ_SNI];
    opts.tls_verify = tls_verify;
    opts.tls_min_version = tls_min_version;
    opts.sentinel_tls = sentinel_tls;
    opts.stats = stats;
    opts.key_prefix = texts[RLOCKJ_KEY_PREFIX];
    if (rlock_client_new(&client, &opts) != RLOCK_OK) client = NULL;
  }
  for (i = 0; i < RLOCKJ_TEXTS; ++i) free(texts[i]);
  return client;
}

/* owner_id: a caller-given owner (LockOwner.id), none when empty (Java refuses an empty id). */
static rlock_lock *rlockj_lock_new(rlock_client *client, const char *name, size_t name_len,
                                   int kind, int64_t lease_ms, int64_t spin_initial_ms,
                                   int64_t spin_max_ms, int64_t fair_wait_ms,
                                   const char *owner_id, size_t owner_id_len) {
  rlock_lock_options opts;
  rlock_lock *lock = NULL;
  if (rlock_lock_options_init(&opts, RLOCK_LOCK_OPTIONS_VERSION) != RLOCK_OK) return NULL;
  opts.kind = kind;
  opts.lease_ms = lease_ms;
  opts.spin_initial_ms = spin_initial_ms;
  opts.spin_max_ms = spin_max_ms;
  opts.fair_wait_ms = fair_wait_ms;
  if (owner_id != NULL && owner_id_len > 0) {
    opts.owner_id = owner_id;
    opts.owner_id_len = owner_id_len;
  }
  if (rlock_lock_new_n(&lock, client, name, name_len, &opts) != RLOCK_OK) return NULL;
  return lock;
}

static rlock_cancel_token *rlockj_cancel_token_new(void) {
  rlock_cancel_token *token = NULL;
  if (rlock_cancel_token_new(&token) != RLOCK_OK) return NULL;
  return token;
}

/* members: the lock handles, as Java longs. */
static rlock_multi *rlockj_multi_new(JNIEnv *jenv, jlongArray members, int redlock) {
  jsize count = (*jenv)->GetArrayLength(jenv, members);
  jlong *values = (*jenv)->GetLongArrayElements(jenv, members, NULL);
  rlock_lock **locks;
  rlock_multi *group = NULL;
  jsize i;
  int rc;
  if (values == NULL) return NULL;
  locks = (rlock_lock **)calloc(count > 0 ? (size_t)count : 1, sizeof *locks);
  if (locks == NULL) {
    (*jenv)->ReleaseLongArrayElements(jenv, members, values, JNI_ABORT);
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"),
                      "rlock: no memory for the lock group");
    return NULL;
  }
  for (i = 0; i < count; ++i) locks[i] = (rlock_lock *)(intptr_t)values[i];
  rc = redlock ? rlock_redlock_new(&group, locks, (size_t)count)
               : rlock_multi_lock_new(&group, locks, (size_t)count);
  free(locks);
  (*jenv)->ReleaseLongArrayElements(jenv, members, values, JNI_ABORT);
  return rc == RLOCK_OK ? group : NULL;
}

/* ---- acquire: 0, or RLOCK_ETIMEDOUT / RLOCK_ECANCELED, which are outcomes, not errors ---- */

/* A fenced lock's acquire takes a token by its kind; rlockj_lock_token reads it afterwards. */
static int rlockj_acquire(rlock_lock *lock, int64_t wait_ms, int64_t lease_ms, int64_t thread_id,
                          rlock_cancel_token *cancel) {
  rlock_acquire_options opts;
  int rc = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rc;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  return rlock_acquire_ex(lock, &opts);
}

static int rlockj_multi_acquire(rlock_multi *group, int64_t wait_ms, int64_t lease_ms,
                                int64_t thread_id, rlock_cancel_token *cancel) {
  rlock_acquire_options opts;
  int rc = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rc;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  return rlock_multi_acquire_ex(NULL, group, &opts);
}

/* ---- values: >= 0, or a negative status ------------------------------------------------- */

/* The fencing token of the owner's hold, 0 when it holds none. */
static int64_t rlockj_lock_token(rlock_lock *lock, int64_t thread_id) {
  int64_t token = 0;
  int rc = rlock_lock_token_for(&token, lock, thread_id);
  if (rc == RLOCK_ENOTHELD) return 0;
  return rc == RLOCK_OK ? token : rc;
}

/* 1 when a lock was deleted, else 0. */
static int64_t rlockj_force_unlock(rlock_lock *lock) {
  int deleted = 0;
  int rc = rlock_force_unlock(&deleted, lock);
  return rc == RLOCK_OK ? deleted : rc;
}

/* 1 when written, 0 when refused for a newer token. */
static int64_t rlockj_fenced_write(rlock_client *client, const char *key, size_t key_len,
                                   const char *value, size_t value_len, int64_t token) {
  int accepted = 0;
  int rc = rlock_fenced_write(&accepted, client, key, key_len, value, value_len, token);
  return rc == RLOCK_OK ? accepted : rc;
}

/* ---- status: 0, or a negative status ---------------------------------------------------- */

/* The owner's view of the lock as an io.rlock.internal.LockState, read by field name on the
 * Java side; NULL with the exception pending when it fails. */
static jobject rlockj_query(JNIEnv *jenv, rlock_lock *lock, int64_t thread_id) {
  rlock_lock_state state;
  int rc;
  memset(&state, 0, sizeof state);
  state.version = RLOCK_LOCK_STATE_VERSION;
  rc = rlock_query_for(&state, lock, thread_id);
  if (rc != RLOCK_OK) {
    rlockj_throw(jenv, rc);
    return NULL;
  }
  return (*jenv)->NewObject(jenv, rlockj_lock_state, rlockj_lock_state_new,
                            state.locked == 1 ? JNI_TRUE : JNI_FALSE,
                            state.held_by_me == 1 ? JNI_TRUE : JNI_FALSE, (jlong)state.hold_count,
                            (jlong)state.ttl_ms, (jlong)state.owner_count, (jint)state.mode);
}

/* ---- lost-lock callbacks ----------------------------------------------------------------- */

/* The Java handler (io.rlock.internal.LostHandler) of one lock handle, held by a global
 * reference until the handle is freed. */
typedef struct rlockj_lost_payload {
  jobject handler;
  jmethodID lost;
} rlockj_lost_payload;

static rlockj_lost_payload *rlockj_lost_payload_new(JNIEnv *jenv, jobject handler) {
  rlockj_lost_payload *payload;
  jclass cls = (*jenv)->GetObjectClass(jenv, handler);
  jmethodID lost = (*jenv)->GetMethodID(jenv, cls, "lost", "(JI)V");
  if (lost == NULL) return NULL; /* NoSuchMethodError pending */
  payload = (rlockj_lost_payload *)malloc(sizeof *payload);
  if (payload == NULL) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"),
                      "rlock: no memory for the lost-lock handler");
    return NULL;
  }
  payload->handler = (*jenv)->NewGlobalRef(jenv, handler);
  payload->lost = lost;
  if (payload->handler == NULL) {
    free(payload);
    return NULL;
  }
  return payload;
}

static void rlockj_lost_payload_free(JNIEnv *jenv, rlockj_lost_payload *payload) {
  if (payload == NULL) return;
  (*jenv)->DeleteGlobalRef(jenv, payload->handler);
  free(payload);
}

/* Runs on the client's watchdog thread, which the JVM does not know: it is attached as a
 * daemon (so it never holds up JVM exit) for the call and detached after. */
static void rlockj_lost_trampoline(rlock_lock *lock, const char *name, size_t name_len,
                                   int64_t thread_id, rlock_lost_reason reason, void *raw) {
  rlockj_lost_payload *payload = (rlockj_lost_payload *)raw;
  JavaVM *vm = rlockj_vm;
  JNIEnv *env = NULL;
  int attached = 0;
  (void)lock;
  (void)name;
  (void)name_len;
  if (vm == NULL || payload == NULL) return;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) == JNI_EDETACHED) {
    JavaVMAttachArgs args;
    args.version = JNI_VERSION_1_8;
    args.name = (char *)"rlock-watchdog";
    args.group = NULL;
    if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&env, &args) != JNI_OK) return;
    attached = 1;
  }
  if (env == NULL) return;
  (*env)->CallVoidMethod(env, payload->handler, payload->lost, (jlong)thread_id, (jint)reason);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionDescribe(env); /* LostHandler catches its own; this is a last resort */
    (*env)->ExceptionClear(env);
  }
  if (attached) (*vm)->DetachCurrentThread(vm);
}

static int rlockj_lost_callback_set(rlock_lock *lock, rlockj_lost_payload *payload) {
  return rlock_lock_set_lost_callback(lock, rlockj_lost_trampoline, payload);
}

/* Frees the handle (no network call; waits for a running callback of it), then its payload. */
static void rlockj_lock_free(JNIEnv *jenv, rlock_lock *lock, rlockj_lost_payload *payload) {
  rlock_lock_free(lock);
  rlockj_lost_payload_free(jenv, payload);
}

/* ---- leader elections ---------------------------------------------------------------------- */

/* The Java handler (io.rlock.internal.ElectionHandler) of one election, held by a global
 * reference until the election is freed. */
typedef struct rlockj_election_payload {
  jobject handler;
  jmethodID elected;
  jmethodID revoked;
} rlockj_election_payload;

static rlockj_election_payload *rlockj_election_payload_new(JNIEnv *jenv, jobject handler) {
  rlockj_election_payload *payload;
  jclass cls = (*jenv)->GetObjectClass(jenv, handler);
  jmethodID elected = (*jenv)->GetMethodID(jenv, cls, "elected", "(J)V");
  jmethodID revoked = elected == NULL ? NULL
                                      : (*jenv)->GetMethodID(jenv, cls, "revoked", "(JII[B)V");
  if (revoked == NULL) return NULL; /* NoSuchMethodError pending */
  payload = (rlockj_election_payload *)malloc(sizeof *payload);
  if (payload == NULL) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"),
                      "rlock: no memory for the election handler");
    return NULL;
  }
  payload->handler = (*jenv)->NewGlobalRef(jenv, handler);
  payload->elected = elected;
  payload->revoked = revoked;
  if (payload->handler == NULL) {
    free(payload);
    return NULL;
  }
  return payload;
}

/* The JNIEnv of a library thread (engine, watchdog) or of a Java thread calling resign or
 * closing the client. *attached is set when the thread was attached here (as a daemon) and
 * must be detached after the call. */
static JNIEnv *rlockj_callback_env(int *attached) {
  JavaVM *vm = rlockj_vm;
  JNIEnv *env = NULL;
  *attached = 0;
  if (vm == NULL) return NULL;
  if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) == JNI_EDETACHED) {
    JavaVMAttachArgs args;
    args.version = JNI_VERSION_1_8;
    args.name = (char *)"rlock-election";
    args.group = NULL;
    if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&env, &args) != JNI_OK) return NULL;
    *attached = 1;
  }
  return env;
}

static void rlockj_callback_done(JNIEnv *env, int attached) {
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionDescribe(env); /* the handler catches its own; this is a last resort */
    (*env)->ExceptionClear(env);
  }
  if (attached) (*rlockj_vm)->DetachCurrentThread(rlockj_vm);
}

static void rlockj_elected_trampoline(rlock_election *election, int64_t term, void *raw) {
  rlockj_election_payload *payload = (rlockj_election_payload *)raw;
  int attached = 0;
  JNIEnv *env = rlockj_callback_env(&attached);
  (void)election;
  if (env == NULL || payload == NULL) return;
  (*env)->CallVoidMethod(env, payload->handler, payload->elected, (jlong)term);
  rlockj_callback_done(env, attached);
}

static void rlockj_revoked_trampoline(rlock_election *election, int64_t term,
                                      rlock_revoke_reason reason, void *raw) {
  rlockj_election_payload *payload = (rlockj_election_payload *)raw;
  /* Read before any JNI call: the error that ended a failed campaign. */
  const rlock_error_info *info = rlock_last_error();
  const int code = reason == RLOCK_REVOKED_FAILED ? (int)info->code : 0;
  const char *text = reason == RLOCK_REVOKED_FAILED ? info->message : "";
  char message[1024]; /* longer messages are cut */
  size_t len = strlen(text);
  int attached = 0;
  JNIEnv *env;
  jbyteArray bytes;
  (void)election;
  if (len >= sizeof message) len = sizeof message - 1;
  memcpy(message, text, len);
  env = rlockj_callback_env(&attached);
  if (env == NULL || payload == NULL) return;
  bytes = (*env)->NewByteArray(env, (jsize)len);
  if (bytes != NULL) {
    (*env)->SetByteArrayRegion(env, bytes, 0, (jsize)len, (const jbyte *)message);
    (*env)->CallVoidMethod(env, payload->handler, payload->revoked, (jlong)term, (jint)reason,
                           (jint)code, bytes);
    (*env)->DeleteLocalRef(env, bytes);
  }
  rlockj_callback_done(env, attached);
}

static rlock_election *rlockj_election_new(rlock_client *client, const char *name,
                                           size_t name_len, int requeue) {
  rlock_election_options opts = RLOCK_ELECTION_OPTIONS_INIT;
  rlock_election *election = NULL;
  opts.requeue = requeue;
  if (rlock_election_new(&election, client, name, name_len, &opts) != RLOCK_OK) return NULL;
  return election;
}

static int rlockj_election_campaign(rlock_election *election, rlockj_election_payload *payload) {
  return rlock_election_campaign(election, rlockj_elected_trampoline, rlockj_revoked_trampoline,
                                 payload);
}

/* The term of the current leadership, 0 when not the leader. */
static int64_t rlockj_election_term(rlock_election *election) {
  int64_t term = 0;
  return rlock_election_term(&term, election) == RLOCK_OK ? term : 0;
}

/* Frees the election (resigns; waits for a running callback), then its payload. */
static void rlockj_election_free(JNIEnv *jenv, rlock_election *election,
                                 rlockj_election_payload *payload) {
  rlock_election_free(election);
  if (payload != NULL) {
    (*jenv)->DeleteGlobalRef(jenv, payload->handler);
    free(payload);
  }
}

/* ---- asynchronous calls ------------------------------------------------------------------- */

/* A library thread is attached to the JVM as a daemon at its first completion and stays
 * attached (attaching costs a Thread object each time); the key's destructor detaches it when
 * the thread ends, so threads that come and go leak nothing. */
static pthread_key_t rlockj_attached_key;
static pthread_once_t rlockj_attached_once = PTHREAD_ONCE_INIT;
static int rlockj_attached_key_ok;

static void rlockj_detach_at_exit(void *unused) {
  JavaVM *vm = rlockj_vm;
  (void)unused;
  if (vm != NULL) (*vm)->DetachCurrentThread(vm);
}

static void rlockj_attached_key_make(void) {
  rlockj_attached_key_ok = pthread_key_create(&rlockj_attached_key, rlockj_detach_at_exit) == 0;
}

/* This thread's JNIEnv, attaching it as `name` if needed; NULL when the JVM cannot take it. */
static JNIEnv *rlockj_library_env(const char *name) {
  JavaVM *vm = rlockj_vm;
  JNIEnv *env = NULL;
  JavaVMAttachArgs args;
  jint rc;
  if (vm == NULL) return NULL;
  rc = (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8);
  if (rc == JNI_OK) return env;
  if (rc != JNI_EDETACHED) return NULL;
  pthread_once(&rlockj_attached_once, rlockj_attached_key_make);
  if (!rlockj_attached_key_ok) return NULL;
  args.version = JNI_VERSION_1_8;
  args.name = (char *)name;
  args.group = NULL;
  if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&env, &args) != JNI_OK) return NULL;
  pthread_setspecific(rlockj_attached_key, vm); /* non-NULL: the destructor runs */
  return env;
}

/* The completion of every asynchronous call: `user` is a global reference to its
 * io.rlock.internal.NativeCompletion, deleted here (the C library calls this exactly once; a
 * call that did not start never gets here and its starter deletes the reference). A frame
 * bounds the local references, since this thread may never return to Java. */
static void rlockj_complete(void *user, int status, int64_t value) {
  jobject completion = (jobject)user;
  JNIEnv *env = rlockj_library_env("rlock-completion");
  jbyteArray message = NULL;
  if (env == NULL) return; /* the JVM is going away: nobody is left to tell */
  if ((*env)->PushLocalFrame(env, 4) == JNI_OK) {
    if (status < 0) message = rlockj_message(env, status);
    (*env)->ExceptionClear(env); /* no memory for the message: completed without it */
    (*env)->CallVoidMethod(env, completion, rlockj_completion_done, (jint)status, (jlong)value,
                           message);
    (*env)->PopLocalFrame(env, NULL);
  } else {
    /* No room for a frame: completed anyway (the future and the handle wait for it). */
    (*env)->ExceptionClear(env);
    (*env)->CallVoidMethod(env, completion, rlockj_completion_done, (jint)status, (jlong)value,
                           NULL);
  }
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionDescribe(env); /* NativeCompletion catches its own; a last resort */
    (*env)->ExceptionClear(env);
  }
  (*env)->DeleteGlobalRef(env, completion);
}

/* For a release nobody waits for (a grant that raced a cancel). */
static void rlockj_ignore(void *user, int status, int64_t value) {
  (void)user;
  (void)status;
  (void)value;
}

/* A global reference to `completion` for `user`; NULL with an exception pending. */
static jobject rlockj_completion_ref(JNIEnv *jenv, jobject completion) {
  jobject ref;
  if (completion == NULL) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/NullPointerException"),
                      "completion");
    return NULL;
  }
  ref = (*jenv)->NewGlobalRef(jenv, completion);
  if (ref == NULL && !(*jenv)->ExceptionCheck(jenv)) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"),
                      "rlock: no global reference for the completion");
  }
  return ref;
}

/* The starters return 0 when started (`completion` is then called exactly once) or a negative
 * status, which throws; with a Java exception pending they return 0 and start nothing. */
static int rlockj_acquire_async(JNIEnv *jenv, rlock_lock *lock, int64_t wait_ms, int64_t lease_ms,
                                int64_t thread_id, rlock_cancel_token *cancel,
                                jobject completion) {
  rlock_acquire_options opts;
  jobject ref;
  int rc = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rc;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  ref = rlockj_completion_ref(jenv, completion);
  if (ref == NULL) return RLOCK_OK;
  rc = rlock_acquire_async(lock, &opts, rlockj_complete, ref);
  if (rc < 0) (*jenv)->DeleteGlobalRef(jenv, ref);
  return rc;
}

static int rlockj_multi_acquire_async(JNIEnv *jenv, rlock_multi *group, int64_t wait_ms,
                                      int64_t lease_ms, int64_t thread_id,
                                      rlock_cancel_token *cancel, jobject completion) {
  rlock_acquire_options opts;
  jobject ref;
  int rc = rlock_acquire_options_init(&opts, RLOCK_ACQUIRE_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rc;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.thread_id = thread_id;
  opts.cancel = cancel;
  ref = rlockj_completion_ref(jenv, completion);
  if (ref == NULL) return RLOCK_OK;
  rc = rlock_multi_acquire_async(group, &opts, rlockj_complete, ref);
  if (rc < 0) (*jenv)->DeleteGlobalRef(jenv, ref);
  return rc;
}

static int rlockj_release_async(JNIEnv *jenv, rlock_lock *lock, int64_t thread_id,
                                jobject completion) {
  int rc;
  jobject ref = rlockj_completion_ref(jenv, completion);
  if (ref == NULL) return RLOCK_OK;
  rc = rlock_release_async(lock, thread_id, rlockj_complete, ref);
  if (rc < 0) (*jenv)->DeleteGlobalRef(jenv, ref);
  return rc;
}

static int rlockj_extend_async(JNIEnv *jenv, rlock_lock *lock, int64_t thread_id,
                               int64_t lease_ms, jobject completion) {
  int rc;
  jobject ref = rlockj_completion_ref(jenv, completion);
  if (ref == NULL) return RLOCK_OK;
  rc = rlock_extend_async(lock, thread_id, lease_ms, rlockj_complete, ref);
  if (rc < 0) (*jenv)->DeleteGlobalRef(jenv, ref);
  return rc;
}

static int rlockj_multi_release_async(JNIEnv *jenv, rlock_multi *group, int64_t thread_id,
                                      jobject completion) {
  int rc;
  jobject ref = rlockj_completion_ref(jenv, completion);
  if (ref == NULL) return RLOCK_OK;
  rc = rlock_multi_release_async(group, thread_id, rlockj_complete, ref);
  if (rc < 0) (*jenv)->DeleteGlobalRef(jenv, ref);
  return rc;
}

/* Gives back a grant nobody will receive, without waiting; the status is not reported (if
 * the release fails, the hold ends by its lease). */
static void rlockj_release_quietly(rlock_lock *lock, int64_t thread_id) {
  (void)rlock_release_async(lock, thread_id, rlockj_ignore, NULL);
}

static void rlockj_multi_release_quietly(rlock_multi *group, int64_t thread_id) {
  (void)rlock_multi_release_async(group, thread_id, rlockj_ignore, NULL);
}

/* ---- semaphores and count-down latches ---------------------------------------------------- */

static rlock_semaphore *rlockj_semaphore_new(rlock_client *client, const char *name,
                                             size_t name_len, int kind, int64_t lease_ms) {
  rlock_semaphore_options opts;
  rlock_semaphore *sem = NULL;
  if (rlock_semaphore_options_init(&opts, RLOCK_SEMAPHORE_OPTIONS_VERSION) != RLOCK_OK) return NULL;
  opts.kind = (rlock_semaphore_kind)kind;
  opts.lease_ms = lease_ms;
  if (rlock_semaphore_new_n(&sem, client, name, name_len, &opts) != RLOCK_OK) return NULL;
  return sem;
}

static rlock_latch *rlockj_latch_new(rlock_client *client, const char *name, size_t name_len) {
  rlock_latch *latch = NULL;
  if (rlock_latch_new_n(&latch, client, name, name_len) != RLOCK_OK) return NULL;
  return latch;
}

/* Counts may be negative (add_permits, drain): these return the value and throw on failure
 * themselves, so no value is mistaken for a status. */
static int64_t rlockj_semaphore_add_permits(JNIEnv *jenv, rlock_semaphore *sem, int64_t delta) {
  int64_t available = 0;
  int rc = rlock_semaphore_add_permits(&available, sem, delta);
  if (rc != RLOCK_OK) rlockj_throw(jenv, rc);
  return available;
}

static int64_t rlockj_semaphore_drain(JNIEnv *jenv, rlock_semaphore *sem) {
  int64_t drained = 0;
  int rc = rlock_semaphore_drain(&drained, sem);
  if (rc != RLOCK_OK) rlockj_throw(jenv, rc);
  return drained;
}

/* Expirable: sets the total of permits; the available count after it (may be < 0), or an
 * exception. */
static int64_t rlockj_semaphore_set_permits(JNIEnv *jenv, rlock_semaphore *sem, int64_t permits) {
  int64_t available = 0;
  int rc = rlock_semaphore_set_permits(&available, sem, permits);
  if (rc != RLOCK_OK) rlockj_throw(jenv, rc);
  return available;
}

/* Plain: 1 when the permits were given back, 0 when the semaphore did not exist. */
static int64_t rlockj_semaphore_release_if_exists(rlock_semaphore *sem, int64_t permits) {
  int released = 0;
  int rc = rlock_semaphore_release_if_exists(&released, sem, permits);
  return rc == RLOCK_OK ? released : rc;
}

/* 1 when set, 0 when the semaphore existed. */
static int64_t rlockj_semaphore_try_set_permits(rlock_semaphore *sem, int64_t permits,
                                                int64_t ttl_ms) {
  int set = 0;
  int rc = rlock_semaphore_try_set_permits(&set, sem, permits, ttl_ms);
  return rc == RLOCK_OK ? set : rc;
}

/* {available (may be < 0), expirable permits held, 1 when the semaphore exists}; NULL with the
 * exception pending. */
static jlongArray rlockj_semaphore_available(JNIEnv *jenv, rlock_semaphore *sem) {
  int64_t available = 0, held = 0;
  int exists = 0;
  jlong values[3];
  jlongArray out;
  int rc = rlock_semaphore_available(&available, &held, &exists, sem);
  if (rc != RLOCK_OK) {
    rlockj_throw(jenv, rc);
    return NULL;
  }
  values[0] = (jlong)available;
  values[1] = (jlong)held;
  values[2] = exists;
  out = (*jenv)->NewLongArray(jenv, 3);
  if (out != NULL) (*jenv)->SetLongArrayRegion(jenv, out, 0, 3, values);
  return out;
}

static int64_t rlockj_semaphore_held(rlock_semaphore *sem) {
  int64_t held = 0;
  int rc = rlock_semaphore_held(&held, sem);
  return rc == RLOCK_OK ? held : rc;
}

/* 1 when it existed, else 0. */
static int64_t rlockj_semaphore_delete(rlock_semaphore *sem) {
  int deleted = 0;
  int rc = rlock_semaphore_delete(&deleted, sem);
  return rc == RLOCK_OK ? deleted : rc;
}

/* One id of `bytes` (UTF-8 from the Java side) as a C string in `out`; throws EINVAL for one
 * that cannot be a permit id at all (the C library checks the hex). 0, or -1 with an exception
 * pending. */
static int rlockj_permit_id_copy(JNIEnv *jenv, jbyteArray bytes, rlock_permit_id *out) {
  jsize len;
  char message[96];
  if (bytes == NULL) {
    rlockj_throw_text(jenv, RLOCK_EINVAL, "a permit id must not be null");
    return -1;
  }
  len = (*jenv)->GetArrayLength(jenv, bytes);
  if (len != RLOCK_PERMIT_ID_SIZE - 1) {
    snprintf(message, sizeof message,
             "a permit id is %d hex digits, got one of %d characters", RLOCK_PERMIT_ID_SIZE - 1,
             (int)len);
    rlockj_throw_text(jenv, RLOCK_EINVAL, message);
    return -1;
  }
  (*jenv)->GetByteArrayRegion(jenv, bytes, 0, len, (jbyte *)out->hex);
  out->hex[len] = '\0';
  return (*jenv)->ExceptionCheck(jenv) ? -1 : 0;
}

/* Gives back permits by id (byte[] each), all or none. */
static int rlockj_permit_release(JNIEnv *jenv, rlock_semaphore *sem, jobjectArray ids) {
  jsize count, i;
  rlock_permit_id *list;
  int rc = RLOCK_OK;
  if (ids == NULL) {
    rlockj_throw_text(jenv, RLOCK_EINVAL, "the permit ids must not be null");
    return RLOCK_OK;
  }
  count = (*jenv)->GetArrayLength(jenv, ids);
  list = (rlock_permit_id *)calloc(count > 0 ? (size_t)count : 1, sizeof *list);
  if (list == NULL) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"),
                      "rlock: no memory for the permit ids");
    return RLOCK_OK;
  }
  for (i = 0; i < count; ++i) {
    jbyteArray id = (jbyteArray)(*jenv)->GetObjectArrayElement(jenv, ids, i);
    int bad = rlockj_permit_id_copy(jenv, id, &list[i]);
    if (id != NULL) (*jenv)->DeleteLocalRef(jenv, id);
    if (bad) {
      free(list);
      return RLOCK_OK; /* the exception is pending */
    }
  }
  rc = rlock_permit_release_n(sem, list, (size_t)count);
  free(list);
  return rc;
}

static int rlockj_permit_update_lease(JNIEnv *jenv, rlock_semaphore *sem, jbyteArray id,
                                      int64_t lease_ms) {
  rlock_permit_id copy;
  if (rlockj_permit_id_copy(jenv, id, &copy) != 0) return RLOCK_OK; /* exception pending */
  return rlock_permit_update_lease(sem, copy.hex, lease_ms);
}

/* Expirable: the ms left on a held permit's lease, -1 for one without lease (Redisson's value),
 * or an exception (RLOCK_ENOTHELD when it is not held). */
static int64_t rlockj_permit_lease_time(JNIEnv *jenv, rlock_semaphore *sem, jbyteArray id) {
  rlock_permit_id copy;
  int64_t left = 0;
  int rc;
  if (rlockj_permit_id_copy(jenv, id, &copy) != 0) return 0; /* exception pending */
  rc = rlock_permit_lease_time(&left, sem, copy.hex);
  if (rc != RLOCK_OK) {
    rlockj_throw(jenv, rc);
    return 0;
  }
  return left == RLOCK_LEASE_NONE ? -1 : left;
}

/* An asynchronous semaphore acquire: the completion's global reference and, for an expirable
 * semaphore, the place the C library writes the ids to before calling rlockj_permit_complete. */
typedef struct rlockj_permit_call {
  jobject completion;
  size_t count;
  rlock_permit_id ids[1]; /* `count` of them (at least one) */
} rlockj_permit_call;

/* As rlockj_complete; a granted expirable acquire passes its ids, concatenated (32 hex digits
 * each), where a failure passes its message. */
static void rlockj_permit_complete(void *user, int status, int64_t value) {
  rlockj_permit_call *call = (rlockj_permit_call *)user;
  JNIEnv *env = rlockj_library_env("rlock-completion");
  jbyteArray bytes = NULL;
  size_t i, width = RLOCK_PERMIT_ID_SIZE - 1;
  if (env == NULL) return; /* the JVM is going away: nobody is left to tell */
  if ((*env)->PushLocalFrame(env, 4) == JNI_OK) {
    if (status < 0) {
      bytes = rlockj_message(env, status);
    } else if (call->count > 0) {
      bytes = (*env)->NewByteArray(env, (jsize)(call->count * width));
      for (i = 0; bytes != NULL && i < call->count; ++i) {
        (*env)->SetByteArrayRegion(env, bytes, (jsize)(i * width), (jsize)width,
                                   (const jbyte *)call->ids[i].hex);
      }
    }
    (*env)->ExceptionClear(env); /* no memory for the bytes: the Java side sees null */
    (*env)->CallVoidMethod(env, call->completion, rlockj_completion_done, (jint)status,
                           (jlong)value, bytes);
    (*env)->PopLocalFrame(env, NULL);
  } else {
    (*env)->ExceptionClear(env);
    (*env)->CallVoidMethod(env, call->completion, rlockj_completion_done, (jint)status,
                           (jlong)value, NULL);
  }
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionDescribe(env); /* NativeCompletion catches its own; a last resort */
    (*env)->ExceptionClear(env);
  }
  (*env)->DeleteGlobalRef(env, call->completion);
  free(call);
}

/* expirable: 1 for a permit-expirable semaphore, whose ids the completion gets. */
static int rlockj_semaphore_acquire_async(JNIEnv *jenv, rlock_semaphore *sem, int64_t permits,
                                          int64_t wait_ms, int64_t lease_ms, int expirable,
                                          rlock_cancel_token *cancel, jobject completion) {
  rlock_permit_options opts;
  rlockj_permit_call *call;
  size_t count = 0;
  int rc = rlock_permit_options_init(&opts, RLOCK_PERMIT_OPTIONS_VERSION);
  if (rc != RLOCK_OK) return rc;
  if (expirable && permits >= 1 && permits <= RLOCK_MAX_PERMITS_PER_CALL) count = (size_t)permits;
  call = (rlockj_permit_call *)calloc(
      1, sizeof *call + (count > 1 ? count - 1 : 0) * sizeof(rlock_permit_id));
  if (call == NULL) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"),
                      "rlock: no memory for the acquire");
    return RLOCK_OK;
  }
  call->count = count;
  call->completion = rlockj_completion_ref(jenv, completion);
  if (call->completion == NULL) {
    free(call);
    return RLOCK_OK;
  }
  opts.permits = permits;
  opts.wait_ms = wait_ms;
  opts.lease_ms = lease_ms;
  opts.cancel = cancel;
  /* A bad count reaches the C library, which names it; ids then only need to be non-NULL. */
  opts.ids = expirable ? call->ids : NULL;
  rc = rlock_semaphore_acquire_async(sem, &opts, rlockj_permit_complete, call);
  if (rc < 0) {
    (*jenv)->DeleteGlobalRef(jenv, call->completion);
    free(call);
  }
  return rc;
}

static int64_t rlockj_latch_try_set_count(rlock_latch *latch, int64_t count) {
  int set = 0;
  int rc = rlock_latch_try_set_count(&set, latch, count);
  return rc == RLOCK_OK ? set : rc;
}

static int64_t rlockj_latch_count_down(rlock_latch *latch) {
  int64_t left = 0;
  int rc = rlock_latch_count_down(&left, latch);
  return rc == RLOCK_OK ? left : rc;
}

static int64_t rlockj_latch_count(rlock_latch *latch) {
  int64_t count = 0;
  int rc = rlock_latch_count(&count, latch);
  return rc == RLOCK_OK ? count : rc;
}

static int64_t rlockj_latch_delete(rlock_latch *latch) {
  int deleted = 0;
  int rc = rlock_latch_delete(&deleted, latch);
  return rc == RLOCK_OK ? deleted : rc;
}

static int rlockj_latch_await_async(JNIEnv *jenv, rlock_latch *latch, int64_t wait_ms,
                                    rlock_cancel_token *cancel, jobject completion) {
  int rc;
  jobject ref = rlockj_completion_ref(jenv, completion);
  if (ref == NULL) return RLOCK_OK;
  rc = rlock_latch_await_async(latch, wait_ms, cancel, rlockj_complete, ref);
  if (rc < 0) (*jenv)->DeleteGlobalRef(jenv, ref);
  return rc;
}

/* ---- statistics --------------------------------------------------------------------------- */

/* rlock_stats flattened into longs, in the order io.rlock.internal.NativeStats reads them:
 * enabled, the counters, failures by code (RLOCK_STATS_CODES), the rest of the counters, the
 * gauges, then each histogram as count, sum_us and its RLOCK_HISTOGRAM_BUCKETS buckets, then
 * the elections' figures (version 2): won, revoked, revoked by reason
 * (RLOCK_STATS_REVOKE_REASONS) and the leaders gauge, then (version 3) the TLS handshakes and
 * sessions resumed. One array keeps it to a single JNI call
 * with no field lookups. NULL with the exception pending. */
#define RLOCKJ_STATS_HEAD 22
#define RLOCKJ_STATS_LEN                                                                  \
  (RLOCKJ_STATS_HEAD + RLOCK_STATS_CODES + 4 * (2 + RLOCK_HISTOGRAM_BUCKETS) + 3 + \
   RLOCK_STATS_REVOKE_REASONS + 2)

static jlong *rlockj_put_histogram(jlong *at, const rlock_histogram *h) {
  int i;
  *at++ = (jlong)h->count;
  *at++ = (jlong)h->sum_us;
  for (i = 0; i < RLOCK_HISTOGRAM_BUCKETS; ++i) *at++ = (jlong)h->buckets[i];
  return at;
}

static jlongArray rlockj_client_stats(JNIEnv *jenv, rlock_client *client) {
  rlock_stats s;
  jlong values[RLOCKJ_STATS_LEN];
  jlong *at = values;
  jlongArray out;
  int rc, i;
  memset(&s, 0, sizeof s);
  s.version = RLOCK_STATS_VERSION;
  rc = rlock_client_stats(&s, client);
  if (rc != RLOCK_OK) {
    rlockj_throw(jenv, rc);
    return NULL;
  }
  *at++ = s.enabled;
  *at++ = (jlong)s.acquires_granted;
  *at++ = (jlong)s.acquires_timed_out;
  *at++ = (jlong)s.acquires_canceled;
  *at++ = (jlong)s.acquires_failed;
  *at++ = (jlong)s.releases;
  *at++ = (jlong)s.releases_failed;
  *at++ = (jlong)s.locks_lost_gone;
  *at++ = (jlong)s.locks_lost_unreachable;
  *at++ = (jlong)s.locks_lost_expired;
  *at++ = (jlong)s.renewals_sent;
  *at++ = (jlong)s.renewals_failed;
  *at++ = (jlong)s.reconnects;
  *at++ = (jlong)s.failovers;
  *at++ = (jlong)s.cluster_redirects;
  *at++ = (jlong)s.scripts_sent;
  *at++ = (jlong)s.events_dropped;
  *at++ = (jlong)s.holds;
  *at++ = (jlong)s.waiters;
  *at++ = RLOCK_STATS_CODES;
  *at++ = RLOCK_HISTOGRAM_BUCKETS;
  *at++ = RLOCK_STATS_REVOKE_REASONS;
  for (i = 0; i < RLOCK_STATS_CODES; ++i) *at++ = (jlong)s.acquires_failed_by_code[i];
  at = rlockj_put_histogram(at, &s.acquire_wait);
  at = rlockj_put_histogram(at, &s.hold);
  at = rlockj_put_histogram(at, &s.handoff);
  at = rlockj_put_histogram(at, &s.command_rtt);
  *at++ = (jlong)s.elections_won;
  *at++ = (jlong)s.leaderships_revoked;
  for (i = 0; i < RLOCK_STATS_REVOKE_REASONS; ++i) {
    *at++ = (jlong)s.leaderships_revoked_by_reason[i];
  }
  *at++ = (jlong)s.leaders;
  *at++ = (jlong)s.tls_handshakes;
  *at++ = (jlong)s.tls_sessions_resumed;
  out = (*jenv)->NewLongArray(jenv, RLOCKJ_STATS_LEN);
  if (out == NULL) return NULL; /* OutOfMemoryError pending */
  (*jenv)->SetLongArrayRegion(jenv, out, 0, RLOCKJ_STATS_LEN, values);
  return out;
}

/* rlock_histogram_bounds_us() as a new array. */
static jlongArray rlockj_histogram_bounds_us(JNIEnv *jenv) {
  jlongArray out = (*jenv)->NewLongArray(jenv, RLOCK_HISTOGRAM_BOUNDS);
  if (out == NULL) return NULL;
  (*jenv)->SetLongArrayRegion(jenv, out, 0, RLOCK_HISTOGRAM_BOUNDS,
                              (const jlong *)rlock_histogram_bounds_us());
  return out;
}

/* ---- events ------------------------------------------------------------------------------- */

/* The Java handler (io.rlock.internal.NativeEventHandler) of a client's events, held by a
 * global reference until the callback is replaced and has returned, or the client is freed. */
typedef struct rlockj_event_payload {
  jobject handler;
  jmethodID event;
} rlockj_event_payload;

static rlockj_event_payload *rlockj_event_payload_new(JNIEnv *jenv, jobject handler) {
  rlockj_event_payload *payload;
  jclass cls;
  jmethodID event;
  if (handler == NULL) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/NullPointerException"),
                      "handler");
    return NULL;
  }
  cls = (*jenv)->GetObjectClass(jenv, handler);
  event = (*jenv)->GetMethodID(jenv, cls, "event", "(IJ[B[BJJJI[B)V");
  if (event == NULL) return NULL; /* NoSuchMethodError pending */
  payload = (rlockj_event_payload *)malloc(sizeof *payload);
  if (payload == NULL) {
    (*jenv)->ThrowNew(jenv, (*jenv)->FindClass(jenv, "java/lang/OutOfMemoryError"),
                      "rlock: no memory for the event handler");
    return NULL;
  }
  payload->handler = (*jenv)->NewGlobalRef(jenv, handler);
  payload->event = event;
  if (payload->handler == NULL) {
    free(payload);
    return NULL;
  }
  return payload;
}

static void rlockj_event_payload_free(JNIEnv *jenv, rlockj_event_payload *payload) {
  if (payload == NULL) return;
  (*jenv)->DeleteGlobalRef(jenv, payload->handler);
  free(payload);
}

/* A byte[] of `len` bytes, NULL when len is 0 (or with OutOfMemoryError pending). */
static jbyteArray rlockj_bytes(JNIEnv *env, const char *bytes, size_t len) {
  jbyteArray out;
  if (bytes == NULL || len == 0 || len > 0x7fffffff) return NULL;
  out = (*env)->NewByteArray(env, (jsize)len);
  if (out != NULL) (*env)->SetByteArrayRegion(env, out, 0, (jsize)len, (const jbyte *)bytes);
  return out;
}

/* Who holds `name` (io.rlock.RedisLock#getHolder): NULL when it is free, else {owner, host,
 * command} as byte[] (host and command NULL when unknown) and a long[] {known, pid, started_ms,
 * since_ms}; NULL with an exception pending when it fails. */
static jobjectArray rlockj_lock_holder(JNIEnv *jenv, rlock_client *client, const char *name,
                                       size_t name_len) {
  rlock_lock_info *info = NULL;
  jobjectArray out = NULL;
  jlongArray numbers;
  jlong values[4] = {0, 0, -1, -1};
  int rc = rlock_inspect(&info, client, name, name_len);
  if (rc != RLOCK_OK) {
    rlockj_throw(jenv, rc);
    return NULL;
  }
  if (info->locked && info->owners_len > 0) {
    const rlock_holder_info *h =
        info->version >= 3 && info->holders_len > 0 && info->holders[0].known ? &info->holders[0]
                                                                              : NULL;
    out = (*jenv)->NewObjectArray(jenv, 4, (*jenv)->FindClass(jenv, "java/lang/Object"), NULL);
    if (out != NULL) {
      (*jenv)->SetObjectArrayElement(
          jenv, out, 0, rlockj_bytes(jenv, info->owners[0].owner, info->owners[0].owner_len));
      if (h != NULL) {
        (*jenv)->SetObjectArrayElement(jenv, out, 1, rlockj_bytes(jenv, h->host, strlen(h->host)));
        (*jenv)->SetObjectArrayElement(jenv, out, 2,
                                       rlockj_bytes(jenv, h->command, strlen(h->command)));
        values[0] = 1;
        values[1] = (jlong)h->pid;
        values[2] = (jlong)h->started_ms;
        values[3] = (jlong)h->since_ms;
      }
      numbers = (*jenv)->NewLongArray(jenv, 4);
      if (numbers != NULL) {
        (*jenv)->SetLongArrayRegion(jenv, numbers, 0, 4, values);
        (*jenv)->SetObjectArrayElement(jenv, out, 3, numbers);
      }
    }
  }
  rlock_lock_info_free(info);
  return out;
}

/* Runs on the client's event thread, attached to the JVM as a daemon at its first event and
 * detached when the thread ends (as completions are). A frame bounds the local references:
 * the thread never returns to Java. */
static void rlockj_event_trampoline(const rlock_event *event, void *raw) {
  rlockj_event_payload *payload = (rlockj_event_payload *)raw;
  JNIEnv *env = rlockj_library_env("rlock-events");
  jbyteArray name, owner, detail;
  if (env == NULL || payload == NULL) return;
  if ((*env)->PushLocalFrame(env, 8) != JNI_OK) {
    (*env)->ExceptionClear(env); /* no memory: this event is not delivered */
    return;
  }
  name = rlockj_bytes(env, event->name, event->name_len);
  owner = rlockj_bytes(env, event->owner, event->owner_len);
  detail = rlockj_bytes(env, event->detail, event->detail_len);
  if (!(*env)->ExceptionCheck(env)) {
    (*env)->CallVoidMethod(env, payload->handler, payload->event, (jint)event->kind,
                           (jlong)event->unix_time_us, name, owner, (jlong)event->thread_id,
                           (jlong)event->duration_us, (jlong)event->token, (jint)event->reason,
                           detail);
  }
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionDescribe(env); /* the handler catches its own; a last resort */
    (*env)->ExceptionClear(env);
  }
  (*env)->PopLocalFrame(env, NULL);
}

/* Sets the client's event callback to `payload`'s handler (NULL: clears it). Once this returns,
 * a call of the previous handler has returned, so the caller may free its payload. */
static int rlockj_event_callback_set(rlock_client *client, rlockj_event_payload *payload) {
  return rlock_client_set_event_callback(client, payload != NULL ? rlockj_event_trampoline : NULL,
                                         payload);
}

/* Frees the client (its event thread delivers what is queued, then stops), then the payload. */
static void rlockj_client_free(JNIEnv *jenv, rlock_client *client,
                               rlockj_event_payload *payload) {
  rlock_client_free(client);
  rlockj_event_payload_free(jenv, payload);
}
%}

/* ---- typemaps ----------------------------------------------------------------------------- */

/* Opaque handles are Java longs. */
%define RLOCKJ_HANDLE(TYPE)
%typemap(jni) TYPE *, const TYPE * "jlong"
%typemap(jtype) TYPE *, const TYPE * "long"
%typemap(jstype) TYPE *, const TYPE * "long"
%typemap(in) TYPE *, const TYPE * %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) TYPE *, const TYPE * %{ $result = (jlong)(intptr_t)$1; %}
%typemap(javain) TYPE *, const TYPE * "$javainput"
%typemap(javaout) TYPE *, const TYPE * { return $jnicall; }
%enddef
RLOCKJ_HANDLE(rlock_client)
RLOCKJ_HANDLE(rlock_lock)
RLOCKJ_HANDLE(rlock_multi)
RLOCKJ_HANDLE(rlock_cancel_token)
RLOCKJ_HANDLE(rlock_semaphore)
RLOCKJ_HANDLE(rlock_latch)
RLOCKJ_HANDLE(rlockj_lost_payload)
RLOCKJ_HANDLE(rlockj_event_payload)
RLOCKJ_HANDLE(rlock_election)
RLOCKJ_HANDLE(rlockj_election_payload)

%typemap(in, numinputs=0) JNIEnv *jenv "$1 = jenv;"

/* Constructors: NULL throws. The out typemaps never return early, so argout/freearg still
 * release what the in typemaps took. */
%typemap(out) SWIGTYPE *RLOCKJ_NEW %{
  if ($1 == NULL) {
    rlockj_throw(jenv, rlock_last_error()->code);
  }
  $result = (jlong)(intptr_t)$1;
%}
%apply SWIGTYPE *RLOCKJ_NEW {
  rlock_client *rlockj_client_new, rlock_lock *rlockj_lock_new,
  rlock_cancel_token *rlockj_cancel_token_new, rlock_multi *rlockj_multi_new,
  rlockj_lost_payload *rlockj_lost_payload_new, rlockj_event_payload *rlockj_event_payload_new,
  rlock_semaphore *rlockj_semaphore_new, rlock_latch *rlockj_latch_new,
  rlock_election *rlockj_election_new, rlockj_election_payload *rlockj_election_payload_new
};

/* Status: void in Java, a negative status throws. */
%typemap(out) int RLOCKJ_STATUS %{
  if ($1 < 0) rlockj_throw(jenv, $1);
  $result = (jint)$1;
%}
%typemap(jstype) int RLOCKJ_STATUS "void"
%typemap(javaout) int RLOCKJ_STATUS { $jnicall; }
%apply int RLOCKJ_STATUS {
  int rlock_release_for, int rlock_extend_for, int rlock_extend_by_for, int rlock_cancel,
  int rlock_multi_release_for,
  int rlock_multi_cancel, int rlock_cancel_token_cancel, int rlockj_lost_callback_set,
  int rlockj_acquire_async, int rlockj_multi_acquire_async, int rlockj_release_async,
  int rlockj_extend_async, int rlockj_multi_release_async, int rlockj_event_callback_set,
  int rlock_semaphore_release, int rlock_semaphore_cancel, int rlock_latch_cancel,
  int rlockj_permit_release, int rlockj_permit_update_lease, int rlockj_semaphore_acquire_async,
  int rlockj_latch_await_async, int rlock_client_watch_key_events, int rlockj_election_campaign,
  int rlock_election_resign
};

/* Acquire: 0, RLOCK_ETIMEDOUT or RLOCK_ECANCELED are returned; any other failure throws. */
%typemap(out) int RLOCKJ_ACQUIRE %{
  if ($1 < 0 && $1 != RLOCK_ETIMEDOUT && $1 != RLOCK_ECANCELED) rlockj_throw(jenv, $1);
  $result = (jint)$1;
%}
%apply int RLOCKJ_ACQUIRE { int rlockj_acquire, int rlockj_multi_acquire };

/* Lock state: an io.rlock.internal.LockState (the C side throws on failure). */
%typemap(jni) jobject RLOCKJ_STATE "jobject"
%typemap(jtype) jobject RLOCKJ_STATE "LockState"
%typemap(jstype) jobject RLOCKJ_STATE "LockState"
%typemap(out) jobject RLOCKJ_STATE %{ $result = $1; %}
%typemap(javaout) jobject RLOCKJ_STATE { return $jnicall; }
%apply jobject RLOCKJ_STATE { jobject rlockj_query };

/* Arrays of longs made on the C side (NULL only with an exception pending). */
%typemap(jni) jlongArray RLOCKJ_LONGS "jlongArray"
%typemap(jtype) jlongArray RLOCKJ_LONGS "long[]"
%typemap(jstype) jlongArray RLOCKJ_LONGS "long[]"
%typemap(out) jlongArray RLOCKJ_LONGS %{ $result = $1; %}
%typemap(javaout) jlongArray RLOCKJ_LONGS { return $jnicall; }
/* Arrays of objects made on the C side (NULL for "none", or with an exception pending). */
%typemap(jni) jobjectArray RLOCKJ_OBJECTS "jobjectArray"
%typemap(jtype) jobjectArray RLOCKJ_OBJECTS "Object[]"
%typemap(jstype) jobjectArray RLOCKJ_OBJECTS "Object[]"
%typemap(out) jobjectArray RLOCKJ_OBJECTS %{ $result = $1; %}
%typemap(javaout) jobjectArray RLOCKJ_OBJECTS { return $jnicall; }
%apply jobjectArray RLOCKJ_OBJECTS { jobjectArray rlockj_lock_holder };

%apply jlongArray RLOCKJ_LONGS {
  jlongArray rlockj_client_stats, jlongArray rlockj_histogram_bounds_us,
  jlongArray rlockj_semaphore_available
};

/* Values: >= 0 is returned, negative throws. */
%typemap(out) int64_t RLOCKJ_VALUE %{
  if ($1 < 0) rlockj_throw(jenv, (int)$1);
  $result = (jlong)$1;
%}
%apply int64_t RLOCKJ_VALUE {
  int64_t rlockj_lock_token, int64_t rlockj_force_unlock, int64_t rlockj_fenced_write,
  int64_t rlockj_semaphore_try_set_permits, int64_t rlockj_semaphore_held,
  int64_t rlockj_semaphore_release_if_exists,
  int64_t rlockj_semaphore_delete, int64_t rlockj_latch_try_set_count,
  int64_t rlockj_latch_count_down, int64_t rlockj_latch_count, int64_t rlockj_latch_delete
};

/* Local views: 1/0 as boolean. */
%typemap(jni) int RLOCKJ_BOOL "jboolean"
%typemap(jtype) int RLOCKJ_BOOL "boolean"
%typemap(jstype) int RLOCKJ_BOOL "boolean"
%typemap(out) int RLOCKJ_BOOL %{ $result = ($1 == 1) ? JNI_TRUE : JNI_FALSE; %}
%typemap(javaout) int RLOCKJ_BOOL { return $jnicall; }
%apply int RLOCKJ_BOOL {
  int rlock_is_held_for, int rlock_multi_is_held_for, int rlock_election_is_leader
};

/* URLs, names, keys and values are byte arrays (UTF-8 made on the Java side by Utf8): no
 * String crosses JNI, whose GetStringUTFChars would give modified UTF-8. */
%apply (const char *STRING, size_t LENGTH) {
  (const char *url, size_t url_len), (const char *name, size_t name_len),
  (const char *key, size_t key_len), (const char *value, size_t value_len),
  (const char *tls_ca_file, size_t tls_ca_file_len), (const char *tls_ca_dir, size_t tls_ca_dir_len),
  (const char *tls_cert_file, size_t tls_cert_file_len),
  (const char *tls_key_file, size_t tls_key_file_len),
  (const char *tls_server_name, size_t tls_server_name_len),
  (const char *owner_id, size_t owner_id_len), (const char *key_prefix, size_t key_prefix_len)
};

/* Permit ids: byte arrays (UTF-8 made on the Java side), copied by the C layer. */
%typemap(jni) jbyteArray RLOCKJ_ID "jbyteArray"
%typemap(jtype) jbyteArray RLOCKJ_ID "byte[]"
%typemap(jstype) jbyteArray RLOCKJ_ID "byte[]"
%typemap(in) jbyteArray RLOCKJ_ID %{ $1 = $input; %}
%typemap(javain) jbyteArray RLOCKJ_ID "$javainput"
%apply jbyteArray RLOCKJ_ID { jbyteArray id };
%typemap(jni) jobjectArray RLOCKJ_IDS "jobjectArray"
%typemap(jtype) jobjectArray RLOCKJ_IDS "byte[][]"
%typemap(jstype) jobjectArray RLOCKJ_IDS "byte[][]"
%typemap(in) jobjectArray RLOCKJ_IDS %{ $1 = $input; %}
%typemap(javain) jobjectArray RLOCKJ_IDS "$javainput"
%apply jobjectArray RLOCKJ_IDS { jobjectArray ids };

/* ---- the allowlist ------------------------------------------------------------------------- */

%rename("$ignore") "";

/* Status codes, lock kinds and lost reasons: classes of int constants, without the prefix. */
%rename(ErrorCode) rlock_error_code;
%rename(LockKind) rlock_lock_kind;
%rename(LostReason) rlock_lost_reason;
%rename(TlsVerify) rlock_tls_verify;
%rename(TlsVersion) rlock_tls_version;
%rename(SentinelTls) rlock_sentinel_tls;
%rename(StatsMode) rlock_stats_mode;
%rename(EventKind) rlock_event_kind;
%rename(RevokeReason) rlock_revoke_reason;
%rename("%(strip:[RLOCK_])s", %$isenumitem) "";

%rename(versionString) rlock_version_string;
%rename(clientId) rlock_client_id;
%rename(releaseFor) rlock_release_for;
%rename(clientWatchKeyEvents) rlock_client_watch_key_events;
%rename(extendFor) rlock_extend_for;
%rename(extendByFor) rlock_extend_by_for;
%rename(cancel) rlock_cancel;
%rename(isHeldFor) rlock_is_held_for;
%rename(cancelTokenCancel) rlock_cancel_token_cancel;
%rename(cancelTokenFree) rlock_cancel_token_free;
%rename(multiFree) rlock_multi_free;
%rename(multiReleaseFor) rlock_multi_release_for;
%rename(multiIsHeldFor) rlock_multi_is_held_for;
%rename(multiCancel) rlock_multi_cancel;

%rename(clientNew) rlockj_client_new;
%rename(lockNew) rlockj_lock_new;
%rename(lockFree) rlockj_lock_free;
%rename(cancelTokenNew) rlockj_cancel_token_new;
%rename(multiNew) rlockj_multi_new;
%rename(acquire) rlockj_acquire;
%rename(multiAcquire) rlockj_multi_acquire;
%rename(lockToken) rlockj_lock_token;
%rename(forceUnlock) rlockj_force_unlock;
%rename(fencedWrite) rlockj_fenced_write;
%rename(query) rlockj_query;
%rename(lockHolder) rlockj_lock_holder;
%rename(lostPayloadNew) rlockj_lost_payload_new;
%rename(lostCallbackSet) rlockj_lost_callback_set;
%rename(acquireAsync) rlockj_acquire_async;
%rename(multiAcquireAsync) rlockj_multi_acquire_async;
%rename(releaseAsync) rlockj_release_async;
%rename(extendAsync) rlockj_extend_async;
%rename(multiReleaseAsync) rlockj_multi_release_async;
%rename(releaseQuietly) rlockj_release_quietly;
%rename(multiReleaseQuietly) rlockj_multi_release_quietly;
%rename(clientFree) rlockj_client_free;
%rename(clientStats) rlockj_client_stats;
%rename(histogramBoundsUs) rlockj_histogram_bounds_us;
%rename(eventPayloadNew) rlockj_event_payload_new;
%rename(eventPayloadFree) rlockj_event_payload_free;
%rename(eventCallbackSet) rlockj_event_callback_set;
%rename(SemaphoreKind) rlock_semaphore_kind;
%rename(semaphoreNew) rlockj_semaphore_new;
%rename(semaphoreFree) rlock_semaphore_free;
%rename(semaphoreTrySetPermits) rlockj_semaphore_try_set_permits;
%rename(semaphoreAddPermits) rlockj_semaphore_add_permits;
%rename(semaphoreAcquireAsync) rlockj_semaphore_acquire_async;
%rename(semaphoreRelease) rlock_semaphore_release;
%rename(semaphoreReleaseIfExists) rlockj_semaphore_release_if_exists;
%rename(semaphoreSetPermits) rlockj_semaphore_set_permits;
%rename(permitLeaseTime) rlockj_permit_lease_time;
%rename(semaphoreAvailable) rlockj_semaphore_available;
%rename(semaphoreDrain) rlockj_semaphore_drain;
%rename(semaphoreDelete) rlockj_semaphore_delete;
%rename(semaphoreCancel) rlock_semaphore_cancel;
%rename(semaphoreHeld) rlockj_semaphore_held;
%rename(permitRelease) rlockj_permit_release;
%rename(permitUpdateLease) rlockj_permit_update_lease;
%rename(latchNew) rlockj_latch_new;
%rename(latchFree) rlock_latch_free;
%rename(latchTrySetCount) rlockj_latch_try_set_count;
%rename(latchCountDown) rlockj_latch_count_down;
%rename(latchCount) rlockj_latch_count;
%rename(latchAwaitAsync) rlockj_latch_await_async;
%rename(latchDelete) rlockj_latch_delete;
%rename(latchCancel) rlock_latch_cancel;
%rename(electionNew) rlockj_election_new;
%rename(electionPayloadNew) rlockj_election_payload_new;
%rename(electionCampaign) rlockj_election_campaign;
%rename(electionResign) rlock_election_resign;
%rename(electionIsLeader) rlock_election_is_leader;
%rename(electionTerm) rlockj_election_term;
%rename(electionFree) rlockj_election_free;

/* As the archive it links (rlock_static) is built: no visibility attributes. */
#define RLOCK_STATIC
/* Only the current names are wrapped. */
#define RLOCK_DEPRECATE_HARD
%include "rlock/rlock.h"

typedef struct rlockj_lost_payload rlockj_lost_payload;
typedef struct rlockj_event_payload rlockj_event_payload;
typedef struct rlockj_election_payload rlockj_election_payload;

rlock_client *rlockj_client_new(JNIEnv *jenv, const char *url, size_t url_len,
                                int64_t connect_timeout_ms, int64_t command_timeout_ms,
                                int pool_size, int64_t watchdog_lease_ms, int64_t poll_cap_ms,
                                int64_t max_name_len, int tls, const char *tls_ca_file,
                                size_t tls_ca_file_len, const char *tls_ca_dir,
                                size_t tls_ca_dir_len, const char *tls_cert_file,
                                size_t tls_cert_file_len, const char *tls_key_file,
                                size_t tls_key_file_len, const char *tls_server_name,
                                size_t tls_server_name_len, int tls_verify, int tls_min_version,
                                int sentinel_tls, int stats, const char *key_prefix,
                                size_t key_prefix_len);
rlock_lock *rlockj_lock_new(rlock_client *client, const char *name, size_t name_len, int kind,
                            int64_t lease_ms, int64_t spin_initial_ms, int64_t spin_max_ms,
                            int64_t fair_wait_ms, const char *owner_id, size_t owner_id_len);
void rlockj_lock_free(JNIEnv *jenv, rlock_lock *lock, rlockj_lost_payload *payload);
rlock_cancel_token *rlockj_cancel_token_new(void);
rlock_multi *rlockj_multi_new(JNIEnv *jenv, jlongArray members, int redlock);
int rlockj_acquire(rlock_lock *lock, int64_t wait_ms, int64_t lease_ms, int64_t thread_id,
                   rlock_cancel_token *cancel);
int rlockj_multi_acquire(rlock_multi *group, int64_t wait_ms, int64_t lease_ms,
                         int64_t thread_id, rlock_cancel_token *cancel);
int64_t rlockj_lock_token(rlock_lock *lock, int64_t thread_id);
int64_t rlockj_force_unlock(rlock_lock *lock);
int64_t rlockj_fenced_write(rlock_client *client, const char *key, size_t key_len,
                            const char *value, size_t value_len, int64_t token);
jobject rlockj_query(JNIEnv *jenv, rlock_lock *lock, int64_t thread_id);
jobjectArray rlockj_lock_holder(JNIEnv *jenv, rlock_client *client, const char *name,
                                size_t name_len);
rlockj_lost_payload *rlockj_lost_payload_new(JNIEnv *jenv, jobject handler);
int rlockj_lost_callback_set(rlock_lock *lock, rlockj_lost_payload *payload);
int rlockj_acquire_async(JNIEnv *jenv, rlock_lock *lock, int64_t wait_ms, int64_t lease_ms,
                         int64_t thread_id, rlock_cancel_token *cancel, jobject completion);
int rlockj_multi_acquire_async(JNIEnv *jenv, rlock_multi *group, int64_t wait_ms,
                               int64_t lease_ms, int64_t thread_id, rlock_cancel_token *cancel,
                               jobject completion);
int rlockj_release_async(JNIEnv *jenv, rlock_lock *lock, int64_t thread_id, jobject completion);
int rlockj_extend_async(JNIEnv *jenv, rlock_lock *lock, int64_t thread_id, int64_t lease_ms,
                        jobject completion);
int rlockj_multi_release_async(JNIEnv *jenv, rlock_multi *group, int64_t thread_id,
                               jobject completion);
void rlockj_release_quietly(rlock_lock *lock, int64_t thread_id);
void rlockj_multi_release_quietly(rlock_multi *group, int64_t thread_id);
jlongArray rlockj_client_stats(JNIEnv *jenv, rlock_client *client);
jlongArray rlockj_histogram_bounds_us(JNIEnv *jenv);
rlockj_event_payload *rlockj_event_payload_new(JNIEnv *jenv, jobject handler);
void rlockj_event_payload_free(JNIEnv *jenv, rlockj_event_payload *payload);
int rlockj_event_callback_set(rlock_client *client, rlockj_event_payload *payload);
void rlockj_client_free(JNIEnv *jenv, rlock_client *client, rlockj_event_payload *payload);
rlock_semaphore *rlockj_semaphore_new(rlock_client *client, const char *name, size_t name_len,
                                      int kind, int64_t lease_ms);
int64_t rlockj_semaphore_try_set_permits(rlock_semaphore *sem, int64_t permits, int64_t ttl_ms);
int64_t rlockj_semaphore_add_permits(JNIEnv *jenv, rlock_semaphore *sem, int64_t delta);
int64_t rlockj_semaphore_set_permits(JNIEnv *jenv, rlock_semaphore *sem, int64_t permits);
int64_t rlockj_semaphore_release_if_exists(rlock_semaphore *sem, int64_t permits);
int rlockj_semaphore_acquire_async(JNIEnv *jenv, rlock_semaphore *sem, int64_t permits,
                                   int64_t wait_ms, int64_t lease_ms, int expirable,
                                   rlock_cancel_token *cancel, jobject completion);
jlongArray rlockj_semaphore_available(JNIEnv *jenv, rlock_semaphore *sem);
int64_t rlockj_semaphore_drain(JNIEnv *jenv, rlock_semaphore *sem);
int64_t rlockj_semaphore_delete(rlock_semaphore *sem);
int64_t rlockj_semaphore_held(rlock_semaphore *sem);
int rlockj_permit_release(JNIEnv *jenv, rlock_semaphore *sem, jobjectArray ids);
int rlockj_permit_update_lease(JNIEnv *jenv, rlock_semaphore *sem, jbyteArray id,
                               int64_t lease_ms);
int64_t rlockj_permit_lease_time(JNIEnv *jenv, rlock_semaphore *sem, jbyteArray id);
rlock_latch *rlockj_latch_new(rlock_client *client, const char *name, size_t name_len);
int64_t rlockj_latch_try_set_count(rlock_latch *latch, int64_t count);
int64_t rlockj_latch_count_down(rlock_latch *latch);
int64_t rlockj_latch_count(rlock_latch *latch);
int rlockj_latch_await_async(JNIEnv *jenv, rlock_latch *latch, int64_t wait_ms,
                             rlock_cancel_token *cancel, jobject completion);
int64_t rlockj_latch_delete(rlock_latch *latch);
rlock_election *rlockj_election_new(rlock_client *client, const char *name, size_t name_len,
                                    int requeue);
rlockj_election_payload *rlockj_election_payload_new(JNIEnv *jenv, jobject handler);
int rlockj_election_campaign(rlock_election *election, rlockj_election_payload *payload);
int64_t rlockj_election_term(rlock_election *election);
void rlockj_election_free(JNIEnv *jenv, rlock_election *election,
                          rlockj_election_payload *payload);
