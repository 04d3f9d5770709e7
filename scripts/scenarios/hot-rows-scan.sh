#!/usr/bin/env bash
# hot-rows-scan: pareto hot rows under sysbench's read-write load, and an old snapshot's
# `SELECT avg(k)` scan over the secondary index k_1.
#
# Reproduces Peter Zaitsev's "InnoDB's multi-versioning handling can be Achilles' heel"
# (Percona): sysbench oltp_read_write with --rand-type=pareto updates a few hot rows over
# and over (their k too, so k_1 gets new entries and delete-marked old ones), while a
# reporting query, `select avg(k) from sbtest1`, reads k_1 as a covering index. A secondary
# index record carries no transaction id: when its page was changed after the snapshot
# opened, InnoDB looks the row up in the clustered index and walks its version chain back
# to what the snapshot may see. The longer the snapshot stays open the longer the chains,
# and the scan that looked cheap slows down while the updaters queue on the hot pages.
#
# Timeline (seconds from the start; markers on stdout):
#   0            the load starts;      "scenario: t=0.1 load started ..."
#   --open-at    the snapshot opens;   "scenario: t=3.0 snapshot opened conn=12 tid=3456"
#                an avg(k) scan every --scan-pause s: "scenario: t=5.1 scan 2 ended: avg(k)=... in 0.84 s"
#   --commit-at  a scan still running is interrupted and the snapshot commits;
#                then one scan with a fresh view:  "scenario: t=26.3 fresh scan: ... in 0.01 s"
#   --seconds    the load stops:       "scenario: t=30.0 end"
# plus a "sample" line every second (history length, purge and update rates from the server).
#
# What a DBA should see in innostall's report: deep version walks whose user stacks come
# from the secondary-index scan (row_search_mvcc -> row_sel_get_clust_rec_for_mysql ->
# row_vers_build_for_consistent_read), deeper and slower the later the scan; block-lock
# waits on the hot rows' leaf pages, S from the scan and the readers, X/SX from the
# updaters; purge pinned (empty batches, history growing) while the snapshot is open.

scenario=hot-rows-scan
defaults="seconds=30 open-at=3 commit-at=0 threads=4 scan-pause=1"
scenario_usage() {
  cat <<'EOF'
usage: hot-rows-scan.sh (--fixture SERVER | --socket PATH --user USER) [options]
Pareto hot rows (sysbench oltp_read_write) and an old snapshot's avg(k) scan over index k_1.
  --seconds N     the whole run (30); the load runs all along
  --open-at N     the snapshot opens N s after the start (3)
  --commit-at N   it commits N s after the start (0: 4 s before the end)
  --threads N     sysbench threads (4)
  --scan-pause N  seconds between the snapshot's scans (1)
EOF
}
. "$(dirname "$0")/lib.sh"

# The article's reporting query, on k_1, a covering index.
scan_sql="SELECT CONCAT('avg(k)=', ROUND(AVG(k), 1)) FROM sbtest1 FORCE INDEX (k_1);"

parse_args "$@"
open_at=${opt[open-at]} commit_at=${opt[commit-at]} threads=${opt[threads]}
[ "$commit_at" -gt 0 ] || commit_at=$((seconds - 4))
check_phases open-at "$open_at" commit-at "$commit_at"
connect
[ "$(sql "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE()
          AND TABLE_NAME = 'sbtest1' AND INDEX_NAME = 'k_1'")" -gt 0 ] ||
  die "$database.sbtest1 has no index k_1 (a sysbench table has)"

mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version"
start_sampler
start_sysbench oltp_read_write "$seconds" --threads="$threads"
mark "load started: sysbench oltp_read_write on sbtest1, pareto, $threads threads"
session_open
tid=$(session_thread)

sleep_until "$open_at"
snapshot_open
mark "snapshot opened conn=$session_id tid=$tid"
scans_until "$commit_at" "$scan_sql" "${opt[scan-pause]}"
session_run "COMMIT;" "$(in_s 10)" || die "COMMIT did not return within 10 s"
mark "snapshot committed"

# The same scan with a view of now: what it costs without the old snapshot.
began=${EPOCHREALTIME/./}
session_run "$scan_sql" "$(at_t "$seconds")" && mark "fresh scan: $reply in $(seconds_since "$began") s" ||
  { session_interrupt; mark "fresh scan interrupted at the end"; }
sleep_until "$seconds"
stop_sysbench
mark "end: load stopped history=$(history_len)"
