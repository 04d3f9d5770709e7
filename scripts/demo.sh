#!/usr/bin/env bash
# The main job on the embedded default: start the bundled MariaDB 11.4.5, record the
# long-snapshot scenario (scripts/scenarios/long-snapshot.sh) with innostall and print the
# report. The recording holds the whole story: updates with purge keeping up, a consistent
# snapshot that pins purge while the history grows, its commit, and purge catching up.
# Output in build/demo/: recording/, scenario.log (the scenario's markers and samples),
# timeline.txt (both lined up per interval), report.txt and report.html (opens offline).
#
# DEMO_SERVER picks another fixture server; DEMO_SECONDS the scenario's length (30, >= 20).
set -u
top=$(cd "$(dirname "$0")/.." && pwd -P)
build=${BUILD:-$top/build}
server=${DEMO_SERVER:-mariadb-11.4.5}
seconds=${DEMO_SECONDS:-30}
out=$build/demo
innostall=$build/venv/bin/innostall
python=$build/venv/bin/python
fixture=$top/scripts/fixture.sh

die() { echo "demo: $*" >&2; exit 1; }

[[ $seconds =~ ^[0-9]+$ ]] && [ "$seconds" -ge 20 ] || die "DEMO_SECONDS wants a whole number >= 20, not '$seconds'"
# The phases: the snapshot opens a sixth in (purge keeps up before it) and commits a little
# past halfway, so stall and catch-up each get a good third of the recording.
open_at=$((seconds / 6)) commit_at=$((seconds * 11 / 20))

record_pid=
cleanup() {
  [ -n "$record_pid" ] && kill -INT "$record_pid" 2>/dev/null && wait "$record_pid" 2>/dev/null
  "$fixture" "$server" stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_attached() {  # until the recording's journal says the probes are attached (30 s at most)
  local i
  for ((i = 0; i < 300; i++)); do
    grep -q '"type":"attached"' "$out/recording/journal.jsonl" 2>/dev/null && return 0
    kill -0 "$record_pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

echo "demo: starting $server with a sysbench table ..."
"$fixture" "$server" init || die "could not initialise $server"
# A small buffer pool: the history the snapshot keeps does not all stay cached, as on a busy
# production server.
"$fixture" "$server" start --innodb-buffer-pool-size=32M || die "could not start $server"
"$fixture" "$server" load 1 20000 || die "could not load sysbench tables"

rm -rf "$out" && mkdir -p "$out" || die "cannot create $out"
# The recording starts first and lasts the scenario plus 2 s, so it holds every phase; its
# live line goes to a log, not between the scenario's lines.
"$innostall" record --pid "$("$fixture" "$server" pid)" --duration $((seconds + 2)) \
  -o "$out/recording" 2>"$out/record.log" &
record_pid=$!
wait_attached || { cat "$out/record.log" >&2; die "the recording did not start"; }

echo "demo: recording; long-snapshot scenario for $seconds s: snapshot at $open_at s, commit at $commit_at s"
"$top/scripts/scenarios/long-snapshot.sh" --fixture "$server" --seconds "$seconds" \
  --open-at "$open_at" --commit-at "$commit_at" | tee "$out/scenario.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || die "the scenario failed"
wait "$record_pid" || { record_pid=; cat "$out/record.log" >&2; die "recording failed"; }
record_pid=

echo
"$python" "$top/scripts/scenarios/timeline.py" "$out/recording" "$out/scenario.log" --check | tee "$out/timeline.txt"
timeline=${PIPESTATUS[0]}
echo
"$innostall" report "$out/recording" | tee "$out/report.txt"
"$innostall" report "$out/recording" --html "$out/report.html" || die "HTML report failed"
echo
echo "demo: recording in $out/recording, reports in $out/report.txt and $out/report.html"
[ "$timeline" -eq 0 ] || die "the recording misses part of the story (see $out/timeline.txt)"
