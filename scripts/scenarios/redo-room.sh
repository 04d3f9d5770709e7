#!/usr/bin/env bash
# redo-room: writers waiting for room in the redo log, on a disk too slow for the page
# cleaners; the load `innostall verify` runs to judge a larger redo log.
#
# Reproduces the checkpoint-age stall of Dimitri Kravtchuk's "MySQL Performance: Final fix
# for Ahead Flushing & Purge Lag" (the seed): when the page cleaners cannot write the oldest
# dirty pages as fast as the redo log fills, the checkpoint age reaches the point where
# InnoDB stops every writer until those pages are written ("furious flushing").
#
# Its shape, so that the stall comes whole on any machine and not at all with room enough:
#  - old pages: one row in every 50 of redo_room (--rows, about one a page) is updated
#    first, so that about every page of it is dirty with the oldest changes, for little
#    redo. The checkpoint cannot pass them until each is written.
#  - then --threads connections rewrite a 4,000-byte column of random rows of redo_hot
#    (--hot-rows, a few dozen pages), --updates times each: about 9 KiB of redo an update
#    (the row and its undo), a fixed amount of redo whatever the machine's speed.
#  - the pages reach the disk slowly, the log does not: on slow_fs with a write delay
#    (scripts/slow-fs-server.sh SERVER start 0,WRITE_DELAY_US: every write but the redo
#    log's waits), or with --slow-disk IOPS (cgroup v1 blkio: all the server's writes
#    held, the log's too) from --slow-from.
# A log smaller than the redo the updates write fills to the point where writers wait, and
# they wait until the old pages are written (their number times the write delay); one that
# holds it all does not (the async point is never reached).
#
# The script changes no setting: the stall is the server's as it is. Set a small redo log
# (16 MiB) and innodb_flush_log_at_trx_commit = 0 (so that commits do not wait for the
# disk) first, and the redo log's size is then the change to try:
#   innostall verify --pid P --load "redo-room.sh --fixture mariadb-11.4.5:slowfs" \
#       --set innodb_log_file_size=268435456 --expect log_room_wait_s:zero --apply -o trial/
#
# Timeline (seconds from the start; markers on stdout):
#   0            the old pages dirtied, then the updates start (a stored procedure each)
#   --slow-from  with --slow-disk: the server's writes at most --slow-disk a second
#   --seconds    at the latest: the updates end (a writer waiting ends its wait first), the
#                disk as it was
#   + --drain    the tables' dirty pages written (FLUSH TABLES ... FOR EXPORT), the end
# A "flush" marker each second gives the checkpoint age (bytes) and the dirty pages.
#
# What a DBA should see in innostall's report: under "Redo and flushing", writers waiting
# for the log to make room (a flushing-stall line and the finding "Writers waited ..."),
# user connections among them; in the verdict a phase called flush-bound; and from
# `innostall advise`, a larger redo log first among the flushing changes.

scenario=redo-room
defaults="seconds=30 updates=600 threads=8 rows=200000 hot-rows=64 slow-from=0 slow-disk=0 drain=1"
scenario_usage() {
  cat <<'EOF'
usage: redo-room.sh (--fixture SERVER | --socket PATH --user USER) [options]
Old dirty pages, then wide-row updates writing a fixed amount of redo: on a disk slow for pages, writers wait for room in the redo log.
  --updates N    the updates each connection makes (600; about 9 KiB of redo each)
  --seconds N    the updates end by then whatever they made (30)
  --threads N    updating connections (8)
  --rows N       the rows of the table redo_room, whose pages are the old ones (200000)
  --hot-rows N   the rows of redo_hot the updates rewrite (64)
  --slow-disk N  at most N writes a second from --slow-from until the updates end (0: the
                 disk as it is; the slowing needs root and the cgroup v1 blkio controller)
  --slow-from N  (0)
  --drain N      seconds after the updates before the tables' pages are written (1)
EOF
}
. "$(dirname "$0")/lib.sh"

parse_args "$@"
threads=${opt[threads]} rows=${opt[rows]} hot_rows=${opt[hot-rows]} updates=${opt[updates]}
slow_from=${opt[slow-from]} slow_iops=${opt[slow-disk]}
[ "$threads" -ge 1 ] || usage_error "--threads wants at least 1"
[ "$rows" -ge 50 ] || usage_error "--rows wants at least 50"
[ "$hot_rows" -ge 1 ] || usage_error "--hot-rows wants at least 1"
[ "$updates" -ge 1 ] || usage_error "--updates wants at least 1"
[ "$slow_from" -lt "$seconds" ] || usage_error "want --slow-from < --seconds, not $slow_from, $seconds"
connect

numbers_sql() {  # numbers_sql N: a SELECT of 1..N as column i
  if [ "$flavour" = mariadb ]; then
    echo "SELECT seq AS i FROM seq_1_to_$1"
  else
    echo "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) SELECT i FROM n"
  fi
}
recursion() { [ "$flavour" = mariadb ] || echo "SET SESSION cte_max_recursion_depth = $1;"; }

if [ "$(sql "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'redo_room'")" = 0 ] ||
   [ "$(sql "SELECT COALESCE(MAX(id), 0) FROM redo_room")" != "$rows" ]; then
  mark "making $database.redo_room ($rows rows)"
  sql "DROP TABLE IF EXISTS redo_room;
       CREATE TABLE redo_room (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL DEFAULT '',
                               pad CHAR(60) NOT NULL DEFAULT '') ENGINE=InnoDB;
       $(recursion "$rows") INSERT INTO redo_room (id, k) SELECT i, i FROM ($(numbers_sql "$rows")) n" || die "could not make $database.redo_room"
fi
if [ "$(sql "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'redo_hot'")" = 0 ] ||
   [ "$(sql "SELECT COALESCE(MAX(id), 0) FROM redo_hot")" != "$hot_rows" ]; then
  mark "making $database.redo_hot ($hot_rows rows)"
  sql "DROP TABLE IF EXISTS redo_hot;
       CREATE TABLE redo_hot (id INT PRIMARY KEY, k INT NOT NULL, wide VARBINARY(4000) NOT NULL) ENGINE=InnoDB;
       $(recursion "$hot_rows") INSERT INTO redo_hot (id, k, wide) SELECT i, 0, REPEAT('A', 4000) FROM ($(numbers_sql "$hot_rows")) n" ||
    die "could not make $database.redo_hot"
fi
# The body's semicolons are the procedure's: the client reads it with another delimiter. Each
# update changes every byte of the column (the letter after the last), so none is skipped
# as a no-op and each writes the same redo.
client_cmd --database="$database" <<EOF || die "could not make the procedure redo_room_updates"
DROP PROCEDURE IF EXISTS redo_room_updates;
DELIMITER //
CREATE PROCEDURE redo_room_updates(updates INT, seconds INT) BEGIN
  DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL seconds SECOND;
  DECLARE done INT DEFAULT 0;
  DECLARE row_id INT;
  WHILE done < updates AND NOW(6) < t_end DO
    SET row_id = 1 + FLOOR(RAND() * $hot_rows);  -- apart: RAND() in the WHERE scans every row
    UPDATE redo_hot SET k = k + 1, wide = REPEAT(CHAR(65 + k % 26), 4000) WHERE id = row_id;
    SET done = done + 1;
  END WHILE;
END //
DELIMITER ;
EOF

flush_state() {  # "checkpoint age=BYTES dirty pages=N"
  local age
  if [ "$flavour" = mariadb ]; then
    age=$(sql "SHOW GLOBAL STATUS LIKE 'Innodb_checkpoint_age'" | cut -f 2)
  else
    age=$(client_cmd -e "SELECT IF($(enabled), COUNT, 'unknown') FROM information_schema.INNODB_METRICS
                         WHERE NAME = 'log_lsn_checkpoint_age'")
  fi
  echo "checkpoint age=${age:-unknown} dirty pages=$(sql "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'" | cut -f 2)"
}

updaters_call='CALL redo_room_updates' exit_hook=stop_updaters

start_us=${EPOCHREALTIME/./}  # the timeline's 0: the tables and procedure made
mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version $(flush_state)"
sql "UPDATE redo_room SET k = k + 1 WHERE id % 50 = 0" || die "could not dirty redo_room's pages"
mark "old pages: one row in 50 of redo_room updated; $(flush_state)"
for ((i = 0; i < threads; i++)); do
  sql "CALL redo_room_updates($updates, $seconds)" >>"$tmp/updates.log" 2>&1 &
  updaters+=($!)
done
mark "updates started: $threads connections, $updates each, random rows of redo_hot"
if [ "$slow_iops" != 0 ]; then
  flush_marks_until "$slow_from"
  slow_disk "$slow_iops"
  mark "disk slowed: the server's writes at most $slow_iops/s"
fi
# A marker each second until the updates end (or --seconds: then the disk as it was, since a
# writer waiting for the log to make room ends only once the old pages are written)
updating() {  # whether an updater's client still runs
  local pid
  for pid in "${updaters[@]}"; do kill -0 "$pid" 2>/dev/null && return 0; done
  return 1
}
next=$(( $(elapsed | cut -d. -f1) + 1 ))
while [ "$next" -le "$seconds" ] && updating; do
  sleep_until "$next"
  mark "flush $(flush_state)"
  next=$((next + 1))
done
slow_disk_end
[ "$slow_iops" = 0 ] || mark "disk as it was"
failed=0
for pid in "${updaters[@]}"; do wait "$pid" || failed=1; done
updaters=()
mark "updates ended; $(flush_state)"
[ "$failed" = 0 ] || die "an update connection failed: $(tail -n 1 "$tmp/updates.log")"
sleep "${opt[drain]}"
# The tables' dirty pages written at the disk's pace, not innodb_io_capacity's: a run after
# this one starts as this one did, and resizing the redo log (which waits for every page
# dirtied before it to be written) does not wait for them.
sql "FLUSH TABLES redo_room, redo_hot FOR EXPORT; UNLOCK TABLES" || die "could not write the tables' pages (FLUSH TABLES ... FOR EXPORT)"
mark "end: the tables' pages written; $(flush_state)"
