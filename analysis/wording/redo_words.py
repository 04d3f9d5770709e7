"""The Redo and flushing section's words (analysis/redo.py's figures, in sentences): what the
text report prints under its heading and the HTML page shows, made from the summary alone."""
from __future__ import annotations

from innostall.names import leaf_path

from ..flush_batches import batch_lines
from ..sampling import EXACT, sampled_words

FRAMES_SHOWN = 4  # of the heaviest waiting stacks, in the text: where the writer waited, leaf first


def dirtied_line(d: dict) -> str:
    """'  pages made dirty (put on the flush list) 2,212: purge's coordinator 3.1%, its workers
    9.8%, the rest 87.1%'."""
    shares = (f": purge's coordinator {d['purge_coordinator'] / d['pages']:.1%}, its workers "
              f"{d['purge_workers'] / d['pages']:.1%}, the rest {d['rest'] / d['pages']:.1%}") \
        if d["pages"] and d["rest"] is not None else ""
    sampled = f" [sampled: attached {d['coverage']:.0%} of the time]" if d["coverage"] < EXACT else ""
    return f"  pages made dirty (put on the flush list) {d['pages']:,}{shares}{sampled}"


def wait_lines(waits: dict | None, what: str, still_what: str) -> list[str]:
    """'  WHAT 12 times, 3.1 s (user connection 3.1 s); most from f ← g ← h', and the waits
    still open at the end."""
    lines = []
    if waits and waits["waits"]:
        roles = ", ".join(f"{role} {at:.1f} s" for role, at in waits["by_role_s"].items())
        lines.append(f"  {what} {waits['waits']:,} times, {waits['wait_s']:.1f} s" + (f" ({roles})" if roles else "")
                     + (f"; most from {leaf_path(waits['stacks'][0]['stack'], FRAMES_SHOWN, known_only=True)}"
                        if waits["stacks"] else ""))
    if waits and waits["open_at_end"]["waits"]:
        still = waits["open_at_end"]
        lines.append(f"  {still['waits']:,} {still_what} at the end, for {still['wait_s']:.1f} s so far "
                     "(not counted above)")
    return lines


def cleaners_words(room: dict) -> str:
    """'of it, 1.2 s in 3 waits for the page cleaners, 4.6 s writing the log and making the
    checkpoint themselves (a log write and an fsync of every data file)'."""
    part = room["cleaners"]
    return (f"of it, {part['wait_s']:.1f} s in {part['waits']:,} waits for the page cleaners, "
            f"{part['own_s']:.1f} s writing the log and making the checkpoint themselves "
            "(a log write and an fsync of every data file)")


def mib(value: float) -> str:
    return f"{value / 2**20:,.1f} MiB"


def redo_lines(s: dict) -> list[str]:
    """The text report's section."""
    lines = redo_body(s)
    if not lines:
        return ["", f"Redo and flushing: not recorded ({s['server_state'].get('note') or 'never read'})"]
    return ["", f"Redo and flushing (the server's state, {sources_words(s['server_state'])})", *lines]


# what a build without DWARF gives from memory (state.code_places), in words: a gauge of each
FROM_CODE = (("lsn", "the LSN and checkpoint"), ("history", "the history"), ("dirty_pages", "the buffer pool's lists"),
             ("undo_pages", "the rollback segments' pages"))


def sources_words(state: dict) -> str:
    """Where the figures came from: 'read from its memory at each snapshot', 'read by SQL at
    each snapshot', or both, naming the gauges SQL gave, and the undo tablespaces' files
    where their size came from them (meta.json's server_state.sources)."""
    sources = state.get("sources") if isinstance(state.get("sources"), dict) else {}
    by_sql = sorted(gauge for gauge, source in sources.items() if source == "sql")
    # MySQL without DWARF: what was read at the offsets its machine code gave
    parts = [words for gauge, words in FROM_CODE if sources.get(gauge) == "memory"] if state.get("from_code") else []
    what = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
    where = f", {what} at offsets from the build's code" if what else ""
    files = "; the undo tablespaces' size from the files it holds open" if "files" in sources.values() else ""
    if not by_sql:
        return f"read from its memory at each snapshot{where}{files}"
    if len(by_sql) == len(sources):
        return "read by SQL at each snapshot: the build has no DWARF to read its memory by"
    return f"read from its memory at each snapshot{where}{files}; by SQL: {', '.join(by_sql)}"


def redo_body(s: dict) -> list[str]:
    """The section's lines, each indented, which the HTML shows too; none when nothing was
    measured."""
    redo, cp, pool, undo = s["redo"], s["checkpoint"], s["buffer_pool"], s["undo_space"]
    room = (s["flushing"] or {}).get("log_room")
    lines = []
    if redo and redo["bytes"] is not None:
        lines.append(f"  redo written {mib(redo['bytes'])} from {redo['from_s']:.1f} to {redo['to_s']:.1f} s"
                     + (f" ({mib(redo['per_s'])}/s, at most {mib(redo['peak_per_s'])}/s in the interval "
                        f"ending {redo['peak_at_s']:.1f} s)" if redo["per_s"] is not None and redo["peak_per_s"] else ""))
    if redo and "by_role" in redo:
        total = redo["payload_bytes"]
        shares = ", ".join(f"{role} {part / total:.1%}" for role, part in redo["by_role"].items()) if total else ""
        seen = redo["by_role_coverage"]
        lines.append(f"  redo by writer, from the attach: {shares or 'none written'} of {mib(redo['payload_bytes'])} "
                     f"written by {redo['writes']:,} mini-transactions"
                     + (f" [sampled: attached {seen:.0%} of the time; shares of what was seen]" if seen < EXACT else ""))
    if cp:
        points = [f"{cp['age_max_bytes'] / cp[key]:.0%} of the {name} flush point ({mib(cp[key])})"
                  for name, key in (("async", "async_flush_age"), ("sync", "sync_flush_age")) if cp[key]]
        lines.append(f"  checkpoint age at most {mib(cp['age_max_bytes'])} (in the interval ending "
                     f"{cp['age_max_at_s']:.1f} s, "
                     + (f"read {cp.get('age_reads_per_s', 20)} times a second)" if cp.get("peak_between_snapshots", True)
                        else "read at each snapshot)") + "".join(f", {p}" for p in points))
        if cp["async_s"]:
            lines.append(f"  it reached the async flush point in intervals totalling {cp['async_s']:.1f} s, "
                         f"the sync point in {cp['sync_s']:.1f} s")
    lines += wait_lines(room, "writers waited for the log to make room", "writers were still waiting for the log")
    if room and room["waits"] and room.get("cleaners"):
        lines.append("    " + cleaners_words(room))
    lines += wait_lines((s["flushing"] or {}).get("free_page"), "threads waited for a free page in the buffer pool",
                        "threads were still waiting for a free page")
    batches = (s["flushing"] or {}).get("batches")
    lines += batch_lines(batches, sampled_words(batches.get("coverage", 1.0)) if batches else "")
    if s.get("pages_dirtied"):
        lines.append(dirtied_line(s["pages_dirtied"]))
    if pool:
        lines.append(f"  buffer pool: dirty pages at most {pool['dirty_pages_max']:,} (at "
                     f"{pool['dirty_pages_max_at_s']:.1f} s), {pool['dirty_pages_last']:,} at the end"
                     + (f"; free pages down to {pool['free_pages_min']:,}" if pool["free_pages_min"] is not None else ""))
    if undo and undo["pages_max"] is None:
        lines.append(f"  undo tablespaces: at most {mib(undo['file_bytes_max'])} on disk, "
                     f"{mib(undo['file_bytes_last'])} at the last reading")
    elif undo:
        size = f", {mib(undo['bytes_max'])}" if undo["bytes_max"] else ""
        lines.append(f"  undo logs: at most {undo['pages_max']:,} pages{size} (at {undo['pages_max_at_s']:.1f} s); "
                     f"{undo['pages_first']:,} at the first reading, {undo['pages_last']:,} at the last"
                     + (f"; the undo tablespaces {mib(undo['file_bytes_max'])} on disk at most"
                        if undo.get("file_bytes_max") else ""))
        if undo.get("cached_pages_max") is not None:
            of = f", when the rollback segments held {undo['cached_last_of']:,}" if undo["cached_last_of"] else ""
            lines.append(f"  undo log pages in the buffer pool: at most {undo['cached_pages_max']:,} (at "
                         f"{undo['cached_pages_max_at_s']:.1f} s), {undo['cached_pages_last']:,} at the last count{of}")
    return lines
