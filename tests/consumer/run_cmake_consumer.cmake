# Builds tests/consumer/app against the installed package with find_package(rlock), runs it with
# LD_LIBRARY_PATH at the prefix, and checks it prints the expected version.
#   cmake -DSOURCE= -DWORK= -DPREFIX= -DLIBDIR= -DGENERATOR= -DC_COMPILER= -DVERSION=
#         [-DSANITIZE=address,undefined] -P run_cmake_consumer.cmake
cmake_minimum_required(VERSION 3.16)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK}")
set(flags "")
if(SANITIZE)
  # The installed library is instrumented: the program must bring the sanitizer runtime.
  set(flags "-fsanitize=${SANITIZE}")
endif()
run("${CMAKE_COMMAND}" -S "${SOURCE}" -B "${WORK}" -G "${GENERATOR}"
  "-DCMAKE_C_COMPILER=${C_COMPILER}"
  "-DCMAKE_BUILD_TYPE=Release"
  "-DCMAKE_PREFIX_PATH=${PREFIX}"
  "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"
  "-DCMAKE_C_FLAGS=${flags}"
  "-DCMAKE_EXE_LINKER_FLAGS=${flags}"
  "-DEXPECTED_VERSION=${VERSION}"
  "-DEXPECTED_PREFIX=${PREFIX}")
run("${CMAKE_COMMAND}" --build "${WORK}")

set(ENV{LD_LIBRARY_PATH} "${PREFIX}/${LIBDIR}")
execute_process(COMMAND "${WORK}/app" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "app failed (${rc}): ${out}\n${err}")
endif()
if(NOT out STREQUAL "rlock ${VERSION}")
  message(FATAL_ERROR "app printed '${out}', expected 'rlock ${VERSION}'")
endif()
message(STATUS "find_package consumer printed: ${out}")
