/* The one place the rlock version is defined. CMake and the Python build parse these lines. */
#ifndef RLOCK_VERSION_H
#define RLOCK_VERSION_H

#define RLOCK_VERSION_MAJOR 0
#define RLOCK_VERSION_MINOR 3
#define RLOCK_VERSION_PATCH 0

#define RLOCK_VERSION_NUMBER \
  (RLOCK_VERSION_MAJOR * 10000 + RLOCK_VERSION_MINOR * 100 + RLOCK_VERSION_PATCH)

#endif
