#!/usr/bin/env bash
# purge-behind: heavy updates the purge threads cannot keep up with, no read view in the way:
# the load `innostall verify` runs to judge more purge threads.
#
# Reproduces the history that outruns purge under write load alone (the seed "Innodb
# Transaction History Often Hides Dangerous 'Debt'", its case without a long transaction):
# --threads connections update random rows of --tables tables (purge_behind.t1 ..., made once,
# --rows rows each), each update changing two indexed columns, so that purge has two
# secondary-index records to remove per update, each checked against the clustered record's
# versions first. The updates run in stored procedures (no client round trip).
#
# The tables (8 x 300,000 rows, about 600 MB) are several times a small buffer pool (the
# fixtures' 128 MiB): purge, seconds behind the updates, finds the pages it needs evicted and
# reads them one at a time, I/O-bound, while 8 updaters read theirs side by side; there more
# purge threads slow the history's rise (MariaDB 11.4.5, 2 cores: +2,975 and +2,570/s with
# one, +1,477 and +1,460/s with four; the updates slowed too). On tables that fit in the pool
# (--rows 20000) purge is CPU-bound instead, and on 2 cores saturated by the updaters more
# threads took no CPU from them: the history rose faster with 2 or 4 threads than with 1
# (docs/advice.md). The tables live in their own schema (purge_behind), not sbtest, which
# the fixtures' load recreates: they are made once (25 s).
#
# The script changes no setting: set innodb_purge_threads to 1 first, and the purge threads
# are then the change to try (dynamic on MariaDB 10.5.2+):
#   innostall verify --pid P --load "purge-behind.sh --fixture mariadb-11.4.5" \
#       --set innodb_purge_threads=4 --expect history_rise_per_s --apply -o trial/
#
# Timeline (seconds from the start; markers on stdout):
#   0          the history below --settle (waited for, at most --settle-for s), then the
#              updates start: "scenario: t=0.1 updates started: 8 connections, 8 tables"
#   --seconds  the updates end: "scenario: t=10.0 updates ended: 41234 updates history=22000"
#   then       purge works the history off, until it is below --settle again (at most
#              --settle-for s): "scenario: t=21.3 end: history=1800", so that the next run
#              starts as this one did
# A "sample" marker each second gives the history and purge's pages (lib.sh's sampler).
#
# What a DBA should see in innostall's report: purge falling behind (the history rising
# with purge at work, no view pinning it); on tables larger than the pool, threads waiting
# for a free page too (flush-bound), and `innostall advise` names the page cleaners' I/O
# capacity or a larger pool first. Where purge's time was watched (half the phase at least),
# its batches CPU- or I/O-bound, and more purge threads among the advice.

scenario=purge-behind
defaults="seconds=6 threads=8 tables=8 rows=300000 settle=2000 settle-for=60"
scenario_usage() {
  cat <<'EOF'
usage: purge-behind.sh (--fixture SERVER | --socket PATH --user USER) [options]
Random-row updates of indexed columns over several tables: the history outruns purge.
  --seconds N     the updates' length (6)
  --threads N     updating connections (8), spread over the tables
  --tables N      tables purge_behind.t1 ... tN (8), made when missing or of another size
  --rows N        each table's rows (300000)
  --settle N      the history below N before the updates and after them (2000)
  --settle-for N  at most N s for each (60); a history still above is one line, exit 1
EOF
}
. "$(dirname "$0")/lib.sh"

parse_args "$@"
threads=${opt[threads]} tables=${opt[tables]} rows=${opt[rows]}
[ "$threads" -ge 1 ] || usage_error "--threads wants at least 1"
[ "$tables" -ge 1 ] || usage_error "--tables wants at least 1"
[ "$rows" -ge 1 ] || usage_error "--rows wants at least 1"
connect

fill_sql() {  # fill_sql TABLE
  if [ "$flavour" = mariadb ]; then
    echo "INSERT INTO $1 (id, k1, k2) SELECT seq, seq, seq FROM seq_1_to_$rows"
  else
    echo "SET SESSION cte_max_recursion_depth = $rows; INSERT INTO $1 (id, k1, k2) WITH RECURSIVE n (i) AS
          (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $rows) SELECT i, i, i FROM n"
  fi
}

schema=purge_behind
sql "CREATE DATABASE IF NOT EXISTS $schema" || die "could not make the schema $schema"
for ((t = 1; t <= tables; t++)); do
  table=$schema.t$t
  if [ "$(sql "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$schema' AND TABLE_NAME = 't$t'")" = 0 ] ||
     [ "$(sql "SELECT COALESCE(MAX(id), 0) FROM $table")" != "$rows" ]; then
    mark "making $table ($rows rows)"
    sql "DROP TABLE IF EXISTS $table;
         CREATE TABLE $table (id INT PRIMARY KEY, k1 INT NOT NULL, k2 INT NOT NULL, c CHAR(60) NOT NULL DEFAULT '',
                              KEY (k1), KEY (k2)) ENGINE=InnoDB;
         $(fill_sql "$table")" || die "could not make $table"
  fi
done
# One procedure for every table (a prepared statement names it): the body's semicolons are
# the procedure's, so the client reads it with another delimiter.
client_cmd --database="$schema" <<EOF || die "could not make the procedure purge_behind.updates"
DROP PROCEDURE IF EXISTS updates;
DELIMITER //
CREATE PROCEDURE updates(tbl VARCHAR(64), seconds INT) BEGIN
  DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL seconds SECOND;
  SET @purge_behind_sql = CONCAT('UPDATE ', tbl, ' SET k1 = k1 + 1, k2 = k2 - 1 WHERE id = ?');
  PREPARE purge_behind_update FROM @purge_behind_sql;
  WHILE NOW(6) < t_end DO
    SET @row_id = 1 + FLOOR(RAND() * $rows);
    EXECUTE purge_behind_update USING @row_id;
  END WHILE;
  DEALLOCATE PREPARE purge_behind_update;
END //
DELIMITER ;
EOF

settle() {  # settle WHAT: until the history is below --settle, at most --settle-for s
  local deadline history
  deadline=$(in_s "${opt[settle-for]}")
  while history=$(history_len) && [[ $history =~ ^[0-9]+$ ]] && [ "$history" -ge "${opt[settle]}" ]; do
    [ "${EPOCHREALTIME/./}" -lt "$deadline" ] ||
      die "the history still at $history after ${opt[settle-for]} s $1 (--settle ${opt[settle]}): purge did not catch up"
    sleep 0.2
  done
  echo "$history"
}

updaters_call='CALL purge_behind.updates' exit_hook=stop_updaters

updates() {
  sql "SHOW GLOBAL STATUS LIKE 'Handler_update'" | cut -f 2
}

history=$(settle "before the updates")
start_us=${EPOCHREALTIME/./}  # the timeline's 0: the updates' start, the history settled
mark "start epoch=$((start_us / 1000000)).$(printf '%06d' $((start_us % 1000000))) server=$version history=$history"
first=$(updates)
start_sampler
for ((i = 0; i < threads; i++)); do
  sql "CALL $schema.updates('$schema.t$((i % tables + 1))', $seconds)" >>"$tmp/updates.log" 2>&1 &
  updaters+=($!)
done
mark "updates started: $threads connections, $tables tables"
failed=0
for pid in "${updaters[@]}"; do wait "$pid" || failed=1; done
updaters=()
[ "$failed" = 0 ] || die "an update connection failed: $(tail -n 1 "$tmp/updates.log")"
mark "updates ended: $(( $(updates) - first )) updates history=$(history_len)"
mark "end: history=$(settle "after the updates")"
