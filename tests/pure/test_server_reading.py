"""A figure at a snapshot is the server's own reading (server.history, read from its memory
at each snapshot) wherever the recording has it; a probe speaks only for what happened
between snapshots (an interval's peak), and the words say so. The checker reads the
server's column on its own and holds every move and 'held P of H' to it."""
from __future__ import annotations

from conftest import REPO
from innostall.analysis import purge_history
from innostall.analysis.checks import verdict_check
from innostall.analysis.recording import load
from innostall.analysis.summary import summary
from innostall.analysis.checks.verdict_check import server_state

# MariaDB 11.4.5: a consistent snapshot held 20 s while 4 threads ran oltp_update_non_index,
# then committed; the history read from the server's memory at each snapshot. In the first
# interval after the commit the history_length probe last returned 238,074 while the
# server read 827 at that interval's end.
CATCH_UP = REPO / "tests" / "data" / "catch-up-server-reading"


def phase_moves(told: dict) -> list[tuple[dict, dict]]:
    """(phase or event, its move) for every history move the verdict tells."""
    found = []
    for p in told["purge"]["phases"]:
        for span in (p, *p["events"]):
            for key in ("history", "pinned_history"):
                if span["figures"].get(key):
                    found.append((span, span["figures"][key]))
    return found


def test_every_move_starts_and_ends_at_the_servers_reading():
    rec = load(CATCH_UP)
    own = server_state(rec)["history"]
    moves = phase_moves(summary(rec))
    assert moves
    for span, move in moves:
        for end in ("from", "to"):
            at = own.index[abs(own.index - move[f"{end}_s"]) < 1e-3]
            assert len(at) == 1 and move[end] == own[at[0]], (span["detail"], move)


def test_the_probes_last_value_inside_an_interval_is_not_its_snapshot():
    """The recording holds the issue's case: the probe's last value and the server's reading
    at one snapshot tens of thousands apart; the catch-up ends at the server's 0."""
    rec = load(CATCH_UP)
    table = purge_history.purge_table(rec)
    probe_last = purge_history.known_history(table["history_length"], table["history_reads"])
    own = server_state(rec)["history"].reindex(table.index)
    assert (abs(probe_last - own) > 10_000).any()
    catch_up = next(p for p in summary(rec)["purge"]["phases"] if p["verdict"] == "catching_up")
    assert catch_up["figures"]["history"]["to"] == own[own.index <= catch_up["to_s"] + 1e-3].iloc[-1]


def test_a_level_from_a_probe_says_it_is_a_peak():
    told = summary(load(CATCH_UP))
    for p in told["purge"]["phases"]:
        levels = p["figures"]["levels"]
        if p["verdict"] == "keeping_up" and levels:
            assert ("peaking at about" in p["detail"]) == bool(levels["peaked"])


def test_the_checker_holds_the_words_to_the_servers_column_not_the_tables(monkeypatch):
    """With the report's table blind to the server's reading (the words then end at the
    probe's stale value), the checker, reading the column on its own, says so."""
    # unaltered, the checker holds it as every stored recording (test_verdict_consistency)
    blind = purge_history.history_in_memory

    def nothing_read(rec, index):
        return blind(rec, index) * float("nan")
    monkeypatch.setattr(purge_history, "history_in_memory", nothing_read)
    problems = verdict_check.check(str(CATCH_UP))
    assert any("history" in p and "its intervals say" in p for p in problems), problems


def test_what_a_view_held_is_told_at_the_snapshot():
    rec = load(CATCH_UP)
    own = server_state(rec)["history"]
    held = [p["figures"]["held"] for p in summary(rec)["purge"]["phases"] if p["figures"]["held"]]
    assert held
    for h in held:
        at = own.index[abs(own.index - h["at_s"]) < 1e-3]
        assert h["history"] == own[at[0]] and 0 < h["pinned"] <= h["history"]


def test_how_to_learn_more_is_a_note_under_the_verdict_never_in_its_sentence(monkeypatch):
    """The view pinning purge was found in the server's memory, with no stack: the sentence
    names who holds it, and the note says which probe would give where it opened."""
    from innostall.analysis.wording import phases as phase_words
    read = verdict_check.read(str(CATCH_UP))
    told = read.summed
    pinned = next(p for p in told["purge"]["phases"] if p["verdict"] == "pinned")
    assert pinned["detail"].startswith("pinned by connection ") and "--probes" not in pinned["detail"]
    assert told["purge"]["notes"] == [phase_words.OPENED_NOTE] and "--probes default,read_view" in phase_words.OPENED_NOTE
    verdict = read.text[:read.text.index("\n\n")]
    assert verdict.endswith(f"  note: {phase_words.OPENED_NOTE}")
    assert "--probes default,read_view" in read.html.split('id="findings"')[0]
    # the checker: the advice back inside the sentence is caught
    real = phase_words.view_words
    monkeypatch.setattr(phase_words, "view_words", lambda view: real(view) + " (where it opened: --probes default,read_view)")
    assert any("probe to add in its sentence" in p for p in verdict_check.check(str(CATCH_UP)))
