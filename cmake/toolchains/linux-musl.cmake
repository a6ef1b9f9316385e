# Cross-compiling for Linux with musl (musllinux wheels, scripts/release/musl.sh) on the
# architecture RLOCK_MUSL_ARCH (x86_64 or aarch64): zig's clang, libc++ and musl, through the
# wrappers <arch>-linux-musl-cc and <arch>-linux-musl-c++ (`zig cc -target <arch>-linux-musl`)
# found on PATH. libc++ is linked in statically, so a module needs only musl's libc.so at run time.
if(NOT RLOCK_MUSL_ARCH MATCHES "^(x86_64|aarch64)$")
  message(FATAL_ERROR "RLOCK_MUSL_ARCH='${RLOCK_MUSL_ARCH}': give -DRLOCK_MUSL_ARCH=x86_64 or aarch64")
endif()
# try_compile projects read this file again: hand them the architecture.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RLOCK_MUSL_ARCH)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${RLOCK_MUSL_ARCH})
set(CMAKE_C_COMPILER ${RLOCK_MUSL_ARCH}-linux-musl-cc)
set(CMAKE_CXX_COMPILER ${RLOCK_MUSL_ARCH}-linux-musl-c++)
set(CMAKE_AR ${RLOCK_MUSL_ARCH}-linux-musl-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${RLOCK_MUSL_ARCH}-linux-musl-ranlib CACHE FILEPATH "")
# zig cc links with its own driver, which takes no --exclude-libs (cmake/SelfContainedModule.cmake).
set(RLOCK_ZIG_TOOLCHAIN ON)
# hiredis and OpenSSL come from the prefixes given with CMAKE_PREFIX_PATH/OPENSSL_ROOT_DIR, never
# from the host's (glibc) directories; programs always come from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
