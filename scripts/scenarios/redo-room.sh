#!/usr/bin/env bash
# redo-room: writers waiting for room in the redo log, on a disk too slow for the page
# cleaners; the load `innostall verify` runs to judge a larger redo log.
#
# Reproduces the checkpoint-age stall of Dimitri Kravtchuk's "MySQL Performance: Final fix
# for Ahead Flushing & Purge Lag" (the seed): when the page cleaners cannot write the oldest
# dirty pages as fast as the redo log fills, the checkpoint age reaches the point where
# InnoDB stops every writer until those pages are written ("furious flushing"). Here: 8
# connections update random rows of a 200,000-row table (redo_room, made once, --rows) for
# --seconds, and from --slow-from on the server's writes to its data directory's disk are
# held to --slow-disk a second (cgroup v1 blkio, scripts/slow_disk.py) until the updates
# end; then --drain seconds more, the disk as it was, while the last waits end.
#
# The script changes no setting: the stall is the server's as it is. It comes on this
# scale with a small redo log (16 MiB), innodb_flush_log_at_trx_commit = 0 (so that the
# commits do not wait for the slowed disk themselves) and innodb_io_capacity 100; set them
# first (checkpoint-age.sh does, for its own run), and the redo log's size is then the
# change to try:
#   innostall verify --pid P --load "redo-room.sh --fixture mariadb-11.4.5" \
#       --set innodb_log_file_size=33554432 --expect log_room_wait_s:zero --apply -o trial/
#
# Timeline (seconds from the start; markers on stdout):
#   0            the updates start (--threads connections, a stored procedure each)
#   --slow-from  the server's writes at most --slow-disk a second
#   --seconds    the disk as it was; the updates end (a writer waiting ends its wait first)
#   + --drain    redo_room's dirty pages written (FLUSH TABLES ... FOR EXPORT), the end
# A "flush" marker each second gives the checkpoint age (bytes) and the dirty pages.
#
# What a DBA should see in innostall's report: under "Redo and flushing", writers waiting
# for the log to make room (a flushing-stall line and the finding "Writers waited ..."),
# user connections among them; in the verdict a phase called flush-bound; and from
# `innostall advise`, a larger redo log first among the flushing changes.

scenario=redo-room
defaults="seconds=10 slow-from=2 slow-disk=50 threads=8 rows=200000 drain=2"
scenario_usage() {
  cat <<'EOF'
usage: redo-room.sh (--fixture SERVER | --socket PATH --user USER) [options]
Random-row updates on a disk too slow for the page cleaners: writers wait for room in the redo log.
  --seconds N    the updates' length (10)
  --slow-from N  the server's writes slowed from N s after the start until the updates end (2)
  --slow-disk N  at most N writes a second meanwhile (50; 0: the disk as it is; the slowing
                 needs root and the cgroup v1 blkio controller)
  --threads N    updating connections (8)
  --rows N       the rows of the table redo_room, made when it has another number (200000)
  --drain N      seconds after the updates, the disk as it was (2)
EOF
}
. "$(dirname "$0")/lib.sh"

parse_args "$@"
threads=${opt[threads]} rows=${opt[rows]} slow_from=${opt[slow-from]} slow_iops=${opt[slow-disk]}
[ "$threads" -ge 1 ] || usage_error "--threads wants at least 1"
[ "$rows" -ge 1 ] || usage_error "--rows wants at least 1"
[ "$slow_from" -lt "$seconds" ] || usage_error "want --slow-from < --seconds, not $slow_from, $seconds"
connect

# Random rows of a table many times the pool's pages the page cleaners write in a second:
# on sbtest1 (20,000 rows) writers meet the pages being written and wait on their latches
# instead (checkpoint-age.sh --slow-disk shows that).
fill_sql() {
  if [ "$flavour" = mariadb ]; then
    echo "INSERT INTO redo_room (id, k) SELECT seq, seq FROM seq_1_to_$rows"
  else
    echo "SET SESSION cte_max_recursion_depth = $rows; INSERT INTO redo_room (id, k) WITH RECURSIVE n (i) AS
          (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $rows) SELECT i, i FROM n"
  fi
}

if [ "$(sql "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'redo_room'")" = 0 ] ||
   [ "$(sql "SELECT COALESCE(MAX(id), 0) FROM redo_room")" != "$rows" ]; then
  mark "making $database.redo_room ($rows rows)"
  sql "DROP TABLE IF EXISTS redo_room;
       CREATE TABLE redo_room (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL DEFAULT '',
                               pad CHAR(60) NOT NULL DEFAULT '') ENGINE=InnoDB;
       $(fill_sql)" || die "could not make $database.redo_room"
fi
# The body's semicolons are the procedure's: the client reads it with another delimiter.
client_cmd --database="$database" <<EOF || die "could not make the procedure redo_room_updates"
DROP PROCEDURE IF EXISTS redo_room_updates;
DELIMITER //
CREATE PROCEDURE redo_room_updates(seconds INT) BEGIN
  DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL seconds SECOND;
  DECLARE row_id INT;
  WHILE NOW(6) < t_end DO
    SET row_id = 1 + FLOOR(RAND() * $rows);
    UPDATE redo_room SET k = k + 1 WHERE id = row_id;
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

start_us=${EPOCHREALTIME/./}  # the timeline's 0: the updates' start, the table and procedure made
mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version $(flush_state)"
for ((i = 0; i < threads; i++)); do
  sql "CALL redo_room_updates($seconds)" >>"$tmp/updates.log" 2>&1 &
  updaters+=($!)
done
mark "updates started: $threads connections, random rows of redo_room"
flush_marks_until "$slow_from"
if [ "$slow_iops" != 0 ]; then
  slow_disk "$slow_iops"
  mark "disk slowed: the server's writes at most $slow_iops/s"
fi
flush_marks_until "$seconds"
# The disk as it was when the updates' time is up, not when they end: an update waiting for
# the log to make room ends only once the oldest pages are written, minutes at 50 a second.
slow_disk_end
[ "$slow_iops" = 0 ] || mark "disk as it was"
failed=0
for pid in "${updaters[@]}"; do wait "$pid" || failed=1; done
updaters=()
mark "updates ended; $(flush_state)"
[ "$failed" = 0 ] || die "an update connection failed: $(tail -n 1 "$tmp/updates.log")"
flush_marks_until $((seconds + ${opt[drain]}))
# The table's dirty pages written at the disk's pace, not innodb_io_capacity's: a run after
# this one starts as this one did, and resizing the redo log (which waits for every page
# dirtied before it to be written) does not wait for them.
sql "FLUSH TABLES redo_room FOR EXPORT; UNLOCK TABLES" || die "could not write redo_room's pages (FLUSH TABLES ... FOR EXPORT)"
mark "end: redo_room's pages written; $(flush_state)"
