#!/usr/bin/env bash
# The main job on the embedded default: start the bundled MariaDB 11.4.5, run a seed-like
# load (hot-row updates plus a long consistent-snapshot scan), record it with innostall
# and print the report. Output: build/demo/recording (the recording) and build/demo/report.txt.
set -u
top=$(cd "$(dirname "$0")/.." && pwd -P)
build=${BUILD:-$top/build}
server=${DEMO_SERVER:-mariadb-11.4.5}
seconds=${DEMO_SECONDS:-20}
out=$build/demo
innostall=$build/venv/bin/innostall
fixture=$top/scripts/fixture.sh

die() { echo "demo: $*" >&2; exit 1; }

load_pid=
cleanup() {
  [ -n "$load_pid" ] && kill -TERM -- "-$load_pid" 2>/dev/null && wait "$load_pid" 2>/dev/null
  "$fixture" "$server" stop
}
trap cleanup EXIT

echo "demo: starting $server with sysbench tables ..."
"$fixture" "$server" init || die "could not initialise $server"
"$fixture" "$server" start || die "could not start $server"
"$fixture" "$server" load 2 20000 || die "could not load sysbench tables"

echo "demo: seed-like load for $((seconds + 10)) s, recording $seconds s of it ..."
setsid "$top/scripts/seed-load.sh" "$server" $((seconds + 10)) >"$build/demo-load.log" 2>&1 &
load_pid=$!
sleep 5  # let history build up behind the snapshot
rm -rf "$out" && mkdir -p "$out"
"$innostall" record --pid "$("$fixture" "$server" pid)" --duration "$seconds" -o "$out/recording" ||
  die "recording failed"
"$innostall" report "$out/recording" | tee "$out/report.txt"
echo
echo "demo: recording in $out/recording, report in $out/report.txt"
