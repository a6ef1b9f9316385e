/* A C program as a user of the librlock package writes it, built against the installed package
 * (scripts/release/deb.sh, verify_deb): through pkg-config and through find_package(rlock).
 *   consumer URL NAME
 * takes the lock NAME, checks that a second client cannot, releases it, checks that the second
 * client now can, and prints the library's version. Exit 0 on success. */
#include <rlock/rlock.h>
#include <stdio.h>
#include <stdlib.h>

static void fail(const char *what, int rc) {
  fprintf(stderr, "consumer: %s: %s (%s)\n", what, rlock_strerror(rc), rlock_last_error()->message);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: consumer URL NAME\n");
    return 2;
  }
  rlock_client *a = NULL, *b = NULL;
  rlock_lock *la = NULL, *lb = NULL;
  int rc;
  if ((rc = rlock_client_new_url(&a, argv[1])) != RLOCK_OK) fail("connect", rc);
  if ((rc = rlock_client_new_url(&b, argv[1])) != RLOCK_OK) fail("connect (second client)", rc);
  if ((rc = rlock_lock_new(&la, a, argv[2], NULL)) != RLOCK_OK) fail("lock handle", rc);
  if ((rc = rlock_lock_new(&lb, b, argv[2], NULL)) != RLOCK_OK) fail("lock handle", rc);

  if ((rc = rlock_acquire(la, 0)) != RLOCK_OK) fail("acquire", rc);
  if (!rlock_is_held(la)) fail("acquired but not held", RLOCK_OK);
  rc = rlock_acquire(lb, 0);
  if (rc != RLOCK_ETIMEDOUT) {
    fprintf(stderr, "consumer: a second client took a held lock (%s)\n", rlock_strerror(rc));
    return 1;
  }
  if ((rc = rlock_release(la)) != RLOCK_OK) fail("release", rc);
  if ((rc = rlock_acquire(lb, 0)) != RLOCK_OK) fail("acquire after the release", rc);
  if ((rc = rlock_release(lb)) != RLOCK_OK) fail("release (second client)", rc);

  rlock_lock_free(la);
  rlock_lock_free(lb);
  rlock_client_free(a);
  rlock_client_free(b);
  printf("ok: took and released %s with librlock %s\n", argv[2], rlock_version_string());
  return 0;
}
