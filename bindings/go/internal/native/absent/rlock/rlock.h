/* Reached only when internal/native/include is empty: this copy of the module carries no bundled
 * librlock (the repository's main branch has none; the release tags do). */
/* One line, as the compiler's error shows it. */
// clang-format off
#error "no bundled librlock in this copy of the rlock Go module: require a released version (go get github.com/rlock/rlock/bindings/go@latest), or build with -tags rlock_shared against a librlock build (PKG_CONFIG_PATH=<build>/pkgconfig; see docs/go.md)"
// clang-format on
#include <rlock-go-stop-here> /* a fatal error, so the compiler stops at the message above */
