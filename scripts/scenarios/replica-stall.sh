#!/usr/bin/env bash
# replica-stall: a write load on the primary while, on the replica, a session gets in its
# applier's way, as in Pythian's "Replication lag caused by the LRU dump", where work on the
# replica, not the load, made the applier fall behind.
#
# Run it against a replica (scripts/replica.sh SERVER setup [WORKERS] first), naming it as
# --fixture SERVER:replica; the load goes to SERVER, the primary. The cause:
#   row-lock  a transaction on the replica holds every row of sbtest1, which the load
#             updates, for --hold seconds: the applier waits for their locks (a reporting
#             query with FOR UPDATE, or an accidental write on a replica, does this)
#   lru       INNODB_BUFFER_PAGE_LRU read over and over for --hold seconds: the buffer
#             pool's LRU list walked under its mutex, as the article's LRU dump did
#   snapshot  a backup-like reader for --hold seconds: one consistent snapshot, sbtest1
#             scanned whole again and again in it (mysqldump --single-transaction's
#             shape), each scan rebuilding the old versions of every row the applier
#             changed since, purge held back all along
#   purge     a snapshot held idle for --hold seconds, then released: the history the
#             applier made meanwhile is a purge backlog, worked off while it applies (the
#             load is oltp_update_index, so that purge has secondary-index records to
#             remove from the pages the applier changes)
#
# Timeline (seconds from the start; markers on stdout):
#   0          the load starts:  "scenario: t=0.1 load started on mariadb-11.4.5: sysbench oltp_update_non_index, 2 threads"
#   --hold-at  the cause starts: "scenario: t=5.0 rows held: sbtest1, 20000 rows", "LRU reads started",
#              "backup started: a snapshot open, sbtest1 scanned in it" or "snapshot opened: purge held back"
#   + --hold   it ends:          "scenario: t=13.0 rows released", "LRU reads ended: 41 reads",
#              "backup ended: 12 scans, history=31000" or "snapshot released: a purge backlog of 31000"
#   --seconds  the load stops:   "scenario: t=20.0 end: the replica applied 5120 events" (MariaDB)
#
# What a DBA should see in innostall's report of the replica (record its pid:
# scripts/fixture.sh SERVER:replica pid): the applier's time split, and a phase around the
# hold whose verdict names the cause (row-lock-bound: the applier waited on row locks;
# with parallel workers, the others wait for the blocked one's commit: commit-order-bound).

scenario=replica-stall
defaults="seconds=20 hold-at=5 hold=8 threads=2"
scenario_usage() {
  cat <<'EOF'
usage: replica-stall.sh --fixture SERVER:replica [--cause row-lock|lru] [options]
A write load on SERVER while a session on its replica gets in the applier's way.
  --cause C       row-lock (the default): sbtest1's rows held FOR UPDATE; lru: INNODB_BUFFER_PAGE_LRU read over and
                  over; snapshot: a backup-like reader scanning sbtest1 in one old snapshot; purge: a snapshot held,
                  then released (a purge backlog)
  --seconds N     the whole run (20); the load runs all along
  --hold-at N     the cause starts N s after the start (5)
  --hold N        and lasts N s (8)
  --threads N     the load's threads on the primary (2)
EOF
}
cause=row-lock
args=()
while [ $# -gt 0 ]; do  # --cause takes a word; the rest are lib.sh's
  case $1 in
    --cause) [ $# -ge 2 ] || { echo "replica-stall: --cause needs a value" >&2; exit 2; }; cause=$2; shift 2 ;;
    --cause=*) cause=${1#*=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
. "$(dirname "$0")/lib.sh"

parse_args "${args[@]}"
case $cause in row-lock|lru|snapshot|purge) ;; *) usage_error "--cause wants row-lock, lru, snapshot or purge, not '$cause'" ;; esac
hold_at=${opt[hold-at]} hold=${opt[hold]} threads=${opt[threads]}
check_phases hold-at "$hold_at" hold-at+hold "$((hold_at + hold))"
connect_replica

mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version"
first=$(applied)
load=oltp_update_non_index
[ "$cause" = purge ] && load=oltp_update_index
server=$primary start_sysbench "$load" "$seconds" --threads="$threads"
mark "load started on $primary: sysbench $load, $threads threads"
session_open
sleep_until "$hold_at"
if [ "$cause" = snapshot ]; then
  snapshot_open
  mark "backup started: a snapshot open, sbtest1 scanned in it"
  scans_until "$((hold_at + hold))" "SELECT COUNT(*), SUM(LENGTH(c)) FROM sbtest1;" 0
  session_run "COMMIT;" "$(in_s 10)" || die "COMMIT did not return within 10 s"
  mark "backup ended: $scans scans, history=$(history_len)"
elif [ "$cause" = purge ]; then
  snapshot_open
  mark "snapshot opened: purge held back"
  sleep_until "$((hold_at + hold))"
  backlog=$(history_len)
  session_run "COMMIT;" "$(in_s 10)" || die "COMMIT did not return within 10 s"
  mark "snapshot released: a purge backlog of $backlog"
elif [ "$cause" = row-lock ]; then
  session_run "BEGIN; SELECT COUNT(*) FROM (SELECT id FROM sbtest1 FOR UPDATE) AS held;" "$(in_s 30)" ||
    die "the rows were not held within 30 s"
  mark "rows held: sbtest1, $reply rows"
  sleep_until "$((hold_at + hold))"
  session_run "COMMIT;" "$(in_s 10)" || die "COMMIT did not return within 10 s"
  mark "rows released"
else
  n=0
  end=$(at_t "$((hold_at + hold))")
  mark "LRU reads started"
  while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
    session_run "SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE_LRU;" "$(in_s 30)" ||
      die "an LRU read did not end within 30 s"
    n=$((n + 1))
  done
  mark "LRU reads ended: $n reads"
fi
sleep_until "$seconds"
stop_sysbench
last=$(applied)
mark "end: ${first:+the replica applied $((last - first)) events}"
