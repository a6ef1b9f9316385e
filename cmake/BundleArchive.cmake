# cmake -DLD=<ld> -DOBJCOPY=<objcopy> -DAR=<ar> -DOUTPUT=<lib.a> -DINPUTS=<list file>
#       -P BundleArchive.cmake
# Makes the static librlock.a of RLOCK_STATIC_BUNDLE. INPUTS lists archives, one a line: the
# first (the C ABI) is taken whole, the others (core, hiredis, OpenSSL) only for the members it
# needs. A partial link (ld -r) joins them into one object, in which every symbol but rlock_*
# is then made local: what --exclude-libs and the version script do for librlock.so. So a
# program may link its own hiredis or OpenSSL besides without a clash.
foreach(var LD OBJCOPY AR OUTPUT INPUTS)
  if(NOT ${var})
    message(FATAL_ERROR "BundleArchive.cmake: -D${var}= is missing")
  endif()
endforeach()
file(STRINGS "${INPUTS}" archives)
list(POP_FRONT archives abi)
foreach(archive IN LISTS abi archives)
  if(NOT EXISTS "${archive}")
    message(FATAL_ERROR "BundleArchive.cmake: no archive '${archive}'")
  endif()
endforeach()

get_filename_component(dir "${OUTPUT}" DIRECTORY)
set(object "${dir}/rlock.o")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "BundleArchive.cmake: `${command}` failed (${rc}): ${err}")
  endif()
endfunction()
file(REMOVE "${object}" "${OUTPUT}.tmp")
# -d gives common symbols (OpenSSL has one) their space now, so they can be made local too.
run("${LD}" -r -d -o "${object}" --whole-archive "${abi}" --no-whole-archive ${archives})
run("${OBJCOPY}" --wildcard "--keep-global-symbol=rlock_*" "${object}")
run("${AR}" rcs "${OUTPUT}.tmp" "${object}")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${object}")
