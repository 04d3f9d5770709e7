#!/usr/bin/env bash
# The main job on the embedded default: start the bundled MariaDB 11.4.5, run a seed-like
# load (hot-row updates plus a long consistent-snapshot scan), record it with innostall
# and print the report. Output: build/demo/recording (the recording), build/demo/report.txt
# and build/demo/report.html (self-contained, opens offline).
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
# A small buffer pool: the history the snapshot keeps no longer fits, so its scans read
# undo pages from disk, as on a busy production server.
"$fixture" "$server" start --innodb-buffer-pool-size=32M || die "could not start $server"
"$fixture" "$server" load 2 20000 || die "could not load sysbench tables"

# The recording outlasts the load: it sees purge stall behind the snapshot, then catch up
# once the snapshot commits at the end of the load.
echo "demo: seed-like load for $seconds s, recording $((seconds + 15)) s from its 3rd second ..."
setsid "$top/scripts/seed-load.sh" "$server" "$seconds" >"$build/demo-load.log" 2>&1 &
load_pid=$!
sleep 3
rm -rf "$out" && mkdir -p "$out"
"$innostall" record --pid "$("$fixture" "$server" pid)" --duration $((seconds + 15)) \
  -o "$out/recording" || die "recording failed"
"$innostall" report "$out/recording" | tee "$out/report.txt"
"$innostall" report "$out/recording" --html "$out/report.html" || die "HTML report failed"
echo
echo "demo: recording in $out/recording, reports in $out/report.txt and $out/report.html"
