# Shared by the scenario scripts (sourced, not run): options, the server and how to reach
# it, timestamped markers, a long-lived SQL session, a sampler of the server's own counters,
# and cleanup on exit.
#
# A scenario script sets `scenario` (its name) and `defaults` (its own options with their
# default values, "name=value ..."), defines scenario_usage, sources this file, then calls
# parse_args "$@" and connect.

[ -n "${scenario-}" ] || { echo "lib.sh: sourced by the scenario scripts, not run on its own" >&2; exit 2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(cd "$here/../.." && pwd -P)
fixture_sh=$top/scripts/fixture.sh

# --- output ------------------------------------------------------------------------

start_us=${EPOCHREALTIME/./}  # microseconds since the epoch, when the script started

die() {  # one line, on stderr, and a non-zero exit (the EXIT trap cleans up)
  echo "$scenario: $*" >&2
  exit 1
}

usage_error() {  # bad input: one line, exit 2
  echo "$scenario: $* (--help for usage)" >&2
  exit 2
}

elapsed() {  # seconds since the start, to a tenth
  local us=$((${EPOCHREALTIME/./} - start_us))
  printf '%d.%d' $((us / 1000000)) $((us % 1000000 / 100000))
}

mark() {  # a phase marker on stdout: "scenario: t=12.3 snapshot committed"
  printf 'scenario: t=%s %s\n' "$(elapsed)" "$*"
}

at_t() {  # at_t T: the moment T seconds after the start, in microseconds since the epoch
  echo $((start_us + $1 * 1000000))
}

in_s() {  # in_s N: N seconds from now, in microseconds since the epoch
  echo $((${EPOCHREALTIME/./} + $1 * 1000000))
}

sleep_pid=''
sleep_to() {  # sleep_to US: until that moment (microseconds since the epoch); at once if past
  local left=$(($1 - ${EPOCHREALTIME/./}))
  [ "$left" -gt 0 ] || return 0
  # In the background, waited for: a signal's trap runs at once, not when sleep ends.
  sleep "$((left / 1000000)).$(printf '%06d' $((left % 1000000)))" &
  sleep_pid=$!
  wait "$sleep_pid"
  sleep_pid=''
}

sleep_until() {  # sleep_until T: until T seconds (a whole number) after the start
  sleep_to "$(at_t "$1")"
}

# --- options -----------------------------------------------------------------------

server='' sock='' user='' client='' sysbench_bin=sysbench seconds='' database=sbtest
declare -A opt  # the scenario's own options, from `defaults`

flush_marks_until() {  # flush_marks_until T: a marker of the script's flush_state each second until T
  local now next
  now=$(elapsed)
  next=$(( ${now%.*} + 1 ))
  while [ "$next" -le "$1" ]; do
    sleep_until "$next"
    mark "flush $(flush_state)"
    next=$((next + 1))
  done
}

common_help() {
  cat <<'EOF'
Server (one of):
  --fixture SERVER    a fixture server of scripts/fixture.sh (mariadb-11.4.5, mariadb-10.11.5,
                      mariadb-10.2.11, mysql-8.0.15, mysql-9.7.4); it must be running
  --socket PATH --user USER [--client PATH] [--sysbench PATH]
                      any MySQL or MariaDB server on a unix socket; the client defaults to
                      mariadb or mysql on PATH, sysbench to sysbench on PATH; a password, if
                      USER needs one, is read from the environment variable MYSQL_PWD
  --database NAME     the sysbench schema (sbtest); sbtest1 is created there if missing
EOF
}

is_number() { [[ $1 =~ ^[0-9]+$ ]]; }

check_phases() {  # check_phases FIRST_OPTION FIRST SECOND_OPTION SECOND: both inside the run, in order
  [ "$2" -lt "$4" ] && [ "$4" -lt "$seconds" ] ||
    usage_error "want --$1 < --$3 < --seconds, not $2, $4, $seconds"
  [ "${opt[threads]}" -ge 1 ] || usage_error "--threads wants at least 1"
}

parse_args() {
  local name value
  for pair in $defaults; do opt[${pair%%=*}]=${pair#*=}; done
  while [ $# -gt 0 ]; do
    case $1 in
      -h|--help) scenario_usage; echo; common_help; exit 0 ;;
      --*=*) name=${1%%=*} value=${1#*=}; shift ;;
      --*) name=$1; [ $# -ge 2 ] || usage_error "$1 needs a value"; value=$2; shift 2 ;;
      *) usage_error "unexpected argument '$1'" ;;
    esac
    case $name in
      --fixture) server=$value ;;
      --socket) sock=$value ;;
      --user) user=$value ;;
      --client) client=$value ;;
      --sysbench) sysbench_bin=$value ;;
      --database) database=$value ;;
      --seconds) is_number "$value" && [ "$value" -ge 1 ] || usage_error "--seconds wants a whole number >= 1, not '$value'"
                 seconds=$value ;;
      *) name=${name#--}
         [ -n "${opt[$name]+set}" ] || usage_error "unknown option --$name"
         is_number "$value" || usage_error "--$name wants a whole number, not '$value'"
         opt[$name]=$value ;;
    esac
  done
  seconds=${seconds:-${opt[seconds]}}
  if [ -n "$server" ]; then
    [ -z "$sock$user" ] || usage_error "--fixture and --socket/--user exclude each other"
  else
    [ -n "$sock" ] && [ -n "$user" ] || usage_error "name a server: --fixture SERVER, or --socket PATH and --user USER"
  fi
}

# --- the server ----------------------------------------------------------------------

# Clients calling a procedure in the background: their pids in updaters, and the start of
# their statement as the processlist shows it in updaters_call. A script that sets
# exit_hook=stop_updaters has them ended at an early exit, and their calls on the server.
updaters=() updaters_call=""
stop_updaters() {
  local pid
  for pid in "${updaters[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${updaters[@]}"; do wait "$pid" 2>/dev/null; done
  [ "${#updaters[@]}" -gt 0 ] && [ -n "$updaters_call" ] || return 0
  client_cmd -e "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE '$updaters_call%'" 2>/dev/null |
    while read -r id; do client_cmd -e "KILL QUERY $id" 2>/dev/null; done
}

connect_replica() {  # --fixture SERVER:replica: sets primary, connects, dies where it does not replicate
  [[ $server == *:replica ]] || usage_error "name the replica: --fixture SERVER:replica (scripts/replica.sh SERVER setup first)"
  primary=${server%%:*}
  connect
  [ -n "$(sql "SHOW ALL SLAVES STATUS" 2>/dev/null || sql "SHOW REPLICA STATUS")" ] ||
    die "$server is not replicating (scripts/replica.sh $primary setup)"
}

applied() {  # the events the replica says it applied (MariaDB), or "" where it does not say
  client_cmd --column-names -e "SHOW ALL SLAVES STATUS\G" 2>/dev/null | sed -n 's/^ *Executed_log_entries: //p'
}

connect() {  # find the client and sysbench, check the server answers and has a sbtest1 table
  if [ -n "$server" ]; then
    sock=$("$fixture_sh" "$server" socket 2>/dev/null) && client=$("$fixture_sh" "$server" client) ||
      die "unknown fixture server '$server' (see scripts/fixture.sh)"
    "$fixture_sh" "$server" pid >/dev/null 2>&1 ||
      die "$server is not running (scripts/fixture.sh $server start)"
    user=innostall
  else
    [ -S "$sock" ] || die "no unix socket at $sock"
    if [ -z "$client" ]; then
      client=$(command -v mariadb || command -v mysql) || die "no mariadb or mysql client on PATH (--client PATH)"
    fi
    [ -x "$client" ] || die "client $client is not executable"
    command -v "$sysbench_bin" >/dev/null || die "no sysbench at '$sysbench_bin' (--sysbench PATH)"
    sysbench_conn=(--db-driver=mysql --mysql-socket="$sock" --mysql-user="$user" --mysql-db="$database")
    [ -n "${MYSQL_PWD-}" ] && sysbench_conn+=(--mysql-password="$MYSQL_PWD")
  fi
  client_cmd -e "SELECT 1" >/dev/null 2>&1 || die "cannot log in as $user on $sock"
  has_table || load_table || die "could not create $database.sbtest1 with sysbench"
  flavour=$(sql "SELECT IF(VERSION() LIKE '%MariaDB%', 'mariadb', 'mysql')")
  version=$(sql "SELECT VERSION()")
  metrics_on=$(client_cmd -e "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'information_schema'
                 AND TABLE_NAME = 'INNODB_METRICS' AND COLUMN_NAME IN ('STATUS', 'ENABLED')")
}

server_pid() {  # the server's process id: from fixture.sh, or the process listening on the socket
  if [ -n "$server" ]; then
    "$fixture_sh" "$server" pid
  else
    ss -Hxlp "src = $sock" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1
  fi
}

slow_disk_pid=''
slow_disk() {  # slow_disk IOPS: the server's writes to its data directory's disk at most IOPS a
  # second (cgroup v1 blkio, scripts/slow_disk.py) until slow_disk_end or the exit
  local pid dir
  pid=$(server_pid) && [ -n "$pid" ] || die "cannot find the server's process id (to slow its disk)"
  dir=/proc/$pid/root$(sql "SELECT @@datadir")  # the server's own root: a container's, a chroot's
  python3 "$top/scripts/slow_disk.py" "$pid" "$dir" "$1" >"$tmp/slow_disk.log" 2>&1 &
  slow_disk_pid=$!
  for ((i = 0; i < 50; i++)); do
    [ -s "$tmp/slow_disk.log" ] && break
    sleep 0.1
  done
  kill -0 "$slow_disk_pid" 2>/dev/null || { slow_disk_pid=''; die "$(tail -n 1 "$tmp/slow_disk.log")"; }
}

slow_disk_end() {  # the limit lifted (the writes it held go at once)
  [ -n "$slow_disk_pid" ] || return 0
  kill "$slow_disk_pid" 2>/dev/null
  wait "$slow_disk_pid" 2>/dev/null
  slow_disk_pid=''
}

client_cmd() {  # the client on the server's socket, as the scenario's user, quiet and tab-separated
  "$client" --no-defaults --socket="$sock" --user="$user" -N -B "$@"
}

sql() {  # sql STATEMENT: run it in the scenario's schema, print the result rows
  client_cmd --database="$database" -e "$1"
}

has_table() {
  [ "$(client_cmd -e "SELECT COUNT(*) FROM information_schema.TABLES
        WHERE TABLE_SCHEMA='$database' AND TABLE_NAME='sbtest1'" 2>/dev/null)" = 1 ]
}

load_table() {  # one sysbench table of 20000 rows, as the fixtures load them
  mark "loading $database.sbtest1 (20000 rows)"
  if [ -n "$server" ]; then
    "$fixture_sh" "$server" load 1 20000
  else
    client_cmd -e "CREATE DATABASE IF NOT EXISTS \`$database\`" &&
      "$sysbench_bin" oltp_read_write "${sysbench_conn[@]}" --tables=1 --table-size=20000 prepare \
        >"$tmp/prepare.log" 2>&1 || { tail -n 3 "$tmp/prepare.log" >&2; return 1; }
  fi
}

sysbench_conn=()  # --socket: how sysbench reaches the server (fixture.sh knows for a fixture)

sysbench_pids=()
start_sysbench() {  # start_sysbench TEST SECONDS [options]: in the background, its output in the log
  local test=$1 secs=$2 size
  shift 2
  # One table: the hot rows are all in the table the scans read.
  if [ -n "$server" ]; then
    # fixture.sh execs sysbench (in the server's root, if it has one), so $! is sysbench.
    "$fixture_sh" "$server" sysbench "$test" "$secs" --tables=1 "$@" >>"$tmp/sysbench.log" 2>&1 &
  else
    size=$(sql "SELECT MAX(id) FROM sbtest1") || die "cannot read the size of $database.sbtest1"
    "$sysbench_bin" "$test" "${sysbench_conn[@]}" --tables=1 --table-size="$size" --threads=4 \
      --rand-type=pareto --time="$secs" "$@" run >>"$tmp/sysbench.log" 2>&1 &
  fi
  sysbench_pids+=($!)
}

stop_sysbench() {  # SIGTERM: sysbench stops at once (it prints no summary then)
  local pid
  for pid in "${sysbench_pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${sysbench_pids[@]}"; do wait "$pid" 2>/dev/null; done
  sysbench_pids=()
}

# --- the server's own counters -------------------------------------------------------

enabled() {  # the SQL that tells whether an INNODB_METRICS counter is on: STATUS (MySQL), ENABLED (MariaDB 10.3+)
  [ "$metrics_on" = ENABLED ] && echo "ENABLED = 1" || echo "STATUS = 'enabled'"
}

history_len() {  # the history list length: INNODB_METRICS, or SHOW ENGINE INNODB STATUS if that is off
  local n
  n=$(client_cmd -e "SELECT IF($(enabled), COUNT, NULL) FROM information_schema.INNODB_METRICS
                     WHERE NAME = 'trx_rseg_history_len'") || return 1
  if [ "$n" = NULL ] || [ -z "$n" ]; then
    n=$(client_cmd -e "SHOW ENGINE INNODB STATUS" | grep -o 'History list length [0-9]*' | grep -o '[0-9]*$')
  fi
  echo "${n:-unknown}"
}

declare -A last  # the sampler's previous counter values, and their time (last[us])
sample_once() {  # "history=N purge_pages/s=N purge_batches/s=N updates/s=N dml_delay_us=N"
  local name value now key out
  declare -A v
  while IFS=$'\t' read -r name value; do v[$name]=$value; done < <(client_cmd -e "
    SELECT NAME, IF($(enabled), COUNT, NULL) FROM information_schema.INNODB_METRICS
     WHERE NAME IN ('trx_rseg_history_len', 'purge_undo_log_pages', 'purge_invoked');
    -- The delay InnoDB asks of DML, while a lag limit is set (MariaDB 10.6+ keeps a stale value after).
    SELECT NAME, COUNT FROM information_schema.INNODB_METRICS
     WHERE NAME = 'purge_dml_delay_usec' AND $(enabled) AND @@GLOBAL.innodb_max_purge_lag > 0;
    SHOW GLOBAL STATUS LIKE 'Handler_update'" 2>/dev/null)
  now=${EPOCHREALTIME/./}
  [ "${v[trx_rseg_history_len]:-NULL}" = NULL ] && v[trx_rseg_history_len]=$(history_len)
  out="history=${v[trx_rseg_history_len]}"
  # Running totals become rates over the time since the last sample; a counter that is off
  # (NULL) or a first sample gives none.
  for key in purge_undo_log_pages:purge_pages purge_invoked:purge_batches Handler_update:updates; do
    value=${v[${key%%:*}]:-NULL}
    if [[ $value =~ ^[0-9]+$ && -n ${last[${key%%:*}]-} ]]; then
      out+=" ${key#*:}/s=$(( (value - last[${key%%:*}]) * 1000000 / (now - last[us]) ))"
    fi
    last[${key%%:*}]=$value
  done
  last[us]=$now
  [ "${v[purge_dml_delay_usec]:-NULL}" = NULL ] || out+=" dml_delay_us=${v[purge_dml_delay_usec]}"
  echo "$out"
}

sampler_pid=''
start_sampler() {  # a line "scenario: t=3.0 sample history=..." at every whole second
  (
    k=$(( (${EPOCHREALTIME/./} - start_us) / 1000000 + 1 ))  # the next whole second
    while :; do
      sample_once >"$tmp/sample"  # not in $(...): it keeps the last values in this shell
      mark "sample $(<"$tmp/sample")"
      sleep_until $k
      k=$((k + 1))
    done
  ) &
  sampler_pid=$!
}

# --- a long-lived session: one client fed through a FIFO, so its transaction stays open ---

session_pid='' session_id='' sync_n=0 pending='' reply=''
session_open() {
  mkfifo "$tmp/session.in" "$tmp/session.out" || die "cannot create FIFOs in $tmp"
  # --force: a statement killed at a phase boundary (KILL QUERY) must not end the session.
  client_cmd --database="$database" --unbuffered --force <"$tmp/session.in" >"$tmp/session.out" \
    2>>"$tmp/session.err" &
  session_pid=$!
  exec 3>"$tmp/session.in" 4<"$tmp/session.out"
  # A write to the session's client after it died raises SIGPIPE: say so, not die silently.
  trap 'die "the session client exited ($(tail -n 1 "$tmp/session.err"))"' PIPE
  session_run "SELECT CONNECTION_ID();" "$(in_s 10)" || die "the session did not answer within 10 s"
  session_id=$reply
}

session_run() {  # session_run SQL DEADLINE_US: run SQL, its rows in $reply; 1 if not ended by then
  local token="scenario-sync-$((++sync_n))"
  kill -0 "$session_pid" 2>/dev/null || die "the session's client exited ($(tail -n 1 "$tmp/session.err"))"
  printf '%s\nSELECT '\''%s'\'';\n' "$1" "$token" >&3
  session_wait "$token" "$2"
}

session_lost=''  # set once the server ended the session's connection (KILL: innostall verify does)
session_wait() {  # session_wait TOKEN DEADLINE_US: collect rows in $reply until TOKEN; 1 at the
  local line left  # deadline, 2 once the server has ended the session's connection
  reply=''
  pending=$1
  while :; do
    left=$(( ($2 - ${EPOCHREALTIME/./}) / 1000 ))
    [ "$left" -gt 0 ] || return 1
    [ "$left" -lt 500 ] || left=500  # a look at the connection every half second
    if IFS= read -r -t "$((left / 1000)).$(printf '%03d' $((left % 1000)))" -u 4 line; then
      [ "$line" = "$1" ] && { pending=''; return 0; }
      reply=${reply:+$reply$'\n'}$line
    elif ! kill -0 "$session_pid" 2>/dev/null; then
      die "the session's client exited ($(tail -n 1 "$tmp/session.err"))"
    elif [ -n "$session_id" ] && ! session_connected; then
      session_lost=1 pending=''
      return 2
    fi
  done
}

session_connected() {  # whether the server still has the session's connection (MySQL is asked
  local table=performance_schema.threads id=PROCESSLIST_ID  # there: a read of its PROCESSLIST writes a page)
  [ "$flavour" = mariadb ] && table=information_schema.PROCESSLIST id=ID
  [ "$(sql "SELECT COUNT(*) FROM $table WHERE $id = $session_id" 2>/dev/null)" != 0 ]
}

session_interrupt() {  # end the session's running statement (its transaction stays open) and wait
  [ -n "$pending" ] || return 0
  client_cmd -e "KILL QUERY $session_id" 2>>"$tmp/session.err"
  session_wait "$pending" "$(in_s 30)"
  case $? in
    1) die "the session's statement did not end within 30 s of KILL QUERY" ;;
  esac
}

snapshot_open() {  # a REPEATABLE READ transaction with its read view open from now on
  session_run "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;
START TRANSACTION WITH CONSISTENT SNAPSHOT;" "$(in_s 10)" || die "the snapshot did not open within 10 s"
}

seconds_since() {  # seconds_since US: the time since that moment, to a hundredth
  local us=$((${EPOCHREALTIME/./} - $1))
  printf '%d.%02d' $((us / 1000000)) $((us % 1000000 / 10000))
}

scans=0  # the scans scans_until ran
scans_until() {  # scans_until T SQL PAUSE: scans PAUSE s apart; the one running at T is interrupted
  local n=0 end next began
  end=$(at_t "$1")
  while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
    n=$((n + 1))
    began=${EPOCHREALTIME/./}
    session_run "$2" "$end"
    case $? in
    0)
      mark "scan $n ended: $reply in $(seconds_since "$began") s"
      next=$(in_s "$3")
      sleep_to $((next < end ? next : end)) ;;
    2)
      mark "snapshot ended: the server ended its connection (KILL)"
      break ;;
    *)
      session_interrupt
      [ -n "$session_lost" ] && { mark "snapshot ended: the server ended its connection (KILL)"; break; }
      mark "scan $n interrupted (KILL QUERY) to commit on time" ;;
    esac
  done
  scans=$n
}

session_thread() {  # the OS thread id serving the session, where the server tells it (else empty)
  if [ "$flavour" = mariadb ]; then
    sql "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = $session_id" 2>/dev/null
  else
    sql "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = $session_id" 2>/dev/null
  fi
}

session_close() {  # ROLLBACK whatever is open and end the client; kill it if it does not end
  [ -n "$session_pid" ] || return 0
  trap '' PIPE  # its client may be gone already (a stopped server): nothing left to tell it
  printf 'ROLLBACK;\n' >&3 2>/dev/null
  exec 3>&- 4<&-
  local i
  for ((i = 0; i < 50; i++)); do kill -0 "$session_pid" 2>/dev/null || break; sleep 0.1; done
  kill "$session_pid" 2>/dev/null
  wait "$session_pid" 2>/dev/null
  session_pid=''
}

# --- cleanup ---------------------------------------------------------------------------

restore_sql=''  # statements that undo what the scenario changed (SET GLOBAL ...), run at exit
exit_hook=''    # a function the scenario wants run last at exit

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  [ -n "$sleep_pid" ] && kill "$sleep_pid" 2>/dev/null
  [ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null && wait "$sampler_pid" 2>/dev/null
  stop_sysbench
  slow_disk_end
  if [ -n "$session_pid" ] && [ -n "$session_id" ]; then
    # A statement may still run (a scan): end it, so ROLLBACK is not queued behind it.
    client_cmd -e "KILL QUERY $session_id" >/dev/null 2>&1
  fi
  session_close
  if [ -n "$restore_sql" ]; then
    sql "$restore_sql" || echo "$scenario: could not restore: $restore_sql" >&2
  fi
  [ -n "$exit_hook" ] && "$exit_hook"
  [ -n "${tmp-}" ] && rm -rf "$tmp"
  exit "$status"
}

tmp=$(mktemp -d "/tmp/$scenario.XXXXXX") || { echo "$scenario: cannot create a temporary directory" >&2; exit 1; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
