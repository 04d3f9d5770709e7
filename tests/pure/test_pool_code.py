"""The buffer pool's list lengths read back from a build's machine code
(collector/discovery/pool_code.py): the summing loop in both shapes MySQL's compilers gave
it, the copy into buf_pool_info_t, and what neither may take for them. The whole way, from
the binaries' symbols to the server's own counts: test_sql_state_live.py.

The code below is the two fixtures' own, as their .dynsym places it (the loaders' bytes;
the addresses matter: the loops reach buf_pool_ptr by a rip-relative lea)."""
from __future__ import annotations

import pytest

from innostall.collector.discovery import pool_code

# 8.0.15: a pointer steps over the instances, its loads offset back by the stride it just took
SUMMED_8015 = (0x2045380, 0x3694800, bytes.fromhex(
    "4c8d0d01d8630148c707000000005548c7060000000048c70200000000498339004889e57447488d0553f46401"
    "31c9488b004805b00300000f1f8400000000004c8b80200100004c01074883c1014c8b80900000004c01064805"
    "e80500004c8b8018faffff4c010249390977d35dc3"))
# 9.7.4: buf_pool_ptr reloaded each pass, an index register stepping by the stride
SUMMED_974 = (0x2a69440, 0x4951280, bytes.fromhex(
    "f30f1efa4c8d157523ee0148c707000000004989d048c7060000000048c7020000000049833a00744b4c8d1d10"
    "7eee0131c931d29066662e0f1f840000000000498b034883c2014801c84881c1482500004c8b88802400004c01"
    "0f4c8b88002400004c010e488b8090230000490100493b1272ccc3"))
COPIED_8015 = (0x2046270, bytes.fromhex(
    "488d04f655488d04864889e54156415541544c8d24c253488b87c00100004889fb498934244989442408488b87"
    "d00400004989442410488b87f80400004989442418488b87400400004989442420488b87b00300004989442428"))
COPIED_974 = (0x2a6ac80, bytes.fromhex(
    "f30f1efa554869c6280100004889e54157488d0c02415641554154534889cb4881eca8000000f30f7e15aab0a3"
    "010f1615dbb7a301644c8b2c25280000004c896dc84989fd48893148894d880f299570ffffff498b8588010000"
    "4d8da5a812000048894108498b858024000048894110498b859024000048894118498b850024000048894120498b"
    "859023000048894128"))


@pytest.mark.parametrize("summed_code, copied_code", [(SUMMED_8015, COPIED_8015), (SUMMED_974, COPIED_974)],
                         ids=["8.0.15", "9.7.4"])
def test_the_summing_loop_and_the_copy_agree_in_both_shapes(summed_code, copied_code):
    at, pool_at, code = summed_code
    offsets, stride = pool_code.summed(code, at, pool_at)
    assert offsets == pool_code.copied(copied_code[1], copied_code[0])
    assert set(offsets) == {"LRU", "free", "flush_list"} and len(set(offsets.values())) == 3
    assert stride > max(offsets.values())  # the lists lie inside one instance


def test_a_loop_over_another_global_gives_nothing():
    at, pool_at, code = SUMMED_8015
    assert pool_code.summed(code, at, pool_at + 8) is None


def test_a_copy_ends_at_the_first_call():
    at, code = COPIED_8015
    call = bytes.fromhex("e800000000")
    assert pool_code.copied(code[:24] + call + code[24:], at) == {}
