// A build without TLS (RLOCK_TLS=OFF): TLS configurations are refused as unsupported.
#include "rlock/core/error.hpp"
#include "rlock/core/tls.hpp"

namespace rlock::core {

struct TlsSessionSlot {};

bool tls_available() { return false; }

std::shared_ptr<const TlsContext> TlsContext::create(const TlsConfig&, std::shared_ptr<Stats>) {
  throw Error(kUnsupported, "TLS is not supported by this build (RLOCK_TLS=OFF)");
}

TlsContext::~TlsContext() = default;

TlsStream::TlsStream(const TlsContext&, int, const std::string&, const std::string&,
                     std::chrono::steady_clock::time_point, int64_t)
    : ssl_(nullptr), fd_(-1) {
  throw Error(kUnsupported, "TLS is not supported by this build (RLOCK_TLS=OFF)");
}

TlsStream::~TlsStream() = default;

TlsStream::Io TlsStream::read(char*, size_t, size_t*, std::string*) { return Io::kClosed; }
TlsStream::Io TlsStream::write(const char*, size_t, size_t*, std::string*) { return Io::kClosed; }
bool TlsStream::closed_by_peer() { return true; }

}  // namespace rlock::core
