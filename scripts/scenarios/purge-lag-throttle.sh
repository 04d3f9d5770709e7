#!/usr/bin/env bash
# purge-lag-throttle: innodb_max_purge_lag with an open read view, so that DML is delayed.
#
# Reproduces Dimitri Kravtchuk's "MySQL Performance: Final fix for Ahead Flushing & Purge
# Lag" (dimitrik.free.fr, 2009): innodb_max_purge_lag caps the history list by making every
# INSERT, UPDATE and DELETE sleep when the history is longer than the cap, by
# ((history / innodb_max_purge_lag) x 10 - 5) ms at most innodb_max_purge_lag_delay. The
# article found InnoDB skipped the delay while a consistent read view could see the rows to
# purge, and patched that; servers still differ on it:
#   - MySQL (5.5 on) and MariaDB up to 10.5 delay whenever the history exceeds the cap,
#     open view or not: DML slows while the view is open, and until purge catches up;
#   - MariaDB 10.6 on sets the delay only after a batch that purged something (trx_purge():
#     no pages handled, no delay): DML runs at full speed while the view pins purge, and
#     is throttled once it commits and purge catches up.
#
# Timeline (seconds from the start; markers on stdout):
#   0            updates start (sysbench oltp_update_non_index, pareto), no cap: the baseline
#   --limit-at   innodb_max_purge_lag=--max-lag, innodb_max_purge_lag_delay=--max-delay-us
#                (SET GLOBAL) and a consistent snapshot opens: "scenario: t=5.0 lag limit set ..."
#   --commit-at  the snapshot commits
#   --seconds    updates stop; the globals get their old values back (also on any exit)
# Each phase ends with its update rate ("scenario: t=5.0 phase baseline: 7012 updates/s"),
# and a "sample" line every second gives history=, updates/s= and dml_delay_us= (the delay
# InnoDB currently asks for: INNODB_METRICS purge_dml_delay_usec, where it is enabled).
#
# What a DBA should see in innostall's report: DML delays (count and time, the dml_delay
# probe) on the same timeline as the history and the pinning view: throttled while the view
# is open (MySQL, MariaDB <= 10.5) or after it commits (MariaDB 10.6+), with the update rate
# falling accordingly; the verdict "throttling DML" for those intervals.

scenario=purge-lag-throttle
defaults="seconds=30 limit-at=5 commit-at=0 threads=4 max-lag=100 max-delay-us=2000"
scenario_usage() {
  cat <<'EOF'
usage: purge-lag-throttle.sh (--fixture SERVER | --socket PATH --user USER) [options]
innodb_max_purge_lag with an open read view: DML gets delayed.
  --seconds N       the whole run (30)
  --limit-at N      the lag limit is set and the snapshot opens N s after the start (5)
  --commit-at N     the snapshot commits N s after the start (0: halfway from --limit-at to the end)
  --threads N       sysbench update threads (4)
  --max-lag N       innodb_max_purge_lag while limited (100)
  --max-delay-us N  innodb_max_purge_lag_delay while limited, in microseconds (2000)
EOF
}
. "$(dirname "$0")/lib.sh"

phase_began='' phase_updates=''
updates_now() {  # Handler_update: row updates by any statement, a server-wide running total
  sql "SHOW GLOBAL STATUS LIKE 'Handler_update'" | cut -f 2
}

end_phase() {  # end_phase NAME: print the update rate since the last phase ended
  local now=${EPOCHREALTIME/./} updates
  updates=$(updates_now)
  [ -n "$phase_began" ] &&
    mark "phase $1: $(( (updates - phase_updates) * 1000000 / (now - phase_began) )) updates/s"
  phase_began=$now phase_updates=$updates
}

parse_args "$@"
limit_at=${opt[limit-at]} commit_at=${opt[commit-at]} threads=${opt[threads]}
[ "$commit_at" -gt 0 ] || commit_at=$(( (limit_at + seconds + 1) / 2 ))
check_phases limit-at "$limit_at" commit-at "$commit_at"
[ "${opt[max-lag]}" -ge 1 ] || usage_error "--max-lag wants at least 1 (0 turns the limit off)"
connect

# What the globals were, restored on any exit from here on.
old=$(sql "SELECT @@GLOBAL.innodb_max_purge_lag, @@GLOBAL.innodb_max_purge_lag_delay") ||
  die "cannot read innodb_max_purge_lag (no SUPER or SYSTEM_VARIABLES_ADMIN?)"
read -r old_lag old_delay <<<"$old"
restore_sql="SET GLOBAL innodb_max_purge_lag = $old_lag; SET GLOBAL innodb_max_purge_lag_delay = $old_delay"
[ "$old_lag" -eq 0 ] || mark "note: innodb_max_purge_lag was $old_lag already; the baseline is limited too"

mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version"
start_sampler
start_sysbench oltp_update_non_index "$seconds" --threads="$threads"
mark "updates started: sysbench oltp_update_non_index on sbtest1, pareto, $threads threads"
session_open
tid=$(session_thread)
end_phase start

sleep_until "$limit_at"
end_phase baseline
sql "SET GLOBAL innodb_max_purge_lag = ${opt[max-lag]};
     SET GLOBAL innodb_max_purge_lag_delay = ${opt[max-delay-us]}" || die "SET GLOBAL failed (needs SUPER or SYSTEM_VARIABLES_ADMIN)"
snapshot_open
mark "lag limit set: innodb_max_purge_lag=${opt[max-lag]} innodb_max_purge_lag_delay=${opt[max-delay-us]}; snapshot opened conn=$session_id tid=$tid"

sleep_until "$commit_at"
session_run "COMMIT;" "$(in_s 10)" || die "COMMIT did not return within 10 s"
end_phase "view open"
mark "snapshot committed"

sleep_until "$seconds"
end_phase "after the commit"
stop_sysbench
sql "$restore_sql" && restore_sql='' || die "could not restore innodb_max_purge_lag $old_lag, innodb_max_purge_lag_delay $old_delay"
mark "end: updates stopped, innodb_max_purge_lag=$old_lag innodb_max_purge_lag_delay=$old_delay again"
