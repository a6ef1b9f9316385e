# Stage "wheels" of scripts/build-release.sh (sourced): one wheel per Python version and
# architecture from the modules the native stage built, checked and tagged manylinux_2_31 by
# auditwheel (which refuses a module that needs a newer glibc or a library outside the policy).

build_wheels() {
  local venv pkg_info notices arch v minor module raw
  venv=$(release_tools_venv)
  pkg_info=$(sdist_pkg_info)
  notices=$(third_party_notices)
  rm -f "$dist"/"$release_python_dist"-*.whl
  raw=$work/raw-wheels
  for arch in "${arches[@]}"; do
    for v in "${release_python_versions[@]}"; do
      minor=${v#3.}  # 14t for the free-threaded 3.14t, whose wheels are cp314-cp314t
      module=$(ls "$root"/build/native-"$arch"/python/cp3"$minor"/_native.cpython-3"$minor"-*.so) ||
        die "no Python $v module for $arch: run the native stage"
      rm -rf "$raw" && mkdir -p "$raw"
      "$venv/bin/python" "$repo/scripts/release/make_wheel.py" --pkg-info "$pkg_info" \
        --package "$repo/python/rlock" --module "$module" --license "$repo/LICENSE" --license "$notices" \
        --tag "cp3${minor%t}-cp3$minor-linux_$arch" --out "$raw" >/dev/null
      # --plat auto: auditwheel names only the host's architecture among its --plat choices, but
      # reads the policy of the wheel's own; the name it gives is checked below.
      PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair --only-plat --plat auto \
        -w "$dist" "$raw"/*.whl >"$work/auditwheel-$arch-$v.log" 2>&1 ||
        die "auditwheel refused the $arch wheel for Python $v; see $work/auditwheel-$arch-$v.log"
      [ -f "$dist/$release_python_dist-$version-cp3${minor%t}-cp3$minor-manylinux_2_31_$arch.whl" ] ||
        die "the $arch wheel for Python $v is not manylinux_2_31: $(ls "$dist" | grep "cp3$minor-.*$arch" || true)"
    done
  done
  log "wheels: $(ls "$dist"/"$release_python_dist"-*.whl | wc -l)"
}
