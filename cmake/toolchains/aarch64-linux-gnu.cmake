# Cross-compiling for 64-bit ARM Linux with Debian's g++-aarch64-linux-gnu, as the release root
# does (scripts/build-release.sh). Libraries come from the arm64 multiarch directories.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
# Headers and libraries of arm64 packages (libhiredis-dev:arm64) sit in the host's /usr under
# their multiarch directory; programs always come from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
