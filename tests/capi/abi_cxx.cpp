// The public header as a C++ program sees it: compiled as C++11 with -Wall -Wextra -Werror
// -pedantic-errors, macros expanded in C++, functions linked with C linkage (a missing
// extern "C" would fail the link).
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "rlock/rlock.h"

static_assert(RLOCK_OK == 0 && RLOCK_ECLOSED == -20, "status code values are part of the ABI");
static_assert(RLOCK_MAX_DURATION_MS == (int64_t{1} << 53), "duration limit");
static_assert(RLOCK_WAIT_FOREVER == -1 && RLOCK_LEASE_WATCHDOG == -1 && RLOCK_THREAD_CURRENT == 0,
              "special values");
static_assert(std::is_standard_layout<rlock_client_options>::value &&
                  std::is_trivially_copyable<rlock_client_options>::value,
              "options structs are plain C structs");
static_assert(std::is_same<decltype(&rlock_acquire), int (*)(rlock_lock*, int64_t)>::value,
              "rlock_acquire signature");
static_assert(std::is_same<decltype(&rlock_last_error), const rlock_error_info* (*)()>::value,
              "rlock_last_error signature");
static_assert(std::is_same<decltype(&rlock_semaphore_release_if_exists),
                           int (*)(int*, rlock_semaphore*, int64_t)>::value,
              "rlock_semaphore_release_if_exists signature");
static_assert(std::is_same<decltype(&rlock_semaphore_set_permits),
                           int (*)(int64_t*, rlock_semaphore*, int64_t)>::value,
              "rlock_semaphore_set_permits signature");
static_assert(std::is_same<decltype(&rlock_permit_lease_time),
                           int (*)(int64_t*, rlock_semaphore*, const char*)>::value,
              "rlock_permit_lease_time signature");

int main() {
  int failures = 0;
  auto check = [&failures](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "check failed: %s\n", what);
      ++failures;
    }
  };
  rlock_client_options co = RLOCK_CLIENT_OPTIONS_INIT;
  rlock_lock_options lo = RLOCK_LOCK_OPTIONS_INIT;
  rlock_acquire_options ao = RLOCK_ACQUIRE_OPTIONS_INIT;
  rlock_lock_state st = RLOCK_LOCK_STATE_INIT;
  check(co.version == RLOCK_CLIENT_OPTIONS_VERSION && co.url == nullptr, "client options init");
  check(lo.version == RLOCK_LOCK_OPTIONS_VERSION && lo.lease_ms == RLOCK_LEASE_WATCHDOG,
        "lock options init");
  check(ao.version == RLOCK_ACQUIRE_OPTIONS_VERSION && ao.wait_ms == RLOCK_WAIT_FOREVER &&
            ao.cancel == nullptr,
        "acquire options init");
  check(st.version == RLOCK_LOCK_STATE_VERSION && st.owner == nullptr, "lock state init");

  check(std::strcmp(rlock_version_string(), RLOCK_VERSION_STRING) == 0, "version string");
  check(rlock_version_number() == RLOCK_VERSION_NUMBER, "version number");
  check(rlock_strerror(RLOCK_EINVAL) != nullptr && *rlock_strerror(RLOCK_EINVAL) != '\0',
        "strerror");
  check(rlock_lock_options_init(&lo, 0) == RLOCK_EVERSION, "options_init version 0");
  const rlock_error_info* e = rlock_last_error();
  check(e != nullptr && e->code == RLOCK_EVERSION && e->message != nullptr && *e->message != '\0',
        "last error after EVERSION");
  rlock_lock* lock = nullptr;
  check(rlock_lock_new(&lock, nullptr, "x", &lo) == RLOCK_EINVAL && lock == nullptr,
        "lock_new without a client");
  rlock_client_free(nullptr);
  rlock_lock_free(nullptr);
  rlock_cancel_token_free(nullptr);
  if (failures != 0) return 1;
  std::printf("C++ header checks passed (rlock %s)\n", rlock_version_string());
  return 0;
}
