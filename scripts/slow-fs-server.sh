#!/usr/bin/env bash
# A private fixture server whose data directory is on slow_fs (scripts/slow_fs.c): every
# read of its files waits READ_DELAY_US first, reads made at once waiting side by side, as
# on a disk with read latency and room for many reads in flight; and every write but the
# redo log's WRITE_DELAY_US (0 when not given). Its instance is
# SERVER:slowfs (scripts/fixture.sh: socket, sql, client, stop work on it as on any
# instance), its files in build/fixtures/SERVER/slowfs/backing, mounted on .../slowfs/data.
# Quiet on success; one line naming the failed step otherwise.
#
# usage: scripts/slow-fs-server.sh SERVER start READ_DELAY_US[,WRITE_DELAY_US] [mysqld options]
#        scripts/slow-fs-server.sh SERVER stop     (the server, then the file system)
#
# The server is started with the fixtures' options, then InnoDB's that suit the file
# system: simulated AIO (each page read a synchronous read in the thread that needs the
# page, so a thread's waits are its own), no doublewrite; the caller's options come last.
set -u
top=$(cd "$(dirname "$0")/.." && pwd -P)
build=$(realpath -m "${BUILD:-$top/build}")
[ $# -ge 2 ] || { sed -n 's/^# \(usage:\|      \) /\1 /p' "$0" >&2; exit 2; }
server=$1 action=$2
shift 2
fixture=$top/scripts/fixture.sh
fx=$build/fixtures/$server
backing=$fx/slowfs/backing mnt=$fx/slowfs/data run=$fx/slowfs/run
bin=$build/slow_fs log=$fx/fixture-slowfs.log

die() { echo "slow-fs-server: $server: $*" >&2; exit 1; }
step() {  # step NAME CMD...: CMD's output in the log, die naming NAME if it fails
  local name=$1; shift
  echo "== $name" >>"$log"
  "$@" >>"$log" 2>&1 || die "step '$name' failed (see $log)"
}
mounted() { grep -q " $mnt fuse" /proc/mounts; }

build_fs() {  # rebuilt when its source is newer
  [ "$bin" -nt "$top/scripts/slow_fs.c" ] && return 0
  cc -O2 -Wall $(pkg-config --cflags fuse3) "$top/scripts/slow_fs.c" -o "$bin" $(pkg-config --libs fuse3)
}

init_backing() {  # a data directory of its own, with the fixtures' innostall user
  local dist=$fx/dist
  rm -rf "$backing" && mkdir -p "$backing" || return 1
  (cd "$dist" && scripts/mariadb-install-db --no-defaults --basedir="$dist" --datadir="$backing" \
     --skip-name-resolve --user=root --auth-root-authentication-method=normal --skip-test-db) || return 1
  # --bootstrap skips the grant tables until FLUSH PRIVILEGES loads them
  "$dist/bin/mariadbd" --no-defaults --basedir="$dist" --datadir="$backing" --user=root --bootstrap <<'EOF'
FLUSH PRIVILEGES;
CREATE DATABASE IF NOT EXISTS sbtest;
CREATE USER 'innostall'@'localhost' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO 'innostall'@'localhost' WITH GRANT OPTION;
EOF
  [ $? -eq 0 ] && touch "$backing/.initialised"  # a half-made directory is made again
}

mount_fs() {  # mount_fs READ_DELAY_US WRITE_DELAY_US: slow_fs in the background, until the mount is there
  local i
  mkdir -p "$mnt" "$run" || return 1
  setsid "$bin" "$backing" "$mnt" "$1" "$2" </dev/null >>"$log" 2>&1 &
  echo $! >"$run/slow_fs.pid"
  echo "$1,$2" >"$run/delays"
  for ((i = 0; i < 50; i++)); do mounted && return 0; sleep 0.1; done
  return 1
}

start() {
  local delays=${1:-}
  [[ $delays =~ ^[0-9]+(,[0-9]+)?$ ]] || die "start wants READ_DELAY_US[,WRITE_DELAY_US] (microseconds)"
  shift
  [[ $delays = *,* ]] || delays=$delays,0
  [[ $server = mariadb-* ]] || die "only the MariaDB fixtures (its install script and --bootstrap)"
  "$fixture" "$server" fetch || exit 1
  # mounted with other delays (an earlier caller's): mounted again with these
  if mounted && [ "$(cat "$run/delays" 2>/dev/null)" != "$delays" ]; then stop; fi
  : >"$log"
  step "build slow_fs" build_fs
  if ! mounted; then
    [ -e "$backing/.initialised" ] || step "initialise the data directory" init_backing
    step "mount slow_fs" mount_fs "${delays%,*}" "${delays#*,}"
  fi
  "$fixture" "$server:slowfs" start --innodb-use-native-aio=0 --innodb-doublewrite=0 "$@"
}

stop() {
  local pid i
  "$fixture" "$server:slowfs" stop || exit 1
  mounted || return 0
  pid=$(cat "$run/slow_fs.pid" 2>/dev/null)
  if [ -n "$pid" ] && grep -q slow_fs "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid"  # slow_fs unmounts as it exits
    for ((i = 0; i < 50; i++)); do mounted || return 0; sleep 0.1; done
  fi
  umount "$mnt" || die "could not unmount $mnt"
}

case $action in
  start) start "$@" ;;
  stop) stop ;;
  *) die "unknown action '$action' (start, stop)" ;;
esac
