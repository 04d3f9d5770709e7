"""The rollback segments' chain read back from a build's machine code
(collector/discovery/rseg_code.py): srv_mon_get_rseg_size as MySQL 8.0.15's and 9.7.4's
compilers inlined it into srv_mon_process_existing_counter, the one case of its switch
that sums the segments' curr_size, and what may not be taken for it. The whole way, from
the binaries' symbols to the server's own trx_rseg_current_size: test_sql_state_live.py.

The code below is the two fixtures' own, at the addresses their .dynsym places it (the case
reaches trx_sys, undo::spaces and srv_rollback_segments by rip-relative loads); each case
begins where the switch's jump lands, so the flow starts it knowing nothing."""
from __future__ import annotations

import pytest

from innostall.collector.discovery import rseg_code
from innostall.collector.discovery.rseg_code import CUT, SPACES, TRX_SYS

# 8.0.15: ulint curr_size added from memory, the first pass of the inner loop peeled off
CASE_8015 = (0x1f86480, {TRX_SYS: 0x3690a48, SPACES: 0x3690908, CUT: 0x33c7c68}, bytes.fromhex(
    "488d05e11744014c8d35baa570014c8b08498b064c8bb8e0010000498b77784885f60f84fd070000488dbd70ffff"
    "ff488d0deaedb20041b83b010000ba040000004c898d28ffffffe8437adfff4989c0498b074c8b8d28ffffff4885"
    "c00f8e4a080000488d50fff0490fb1170f852f080000488d05a7edb20049894748418b475825ff3f00f00d00c04e"
    "00418947584d85c0741831f64c89c74c898d28ffffffe8eb8ddfff4c8b8d28ffffff498b364531f6488b86c80100"
    "00488b8ed00100004839c874130f1f00488b104883c0084c0372584839c175f04c8bbee0010000498b7f784885ff"
    "74134c898d28ffffffe87ca8dfff4c8b8d28ffffffb801000000f0490fc1074883c0010f84a9060000483d000000"
    "f00f849d0600004c8d3d66a37001498b074c8b5020498b72784885f60f84b6060000488dbd70ffffff488d0dc4ee"
    "b20041b8e1020000ba040000004c899520ffffff4c898d28ffffffe82e79dfff4c8b9520ffffff4989c04c8b8d28"
    "ffffff498b024885c00f8eeb060000488d50fff0490fb1120f85d0060000488d0573eeb20049894248418b425825"
    "ff3f00f00d0040b800418942584d85c0741831f64c89c74c898d28ffffffe8cf8cdfff4c8b8d28ffffff4d8b0749"
    "8b7008498b78104839fe744e0f1f840000000000488b06488b5028488b4208488b4a104839c87429488b104c3b0a"
    "76214883c008eb12660f1f440000488b104883c0084c3b0a76094c0372584839c175eb4883c6084839f775ba4d8b"
    "7820498b7f784885ff7405e838a7dfffb801000000f0490fc1074883c0010f848d050000483d000000f00f848105"
    "00004c89f031d2e986f7ffff"))
# 9.7.4: a 4-byte curr_size loaded then added, the inner loop rotated (its load after its add)
CASE_974 = (0x29a16ab, {TRX_SYS: 0x494cc50, SPACES: 0x494ca08, CUT: 0x44f7208}, bytes.fromhex(
    "488d05565bb501488d3547c001014c8b30488d058db5fa01488b10488b7a68ba8b010000e84cfaffff488d0575b5"
    "fa0131c9488b38488b4750488b77584839f074250f1f84000000000066662e0f1f840000000000488b104883c008"
    "8b524c4801d14839c675ee488b5768488b7a704885ff7409803f000f85410a000048899500efffff48898df8eeff"
    "ffe8758b43fe488b9500efffff4989c7f048314218b801000000f00fc102488b8df8eeffff48984883f8ff488d70"
    "010f84c10900004881fe000000f00f84b4090000488d058ab2fa01488d354bbf010148898d00efffff488b10488b"
    "7a20bafa020000e883f9ffff488d0564b2fa01488b8d00efffff4c8b08498b79084d8b41104c39c774450f1f4400"
    "00488b07488b5028488b4208488b72104839f0751beb21662e0f1f8400000000008b524c4883c0084801d14839c6"
    "7408488b104c393272e94883c7084939f875c04d8b7120498b7e704885ff7409803f000f8536090000f04d317e18"
    "b801000000f0410fc1064898488d50014883f8ff740d4881fa000000f00f8563feffff498b7e2848898d00efffff"
    "e852abf5ffe87dbc0100488b8d00efffffe942feffff"))
TMP_LOAD_974 = 0x29a1707  # mov 0x4c(%rdx),%edx: the temporary segments' curr_size


@pytest.mark.parametrize("case", [CASE_8015, CASE_974], ids=["8.0.15", "9.7.4"])
def test_both_shapes_give_the_whole_chain(case):
    at, roots, code = case
    chain = rseg_code.chain_in(rseg_code.flow(code, at), roots)
    assert chain.curr_size is not None, chain.said
    assert chain.width in (4, 8) and chain.segment_id is not None
    # the vectors' begins are distinct members, and the undo tablespace's pointer to its own
    offsets = (chain.tmp_rsegs, chain.spaces, chain.space_rsegs, chain.rsegs)
    assert all(o is not None and o >= 0 for o in offsets)
    assert "trx_sys and undo::spaces" in chain.said


def test_the_two_compilers_differ_where_the_releases_did():
    """curr_size a ulint in 8.0.15 and a page_no_t in 9.7.4; trx_sys_t rebuilt between them."""
    old, new = (rseg_code.chain_in(rseg_code.flow(code, at), roots) for at, roots, code in (CASE_8015, CASE_974))
    assert (old.width, new.width) == (8, 4)
    assert old.tmp_rsegs != new.tmp_rsegs and old.curr_size != new.curr_size


def test_the_temporary_segments_summed_at_another_offset_are_refused():
    at, roots, code = CASE_974
    start = TMP_LOAD_974 - at
    assert code[start:start + 3] == bytes.fromhex("8b524c")
    moved = code[:start + 2] + bytes([0x50]) + code[start + 3:]
    chain = rseg_code.chain_in(rseg_code.flow(moved, at), roots)
    assert chain.curr_size is None and chain.said.startswith("refused: the code disagrees"), chain.said


def test_sums_over_other_globals_give_nothing():
    at, roots, code = CASE_8015
    chain = rseg_code.chain_in(rseg_code.flow(code, at), {name: address + 8 for name, address in roots.items()})
    assert chain.curr_size is None and chain.said.startswith("no sum over"), chain.said


def test_a_loop_cut_short_is_no_vector():
    """The undo tablespaces' loop without its back edge: each element but the first is gone,
    so no step is any element of a vector, and nothing is derived."""
    at, roots, code = CASE_974
    back = 0x29a17fe - at  # jne to the outer loop's head
    assert code[back] == 0x75
    cut = code[:back] + bytes.fromhex("9090") + code[back + 2:]
    chain = rseg_code.chain_in(rseg_code.flow(cut, at), roots)
    assert chain.curr_size is None, chain


def test_the_report_says_the_segments_pages_came_from_the_builds_code():
    from innostall.analysis.wording.redo_words import sources_words

    state = {"read": ["lsn", "undo_pages"], "from_code": {"trx_rseg_t": "from srv_mon_process_existing_counter"},
             "sources": {"lsn": "memory", "checkpoint_lsn": "memory", "undo_pages": "memory"}}
    assert sources_words(state) == ("read from its memory at each snapshot, the LSN and checkpoint and the "
                                    "rollback segments' pages at offsets from the build's code")
