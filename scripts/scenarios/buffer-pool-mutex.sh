#!/usr/bin/env bash
# buffer-pool-mutex: one writer, as a replica's applier, while another session keeps taking
# the buffer pool's mutex for long stretches.
#
# Reproduces Pythian's "Replication lag caused by the LRU dump": on a replica, the LRU dump
# held the buffer pool mutex while it walked the LRU list, and the single-threaded applier's
# writes, which need that mutex whenever they take a free page, stalled behind it (and SHOW
# ENGINE INNODB STATUS with them). Reading information_schema.INNODB_BUFFER_PAGE_LRU walks
# the same list under the same mutex (MariaDB: buf_pool.mutex; MySQL 8.0: the LRU list
# mutex), for as long as the list is, so a table larger than the buffer pool is loaded
# first to fill it. The writer inserts, so it keeps taking free pages.
#
# Timeline (seconds from the start; markers on stdout):
#   before 0     `fill` grows to --fill-rows rows (~280 B each) unless it has them already
#   0            the writer starts:   "scenario: t=0.1 writer started: sysbench oltp_insert, 1 thread"
#   --scan-at    the LRU reads start: "scenario: t=4.0 LRU reads started (20480 pages)"
#                each one, --scan-pause ms apart: "scenario: t=4.3 LRU read 1 took 0.21 s"
#   --seconds    both stop:           "scenario: t=16.0 end: 40 LRU reads, writer 801 inserts/s before, 602 during"
#
# What a DBA should see in innostall's report: the buffer pool's mutex among the contended
# latches, its waiters the writer's free-page allocation (buf_LRU_get_free_block), its
# holder (with record --holders) the LRU read (i_s_innodb_fill_buffer_lru, a user
# connection); the writer's latch wait time starting when the reads start.

scenario=buffer-pool-mutex
defaults="seconds=16 scan-at=4 scan-pause=100 fill-rows=1048576 threads=1"
scenario_usage() {
  cat <<'EOF'
usage: buffer-pool-mutex.sh (--fixture SERVER | --socket PATH --user USER) [options]
A single writer while INNODB_BUFFER_PAGE_LRU is read over and over (the buffer pool mutex held).
  --seconds N     the whole run (16); the writer runs all along
  --scan-at N     the LRU reads start N s after the start (4)
  --scan-pause N  milliseconds between two reads (100)
  --fill-rows N   rows of the table `fill` that fills the buffer pool (1048576, ~280 MB)
  --threads N     writer threads (1, as a replica's applier)
EOF
}
. "$(dirname "$0")/lib.sh"

parse_args "$@"
scan_at=${opt[scan-at]} threads=${opt[threads]}
[ "$scan_at" -ge 1 ] && [ "$scan_at" -lt "$seconds" ] || usage_error "want 1 <= --scan-at < --seconds"
[ "$threads" -ge 1 ] || usage_error "--threads wants at least 1"
connect

fill_pool() {  # double `fill` until it has --fill-rows rows: larger than a small buffer pool
  local rows
  sql "CREATE TABLE IF NOT EXISTS fill (id INT AUTO_INCREMENT PRIMARY KEY, pad CHAR(255) NOT NULL)
       ENGINE=InnoDB" || die "cannot create $database.fill"
  rows=$(sql "SELECT COUNT(*) FROM fill")
  [ "$rows" -gt 0 ] || sql "INSERT INTO fill (pad) VALUES (REPEAT('x', 255))"
  while [ "$(sql "SELECT COUNT(*) FROM fill")" -lt "${opt[fill-rows]}" ]; do
    sql "INSERT INTO fill (pad) SELECT pad FROM fill" || die "cannot grow $database.fill"
  done
  sql "SELECT COUNT(*) FROM fill WHERE pad <> ''" >/dev/null  # read it all: the pool is full of it
}

lru_pages() {
  client_cmd -e "SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE_LRU"
}

inserts() {  # the server's count of INSERT statements: the writer's rate, as the server saw it
  client_cmd -e "SHOW GLOBAL STATUS LIKE 'Com_insert'" | cut -f2
}

fill_pool
start_us=${EPOCHREALTIME/./}  # the timeline starts once the pool is full
mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version"
first=$(inserts)
start_sysbench oltp_insert "$seconds" --threads="$threads"
mark "writer started: sysbench oltp_insert, $threads thread(s)"
sleep_until "$scan_at"
at_scan=$(inserts)
mark "LRU reads started ($(lru_pages) pages)"
n=0
end=$(at_t "$seconds")
while [ "${EPOCHREALTIME/./}" -lt "$end" ]; do
  n=$((n + 1))
  began=${EPOCHREALTIME/./}
  lru_pages >/dev/null || die "reading INNODB_BUFFER_PAGE_LRU failed"
  mark "LRU read $n took $(seconds_since "$began") s"
  next=$(( ${EPOCHREALTIME/./} + opt[scan-pause] * 1000 ))
  sleep_to $((next < end ? next : end))
done
last=$(inserts)
stop_sysbench
mark "end: $n LRU reads, writer $(( (at_scan - first) / scan_at )) inserts/s before, $(( (last - at_scan) / (seconds - scan_at) )) during"
