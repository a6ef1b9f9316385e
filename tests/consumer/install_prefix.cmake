# Installs the build into a fresh prefix and checks the expected files are there.
#   cmake -DBUILD_DIR= -DPREFIX= -DCONFIG= -DLIBDIR= -DINCLUDEDIR= -DSONAME= -P install_prefix.cmake
cmake_minimum_required(VERSION 3.16)
foreach(var BUILD_DIR PREFIX LIBDIR INCLUDEDIR SONAME)
  if(NOT ${var})
    message(FATAL_ERROR "${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE "${PREFIX}")
set(config_args "")
if(CONFIG)
  set(config_args --config "${CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${config_args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}\n${err}")
endif()

set(missing "")
foreach(f
    "${INCLUDEDIR}/rlock/rlock.h"
    "${INCLUDEDIR}/rlock/version.h"
    "${LIBDIR}/${SONAME}"
    "${LIBDIR}/librlock.so"
    "${LIBDIR}/pkgconfig/rlock.pc"
    "${LIBDIR}/cmake/rlock/rlockConfig.cmake"
    "${LIBDIR}/cmake/rlock/rlockConfigVersion.cmake"
    "${LIBDIR}/cmake/rlock/rlockTargets.cmake")
  if(NOT EXISTS "${PREFIX}/${f}")
    list(APPEND missing "${f}")
  endif()
endforeach()
if(missing)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "not installed under ${PREFIX}:\n  ${text}\ninstall log:\n${out}")
endif()
message(STATUS "installed into ${PREFIX}")
