#!/usr/bin/env bash
# The release artifact (make dist): one wheel holding the Python package and, as package
# data in innostall/data/, the static loader (the BPF programs are inside it), stripped
# inferno-flamegraph and dwarf-layouts, and the bpftrace fragments. It is built from a staged copy of the
# checkout, so no build output lands in the source tree. Prints the wheel's path.
#
# Its tag is py3-none-manylinux_2_N_x86_64: any CPython 3.11+ on x86-64 with glibc 2.N or
# newer, N being the newest glibc symbol version inferno-flamegraph uses (the loader is
# static and uses none; dwarf-layouts asks for older ones than inferno). pip on the host takes pandas, numpy, pyarrow ... from PyPI as
# binary wheels of their own; nothing is compiled there.
set -u
top=$(cd "$(dirname "$0")/.." && pwd -P)
build=${BUILD:-$top/build}
dist=$build/dist
stage=$dist/stage
loader=$dist/innostall-loader  # the Makefile links it statically
inferno=$build/tools/bin/inferno-flamegraph  # scripts/setup.sh builds it
dwarf=$build/tools/bin/dwarf-layouts  # and this
python=$build/venv/bin/python

die() {
  echo "dist: $*" >&2
  exit 1
}

glibc_needed() {  # glibc_needed ELF: the newest GLIBC_2.N the file asks for, as N (0: none)
  objdump -T "$1" | grep -o 'GLIBC_2\.[0-9]*' | sed 's/GLIBC_2\.//' | sort -n | tail -n 1 | grep . || echo 0
}

only_system_libs() {  # only_system_libs ELF: it needs no shared library but glibc's and libgcc_s
  local lib
  for lib in $(objdump -p "$1" | awk '$1 == "NEEDED" { print $2 }'); do
    case $lib in
      libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | ld-linux-x86-64.so.2 | libgcc_s.so.1) ;;
      *) echo "$1 needs $lib, which a Debian host may not have" >&2; return 1 ;;
    esac
  done
}

stage_tree() {  # the package sources, then the data a checkout keeps in build/ and probes/
  rm -rf "$stage" && mkdir -p "$stage" &&
    tar -C "$top" --exclude=__pycache__ -cf - pyproject.toml README.md innostall collector analysis |
    tar -C "$stage" -xf - &&
    mkdir -p "$stage/innostall/data/bpftrace" &&
    install -m 755 "$loader" "$stage/innostall/data/innostall-loader" &&
    strip -o "$stage/innostall/data/inferno-flamegraph" "$inferno" &&
    strip -o "$stage/innostall/data/dwarf-layouts" "$dwarf" &&
    chmod 755 "$stage/innostall/data/inferno-flamegraph" "$stage/innostall/data/dwarf-layouts" &&
    install -m 644 "$top"/probes/bpftrace/*.bt "$stage/innostall/data/bpftrace/"
}

[ -x "$loader" ] || die "$loader missing (make dist builds it)"
[ -x "$inferno" ] || die "$inferno missing (scripts/setup.sh builds it)"
[ -x "$dwarf" ] || die "$dwarf missing (scripts/setup.sh builds it)"
[ -z "$(objdump -p "$loader" | awk '$1 == "NEEDED"')" ] || die "$loader is not static"
only_system_libs "$inferno" || die "inferno-flamegraph cannot ship as it is"
only_system_libs "$dwarf" || die "dwarf-layouts cannot ship as it is"
glibc=$(printf '%s\n' "$(glibc_needed "$inferno")" "$(glibc_needed "$dwarf")" | sort -n | tail -n 1)
plat=manylinux_2_${glibc}_x86_64

stage_tree || die "cannot stage the package in $stage"
# A pure-Python layout with a platform tag: setuptools' bdist_wheel takes plat_name from here.
printf '[bdist_wheel]\nplat_name = %s\n' "$plat" >"$stage/setup.cfg"
rm -f "$dist"/innostall-*.whl
"$python" -m pip wheel -q --no-deps -w "$dist" "$stage" >"$dist/wheel.log" 2>&1 ||
  die "building the wheel failed (see $dist/wheel.log)"
wheel=$(ls "$dist"/innostall-*-py3-none-"$plat".whl 2>/dev/null) || die "no wheel tagged $plat in $dist"
echo "$wheel"
