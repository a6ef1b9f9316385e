/* On the include path only where the module bundles no librlock.a (see link_unsupported.go). */
/* One line, as the compiler's error shows it. */
// clang-format off
#error "the rlock Go module bundles librlock only for linux/amd64 and linux/arm64: on this platform build with -tags rlock_shared (librlock.so through pkg-config rlock) or -tags rlock_static (librlock.a through pkg-config rlock-static) against an installed librlock (see docs/go.md)"
// clang-format on
#include <rlock-go-stop-here> /* a fatal error, so the compiler stops at the message above */
