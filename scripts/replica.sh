#!/usr/bin/env bash
# A real replica of a fixture server (scripts/fixture.sh): SERVER as the primary, with its
# binary log and a TCP port on 127.0.0.1, and SERVER:replica, a copy of its data taken
# after a clean shutdown, replicating from it over that port. Quiet on success; on failure
# one line naming the failed step goes to stderr and the exit status is non-zero.
#
# usage: scripts/replica.sh SERVER ACTION
#   SERVER: mariadb-11.4.5 | mysql-9.7.4 | mysql-8.0.15
#   ACTION: setup [WORKERS]  the pair, replicating; WORKERS parallel appliers (0: the
#                            single SQL thread; MySQL 8.4+ has no such thread, 0 is 1 worker)
#           workers WORKERS  the running replica's appliers set to WORKERS, as setup's
#           wait [SECONDS]   until the replica has applied what the primary had written
#           status           the replica's SHOW SLAVE/REPLICA STATUS, one field a line
#           stop             both stopped, the primary started again as the suite expects it
#
# Replication goes over TCP: MySQL's replica cannot reach its source over a unix socket,
# MariaDB's takes a host and a port only. The copy keeps the primary's users and sbtest.
set -u
top=$(cd "$(dirname "$0")/.." && pwd -P)
fixture=$top/scripts/fixture.sh

usage() {
  sed -n '/^# usage:/,/^[^#]/s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

[ $# -ge 2 ] || usage
server=$1 action=$2
shift 2
replica=$server:replica

# port: the primary's, below the ephemeral range; skip_start: the replica's option that
# keeps its appliers stopped until CHANGE MASTER/SOURCE has run
case $server in
  mariadb-11.4.5) flavour=mariadb port=23114 skip_start=--skip-slave-start ;;
  mysql-8.0.15) flavour=mysql80 port=23080 skip_start=--skip-slave-start ;;
  mysql-9.7.4) flavour=mysql84 port=23097 skip_start=--skip-replica-start ;;
  *) echo "replica: no replica for '$server'" >&2; usage ;;
esac

die() {
  echo "replica: $server: $*" >&2
  exit 1
}

on() {  # on SERVER[:INSTANCE] "STATEMENT": its rows, tab-separated
  "$fixture" "$1" sql "$2"
}

primary_opts=(--skip-networking=0 --port="$port" --bind-address=127.0.0.1 --server-id=1)
case $flavour in  # MariaDB logs nothing without --log-bin, and statements where it may (MIXED)
  mariadb) primary_opts+=(--log-bin=binlog --binlog-format=ROW) ;;
esac

clone() {  # the replica's data: the primary's, copied while both are stopped
  local from to
  from=$("$fixture" "$server" datadir) && to=$("$fixture" "$replica" datadir) || return 1
  "$fixture" "$replica" stop && "$fixture" "$server" stop || return 1
  [ -d "$from/mysql" ] || die "$server has no data yet (scripts/fixture.sh $server start)"
  rm -rf "$to" && mkdir -p "${to%/*}" && cp -a "$from" "$to" || return 1
  # A copy's identity and replication state are the primary's: the server UUID (MySQL refuses
  # a source with its own), its binary logs and any relay log or replica position.
  rm -f "$to"/auto.cnf "$to"/mysqld-auto.cnf "$to"/binlog.* "$to"/*relay-bin* "$to"/master.info \
    "$to"/relay-log.info "$to"/multi-master.info
}

replica_opts() {  # replica_opts WORKERS: the replica's start options
  opts=(--server-id=2 --relay-log=relay-bin --read-only=ON "$skip_start")
  case $flavour in
    mariadb) opts+=(--slave-parallel-threads="$1" --slave-parallel-mode=optimistic) ;;
    mysql80) [ "$1" -gt 0 ] && opts+=(--slave-parallel-type=LOGICAL_CLOCK --slave-preserve-commit-order=ON)
             opts+=(--slave-parallel-workers="$1") ;;
    mysql84) opts+=(--replica-parallel-workers="$(( $1 > 0 ? $1 : 1 ))") ;;
  esac
}

workers() {  # workers WORKERS: the running replica's appliers, as replica_opts would start them
  local n=${1:-0} set
  [[ $n =~ ^[0-9]+$ ]] || usage
  # each server takes the change only with its applier stopped (MariaDB: every replica thread)
  case $flavour in
    mariadb) on "$replica" "STOP SLAVE; SET GLOBAL slave_parallel_threads = $n; START SLAVE" ;;
    mysql80) if [ "$n" -gt 0 ]; then
               set="slave_parallel_type = 'LOGICAL_CLOCK', slave_preserve_commit_order = ON"
             else
               set="slave_preserve_commit_order = OFF, slave_parallel_type = 'DATABASE'"
             fi
             on "$replica" "STOP SLAVE SQL_THREAD; SET GLOBAL $set, slave_parallel_workers = $n;
               START SLAVE SQL_THREAD" ;;
    mysql84) on "$replica" "STOP REPLICA SQL_THREAD; SET GLOBAL replica_parallel_workers = $(( n > 0 ? n : 1 ));
               START REPLICA SQL_THREAD" ;;
  esac
}

replicate() {  # the replication user on the primary; the replica pointed at its position, started
  local file pos gtid
  on "$server" "SET sql_log_bin = 0; CREATE USER IF NOT EXISTS 'repl'@'127.0.0.1' IDENTIFIED BY '';
    GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'" || return 1
  case $flavour in
    mariadb)
      gtid=$(on "$server" "SELECT @@GLOBAL.gtid_binlog_pos") || return 1
      # MariaDB 11.4 verifies the primary's certificate by default: a fixture's is self-signed
      on "$replica" "SET GLOBAL gtid_slave_pos = '$gtid';
        CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = $port, MASTER_USER = 'repl',
          MASTER_PASSWORD = '', MASTER_SSL = 0, MASTER_SSL_VERIFY_SERVER_CERT = 0,
          MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1;
        START SLAVE" ;;
    mysql80)
      read -r file pos _ <<<"$(on "$server" "SHOW MASTER STATUS")" && [ -n "$pos" ] || return 1
      on "$replica" "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = $port, MASTER_USER = 'repl',
          MASTER_PASSWORD = '', MASTER_LOG_FILE = '$file', MASTER_LOG_POS = $pos,
          MASTER_CONNECT_RETRY = 1, GET_MASTER_PUBLIC_KEY = 1;
        START SLAVE" ;;
    mysql84)
      read -r file pos _ <<<"$(on "$server" "SHOW BINARY LOG STATUS")" && [ -n "$pos" ] || return 1
      on "$replica" "CHANGE REPLICATION SOURCE TO SOURCE_HOST = '127.0.0.1', SOURCE_PORT = $port,
          SOURCE_USER = 'repl', SOURCE_PASSWORD = '', SOURCE_LOG_FILE = '$file', SOURCE_LOG_POS = $pos,
          SOURCE_CONNECT_RETRY = 1, GET_SOURCE_PUBLIC_KEY = 1;
        START REPLICA" ;;
  esac
}

status() {  # the replica's own account: SHOW SLAVE/REPLICA STATUS, a field a line
  local statement="SHOW SLAVE STATUS"
  [ "$flavour" = mysql84 ] && statement="SHOW REPLICA STATUS"
  "$("$fixture" "$replica" client)" --no-defaults --socket="$("$fixture" "$replica" socket)" --user=innostall \
    --vertical -e "$statement" | sed -n 's/^ *\([A-Za-z_]*\): /\1: /p'
}

running() {  # its applier runs, and its receiver runs or is connecting
  local state
  case $flavour in
    mariadb) state=$(on "$replica" "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                                    WHERE VARIABLE_NAME = 'Slave_running'") && [ "$state" = ON ] ;;
    *) state=$(on "$replica" "SELECT a.SERVICE_STATE, c.SERVICE_STATE FROM performance_schema.replication_applier_status a,
                              performance_schema.replication_connection_status c") &&
       [[ $state =~ ^ON$'\t'(ON|CONNECTING)$ ]] ;;
  esac
}

wait_applied() {  # wait_applied SECONDS: the replica has applied everything the primary had
  local secs=${1:-60} file pos gtid done
  case $flavour in
    mariadb) gtid=$(on "$server" "SELECT @@GLOBAL.gtid_binlog_pos") &&
             done=$(on "$replica" "SELECT MASTER_GTID_WAIT('$gtid', $secs)") ;;
    mysql80) read -r file pos _ <<<"$(on "$server" "SHOW MASTER STATUS")" &&
             done=$(on "$replica" "SELECT MASTER_POS_WAIT('$file', $pos, $secs)") ;;
    mysql84) read -r file pos _ <<<"$(on "$server" "SHOW BINARY LOG STATUS")" &&
             done=$(on "$replica" "SELECT SOURCE_POS_WAIT('$file', $pos, $secs)") ;;
  esac
  [ "${done:-}" != "" ] && [ "$done" != "-1" ] && [ "$done" != "NULL" ] ||
    die "the replica did not catch up within $secs s ($(status | grep -E 'Last_(IO_|SQL_)?Error: .' | head -n 1))"
}

until_running() {  # until_running STEP: the replica replicating within 30 s, or STEP failed
  local i
  for ((i = 0; i < 120; i++)); do
    running && return 0
    sleep 0.25
  done
  die "step '$1' failed: $(status | grep -E '_Running:|Last_(IO_|SQL_)?Error: .' | tr '\n' ' ')"
}

setup() {
  local workers=${1:-0}
  [[ $workers =~ ^[0-9]+$ ]] || usage
  clone || die "step 'copy the data' failed"
  "$fixture" "$server" start "${primary_opts[@]}" || die "step 'start the primary' failed"
  replica_opts "$workers"
  "$fixture" "$replica" start "${opts[@]}" || die "step 'start the replica' failed"
  replicate || die "step 'start replicating' failed"
  until_running "start replicating"
}

case $action in
  setup) setup "$@" ;;
  workers) workers "$@" || die "step 'set the appliers' failed"
           until_running "set the appliers" ;;
  wait) wait_applied "$@" ;;
  status) status ;;
  stop) "$fixture" "$replica" stop && "$fixture" "$server" stop && "$fixture" "$server" start ;;
  *) echo "replica: unknown action '$action'" >&2; usage ;;
esac
