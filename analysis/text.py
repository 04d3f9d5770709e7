"""The terminal report of one recording: the summary, the findings and the histograms as
bcc's tools print them."""
from __future__ import annotations

import datetime as dt

import pandas as pd

from innostall.names import demangle, leaf_path, server_label
from innostall.format.schema import bcc_unit

from .cost import render_cost, sampled_note
from .estimates import estimate_words
from .histogram import format_log2
from .wording.numbers import latency, seconds, shorten
from . import verdict_view
from .holders import top_holders
from .redo import redo_lines
from .wording.replica import replica_findings, replica_lines
from .wording.work_latches import work_latch_lines
from .pinning import statements_note
from .recording import Recording
from .summary import OTHER_LATCHES, ended_by, scans_secondary, secondary_lookups, summary, warnings
from .wording.findings import (batch_findings, block_lock_findings, flush_findings, free_page_findings,
                               log_room_findings,
                               purge_findings, purge_headline, purge_redo_findings, throttle_findings,
                               undo_findings, walk_findings)
from .timeline import per_interval, sparkline
from .window import trigger_words, window_words


def finding_lines(found: list[str]) -> list[str]:
    """Findings as the text shows them, each in its section (wording.findings.all_findings lists
    them all, in this order, for JSON and HTML)."""
    return [f"  finding: {text}" for text in found]


def log2_text(rec: Recording, names: str | list[str]) -> str:
    """One histogram, or several added up, in bcc's layout with the unit it counts."""
    first = names if isinstance(names, str) else names[0]
    return format_log2(rec.hist(names), bcc_unit(rec.schema.hist_unit(first)))


def wait_stack_lines(stacks: pd.DataFrame, top: int = 5, frames: int = 5) -> list[str]:
    return [f"  {w.mode:<3} {w.wait_us / 1000:9.1f} ms {w.waits:>8} waits  {leaf_path(w.stack, frames)}"
            for w in stacks.nlargest(top, "wait_us").itertuples()]


def unstacked_lines(unstacked: dict | None) -> list[str]:
    """What the stack tables leave out: the waits shorter than the recording's threshold."""
    if not unstacked or not unstacked["waits"]:
        return []
    share = f", {unstacked['wait_pct']:.1f}% of the time waited" if unstacked["wait_pct"] is not None else ""
    return [f"  (waits of {unstacked['threshold_us']} µs or more: {unstacked['waits']} shorter waits, "
            f"{unstacked['wait_ms']:.1f} ms{share}, are counted with their latch, without a stack)"]


def estimate_line(estimated: dict | None, units: dict[str, str]) -> list[str]:
    """The whole a sampled count stands for (analysis/estimates.py), under its line."""
    words = estimate_words(estimated, units)
    return [f"  in all, estimated interval by interval: {words}"] if words else []


def render_undo(rec: Recording, undo: dict) -> list[str]:
    if not undo["recorded"]:
        return ["", "Undo page reads: not recorded (probe undo_read)"]
    reads, fetches, lat = undo["page_reads"], undo["fetches"], undo["read_latency_us"]
    lines = ["", "Undo page reads (by who caused them)" + sampled_note(rec, "undo_read"),
             f"  physical reads inside version walks {reads['walk']} (undo pages), inside purge "
             f"batches {reads['purge']} (the coordinator's undo and index pages), elsewhere "
             f"{reads['other']} (any page)"]
    lines += estimate_line(undo.get("estimated"), {"page_reads": "physical reads"})
    if rec.probe_attached("undo_fetch") or rec.probe_attached("purge_undo_fetch"):
        lines.append(f"  undo page lookups: version walks {fetches['walk']}, purge {fetches['purge']}, "
                     f"other {fetches['other']}")
    if sum(reads.values()):
        lines.append(f"  read latency {latency(lat)}")
        lines += finding_lines(undo_findings(undo))
        lines += ["", "Physical page read latency", log2_text(rec, "page_read_latency")]
    return lines


def page_io_words(locks: dict) -> str:
    """'on pages being read in 3 (1.2 ms), being written out 8 (8087.6 ms)'; the read count
    alone in a recording made before the two were told apart."""
    if locks["page_write_waits"] is None:
        return f"{locks['page_io_waits']} on page I/O"
    return (f"on pages being read in {locks['page_io_waits']} ({locks['page_read_wait_s'] * 1e3:.1f} ms), "
            f"being written out {locks['page_write_waits']} ({locks['page_write_wait_s'] * 1e3:.1f} ms)")


def render_block_locks(rec: Recording, locks: dict, others: dict, unstacked: dict | None) -> list[str]:
    if not locks["recorded"]:
        return ["", "Block-lock waits: not recorded (probes block_lock_s, block_lock_x)"]
    lat, modes = locks["wait_us"], locks["by_mode"]
    lines = ["", "Block-lock waits (buffer-block latches, slow paths only)"
             + sampled_note(rec, "block_lock_s"),
             f"  waits {locks['waits']} (S {modes['S']}, X {modes['X']}, SX/U {modes['SX']}), "
             f"{locks['total_wait_ms']:.1f} ms in all; " + page_io_words(locks)]
    lines += estimate_line(locks.get("estimated"), {"waits": "waits", "total_wait_s": "s"})
    if locks["waits"]:
        lines.append(f"  wait time {latency(lat)}")
    lines.append(f"  other latches (index, lock system, purge, dictionary ...): {others['waits']} "
                 f"waits, {others['total_wait_ms']:.1f} ms, counted apart")
    lines += finding_lines(block_lock_findings(locks, rec.wait_stacks, rec.duration_s))
    lines += ["", "Block-lock wait time",
              log2_text(rec, rec.schema.hists_of("block_latch"))]
    if locks["top_pages"]:
        lines += ["", "Most contended pages (by wait time)",
                  f"  {'space':>6} {'page':>8} {'waits':>8} {'wait ms':>10}  latch"]
        lines += [f"  {p['space']:>6} {p['page_no']:>8} {p['waits']:>8} {p['wait_us'] / 1000:>10.1f}  {p['name']}"
                  for p in locks["top_pages"][:5]]
    block_stacks = rec.wait_stacks[rec.wait_stacks["mode"] != OTHER_LATCHES]
    if len(block_stacks):
        lines += ["", "Stacks waiting longest (leaf first)"] + unstacked_lines(unstacked)
        lines += wait_stack_lines(block_stacks)
    return lines + holder_lines(top_holders(rec.latch_holders))


def holder_lines(latches: list[dict], frames: int = 6) -> list[str]:
    """The latches whose waits lasted longest, each with the threads that released it to
    its waiters (the wakeup relation), by the waiting they ended."""
    if not latches:
        return []
    lines = ["", "Latch holders: who released the latches others waited on (leaf first)"]
    for latch in latches:
        lines.append(f"  {latch['name']} ({latch['latch']}): {latch['wait_ms']:.1f} ms waited")
        lines += [f"    {h['role']:<20} {h['wait_ms']:9.1f} ms {h['waits']:>7} waits  "
                  f"{leaf_path(h['stack'], frames)}" for h in latch["holders"]]
    return lines


INTERVAL_ROWS = 60  # rows of a per-interval table; a longer recording's are bucketed
NAME_COLUMN = 32  # characters of a latch's name over its column: a block's page, table and index fit


def render_latches(rec: Recording, latches: dict, top: int = 10) -> list[str]:
    """The most contended latches by name, and the per-interval wait time of the top ones."""
    if not latches["top"]:
        return []
    lines = ["", f"Most contended latches (by wait time; {latches['wait_ms']:.1f} ms in all, "
                 f"{latches['named_pct']:.1f}% of it named)",
             f"  {'latch':<48} {'kind':<8} {'waits':>7} {'wait ms':>9} {'p99 us':>8}  top waiter (leaf first)"]
    for t in latches["top"][:top]:
        waiter = leaf_path(t["waiters"][0]["stack"], 3) if t["waiters"] else ""
        lines.append(f"  {shorten(t['name'], 48):<48} {t['kind']:<8} {t['waits']:>7} {t['wait_ms']:>9.1f} "
                     f"{t['p99_us']:>8.0f}  {waiter}")
    timeline = rec.latch_timeline
    names = [t["name"] for t in latches["top"][:3]]
    if len(timeline) and names:
        per = timeline[timeline["name"].isin(names)].pivot_table(
            index="interval", columns="name", values="wait_us", aggfunc="sum", fill_value=0)
        per = per.reindex(columns=names, fill_value=0)
        title = "Latch wait ms per interval (the three most contended)"
        if len(per) > INTERVAL_ROWS:  # a long recording: each row the busiest of its intervals
            buckets = per.index.to_series().rank(method="first").sub(1).mul(INTERVAL_ROWS).floordiv(len(per))
            grouped = per.groupby(buckets.to_numpy())
            per = grouped.max().set_axis([f"{lo}-{hi}" for lo, hi in zip(per.index.to_series().groupby(
                buckets.to_numpy()).min(), per.index.to_series().groupby(buckets.to_numpy()).max())])
            title = (f"Latch wait ms per interval (the three most contended; {len(timeline['interval'].unique()):,} "
                     f"intervals with waits in {len(per)} rows, each the highest of its intervals)")
        lines += ["", title,
                  "  " + f"{'interval':>11} " + " ".join(f"{shorten(n, NAME_COLUMN):>{NAME_COLUMN}}" for n in names)]
        lines += ["  " + f"{i:>11} " + " ".join(f"{v / 1000:>{NAME_COLUMN}.1f}" for v in row)
                  for i, row in zip(per.index, per.to_numpy().tolist())]
    return lines


def header(rec: Recording) -> list[str]:
    meta, target = rec.meta, rec.meta["target"]
    server = server_label(target.get("family"), target.get("version"))
    started = meta.get("start_real_ns")
    when = (dt.datetime.fromtimestamp(started / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            if started else "unknown time")
    ending = ended_by(rec)
    lines = [f"innostall report: {rec.path}",
             f"  server    {server} (pid {target.get('pid')}, {target.get('exe')})",
             f"  recorded  {when}, {rec.duration_s:.1f} s at {meta['interval_s']:g} s intervals, "
             + (ending if ending.startswith("still") else f"ended by {ending}")]
    if saved := trigger_words(meta):
        lines.append(f"  trigger   {saved}")
    if rec.window:
        lines.append(f"  window    {window_words(rec.window)}")
    for p in meta["probes"]:
        told = p["attached"] or (p["reason"] or "").startswith(("not needed", "not available"))
        state = demangle(p["symbol"]) if p["attached"] else p["reason"] if told else f"missing: {p['reason']}"
        lines.append(f"  probe     {p['name']:<14} {state}")
    lines += [f"  warning   {text}" for text in warnings(rec)]
    return lines


def walk_where(w, lookups: frozenset[str]) -> str:
    """'sbtest/sbtest1 via k_1' (a secondary-index read: the index it scanned), or
    'sbtest/sbtest1 PRIMARY'; empty when the walk's index could not be read."""
    table, index = getattr(w, "table", None), getattr(w, "index", None)
    if pd.isna(table) or pd.isna(index):
        return ""
    scanned = getattr(w, "scan_index", None)
    if scans_secondary(w.stack, lookups):
        return f"{table} via {'a secondary index' if pd.isna(scanned) else scanned}  "
    return f"{table} {index}  "


def walk_lines(rec: Recording, top: int = 5, frames: int = 4) -> list[str]:
    lookups = secondary_lookups(rec)
    return [f"  depth {w.depth:<7} {w.latency_us:9.0f} us  tid {w.tid:<8} at {w.t_s:6.1f} s  "
            f"{walk_where(w, lookups)}{leaf_path(w.stack, frames)}"
            for w in rec.walks.nlargest(top, "depth").itertuples()]


def render_walks(rec: Recording, walks: dict, drops: int) -> list[str]:
    if not walks["recorded"]:
        return ["", "Version-chain walks: not recorded (probes version_walk and version_step)"]
    per_s = walks["reads"] / rec.duration_s if rec.duration_s else 0
    lines = ["", "Version-chain walks (consistent reads building old row versions)"
             + sampled_note(rec, "version_walk"),
             f"  reads that built versions {walks['reads']} ({per_s:.1f}/s), versions built "
             f"{walks['versions']}, max depth {walks['max_depth']}"]
    lines += estimate_line(walks.get("estimated"), {"reads": "reads that built versions"})
    if walks["reads"] and walks["depth"]["p50"] is not None:  # None: its histogram is empty (damaged)
        depth, lat = walks["depth"], walks["latency_us"]
        lines.append(f"  depth p50 ~{depth['p50']:.0f}, p99 ~{depth['p99']:.0f}; latency {latency(lat)}")
    lines.append(f"  version steps outside consistent reads (purge, locking, DDL) "
                 f"{walks['steps_outside']}; reads that needed no version {walks['reads_without_versions']}")
    lines.append(f"  deep walks (>= {walks['deep_walk_threshold']} versions) {walks['deep_walks']}, "
                 f"with stacks {walks['deep_walks_kept']}; events lost {drops}")
    lines += finding_lines(walk_findings(walks, drops))
    if walks["reads"]:
        lines += ["", "Version-walk depth", log2_text(rec, "version_walk_depth"),
                  "", "Version-walk latency", log2_text(rec, "version_walk_latency")]
    if len(rec.walks):
        lines += ["", "Deepest walks (stack leaf first)"] + walk_lines(rec)
    return lines


def amount(value) -> str:
    return "unknown" if value is None else f"{value:,}"


def history_lines(purge: dict) -> list[str]:
    h = purge["history"]
    if h["last"] is None:
        return ["  history list length: not recorded"]
    read, at = (f"read from {h['known_from_s']:.1f} s", "at the end") if h["known_to_end"] else (
        f"read from {h['known_from_s']:.1f} to {h['known_to_s']:.1f} s, unknown after: its probes "
        f"were detached by the cost governor", f"at {h['known_to_s']:.1f} s")
    lines = [f"  history list length {h['first']:,} → {h['last']:,} (max {h['max']:,}; {read}); "
             f"{at} pinned {amount(h['pinned'])}, purgeable {amount(h['purgeable'])}"]
    growth = []
    if h["growth_per_s"] is not None:
        growth.append(f"net {h['growth_per_s']:+,.0f}/s over the "
                      f"{'recording' if h['known_to_end'] else 'time it was known'}")
    if h["recent_growth_per_s"] is not None:  # the last readings, wherever they fell
        growth.append(f"{h['recent_growth_per_s']:+,.0f}/s over its last readings "
                      f"({h['recent_from_s']:.1f}–{h['known_to_s']:.1f} s)")
    if growth:
        drain = (f"; drains in ~{h['drain_s']:,.0f} s at that rate" if h["drain_s"] else
                 "; drained" if h["drain_s"] == 0 else "")
        lines.append(f"  history growth {', '.join(growth)}{drain}")
    return lines


def split_line(label: str, split: dict, watched_pct: float | None = None) -> list[str]:
    """'  batch time (coordinator) 1352 ms: cpu 78%, io 11%, latch 5%, other 6%', and the
    share of the time it covers when the sleep tracepoint was sampled."""
    if split["cpu"] is None:
        return []
    total = sum(split.values())
    shares = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in split.items()) if total else "none"
    sampled = f" [sampled: {watched_pct:.0f}% of the time watched]" if watched_pct is not None \
        and watched_pct < 99.5 else ""
    return [f"  {label} {total:,.1f} ms: {shares}{sampled}"]


def opened_when(opened_s: float) -> str:
    """When a view opened, from the attach: 'opened at 12.5 s', or 'opened 4.6 s before the
    recording' (a moment, never said as a negative time)."""
    return f"opened at {opened_s:7.1f} s" if opened_s >= 0 else f"opened {seconds(-opened_s)} before the recording"


def pinning_lines(views: list[dict], kept: str | None = None) -> list[str]:
    """The views that pinned purge, and how their statements were kept (kept: summary's
    purge.statements)."""
    if not views:
        return []
    lines = ["  read views that pinned purge (oldest open, holding history):"]
    for v in views:
        who = "".join([f", connection {v['connection_id']}" if v["connection_id"] is not None else "",
                       f", user {v['user']}" if v["user"] else ""])
        lines.append(f"    tid {v['tid'] if v['tid'] is not None else '?':<8} {opened_when(v['opened_s'])}, open {seconds(v['age_s'])}, "
                     f"held up to {v['pinned_max']:,}{who}")
        if v["stack"]:
            lines.append(f"      opened at {leaf_path(v['stack'], 5)}")
        if v["statement"]:
            lines.append(f"      running {shorten(v['statement'], 100)}")
    if note := statements_note(kept or "", views):
        lines.append(f"    {note}")
    return lines


def dml_delay_line(rec: Recording, s: dict) -> list[str]:
    """The DML delay's line, when its probe was attached."""
    if not rec.probe_attached("dml_delay"):
        return []
    return [f"  DML delayed by innodb_max_purge_lag: {s['dml_delays']} row operations, "
            f"{s['dml_delay_ms']:.1f} ms in all{sampled_note(rec, 'dml_delay')}"]


def render_purge(rec: Recording, s: dict) -> list[str]:
    """The purge section: its batches, history, time split, findings and histograms."""
    if not s["recorded"]:  # the DML delay may be, on its own
        return (["", "Purge: not recorded (probe purge_batch)"] + dml_delay_line(rec, s)
                + finding_lines(throttle_findings(s)))
    lines = ["", "Purge", f"  {purge_headline(s, rec.duration_s)}"]
    lines += history_lines(s)
    watched = s.get("split_watched_pct", {})
    lines += split_line("batch time (coordinator)", s["batch_time_ms"], watched.get("batch"))
    lines += split_line(f"worker time ({s['worker_tasks']:,} tasks)", s["worker_time_ms"],
                        watched.get("worker"))
    lines += work_latch_lines(s["latches"], "its batches and tasks")
    lines += pinning_lines(s["pinned_by"], s.get("statements"))
    if rec.probe_attached("purge_record"):
        lines.append(f"  undo records handed to purge {s['records']}{sampled_note(rec, 'purge_record')}"
                     + (f" ({s['records'] / s['batches']:.1f} per batch)" if s["batches"] else ""))
        lines += estimate_line(s.get("records_estimated"), {"records": "undo records"})
    lines += dml_delay_line(rec, s)
    series = per_interval(rec, ["purge_batches", "purge_empty_batches", "purge_pages"])
    lines += finding_lines(purge_findings(rec, s) + throttle_findings(s))
    lines += ["", "Purge over time (one character per interval, scaled to the peak)"]
    for name, label in [("purge_batches", "batches"), ("purge_empty_batches", "empty"),
                        ("purge_pages", "pages")]:
        lines.append(f"  {label:<8} |{sparkline(series[name])}| peak {series[name].max()}")
    lines += ["", "Purge batch latency", log2_text(rec, "purge_batch_latency"),
              "", "Undo pages per purge batch", log2_text(rec, "purge_batch_pages")]
    if rec.probe_attached("purge_record"):
        lines += ["", "Undo records per purge batch",
                  log2_text(rec, "purge_batch_records")]
    return lines


def render_text(rec: Recording) -> str:
    full = summary(rec)
    head = header(rec)
    lines = head[:1] + verdict_view.text_lines(full) + [""] + head[1:]
    lines += replica_lines(rec, full) + finding_lines(replica_findings(rec, full))  # on a replica, its story first
    lines += render_purge(rec, full["purge"])
    lines += render_walks(rec, full["version_walk"], full["drops"])
    lines += render_undo(rec, full["undo"])
    lines += render_block_locks(rec, full["block_lock"], full["other_latch"], full["latches"]["unstacked"])
    lines += render_latches(rec, full["latches"])
    lines += redo_lines(full) + finding_lines(purge_redo_findings(full) + flush_findings(full)
                                              + log_room_findings(full) + free_page_findings(full)
                                              + batch_findings(full))
    lines += render_cost(full["governor"])
    return "\n".join(lines)
