#!/usr/bin/env bash
# replica-redo: a write load on the primary that its replica's applier keeps up with only as
# fast as the replica's redo log lets each commit end: the load `innostall verify` runs on a
# replica to judge the commit's flush (innodb_flush_log_at_trx_commit) or parallel appliers.
#
# The primary commits its --threads connections' transactions side by side (group commit:
# one log write and sync for several); the replica's applier, one SQL thread, commits them
# one after another, each waiting for its own write and sync of the log where
# innodb_flush_log_at_trx_commit is 1. Run it against a replica (scripts/replica.sh SERVER
# setup [WORKERS] first), naming it as --fixture SERVER:replica; the load goes to SERVER.
# The script changes no setting, so that verify can try one:
#   innostall verify --pid $(scripts/fixture.sh SERVER:replica pid) \
#       --load "replica-redo.sh --fixture SERVER:replica" \
#       --set innodb_flush_log_at_trx_commit=2,innodb_log_file_buffering=ON \
#       --expect applier_redo_share --apply -o trial/
#
# Timeline (seconds from the start; markers on stdout):
#   0          the load starts: "scenario: t=0.1 load started on mariadb-11.4.5: sysbench oltp_update_non_index, 2 threads"
#   --seconds  it stops:        "scenario: t=8.0 load ended"
#   then       the replica applies what it has left (waited for, at most --catch-up s), so
#              that the next run starts as this one did:
#              "scenario: t=9.2 end: the replica caught up after 1.2 s, 5120 events applied"
#
# What a DBA should see in innostall's report of the replica (record its pid): the
# applier's time split, its waits for the redo log at commit a large part, a phase called
# redo-bound where they are the largest, and from `innostall advise` the commit's flush or
# parallel appliers.

scenario=replica-redo
defaults="seconds=8 threads=2 catch-up=60 slow-disk=0 rate=0"
scenario_usage() {
  cat <<'EOF2'
usage: replica-redo.sh --fixture SERVER:replica [options]
A write load on SERVER; its replica's applier commits each transaction on its own.
  --seconds N    the load's length (8)
  --threads N    the load's threads on the primary (2)
  --catch-up N   at most N s after the load for the replica to apply the rest (60)
  --rate N       the load's transactions a second (0: as fast as it goes)
  --slow-disk N  the replica's writes at most N a second from the start to its catching up (0: the
                 disk as it is; needs root and the cgroup v1 blkio controller)
EOF2
}
. "$(dirname "$0")/lib.sh"

parse_args "$@"
threads=${opt[threads]}
[ "$threads" -ge 1 ] || usage_error "--threads wants at least 1"
connect_replica

mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version"
first=$(applied)
[ "${opt[slow-disk]}" = 0 ] || slow_disk "${opt[slow-disk]}"
rate=()
[ "${opt[rate]}" -gt 0 ] && rate=(--rate="${opt[rate]}")
server=$primary start_sysbench oltp_update_non_index "$seconds" --threads="$threads" "${rate[@]}"
mark "load started on $primary: sysbench oltp_update_non_index, $threads threads"
for pid in "${sysbench_pids[@]}"; do wait "$pid" || die "the load failed: $(tail -n 1 "$tmp/sysbench.log")"; done
sysbench_pids=()
mark "load ended"
ended=${EPOCHREALTIME/./}
"$top/scripts/replica.sh" "$primary" wait "${opt[catch-up]}" >"$tmp/catch-up.log" 2>&1 ||
  die "$(tail -n 1 "$tmp/catch-up.log")"
slow_disk_end
last=$(applied)
mark "end: the replica caught up after $(seconds_since "$ended") s${first:+, $((last - first)) events applied}"
