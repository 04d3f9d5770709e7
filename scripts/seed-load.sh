#!/usr/bin/env bash
# The classic purge-lag scenario, for the demo: hot-row updates (sysbench, pareto, 4
# threads) while one REPEATABLE READ transaction keeps an old snapshot open and scans
# sbtest1 again and again. Purge cannot remove versions the snapshot may still see, so the
# history list grows and every scan walks longer version chains. Each scan prints a line.
#
# usage: scripts/seed-load.sh SERVER SECONDS   (the server must be started; loads if needed)
set -u
here=$(cd "$(dirname "$0")" && pwd -P)
fixture=$here/fixture.sh

die() {
  echo "seed-load: $*" >&2
  exit 1
}

[ $# -eq 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 SERVER SECONDS" >&2; exit 2; }
server=$1 duration=$2
scan_pause=1  # seconds between snapshot scans

reader_pid='' sysbench_pid='' tmp=''
cleanup() {
  [ -n "$sysbench_pid" ] && kill "$sysbench_pid" 2>/dev/null
  [ -n "$reader_pid" ] && kill "$reader_pid" 2>/dev/null
  [ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

is_loaded() {
  [ "$("$fixture" "$server" sql "SELECT COUNT(*) FROM information_schema.TABLES
        WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME='sbtest1'" 2>/dev/null)" = 1 ]
}

start_reader() {  # one client session fed through a FIFO, so its transaction stays open
  local client sock
  client=$("$fixture" "$server" client) && sock=$("$fixture" "$server" socket) || exit 1
  tmp=$(mktemp -d) && mkfifo "$tmp/sql" || die "cannot create a FIFO"
  "$client" --no-defaults --socket="$sock" --user=innostall --database=sbtest \
    -N -B --unbuffered <"$tmp/sql" &
  reader_pid=$!
  exec 3>"$tmp/sql"
}

send() {  # send SQL to the long transaction; fail if its client has gone away
  kill -0 "$reader_pid" 2>/dev/null && echo "$1" >&3 || die "the snapshot client exited"
}

scan_sql() {  # a full scan reporting how long it took; SYSDATE is read after the scan
  # Forcing the clustered index: the covering index on k is not touched by the updates, so
  # a scan of it would never meet an old version. The PRIMARY rows hold the version chains.
  echo "SET @t := SYSDATE(6);
SELECT CONCAT('snapshot scan $1: avg(k)=', ROUND(AVG(k), 1), ' in ',
              ROUND(TIMESTAMPDIFF(MICROSECOND, @t, SYSDATE(6)) / 1e6, 3), ' s')
  FROM sbtest1 FORCE INDEX (PRIMARY);"
}

"$fixture" "$server" pid >/dev/null 2>&1 || die "$server is not running (scripts/fixture.sh $server start)"
is_loaded || "$fixture" "$server" load || die "step 'load' failed"
# A write to a reader that died raises SIGPIPE: report it instead of dying silently.
trap 'die "the snapshot client exited"' PIPE

start_reader
# The snapshot is taken before the updates start, so every update adds a version it needs.
send "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;"
send "START TRANSACTION WITH CONSISTENT SNAPSHOT;"
send "$(scan_sql 1)"

# One table concentrates the hot rows in the table the snapshot scans.
"$fixture" "$server" sysbench oltp_update_non_index "$duration" --tables=1 --report-interval=5 &
sysbench_pid=$!

scans=1
while kill -0 "$sysbench_pid" 2>/dev/null; do
  sleep "$scan_pause"
  scans=$((scans + 1))
  send "$(scan_sql "$scans")"
done
wait "$sysbench_pid"
status=$?
sysbench_pid=

send "COMMIT;"
exec 3>&-  # end of input: the client finishes its last scan and exits
wait "$reader_pid" || die "the snapshot client failed"
reader_pid=
[ "$status" -eq 0 ] || die "step 'sysbench' failed"
