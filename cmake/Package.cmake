# CPack: one Debian package, librlock, with everything cmake/Install.cmake installs (the shared
# library, headers, rlock.pc, the CMake package, the rlock CLI; with RLOCK_STATIC_BUNDLE also
# librlock.a and rlock-static.pc). Made by the release build (scripts/release/deb.sh) with
# `cpack -G DEB` in its build tree; prefix /usr, so libraries go to /usr/lib/<multiarch>.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME librlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "rlock developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION} (C library)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Only cmake/Install.cmake's rules (no COMPONENT, so "Unspecified"): not the Python module's
# (COMPONENT python) of a build that also makes the extension.
set(CPACK_INSTALL_CMAKE_PROJECTS "${CMAKE_BINARY_DIR};${PROJECT_NAME};Unspecified;/")
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_PACKAGE_NAME librlock)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "rlock developers")
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The long description; CPack puts CPACK_PACKAGE_DESCRIPTION_SUMMARY before it as the first line
# and indents the rest as Debian wants.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
"librlock.so with the C API (rlock/rlock.h), the pkg-config files rlock.pc and
rlock-static.pc (for librlock.a, a static archive with hiredis and OpenSSL
inside), the CMake package rlock::rlock and the rlock command-line tool.
hiredis and OpenSSL are linked in: no libhiredis or libssl is needed.")
# The packages the ELF files need (libc6, libstdc++6, libgcc-s1), from dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file, so packages built against librlock get their dependency on it computed too.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# CPack adds ldconfig calls only for /usr/lib itself; the library sits in /usr/lib/<multiarch>,
# so the ld.so cache is refreshed through dpkg's ldconfig trigger, as debhelper does.
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/deb/triggers" "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${CMAKE_CURRENT_BINARY_DIR}/deb/triggers")

# Debian's name for the target architecture: dpkg --print-architecture would give the build
# machine's, wrong for a cross build.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
endif()

include(CPack)
