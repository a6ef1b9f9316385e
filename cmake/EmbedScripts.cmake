# Compiles Lua scripts into the library: generates one C++ source holding each script's text and
# its SHA1 (what EVALSHA needs), computed at configure time from the text as sent (includes
# expanded). Editing a .lua file re-runs configure.
function(rlock_embed_scripts out_cpp)
  set(body "// Generated from core/scripts/*.lua by cmake/EmbedScripts.cmake. Do not edit.\n")
  string(APPEND body "#include \"rlock/core/scripts.hpp\"\n\nnamespace rlock::core::scripts {\n")
  foreach(script IN LISTS ARGN)
    get_filename_component(name "${script}" NAME_WE)
    get_filename_component(dir "${script}" DIRECTORY)
    file(READ "${script}" text)
    # "-- @include NAME" lines are replaced by include/NAME: Redis scripts cannot call each
    # other, so a piece shared by several scripts is pasted in here, defined once.
    string(REGEX MATCHALL "-- @include [A-Za-z0-9_.]+" includes "${text}")
    foreach(directive IN LISTS includes)
      string(REPLACE "-- @include " "" include_name "${directive}")
      set(include_file "${dir}/include/${include_name}")
      if(NOT EXISTS "${include_file}")
        message(FATAL_ERROR "${script}: ${directive}: no such file ${include_file}")
      endif()
      file(READ "${include_file}" included)
      string(REPLACE "${directive}\n" "${included}" text "${text}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${include_file}")
    endforeach()
    string(SHA1 sha "${text}")
    string(FIND "${text}" ")rlock_lua\"" clash)
    if(NOT clash EQUAL -1)
      message(FATAL_ERROR "${script} contains the raw-string delimiter")
    endif()
    # A script that publishes wake-ups has a twin for sharded pub/sub (Redis Cluster 7+), the
    # same but for SPUBLISH: wake-ups must go the way the waiters listen.
    set(twin "nullptr")
    string(FIND "${text}" "redis.call('publish'" publishes)
    if(NOT publishes EQUAL -1)
      string(REPLACE "redis.call('publish'" "redis.call('spublish'" sharded_text "${text}")
      string(SHA1 sharded_sha "${sharded_text}")
      string(APPEND body "const Script ${name}_sharded{\"${name}_sharded\", R\"rlock_lua(${sharded_text})rlock_lua\", \"${sharded_sha}\", nullptr};\n")
      set(twin "&${name}_sharded")
    endif()
    string(APPEND body "const Script ${name}{\"${name}\", R\"rlock_lua(${text})rlock_lua\", \"${sha}\", ${twin}};\n")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${script}")
  endforeach()
  string(APPEND body "}  // namespace rlock::core::scripts\n")
  # Written through a copy that happens only when the text changed, so an unchanged source keeps
  # its time stamp and is not recompiled (file(CONFIGURE) would do that, but refuses "<" before
  # CMake 3.20, and would expand @...@ in the scripts).
  file(WRITE "${out_cpp}.new" "${body}")
  configure_file("${out_cpp}.new" "${out_cpp}" COPYONLY)
endfunction()
