// The one exception barrier every C entry point goes through: no C++ exception crosses the ABI.
#pragma once

#include <new>

#include "rlock/core/error.hpp"

namespace rlock::capi {

template <class F>
int guarded(F&& body) noexcept {
  try {
    return body();
  } catch (const core::Error& e) {
    core::set_last_error(e.code(), e.message());
    return e.code();
  } catch (const std::bad_alloc&) {
    try {
      core::set_last_error(core::kNoMemory, "out of memory");
    } catch (...) {
    }
    return core::kNoMemory;
  } catch (const std::exception& e) {
    try {
      core::set_last_error(core::kInternal, std::string("internal error: ") + e.what());
    } catch (...) {
    }
    return core::kInternal;
  } catch (...) {
    try {
      core::set_last_error(core::kInternal, "internal error: unknown exception");
    } catch (...) {
    }
    return core::kInternal;
  }
}

}  // namespace rlock::capi
