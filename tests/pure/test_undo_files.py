"""The undo tablespaces' size from the files a process holds open (collector/server/undo_files.py),
on this test's own process: undo_NNN and *.ibu count, other files and deleted ones do not, and
a descriptor closed and reused for another file is noticed at the next reading."""
from __future__ import annotations

import os

from innostall.collector.server.undo_files import UndoFiles


def held(path, size: int):
    f = open(path, "wb")
    f.truncate(size)
    return f


def test_the_undo_tablespaces_open_are_added_up_and_nothing_else(tmp_path):
    files = [held(tmp_path / "undo_001", 4096), held(tmp_path / "mine.ibu", 8192), held(tmp_path / "t1.ibd", 1 << 20)]
    gone = held(tmp_path / "undo_002", 1 << 16)
    os.unlink(tmp_path / "undo_002")  # its link now ends in " (deleted)"
    try:
        assert UndoFiles(os.getpid()).read() == 4096 + 8192
    finally:
        for f in [*files, gone]:
            f.close()


def test_a_descriptor_reused_for_another_file_is_scanned_again(tmp_path):
    undo = held(tmp_path / "undo_001", 4096)
    reader = UndoFiles(os.getpid())
    assert reader.read() == 4096
    fd = undo.fileno()
    undo.close()
    other = held(tmp_path / "t2.ibd", 1 << 20)
    try:
        assert other.fileno() == fd  # the lowest free descriptor: the one just closed
        assert reader.read() is None  # no undo tablespace open now
    finally:
        other.close()
