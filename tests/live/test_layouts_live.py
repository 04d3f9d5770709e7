"""Struct layouts read from the server binary's own DWARF (collector/discovery/layouts.py):
the same members, to the byte and the bit, as the catalog's ranges give for every fixture
that has DWARF; the catalog no longer needed where DWARF is at hand; latches inside server
globals named by their members; and builds without DWARF left to the catalog."""
from __future__ import annotations

import pytest

from fixture_binaries import CODE_CHECKED, assert_code_confirms_catalog, rooted


@pytest.mark.parametrize("name", rooted(CODE_CHECKED))
def test_the_build_code_confirms_the_catalog_where_there_is_no_dwarf(name):
    assert_code_confirms_catalog(name)  # the others': tests/pure/
