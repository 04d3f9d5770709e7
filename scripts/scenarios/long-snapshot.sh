#!/usr/bin/env bash
# long-snapshot: a long consistent-snapshot scan during update load, then its commit and
# purge's catch-up.
#
# Reproduces the "hidden debt" of the history list (seed: "Innodb Transaction History Often
# Hides Dangerous 'Debt'", DZone/Percona): one REPEATABLE READ transaction opens a
# consistent snapshot, as mysqldump --single-transaction does, and scans sbtest1 again and
# again while sysbench updates hot rows (oltp_update_non_index, pareto). Purge may not
# remove a version the snapshot can still see, so the history list grows while it is open;
# each scan walks longer version chains. When the snapshot commits, purge catches up.
#
# Timeline (seconds from the start; each phase prints a marker line on stdout):
#   0            updates start;        "scenario: t=0.1 updates started ..."
#   --open-at    the snapshot opens;   "scenario: t=4.0 snapshot opened conn=12 tid=3456"
#                (tid: the OS thread serving it, where the server tells it); a scan every
#                --scan-pause s, each one "scenario: t=6.2 scan 2 ended: ... in 0.05 s"
#   --commit-at  a scan still running is interrupted (KILL QUERY) and the snapshot commits:
#                "scenario: t=17.0 snapshot committed"
#   --seconds    updates stop;         "scenario: t=30.0 end ..."
# Every second a "scenario: t=5.0 sample history=... purge_pages/s=... purge_batches/s=...
# updates/s=..." line gives the server's own counters (INNODB_METRICS, Handler_update).
#
# What a DBA should see in innostall's report: purge batches that find nothing to purge
# (0 pages) while the history grows from --open-at to --commit-at, the view pinning purge
# held by the thread of the snapshot's connection (tid above), deep version walks from the
# scans (row_search_mvcc -> row_vers_build_for_consistent_read); after --commit-at full
# batches and the history falling: "pinned", then "catching up".

scenario=long-snapshot
defaults="seconds=30 open-at=4 commit-at=0 threads=4 rate=0 scan-pause=1"
scenario_usage() {
  cat <<'EOF'
usage: long-snapshot.sh (--fixture SERVER | --socket PATH --user USER) [options]
A consistent snapshot scanned during hot-row updates pins purge; its commit lets purge catch up.
  --seconds N     the whole run (30); updates run all along
  --open-at N     the snapshot opens N s after the start (4)
  --commit-at N   it commits N s after the start (0: halfway between --open-at and the end)
  --threads N     sysbench update threads (4)
  --rate N        sysbench's transaction rate, per second (0: as fast as it goes)
  --scan-pause N  seconds between the snapshot's scans (1)
EOF
}
. "$(dirname "$0")/lib.sh"

# A full scan of the clustered index: it holds the version chains. The secondary index on k
# is not touched by these updates, so a scan of it would meet no old version (see
# hot-rows-scan.sh for the scan that does).
scan_sql="SELECT CONCAT(COUNT(*), ' rows, avg(k)=', ROUND(AVG(k), 1)) FROM sbtest1 FORCE INDEX (PRIMARY);"

parse_args "$@"
open_at=${opt[open-at]} commit_at=${opt[commit-at]} threads=${opt[threads]}
[ "$commit_at" -gt 0 ] || commit_at=$(( (open_at + seconds + 1) / 2 ))
check_phases open-at "$open_at" commit-at "$commit_at"
connect

mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version"
start_sampler
rate=()
[ "${opt[rate]}" -gt 0 ] && rate=(--rate="${opt[rate]}")
start_sysbench oltp_update_non_index "$seconds" --threads="$threads" "${rate[@]}"
mark "updates started: sysbench oltp_update_non_index on sbtest1, pareto, $threads threads${rate:+, ${opt[rate]} tps}"
session_open  # connected now, so the snapshot opens on time
tid=$(session_thread)

sleep_until "$open_at"
snapshot_open
mark "snapshot opened conn=$session_id tid=$tid"

scans_until "$commit_at" "$scan_sql" "${opt[scan-pause]}"
if [ -z "$session_lost" ]; then  # else ended from outside (innostall verify's KILL): the updates go on
  session_run "COMMIT;" "$(in_s 10)" || die "COMMIT did not return within 10 s"
  mark "snapshot committed"
fi

sleep_until "$seconds"
stop_sysbench
mark "end: updates stopped history=$(history_len)"
