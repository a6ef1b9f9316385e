# rlock_link_self_contained(target version_script [NO_UNDEFINED]): links a module that other programs load (the
# Python extension, the JNI library) with the whole C library in it, so it needs nothing of ours
# at run time. The version script exports only the module's entry points, so nothing of ours,
# hiredis's, OpenSSL's or libstdc++'s can clash with another copy in the same process.
# The unwinder stays the process's shared libgcc_s: a forced unwind (pthread_exit, a thread
# ended at interpreter or JVM exit) started there aborts in a second, static copy.
# NO_UNDEFINED: every symbol must resolve at link time (not for a Python extension, which takes
# the interpreter's from the process).
function(rlock_link_self_contained target version_script)
  target_link_libraries(${target} PRIVATE rlock_static)
  target_link_options(${target} PRIVATE
    -static-libstdc++
    "-Wl,--version-script=${version_script}")
  # zig's linker driver (the musl toolchain files) refuses --exclude-libs; the version script
  # alone already keeps the archives' symbols out of the dynamic table.
  if(NOT RLOCK_ZIG_TOOLCHAIN)
    target_link_options(${target} PRIVATE "-Wl,--exclude-libs,ALL")
  endif()
  if("NO_UNDEFINED" IN_LIST ARGN)
    target_link_options(${target} PRIVATE "-Wl,--no-undefined")
  endif()
  set_target_properties(${target} PROPERTIES LINK_DEPENDS "${version_script}")
endfunction()
