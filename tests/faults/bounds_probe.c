/* The bounds probe of the fault suite on the C ABI (tests/faults/test_h_bounds.py): times one
 * call of each kind, each started on a signal from the test, which freezes the server
 * (DEBUG SLEEP) or cuts it off (the fault proxy's blackhole) between the two.
 *
 *   rlock-bounds-probe --url U --prefix P [--cases A,B,...]
 *
 * The client has command_timeout_ms 1000 and watchdog_lease_ms 3000; every acquire takes a
 * 3000 ms lease. Case C works on the lock "P:C". For each case in turn the probe prepares
 * (release, extend and query first acquire their lock while the server answers), prints
 * "READY C", waits for a line "GO", makes the call and prints "RESULT C ELAPSED_MS OUTCOME"
 * (the time around the call only; OUTCOME "ok" or the status name without "RLOCK_", e.g.
 * "ECONN"; an acquire that runs out of time is "ETIMEDOUT"). It then waits for "CLEAN",
 * releases the case's lock if it still holds it and prints "CLEANED C OUTCOME" ("none" when
 * it held nothing), then waits for "NEXT" before it prepares the next case (so a lock taken
 * in preparation does not sit out its lease while the test waits for the last case's keys).
 * After the NEXT of the last case it prints "DONE" and exits 0.
 *
 * Cases: try_once_free (acquire, wait 0), wait_free (wait 500 ms), wait_held (wait 1500 ms on
 * a lock the test holds), release, extend (to 3000 ms), query (rlock_query).
 * The Python, Go and Java probes (py_bounds_probe.py, bindings/go/cmd/rlock-bounds-probe,
 * io.rlock.BoundsProbe) speak the same lines. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, strdup, strtok_r */

#include <rlock/rlock.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COMMAND_TIMEOUT_MS 1000
#define LEASE_MS 3000

static const char *const all_cases = "try_once_free,wait_free,wait_held,release,extend,query";

static double mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* "ok", or the code's name without the "RLOCK_" prefix. */
static const char *outcome(int rc) {
  static const char *const names[] = {
      "ok",        "ERROR",     "ETIMEDOUT", "ENOTHELD",     "ECANCELED",  "ECONN",
      "EINVAL",    "ENOMEM",    "EVERSION",  "EINTERNAL",    "EUSER",      "ELOST",
      "ENOTOWNER", "EAUTH",     "ENOPERM",   "EUNSUPPORTED", "EREDIS",     "EOOM",
      "EBUSY",     "EREADONLY", "ECLOSED",   "EDEADLK",      "EBADHANDLE", "ENOTSYNCED"};
  if (rc <= 0 && -rc < (int)(sizeof names / sizeof names[0])) return names[-rc];
  return "EUNKNOWN";
}

static void die(const char *what, int rc) {
  const rlock_error_info *info = rlock_last_error();
  fprintf(stderr, "bounds probe: %s: %s (%s)\n", what, outcome(rc),
          info != NULL && info->message != NULL ? info->message : "");
  exit(2);
}

static int acquire(rlock_lock *lock, int64_t wait_ms) {
  rlock_acquire_options opts = RLOCK_ACQUIRE_OPTIONS_INIT;
  opts.wait_ms = wait_ms;
  opts.lease_ms = LEASE_MS;
  return rlock_acquire_ex(lock, &opts);
}

/* Waits for the line `word` on stdin; any other line or EOF ends the probe. */
static void expect_line(const char *word) {
  char line[64];
  if (fgets(line, sizeof line, stdin) == NULL) {
    fprintf(stderr, "bounds probe: stdin closed while waiting for %s\n", word);
    exit(2);
  }
  line[strcspn(line, "\r\n")] = '\0';
  if (strcmp(line, word) != 0) {
    fprintf(stderr, "bounds probe: expected %s, got '%s'\n", word, line);
    exit(2);
  }
}

static int is_prepared_by_acquire(const char *name) {
  return strcmp(name, "release") == 0 || strcmp(name, "extend") == 0 || strcmp(name, "query") == 0;
}

/* The timed call of one case. */
static int run_call(const char *name, rlock_lock *lock) {
  if (strcmp(name, "try_once_free") == 0) return acquire(lock, 0);
  if (strcmp(name, "wait_free") == 0) return acquire(lock, 500);
  if (strcmp(name, "wait_held") == 0) return acquire(lock, 1500);
  if (strcmp(name, "release") == 0) return rlock_release(lock);
  if (strcmp(name, "extend") == 0) return rlock_extend(lock, LEASE_MS);
  if (strcmp(name, "query") == 0) {
    rlock_lock_state state = RLOCK_LOCK_STATE_INIT;
    return rlock_query(&state, lock);
  }
  fprintf(stderr, "bounds probe: unknown case '%s'\n", name);
  exit(2);
}

static void run_case(rlock_client *client, const char *prefix, const char *name) {
  char lock_name[512];
  snprintf(lock_name, sizeof lock_name, "%s:%s", prefix, name);
  rlock_lock_options lock_opts = RLOCK_LOCK_OPTIONS_INIT;
  lock_opts.lease_ms = LEASE_MS;
  rlock_lock *lock = NULL;
  int rc = rlock_lock_new(&lock, client, lock_name, &lock_opts);
  if (rc != RLOCK_OK) die("rlock_lock_new", rc);
  if (is_prepared_by_acquire(name)) {
    rc = acquire(lock, 5000);
    if (rc != RLOCK_OK) die("the preparing acquire", rc);
  }
  printf("READY %s\n", name);
  fflush(stdout);
  expect_line("GO");
  double start = mono_ms();
  rc = run_call(name, lock);
  double elapsed = mono_ms() - start;
  printf("RESULT %s %.1f %s\n", name, elapsed, outcome(rc));
  fflush(stdout);
  expect_line("CLEAN");
  const char *cleaned = "none";
  if (rlock_is_held(lock)) cleaned = outcome(rlock_release(lock));
  printf("CLEANED %s %s\n", name, cleaned);
  fflush(stdout);
  rlock_lock_free(lock);
  expect_line("NEXT");
}

int main(int argc, char **argv) {
  const char *url = NULL;
  const char *prefix = NULL;
  const char *cases = all_cases;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--url") == 0)
      url = argv[i + 1];
    else if (strcmp(argv[i], "--prefix") == 0)
      prefix = argv[i + 1];
    else if (strcmp(argv[i], "--cases") == 0)
      cases = argv[i + 1];
  }
  if (url == NULL || prefix == NULL || argc % 2 == 0) {
    fprintf(stderr, "usage: rlock-bounds-probe --url U --prefix P [--cases A,B,...]\n");
    return 2;
  }
  rlock_client_options opts = RLOCK_CLIENT_OPTIONS_INIT;
  opts.url = url;
  opts.command_timeout_ms = COMMAND_TIMEOUT_MS;
  opts.watchdog_lease_ms = LEASE_MS;
  rlock_client *client = NULL;
  int rc = rlock_client_new(&client, &opts);
  if (rc != RLOCK_OK) die("rlock_client_new", rc);
  char *list = strdup(cases);
  if (list == NULL) return 2;
  char *save = NULL;
  for (char *name = strtok_r(list, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save))
    run_case(client, prefix, name);
  free(list);
  rlock_client_free(client);
  printf("DONE\n");
  return 0;
}
