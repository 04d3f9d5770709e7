#!/usr/bin/env bash
# make dist-check: the release wheel (make dist) installed in fresh Debian 12 and 13 roots
# that have no compiler, no make and no kernel headers, then used from there on a fixture
# server running on the host: `innostall probes`, `bpftrace`, a short `record` under a
# sysbench load, `report` (terminal, JSON, HTML), `query`, and a flame graph drawn.
#
# A root holds the minimal base system (debootstrap minbase, cached under
# build/dist-check/SUITE.base), then only what the wheel declares: Debian's python3-venv,
# and the wheel with its dependencies as binary wheels from PyPI (--only-binary :all:, so
# nothing could be compiled), fetched by the host for the root's Python and glibc and
# installed with --no-index, as on a database host without Internet access (cached under
# build/dist-check/wheels-cp3N). The checkout is not visible in the root, so nothing can
# read it there. Each run starts from a fresh copy of the base.
#
# DIST_CHECK_SUITES picks the Debian suites (default: bookworm trixie); DIST_CHECK_KEEP=1
# keeps the used roots in build/dist-check/SUITE. Run as root (debootstrap, chroot, BPF).
set -u
top=$(cd "$(dirname "$0")/.." && pwd -P)
build=$(realpath -m "${BUILD:-$top/build}")
work=$build/dist-check
server=mariadb-11.4.5
fixture=$top/scripts/fixture.sh
read -r -a suites <<<"${DIST_CHECK_SUITES:-bookworm trixie}"
venv=/opt/innostall  # in the root
. "$top/scripts/debian-root.sh"

die() {
  echo "dist-check: $*" >&2
  exit 1
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

step() {  # step LOG NAME CMD... : run CMD with its output in LOG, die naming NAME if it fails
  local log=$1 name=$2; shift 2
  echo "== $name" >>"$log"
  "$@" >>"$log" 2>&1 || die "step '$name' failed (see $log)"
}

# --- the roots ----------------------------------------------------------------------------

base_root() {  # base_root SUITE: the cached minimal root of SUITE, built once
  local base=$work/$1.base tmp=$work/$1.base.tmp mirror
  [ -x "$base/usr/bin/apt-get" ] && return 0
  mirror=$(host_mirror) || die "no Debian mirror in the host's apt sources (/etc/apt/sources.list*)"
  remove_tree "$tmp" && mkdir -p "$work" || die "cannot create $work"
  step "$work/$1.log" "debootstrap $1" debootstrap --variant=minbase --components=main "$1" "$tmp" "$mirror"
  step "$work/$1.log" "set up the $1 root" setup_root "$tmp"
  # Renaming last means an interrupted build never leaves a half-made base behind.
  mv "$tmp" "$base" || die "cannot move the $1 root into place"
}

mount_root() {  # what innostall needs from the host: processes, BTF, tracefs, devices
  local root=$1
  mount -t proc proc "$root/proc" &&
    mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" &&
    mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
}

unmount_root() {
  local root=$1 m
  for m in dev sys proc; do
    mountpoint -q "$root/$m" && umount -R "$root/$m"
  done
  return 0
}

fresh_root() {  # fresh_root SUITE: a copy of the base, mounted, with the host's resolver (for apt)
  local root=$work/$1
  remove_tree "$root" && cp -a "$work/$1.base" "$root" &&
    cp /etc/resolv.conf "$root/etc/resolv.conf" && mount_root "$root"
}

no_build_tools() {  # the root has no compiler, no make, no kernel headers and no checkout
  local root=$1 found
  found=$(chroot "$root" sh -c 'for t in cc gcc clang c++ g++ make; do command -v $t; done'
          ls -d "$root"/usr/src/linux-headers-* "$root"/lib/modules/*/build "$root"/usr/include/linux 2>/dev/null)
  [ -z "$found" ] || { echo "the root has build tools: $found" >&2; return 1; }
  [ ! -e "$root$top" ] || { echo "the checkout $top is visible in the root" >&2; return 1; }
}

# --- install and use ------------------------------------------------------------------------

wheelhouse() {  # wheelhouse ROOT DIR: the wheel and its dependencies, for the root's Python and glibc
  local root=$1 dir=$2 python glibc platforms=() v
  python=$(chroot "$root" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])') &&
    glibc=$(chroot "$root" getconf GNU_LIBC_VERSION | sed -n 's/^glibc 2\.\([0-9]*\)$/\1/p') || return 1
  # pip takes a given platform literally: every manylinux tag that glibc runs is listed.
  for ((v = glibc; v >= 5; v--)); do platforms+=(--platform "manylinux_2_${v}_x86_64"); done
  mkdir -p "$dir" && rm -f "$dir"/innostall-*.whl &&
    "$build/venv/bin/pip" download -q --only-binary :all: --implementation cp --python-version "$python" \
      "${platforms[@]}" -d "$dir" "$wheel_path"
}

install_wheel() {  # install_wheel ROOT LOG: the wheel's declared dependencies, then the wheel
  local root=$1 log=$2 wheels t0
  t0=$(now)
  step "$log" "apt-get update" root_apt "$root" update
  step "$log" "apt-get install python3-venv" root_apt "$root" install --no-install-recommends python3-venv
  py_minor=$(chroot "$root" python3 -c 'import sys; print(sys.version_info[1])')
  times="apt $(since "$t0") s"
  # The root gets no network for Python: the wheels come from PyPI through the host, as
  # they would to a database host without Internet access (docs/install.md, "Release artifact").
  t0=$(now)
  wheels=$work/wheels-cp3$py_minor
  step "$log" "pip download the wheels for Python 3.$py_minor" wheelhouse "$root" "$wheels"
  mkdir -p "$root/tmp/wheels" && cp "$wheels"/*.whl "$root/tmp/wheels/" || die "cannot copy the wheels into $root"
  times+=", wheels fetched $(since "$t0") s ($(du -sh "$wheels" | cut -f1))"
  t0=$(now)
  step "$log" "python3 -m venv $venv" in_root "$root" python3 -m venv "$venv"
  step "$log" "pip install $wheel" in_root "$root" "$venv/bin/pip" install -q --no-index --only-binary :all: \
    --find-links /tmp/wheels "/tmp/wheels/$wheel"
  times+=", venv and pip install $(since "$t0") s"
}

in_root() {  # in_root ROOT CMD...: the installed innostall, or its python, in the root
  local root=$1; shift
  chroot "$root" env -i PATH=/usr/bin:/bin HOME=/root LC_ALL=C.UTF-8 "$@"
}

json_field() {  # json_field FILE EXPR: EXPR (Python, over d) of the JSON object in FILE
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

use_it() {  # use_it SUITE: probes, bpftrace, record and report from the root
  local suite=$1 root=$work/$1 out=$work/$1.out pid load_pid batches svg
  rm -rf "$out" && mkdir -p "$out"
  pid=$("$fixture" "$server" pid) || die "$server is not running"
  in_root "$root" "$venv/bin/innostall" probes --pid "$pid" --json >"$out/probes.json" 2>"$out/probes.err" ||
    die "$suite: innostall probes failed: $(tail -n 1 "$out/probes.err")"
  [ "$(json_field "$out/probes.json" 'd["core_resolved"]')" = True ] || die "$suite: the core probes did not resolve"
  # The script is assembled from the bpftrace fragments, package data of the wheel.
  in_root "$root" "$venv/bin/innostall" bpftrace --pid "$pid" >"$out/innostall.bt" 2>"$out/bpftrace.err" &&
    grep -q "^uprobe:" "$out/innostall.bt" || die "$suite: innostall bpftrace wrote no probes"

  "$fixture" "$server" sysbench oltp_update_index 14 >"$out/sysbench.log" 2>&1 &
  load_pid=$!
  in_root "$root" "$venv/bin/innostall" record --pid "$pid" --duration 10 -o /tmp/rec 2>"$out/record.err"
  local rc=$?
  wait "$load_pid" || die "$suite: sysbench failed (see $out/sysbench.log)"
  [ $rc -eq 0 ] || die "$suite: innostall record failed: $(tail -n 1 "$out/record.err")"

  in_root "$root" "$venv/bin/innostall" report /tmp/rec >"$out/report.txt" 2>"$out/report.err" &&
    in_root "$root" "$venv/bin/innostall" report /tmp/rec --json >"$out/report.json" 2>>"$out/report.err" &&
    in_root "$root" "$venv/bin/innostall" report /tmp/rec --html /tmp/report.html 2>>"$out/report.err" &&
    cp "$root/tmp/report.html" "$out/" || die "$suite: innostall report failed: $(tail -n 1 "$out/report.err")"
  batches=$(json_field "$out/report.json" 'd["purge"]["batches"]')
  [ "$batches" -gt 0 ] 2>/dev/null || die "$suite: the recording saw no purge batch (report.json: $batches)"
  [ "$(json_field "$out/report.json" 'd["complete"]')" = True ] || die "$suite: the recording is not complete"
  grep -q "purge" "$out/report.txt" || die "$suite: the terminal report says nothing of purge"
  # query runs DuckDB (a binary wheel from PyPI) over the recording's Parquet tables.
  in_root "$root" "$venv/bin/innostall" query /tmp/rec --ready purge_rate --format csv >"$out/query.csv" 2>"$out/query.err" &&
    [ "$(wc -l <"$out/query.csv")" -ge 2 ] || die "$suite: innostall query failed: $(tail -n 1 "$out/query.err")"

  # A flame graph drawn by the inferno-flamegraph the wheel carries (the short recording may
  # have no stacks to draw, so it gets a stack of its own).
  svg=$(in_root "$root" "$venv/bin/python" -c '
import pandas as pd
from innostall.analysis.flamegraph import find_tool, render_svg
svg = render_svg(pd.Series({"main;purge;read": 3, "main;purge": 1}), "check", "samples")
print(find_tool(), "<svg" in svg and "purge" in svg)' 2>"$out/flamegraph.err") ||
    die "$suite: drawing a flame graph failed: $(tail -n 1 "$out/flamegraph.err")"
  [ "$svg" = "$venv/lib/python3.${py_minor}/site-packages/innostall/data/inferno-flamegraph True" ] ||
    die "$suite: flame graph not drawn by the packaged inferno-flamegraph: $svg"
  echo "$batches"
}

check_suite() {
  local suite=$1 root=$work/$1 log=$work/$1.log t0 t_install batches
  mkdir -p "$work" && : >"$log" || die "cannot write $log"
  t0=$(now)
  base_root "$suite"
  fresh_root "$suite" || die "cannot make a fresh $suite root in $root"
  local prepared; prepared=$(since "$t0")
  t0=$(now)
  install_wheel "$root" "$log"
  t_install=$(since "$t0")
  step "$log" "no compiler, make, kernel headers or checkout" no_build_tools "$root"
  t0=$(now)
  batches=$(use_it "$suite") || exit 1
  printf 'dist-check: %s (Python 3.%s): root ready in %s s, installed in %s s (%s; %s packages, %s in %s), probes/bpftrace/record/report in %s s, %s purge batches recorded\n' \
    "$suite" "$py_minor" "$prepared" "$t_install" "$times" \
    "$(chroot "$root" dpkg-query -W -f='.\n' | wc -l)" "$(du -sh "$root$venv" | cut -f1)" "$venv" \
    "$(since "$t0")" "$batches"
  unmount_root "$root"
  [ "${DIST_CHECK_KEEP:-0}" = 1 ] || remove_tree "$root"
}

cleanup() {
  local s
  for s in "${suites[@]}"; do unmount_root "$work/$s"; done
  [ "$started" = yes ] && "$fixture" "$server" stop
}

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot, BPF)"
wheel_path=$(ls "$build"/dist/innostall-*.whl 2>/dev/null | head -n 1)
[ -f "$wheel_path" ] || die "no wheel in $build/dist (make dist)"
wheel=${wheel_path##*/}
echo "dist-check: $wheel, $(du -k "$wheel_path" | cut -f1) KiB"

started=no
trap cleanup EXIT
trap 'exit 130' INT TERM
if ! "$fixture" "$server" pid >/dev/null 2>&1; then
  "$fixture" "$server" start || die "cannot start $server"
  started=yes
fi
"$fixture" "$server" load 1 10000 || die "cannot load sysbench tables into $server"

start=$(now)
for s in "${suites[@]}"; do check_suite "$s"; done
echo "dist-check: passed on ${suites[*]} in $(since "$start") s"
