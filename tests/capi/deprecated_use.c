/* Uses a deprecated name: compiling this must warn (test capi_deprecated_warns). Never linked. */
#include "rlock/rlock.h"

int use_deprecated(rlock_lock *lock);

int use_deprecated(rlock_lock *lock) { return rlock_release_ex(lock, 42); }
