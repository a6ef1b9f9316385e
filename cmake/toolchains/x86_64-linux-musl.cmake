# Cross-compiling for x86_64 Linux with musl (musllinux wheels, scripts/release/musl.sh): zig's
# clang, libc++ and musl, through the wrappers x86_64-linux-musl-cc and x86_64-linux-musl-c++
# (`zig cc -target x86_64-linux-musl`) found on PATH. libc++ is linked in statically, so a module
# needs only musl's libc.so at run time.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-linux-musl-cc)
set(CMAKE_CXX_COMPILER x86_64-linux-musl-c++)
set(CMAKE_AR x86_64-linux-musl-ar CACHE FILEPATH "")
set(CMAKE_RANLIB x86_64-linux-musl-ranlib CACHE FILEPATH "")
# zig cc links with its own driver, which takes no --exclude-libs (cmake/SelfContainedModule.cmake).
set(RLOCK_ZIG_TOOLCHAIN ON)
# hiredis and OpenSSL come from the prefixes given with CMAKE_PREFIX_PATH/OPENSSL_ROOT_DIR, never
# from the host's (glibc) directories; programs always come from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
