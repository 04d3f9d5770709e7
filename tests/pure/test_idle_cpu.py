"""What a start and a finish cost the server: innostall's bulk work waits for CPU the server
leaves (collector/recorder/idle.py), and libc's frame table is decoded once per libc build
(collector/discovery/libc.py's cache), not at every start."""
from __future__ import annotations

import os

import pytest

from innostall.collector.discovery import libc


HOST_LIBC = next((p for p in ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"]
                  if os.path.exists(p)), None)


def host_libc() -> libc.Libc:
    if HOST_LIBC is None:
        pytest.skip("no glibc here")
    return libc.Libc(HOST_LIBC, libc.ElfImage(HOST_LIBC), bias=0x7F0000000000)


@pytest.mark.heavy  # reads the host's libc's frame table: ~1.9 s of CPU
def test_a_cached_frame_table_gives_the_settings_it_was_written_with(tmp_path):
    lib = host_libc()
    path = libc.cached_table_path(lib, str(tmp_path))
    assert lib.image.build_id in os.path.basename(path)
    written = libc.write_table(lib, path)
    libc.keep_counts(path, written)
    assert written["libc_cfi_rows"] > 10000
    assert libc.cached_settings(lib, path) == written


@pytest.mark.heavy  # reads the host's libc's frame table: ~1.9 s of CPU
def test_a_damaged_or_half_written_cached_table_is_not_used(tmp_path):
    lib = host_libc()
    path = libc.cached_table_path(lib, str(tmp_path))
    libc.keep_counts(path, libc.write_table(lib, path))
    whole = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(whole[:-4])  # cut short
    assert libc.cached_settings(lib, path) is None
    with open(path, "wb") as f:
        f.write(whole)
    os.remove(path + ".json")  # the counts never written
    assert libc.cached_settings(lib, path) is None
