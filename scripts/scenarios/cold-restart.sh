#!/usr/bin/env bash
# cold-restart: purge after a restart, with a cold buffer pool and a large history.
#
# Reproduces the "debt" of the history list coming due after a restart (seeds: "Innodb
# Transaction History Often Hides Dangerous 'Debt'", and Zaitsev's MVCC article on undo
# that does not fit in memory): the history a long snapshot kept from purge survives a crash
# or a fast shutdown, and after the restart purge has to read every undo page of it from disk,
# through a buffer pool too small and too cold to hold them.
#
# What leaves a large history after a restart: a stop that gives purge no time. Once the
# shutdown has closed the connections (the snapshot with them), purge may run until InnoDB
# stops it, and with a warm buffer pool it clears tens of thousands of transactions a
# second. Measured here (history before the stop -> at the first query after the restart):
#   SIGKILL (--kill 1, the default: a crash)   MySQL 8.0.15 21475 -> 21478, 9.7.4 26541 -> 26547
#   innodb_fast_shutdown=2 (--kill 0)          MariaDB 10.2.11 74691 -> 74691, 10.11.5 117419 ->
#                                              117419, 11.4.5 115853 -> 114330, MySQL 8.0.15
#                                              26829 -> 26813; MySQL 9.7.4 once 55731 -> 5,
#                                              once 13688 -> 11574
#   innodb_fast_shutdown=1 (the default)       MariaDB 11.4.5 58510 -> 56469; MySQL 8.0.15 once
#                                              32680 -> 6961, once 16783 -> 16767
#   innodb_fast_shutdown=0                     purges it all first: 71835 -> 0 (MariaDB 11.4.5)
# The snapshot stays open up to the stop. The buffer pool is not dumped at shutdown nor
# loaded at startup, and the server reads with O_DIRECT, so the undo pages come from the
# disk, not from the buffer pool or the OS page cache. The table (--rows) is far larger
# than the buffer pool and the updates change k at uniformly random rows, so purging each
# one reads an undo page, a clustered index page and a k_1 page that are not cached.
#
# Timeline (markers on stdout):
#   build        updates (sysbench oltp_update_index, uniform) under an open consistent
#                snapshot for --build s: "scenario: t=0.3 snapshot opened ..."
#   stop         "scenario: t=20.4 updates ended; stopping with SIGKILL, the snapshot open, history=N"
#   restart      innodb_buffer_pool_size=--pool-mb M, cold:
#                "scenario: t=24.0 restarted pid=1234 history=N" (as soon as it answers)
#   drain        a sample every second while purge works through the history, for up to
#                --seconds s: "scenario: t=31.2 history drained: N to M, P undo pages
#                purged, in 7.2 s" or "history not drained: ..."
#   restore      (--restore 1) the server is restarted with the fixture's default options
# A recorder can attach at the "restarted pid=" marker (innostall record --pid PID).
#
# What a DBA should see in innostall's report of the drain: no pinning view, purge batches
# full of pages, and their time going to page reads (undo pages read by purge, its
# batches I/O-bound) rather than CPU or latches; the history falling: "catching up,
# I/O-bound".
#
# It needs a fixture (--fixture): it stops and starts the server through scripts/fixture.sh.

scenario=cold-restart
defaults="seconds=60 build=20 threads=4 rows=200000 pool-mb=8 kill=1 fast-shutdown=2 restore=1"
scenario_usage() {
  cat <<'EOF'
usage: cold-restart.sh --fixture SERVER [options]
A large history kept by a snapshot, a crash, and purge after a cold restart.
  --build N     seconds of updates under the open snapshot (20)
  --threads N   sysbench update threads (4)
  --rows N      rows of sbtest1, far more than the buffer pool holds; a smaller sbtest is
                loaded anew with one table of N rows (200000, about 50 MB)
  --pool-mb N   innodb_buffer_pool_size after the restart, in MB (8)
  --seconds N   how long to watch purge drain the history after the restart (60)
  --kill N      1: stop with SIGKILL, a crash, which keeps the whole history (1);
                0: a shutdown, with --fast-shutdown
  --fast-shutdown N  innodb_fast_shutdown for a shutdown (--kill 0): 2 keeps most of the
                history, 1 lets purge run while the server shuts down, 0 purges it all (2)
  --restore N   1: restart the server with the fixture's default options at the end (1)
EOF
}
. "$(dirname "$0")/lib.sh"

restarted=no
restore_server() {  # at exit: the fixture's default options again
  [ "$restarted" = yes ] && [ "${opt[restore]}" = 1 ] || return 0
  mark "restoring: restarting $server with the fixture's default options"
  "$fixture_sh" "$server" stop && "$fixture_sh" "$server" start >/dev/null ||
    echo "$scenario: could not restart $server with its default options" >&2
}

stop_cold() {  # stop with the snapshot still open, no buffer pool dump
  local pid
  if [ "${opt[kill]}" = 1 ]; then
    pid=$("$fixture_sh" "$server" pid) && kill -KILL "$pid" || die "could not kill $server"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  else
    sql "SET GLOBAL innodb_fast_shutdown = ${opt[fast-shutdown]}; SET GLOBAL innodb_buffer_pool_dump_at_shutdown = OFF" ||
      die "cannot set innodb_fast_shutdown"
    "$fixture_sh" "$server" stop || die "could not stop $server"
  fi
  # The server closed the session's connection: its client has ended or will.
  session_close 2>/dev/null
}

start_cold() {
  "$fixture_sh" "$server" start --innodb-buffer-pool-size="${opt[pool-mb]}M" \
    --innodb-buffer-pool-load-at-startup=OFF --innodb-flush-method=O_DIRECT ||
    die "could not start $server with a ${opt[pool-mb]} MB buffer pool"
  restarted=yes
}

purged_pages() {  # undo pages purge has handled since the start (INNODB_METRICS, on in the fixtures)
  client_cmd -e "SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'purge_undo_log_pages'"
}

watch_drain() {  # watch_drain FROM: until purge is done with the history, or --seconds pass
  # Done: the history is under 1% of FROM, or purge handled pages and then none for 3 s
  # (MySQL 9.x and MariaDB 10.11 lower trx_rseg_history_len only when they truncate the
  # history, so it can stay high for a while after purge has finished).
  local from=$1 began=${EPOCHREALTIME/./} until h pages first last idle_since=''
  until=$(in_s "$seconds")
  first=$(purged_pages) last=$first
  while :; do
    h=$(history_len) pages=$(purged_pages)
    if [ "$pages" != "$last" ]; then idle_since='' last=$pages
    elif [ -z "$idle_since" ]; then idle_since=${EPOCHREALTIME/./}
    fi
    if [ "$h" -le $((from / 100)) ] ||
       { [ "$pages" -gt "$first" ] && [ -n "$idle_since" ] && [ $((${EPOCHREALTIME/./} - idle_since)) -ge 3000000 ]; }; then
      mark "history drained: $from to $h, $((pages - first)) undo pages purged, in $(seconds_since "$began") s"
      return 0
    fi
    [ "${EPOCHREALTIME/./}" -lt "$until" ] || break
    sleep 0.5
  done
  mark "history not drained: $from to $h, $((pages - first)) undo pages purged, in $seconds s"
}

parse_args "$@"
[ -n "$server" ] || usage_error "it restarts the server, so it needs --fixture SERVER"
[ "${opt[build]}" -ge 1 ] || usage_error "--build wants at least 1 s"
[ "${opt[pool-mb]}" -ge 5 ] || usage_error "--pool-mb wants at least 5 (the servers' minimum)"
[ "${opt[fast-shutdown]}" -le 2 ] || usage_error "--fast-shutdown wants 0, 1 or 2"
[ "${opt[kill]}" -le 1 ] && [ "${opt[restore]}" -le 1 ] || usage_error "--kill and --restore want 0 or 1"
connect
exit_hook=restore_server
rows=$(sql "SELECT COALESCE(MAX(id), 0) FROM sbtest1")
if [ "$rows" -lt "${opt[rows]}" ]; then
  mark "loading sbtest anew: one table of ${opt[rows]} rows (sbtest1 had $rows)"
  "$fixture_sh" "$server" load 1 "${opt[rows]}" || die "could not load ${opt[rows]} rows"
fi

mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version"
start_sampler
session_open
snapshot_open
mark "snapshot opened conn=$session_id tid=$(session_thread) history=$(history_len)"
# Updates of k, spread evenly: purging each one deletes an entry of index k_1, so purge
# reads the undo page, the clustered index page and the k_1 page of a random row.
start_sysbench oltp_update_index "${opt[build]}" --threads="${opt[threads]}" --rand-type=uniform
mark "updates started: sysbench oltp_update_index on sbtest1, uniform, ${opt[threads]} threads, for ${opt[build]} s"
wait "${sysbench_pids[@]}"
sysbench_pids=()
before=$(history_len)
how="innodb_fast_shutdown=${opt[fast-shutdown]}"
[ "${opt[kill]}" = 1 ] && how="SIGKILL"
mark "updates ended; stopping with $how, the snapshot open, history=$before"

kill "$sampler_pid" 2>/dev/null; wait "$sampler_pid" 2>/dev/null; sampler_pid=''
stop_cold
mark "stopped"
start_cold
after=$(history_len)
pool=$(sql "SELECT CONCAT(ROUND(@@innodb_buffer_pool_size / 1048576), 'M')")
mark "restarted pid=$("$fixture_sh" "$server" pid) innodb_buffer_pool_size=$pool cold history=$after"
start_sampler
watch_drain "$after"
