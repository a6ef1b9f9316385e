/* A program built against the installed rlock: prints the loaded library's version and fails if
 * it differs from the installed header's. */
#include <rlock/rlock.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  const char *loaded = rlock_version_string();
  printf("rlock %s\n", loaded);
  if (strcmp(loaded, RLOCK_VERSION_STRING) != 0 || rlock_version_number() != RLOCK_VERSION_NUMBER) {
    fprintf(stderr, "header says %s (%u), library says %s (%u)\n", RLOCK_VERSION_STRING,
            (unsigned)RLOCK_VERSION_NUMBER, loaded, rlock_version_number());
    return 1;
  }
  return 0;
}
