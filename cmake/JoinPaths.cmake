# join_paths(out base path): `path` if it is absolute, else base/path. For .pc files, where
# CMAKE_INSTALL_LIBDIR may be absolute or relative to the prefix.
function(join_paths out base path)
  if(IS_ABSOLUTE "${path}")
    set(${out} "${path}" PARENT_SCOPE)
  else()
    set(${out} "${base}/${path}" PARENT_SCOPE)
  endif()
endfunction()
