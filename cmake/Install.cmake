# Installs the library, headers, the rlock CLI, rlock.pc and the CMake package rlock::rlock; with
# RLOCK_STATIC_BUNDLE also librlock.a and rlock-static.pc.
include(CMakePackageConfigHelpers)
include(JoinPaths)

install(TARGETS rlock EXPORT rlockTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES capi/include/rlock/rlock.h capi/include/rlock/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rlock)
if(TARGET rlock_cli)
  install(TARGETS rlock_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(RLOCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rlock)
install(EXPORT rlockTargets NAMESPACE rlock:: DESTINATION ${RLOCK_CMAKE_DIR})
configure_package_config_file(cmake/rlockConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/rlockConfig.cmake"
  INSTALL_DESTINATION ${RLOCK_CMAKE_DIR})
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/rlockConfigVersion.cmake"
  COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/rlockConfig.cmake"
  "${CMAKE_CURRENT_BINARY_DIR}/rlockConfigVersion.cmake"
  DESTINATION ${RLOCK_CMAKE_DIR})

# rlock.pc finds the prefix from its own location (${pcfiledir} is <prefix>/<libdir>/pkgconfig),
# so it stays right when the prefix is chosen at install time (cmake --install --prefix, DESTDIR)
# or the tree is moved, as rlockTargets.cmake does for CMake users.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(RLOCK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _rlock_pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" _rlock_pc_up "${_rlock_pc_up}")
  set(RLOCK_PC_PREFIX "\${pcfiledir}/${_rlock_pc_up}")
endif()
join_paths(RLOCK_PC_LIBDIR "\${prefix}" "${CMAKE_INSTALL_LIBDIR}")
join_paths(RLOCK_PC_INCLUDEDIR "\${prefix}" "${CMAKE_INSTALL_INCLUDEDIR}")
configure_file(pkgconfig/rlock.pc.in "${CMAKE_CURRENT_BINARY_DIR}/rlock.pc" @ONLY)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/rlock.pc"
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The static archive gets a .pc of its own because cgo refuses `pkg-config --static`: the Go tag
# rlock_static asks for rlock-static. Libs names the archive itself (next to librlock.so, -lrlock
# would pick the shared one) and the system libraries it needs (capi/CMakeLists.txt).
if(RLOCK_STATIC_BUNDLE)
  install(FILES "${RLOCK_BUNDLE_FILE}" DESTINATION ${CMAKE_INSTALL_LIBDIR})
  configure_file(pkgconfig/rlock-static.pc.in "${CMAKE_CURRENT_BINARY_DIR}/rlock-static.pc" @ONLY)
  install(FILES "${CMAKE_CURRENT_BINARY_DIR}/rlock-static.pc"
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
