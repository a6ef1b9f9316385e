# CTest fixture java_base_jar: packs the base jar of this build (without running its tests; the
# java_junit test does) and installs it into the local Maven repository (~/.m2) as
# io.github.rlock:rlock:VERSION, for the modules built on it (bindings/java/shedlock, ...).
# The POM installed is base-jar.pom.in's: coordinates only (the source pom's ${revision} would
# be left unresolved in it).
# Usage: cmake -DMVN=... -DPOM=bindings/java/pom.xml -DVERSION=... -DBUILD_DIR=...
#        -DNATIVE_DIR=... -DSWIG_DIR=... -DPOM_IN=.../base-jar.pom.in -P install_base_jar.cmake
foreach(var MVN POM VERSION BUILD_DIR NATIVE_DIR SWIG_DIR POM_IN)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_base_jar.cmake: -D${var}=... is required")
  endif()
endforeach()
set(log "${BUILD_DIR}/install-base-jar.log")
file(MAKE_DIRECTORY "${BUILD_DIR}")
execute_process(
  COMMAND "${MVN}" -B -f "${POM}" package -Dmaven.test.skip=true
          "-Drevision=${VERSION}" "-Drlock.build.dir=${BUILD_DIR}"
          "-Drlock.native.dir=${NATIVE_DIR}" "-Drlock.swig.dir=${SWIG_DIR}"
  OUTPUT_FILE "${log}" ERROR_FILE "${log}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "packing the base jar failed (${rc}); see ${log}")
endif()
set(jar "${BUILD_DIR}/rlock-${VERSION}.jar")
if(NOT EXISTS "${jar}")
  message(FATAL_ERROR "Maven made no ${jar}; see ${log}")
endif()
set(RLOCK_VERSION "${VERSION}")
configure_file("${POM_IN}" "${BUILD_DIR}/rlock-${VERSION}.install.pom" @ONLY)
execute_process(
  COMMAND "${MVN}" -B org.apache.maven.plugins:maven-install-plugin:3.1.1:install-file
          "-Dfile=${jar}" "-DpomFile=${BUILD_DIR}/rlock-${VERSION}.install.pom"
  WORKING_DIRECTORY "${BUILD_DIR}"
  OUTPUT_FILE "${log}.install" ERROR_FILE "${log}.install" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installing ${jar} into the local Maven repository failed (${rc}); "
                      "see ${log}.install")
endif()
message(STATUS "installed ${jar} as io.github.rlock:rlock:${VERSION}")
