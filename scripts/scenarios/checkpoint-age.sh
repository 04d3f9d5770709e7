#!/usr/bin/env bash
# checkpoint-age: a write-heavy load on a small redo log while history grows, so that the
# checkpoint age presses on the server's flush points; after the load, dirty pages drain
# only as purge works through the history.
#
# Reproduces Dimitri Kravtchuk's "MySQL Performance: Final fix for Ahead Flushing & Purge
# Lag" (the seed): under a sustained write load the history grew to millions while the
# checkpoint age reached its limit and "furious flushing" cut TPS periodically, and after
# the test it took 17 minutes to free all dirty pages, because purge, working off the
# history, dirties pages again. Here, at a scale a test host runs in seconds: the redo log
# made small (--log-mb) where the server resizes it online (MariaDB 10.9+:
# innodb_log_file_size; MySQL 8.0.30+: innodb_redo_log_capacity; elsewhere the server's
# own size stays and a marker says so), innodb_io_capacity at its least (--io-capacity), so
# that background flushing lags the writes, and a consistent snapshot held from --open-at
# to --commit-at, so that the history grows and purge has it to work off after the commit.
# On a fast disk the page cleaners keep the age at the async point and no writer waits;
# --slow-disk IOPS holds the server's writes to IOPS a second while the writes run (cgroup
# v1 blkio), as a saturated disk does, so that the age reaches the point where writers wait
# for the log to make room (innodb_flush_log_at_trx_commit set to 0 meanwhile, so that the
# commits themselves do not wait for the slow disk).
#
# Timeline (seconds from the start; markers on stdout):
#   0            writes start (sysbench oltp_write_only, --threads), the log resized first
#   --open-at    a consistent snapshot opens: the history grows from here
#   --commit-at  it commits: purge works the history off, dirtying pages
#   --slow-from  with --slow-disk: the server's writes slowed from here (at most --commit-at)
#                until the writes stop
#   --seconds    writes stop; the sampling goes on for --drain seconds, then the globals get
#                their old values back (also on any exit)
# A "flush" marker each second gives the checkpoint age (bytes), dirty pages and the history,
# from SHOW ENGINE INNODB STATUS.
#
# What a DBA should see in innostall's report: under "Redo and flushing" the redo written,
# the checkpoint age at or near the async flush point (a finding says so, with InnoDB's
# meaning of each point), dirty pages high while the history is; in the verdict the pin,
# then purge catching up after the commit and the writes. With --slow-disk, writers waiting
# for the log to make room (a flushing-stall line and finding) and a phase called
# flush-bound in the verdict.

scenario=checkpoint-age
defaults="seconds=20 open-at=3 commit-at=12 threads=8 log-mb=16 io-capacity=100 drain=6 slow-disk=0 slow-from=2"
scenario_usage() {
  cat <<'EOF'
usage: checkpoint-age.sh (--fixture SERVER | --socket PATH --user USER) [options]
A write load on a small redo log while history grows: the checkpoint age presses on the flush points.
  --seconds N      the writes' length (20)
  --open-at N      a consistent snapshot opens N s after the start (3)
  --commit-at N    it commits N s after the start (12)
  --threads N      sysbench write threads (8)
  --log-mb N       the redo log's size while the scenario runs, where the server resizes it online (16)
  --io-capacity N  innodb_io_capacity while the scenario runs (100, its least)
  --drain N        seconds of sampling after the writes stop (6)
  --slow-disk N    the server's writes at most N a second from --slow-from until the writes stop
                   (0: the disk as it is; needs root and the cgroup v1 blkio controller)
  --slow-from N    seconds after the start (2)
EOF
}
. "$(dirname "$0")/lib.sh"

innodb_status() {  # the lines of SHOW ENGINE INNODB STATUS, one per line
  sql "SHOW ENGINE INNODB STATUS" | cut -f 3 | sed 's/\\n/\n/g'
}

flush_state() {  # "checkpoint age=BYTES dirty pages=N history=N"
  local status lsn checkpoint dirty history
  status=$(innodb_status)
  lsn=$(sed -n 's/^Log sequence number *\([0-9]*\).*/\1/p' <<<"$status")
  checkpoint=$(sed -n 's/^Last checkpoint at *\([0-9]*\).*/\1/p' <<<"$status")
  dirty=$(sed -n 's/^Modified db pages *\([0-9]*\).*/\1/p' <<<"$status" | head -n 1)
  history=$(sed -n 's/^History list length *\([0-9]*\).*/\1/p' <<<"$status")
  echo "checkpoint age=$((lsn - checkpoint)) dirty pages=$dirty history=$history"
}

resize_log() {  # resize_log BYTES: the statement that resizes the redo log online, if the server has one
  if [ "$flavour" = mariadb ] && sql "SELECT @@GLOBAL.innodb_log_file_size" >/dev/null 2>&1 &&
     [ "$(sql "SELECT VERSION() >= '10.9'")" = 1 ]; then
    echo "SET GLOBAL innodb_log_file_size = $1"
  elif [ "$flavour" = mysql ] && sql "SELECT @@GLOBAL.innodb_redo_log_capacity" >/dev/null 2>&1; then
    echo "SET GLOBAL innodb_redo_log_capacity = $1"
  fi
}

parse_args "$@"
open_at=${opt[open-at]} commit_at=${opt[commit-at]} threads=${opt[threads]}
check_phases open-at "$open_at" commit-at "$commit_at"
slow_iops=${opt[slow-disk]} slow_from=${opt[slow-from]}
[ "$slow_iops" = 0 ] || [ "$slow_from" -le "$commit_at" ] || usage_error "--slow-from must not fall after --commit-at ($commit_at)"
[ "${opt[log-mb]}" -ge 1 ] || usage_error "--log-mb wants at least 1"
connect

old_io=$(sql "SELECT @@GLOBAL.innodb_io_capacity") || die "cannot read innodb_io_capacity"
restore_sql="SET GLOBAL innodb_io_capacity = $old_io"
sql "SET GLOBAL innodb_io_capacity = ${opt[io-capacity]}" || die "SET GLOBAL failed (needs SUPER or SYSTEM_VARIABLES_ADMIN)"
resize=$(resize_log $(( ${opt[log-mb]} * 1048576 )))
if [ -n "$resize" ]; then
  variable=${resize#SET GLOBAL }; variable=${variable%% =*}
  old_log=$(sql "SELECT @@GLOBAL.$variable")
  sql "$resize" || die "could not resize the redo log ($resize)"
  restore_sql="$restore_sql; SET GLOBAL $variable = $old_log"
  mark "redo log resized: $variable=$((${opt[log-mb]} * 1048576)) (was $old_log); innodb_io_capacity=${opt[io-capacity]} (was $old_io)"
else
  mark "note: this server does not resize its redo log online; it keeps its size (restart it with a small one to press harder); innodb_io_capacity=${opt[io-capacity]} (was $old_io)"
fi

if [ "$slow_iops" != 0 ]; then
  # A commit that waits for its log write on the slowed disk would hold the writers to the
  # disk's pace themselves: the log written once a second instead, so that they outrun the
  # page cleaners, as on a disk saturated by page writes.
  old_commit=$(sql "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit")
  sql "SET GLOBAL innodb_flush_log_at_trx_commit = 0" || die "could not set innodb_flush_log_at_trx_commit"
  restore_sql="$restore_sql; SET GLOBAL innodb_flush_log_at_trx_commit = $old_commit"
  mark "innodb_flush_log_at_trx_commit=0 (was $old_commit): commits do not wait for the slowed disk"
fi

mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version"
start_sysbench oltp_write_only "$seconds" --threads="$threads"
mark "writes started: sysbench oltp_write_only on sbtest1, pareto, $threads threads"
session_open
tid=$(session_thread)

if [ "$slow_iops" != 0 ] && [ "$slow_from" -le "$open_at" ]; then
  flush_marks_until "$slow_from"; slow_disk "$slow_iops"; mark "disk slowed: the server's writes at most $slow_iops/s"
fi
flush_marks_until "$open_at"
snapshot_open
mark "snapshot opened conn=$session_id tid=$tid"
if [ "$slow_iops" != 0 ] && [ -z "$slow_disk_pid" ]; then
  flush_marks_until "$slow_from"; slow_disk "$slow_iops"; mark "disk slowed: the server's writes at most $slow_iops/s"
fi
flush_marks_until "$commit_at"
session_run "COMMIT;" "$(in_s 10)" || die "COMMIT did not return within 10 s"
mark "snapshot committed"
flush_marks_until "$seconds"
stop_sysbench
if [ -n "$slow_disk_pid" ]; then
  slow_disk_end; mark "disk as it was"
fi
mark "writes stopped: $(flush_state)"
flush_marks_until $((seconds + ${opt[drain]}))
sql "$restore_sql" && restore_sql='' || die "could not restore: $restore_sql"
mark "end: globals restored, $(flush_state)"
