"""The server's state read by SQL (collector/server/sql_state.py): each source's answer
parsed into the gauges, from answers as MySQL 5.7, 8.0 and 9.x print them. The readings
against a live server are in test_sql_state_live.py."""
from __future__ import annotations

from innostall.collector.server.sql_state import (METRICS, SQL_GAUGES, STATUS, from_metrics, from_monitor,
                                                  from_status, from_undo_files)

# SHOW ENGINE INNODB STATUS's LOG and TRANSACTIONS sections: MySQL 5.7's, and 8.0.30+'s,
# whose LOG section names more LSNs that must not be taken for these
MONITOR_57 = """------------
TRANSACTIONS
------------
Trx id counter 5912
Purge done for trx's n:o < 5910 undo n:o < 0 state: running but idle
History list length 37
---
LOG
---
Log sequence number 12765342
Log flushed up to   12765342
Pages flushed up to 12765342
Last checkpoint at  12765333
0 pending log flushes, 0 pending chkp writes
"""
MONITOR_97 = """History list length 22
---
LOG
---
Log capacity                 104857600
Log capacity used            104857600
Log sequence number          24791333
Log buffer assigned up to    24791333
Log written up to            24779909
Pages flushed up to          19444153
Last checkpoint at           19444153
"""


def test_the_monitors_lines_give_the_lsn_the_checkpoint_and_the_history():
    assert from_monitor(MONITOR_57) == {"lsn": 12765342, "checkpoint_lsn": 12765333, "history": 37}
    assert from_monitor(MONITOR_97) == {"lsn": 24791333, "checkpoint_lsn": 19444153, "history": 22}


def test_a_monitor_text_without_those_lines_gives_nothing():
    assert from_monitor("---\nLOG\n---\nLog sequence number 0 1234\n") == {}  # 5.0's two words: not one LSN
    assert from_monitor("") == {}


def test_metrics_rows_map_to_gauges_and_others_are_left_out():
    rows = [("log_lsn_current", 24409355), ("log_lsn_last_checkpoint", 19069875),
            ("log_max_modified_age_async", 75305664), ("trx_rseg_history_len", 14),
            ("buffer_pool_size", 134217728), ("trx_rseg_current_size", None)]
    assert from_metrics(rows) == {"lsn": 24409355, "checkpoint_lsn": 19069875, "async_flush_age": 75305664,
                                  "history": 14}


def test_status_rows_map_to_gauges_and_text_values_are_left_out():
    rows = [("Innodb_buffer_pool_pages_dirty", "541"), ("Innodb_buffer_pool_pages_free", "6920"),
            ("Innodb_buffer_pool_pages_data", "1266"), ("Innodb_page_size", "16384"),
            ("Innodb_redo_log_current_lsn", "24779919"), ("Innodb_redo_log_resize_status", "OK"),
            ("Innodb_redo_log_checkpoint_lsn", "")]
    assert from_status(rows) == {"dirty_pages": 541, "free_pages": 6920, "lru_pages": 1266, "page_size": 16384,
                                 "lsn": 24779919}


def test_undo_files_sum_and_an_empty_answer():
    assert from_undo_files([(20971520,)]) == {"undo_file_bytes": 20971520}
    assert from_undo_files([(None,)]) == {}  # 5.7: no undo tablespace rows
    assert from_undo_files([]) == {}


def test_every_gauge_sql_reads_is_one_the_report_knows():
    from innostall.analysis.redo import STATE
    assert set(METRICS.values()) | set(STATUS.values()) <= SQL_GAUGES <= set(STATE)


def test_the_report_says_where_the_figures_came_from():
    from innostall.analysis.wording.redo_words import sources_words
    assert sources_words({"read": ["lsn"], "sources": {"lsn": "memory"}}) == "read from its memory at each snapshot"
    assert sources_words({"read": ["lsn"]}) == "read from its memory at each snapshot"  # before sources were kept
    assert "read by SQL" in sources_words({"read": ["lsn", "history"], "sources": {"lsn": "sql", "history": "sql"}})
    mixed = sources_words({"read": ["lsn", "undo_file_bytes"], "sources": {"lsn": "memory", "undo_file_bytes": "sql"}})
    assert mixed.endswith("by SQL: undo_file_bytes"), mixed
