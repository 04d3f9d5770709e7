"""The redo log's members read back from a build's machine code (collector/discovery/log_code.py):
each shape on code made for it, a disagreement refused, and MySQL 8.0.15's offsets from its
own code (9.7.4's, whose fetch needs root, in tests/live/test_sql_state_live.py, checked
against the server's own LSN)."""
from __future__ import annotations

import pytest

from fixture_binaries import CODE_CHECKED, fixture_target
from innostall.collector.discovery import discover, log_code

AT = 0x1000
RET = bytes.fromhex("c3")
# lock xadd %rsi,0x40(%rdi): sn.fetch_add(len) with the log in rdi, the length in rsi
XADD_RDI_40 = bytes.fromhex("f0480fc17740")
# mov %rsi,%r14; mov %rdx,%rbx; mov %rbx,%r13; lock xadd %r13,0x40(%r14): 8.0.15's form,
# the log in the second argument, the length in the third (a hidden return pointer first)
XADD_MOVED = bytes.fromhex("4989f6" "4889d3" "4989dd" "f04d0fc16e40")
# mov %rsi,-0xa0(%rbp); mov %rdi,%r15; call .; mov -0xa0(%rbp),%rax; mov %rax,0x748(%r15); mfence
STORE_FENCED = bytes.fromhex("4889b560ffffff" "4989ff" "e800000000" "488b8560ffffff" "49898748070000" "0faef0")
# mov 0x40(%rdi),%rcx; test %rcx,%rcx; jns +4; mov 0x48(%rdi),%rcx: 9.7.4's log_get_lsn
LSN_READ = bytes.fromhex("488b4f40" "4885c9" "7904" "488b4f48")


def test_fetch_add_gives_the_offset_whichever_registers_carry_the_arguments():
    assert log_code.fetch_add(XADD_RDI_40 + RET, AT) == {0x40}
    assert log_code.fetch_add(XADD_MOVED + RET, AT) == {0x40}


def test_a_call_forgets_what_it_may_clobber():
    # mov %rsi,%rbx; call .; lock xadd %rsi,0x40(%rdi): after the call rdi and rsi are no arguments
    code = bytes.fromhex("4889f3" "e800000000") + XADD_RDI_40 + RET
    assert log_code.fetch_add(code, AT) == set()


def test_the_fenced_store_of_the_lsn_argument_through_a_spilled_slot():
    assert log_code.store_arg(STORE_FENCED + RET, AT) == {0x748}
    assert log_code.store_arg(STORE_FENCED[:-3] + RET, AT) == set()  # no fence: not a seq_cst store


def test_the_lsn_reader_gives_sn_then_sn_locked():
    assert log_code.argument_loads(LSN_READ + RET, AT) == [0x40, 0x48]


def test_two_functions_that_disagree_refuse_the_member():
    codes = {"reserve": [(XADD_RDI_40 + RET, AT)], "reserve_too": [(bytes.fromhex("f0480fc17748") + RET, AT)]}
    refused = log_code.derive(codes, {"member": "log_t.sn", "shape": "fetch_add",
                                      "functions": ["reserve", "reserve_too"]})
    assert refused.offset is None and refused.said.startswith("refused") and "0x40" in refused.said
    agreed = log_code.derive(codes, {"member": "log_t.sn", "shape": "fetch_add", "functions": ["reserve"]})
    assert (agreed.offset, agreed.said) == (0x40, "from reserve")


def test_sn_is_framed_into_the_lsn_as_the_server_frames_it():
    data = log_code.LOG_BLOCK_DATA_SIZE
    assert log_code.sn_to_lsn(0) == log_code.LOG_BLOCK_HDR_SIZE
    assert log_code.sn_to_lsn(data) - log_code.sn_to_lsn(data - 1) == 1 + 16  # the next block's header and trailer
    assert log_code.sn_to_lsn(10 * data) == 10 * log_code.LOG_BLOCK_SIZE + log_code.LOG_BLOCK_HDR_SIZE


@pytest.mark.heavy  # decodes a fixture server's binary (tens of MB) with Capstone: ~1.2 s of CPU
@pytest.mark.parametrize("name", ["mysql-8.0.15"])
def test_mysql_8_0_15s_log_offsets_from_its_own_code(name):
    """8.0.15 inlines log_get_lsn and has no SN_LOCKED: sn from log_buffer_reserve alone,
    the checkpoint from log_files_write_checkpoint's store (offsets the live test checks
    against the server's LSN)."""
    tgt = fixture_target(name, CODE_CHECKED[name])
    found = log_code.log_members(tgt, discover.catalog_file()["state_code"])
    assert found["log_t.sn"].said == "from log_buffer_reserve" and found["log_t.sn"].offset is not None
    assert found["log_t.last_checkpoint_lsn"].said == "from log_files_write_checkpoint"
    assert found["log_t.sn_locked"].offset is None
    assert found["log_t.sn"].offset != found["log_t.last_checkpoint_lsn"].offset
