"""The report of one recording: a summary (for --json) and its terminal rendering."""
from __future__ import annotations

import datetime as dt

import pandas as pd

from innostall.collector.elf import demangle
from innostall.collector.target import server_label

from .cost import cost_summary, coverage, render_cost, sampled_note
from .histogram import format_log2, percentile, stats
from .recording import Recording
from .timeline import per_interval, sparkline


BLOCK_WAIT_HISTS = {"S": "block_wait_s", "X": "block_wait_x", "SX": "block_wait_sx"}


def latency_summary(rec: Recording, names: str | list[str]) -> dict:
    """p50, p99 and max of one log2 histogram, or of several summed slot by slot."""
    return stats(rec.hist(names))


def depth_summary(rec: Recording, max_depth: int) -> dict:
    """Depth percentiles from the log2 histogram, never above the exact maximum."""
    hist = rec.hist("version_walk_depth")
    if hist.empty or not hist.sum():
        return {"p50": None, "p99": None}
    return {q: round(min(percentile(hist, f), max_depth), 1) for q, f in (("p50", 0.5), ("p99", 0.99))}


def version_walk_summary(rec: Recording) -> dict:
    # version_walk_max_depth is a running maximum, so its deltas sum to it. A recording cut
    # short can hold deep-walk events newer than its last snapshot: count those too.
    kept = rec.walks["depth"]
    max_depth = max(rec.counter_total("version_walk_max_depth"), int(kept.max()) if len(kept) else 0)
    return {
        "recorded": rec.probe_attached("version_walk") and rec.probe_attached("version_step"),
        "reads": rec.counter_total("version_walks"),
        "reads_without_versions": rec.counter_total("version_walks_zero"),
        "reads_unstepped": rec.counter_total("version_walks_unstepped"),
        "versions": rec.counter_total("version_steps"),
        "steps_outside": rec.counter_total("version_steps_outside"),
        "max_depth": max_depth,
        "depth": depth_summary(rec, max_depth),
        "latency_us": latency_summary(rec, "version_walk_latency"),
        "deep_walk_threshold": rec.setting("deep_walk_threshold", 100),
        "deep_walks": max(rec.counter_total("deep_walks"), len(kept)),
        "deep_walks_kept": len(rec.walks),
        "coverage": coverage(rec, "version_walk"),
    }


def top_pages(rec: Recording, top: int = 10) -> list[dict]:
    pages = rec.pages.nlargest(top, "wait_us")
    return [{"space": int(p.space), "page_no": int(p.page_no), "waits": int(p.waits),
             "wait_us": round(float(p.wait_us), 1)} for p in pages.itertuples()]


def block_lock_summary(rec: Recording) -> dict:
    by_mode = {mode: rec.counter_total(f"block_waits_{mode.lower()}") for mode in BLOCK_WAIT_HISTS}
    return {
        "recorded": rec.probe_attached("block_lock_s") or rec.probe_attached("block_lock_x"),
        "waits": sum(by_mode.values()),
        "by_mode": by_mode,
        "wait_us": latency_summary(rec, list(BLOCK_WAIT_HISTS.values())),
        "total_wait_ms": round(rec.counter_total("block_wait_ns") / 1e6, 1),
        "page_io_waits": rec.counter_total("block_io_waits"),
        "top_pages": top_pages(rec),
        "map_full": rec.counter_total("latch_map_full"),
        "coverage": coverage(rec, "block_lock_s"),
    }


def other_latch_summary(rec: Recording) -> dict:
    return {"waits": rec.counter_total("other_latch_waits"),
            "wait_us": latency_summary(rec, "other_latch_wait"),
            "total_wait_ms": round(rec.counter_total("other_latch_wait_ns") / 1e6, 1)}


def undo_summary(rec: Recording) -> dict:
    causes = ("walk", "purge", "other")
    return {
        "recorded": rec.probe_attached("undo_read"),
        "fetches": {c: rec.counter_total(f"undo_fetches_{c}") for c in causes},
        "page_reads": {c: rec.counter_total(f"page_reads_{c}") for c in causes},
        "read_latency_us": latency_summary(rec, "page_read_latency"),
        "coverage": coverage(rec, "undo_read"),
    }


def summary(rec: Recording) -> dict:
    batches = rec.counter_total("purge_batches")
    return {
        "server": rec.meta["target"],
        "duration_s": round(rec.duration_s, 3),
        "complete": bool(rec.meta.get("complete")),
        "purge": {
            "batches": batches,
            "empty_batches": rec.counter_total("purge_empty_batches"),
            "pages": rec.counter_total("purge_pages"),
            "records": rec.counter_total("purge_records"),
            "latency_us": latency_summary(rec, "purge_batch_latency"),
            "dml_delays": rec.counter_total("dml_delays"),
            "dml_delay_ms": round(rec.counter_total("dml_delay_us") / 1000, 1),
            "records_coverage": coverage(rec, "purge_record"),
            "dml_delay_coverage": coverage(rec, "dml_delay"),
        },
        "version_walk": version_walk_summary(rec),
        "undo": undo_summary(rec),
        "block_lock": block_lock_summary(rec),
        "other_latch": other_latch_summary(rec),
        "drops": rec.counter_total("drops"),
        "governor": cost_summary(rec),
    }


def findings(series) -> list[str]:
    """Plain-words reading of the purge series (one row per interval)."""
    if not series["purge_batches"].sum():
        return ["No purge batch ran: purge had no history to work on, or it is disabled."]
    stalled = (series["purge_batches"] > 0) & (series["purge_empty_batches"] == series["purge_batches"])
    if stalled.sum() >= max(2, len(series) // 5):
        working = series[~stalled & (series["purge_pages"] > 0)]
        text = (f"In {stalled.sum()} of {len(series)} intervals every purge batch found nothing "
                "to purge: an old read view (a long transaction or consistent snapshot) kept the "
                "history from being purged.")
        if len(working):
            text += (f" Purge did its work in {len(working)} interval(s): "
                     f"{working['purge_pages'].sum()} undo pages.")
        return [text]
    return []


def walk_findings(walks: dict, drops: int) -> list[str]:
    """Plain-words reading of the version-walk summary."""
    found = []
    if walks["deep_walks"]:
        found.append(f"{walks['deep_walks']} read(s) walked >= {walks['deep_walk_threshold']} "
                     f"row versions; the deepest walked {walks['max_depth']}: a long-running "
                     "snapshot is reading rows updated since it started, rebuilding each old "
                     "version from undo.")
    if drops:
        found.append(f"{drops} event(s) were lost (ring buffer or state map full): the deep-walk "
                     "table is incomplete; counters and histograms are not affected.")
    return found


def block_lock_findings(locks: dict, stacks: pd.DataFrame, duration_s: float) -> list[str]:
    """Plain-words reading of the block-latch waits."""
    if not locks["waits"]:
        return []
    found = [f"Threads waited {locks['total_wait_ms'] / 1000:.2f} s in all on buffer-block "
             f"latches ({locks['waits']} waits in {duration_s:.0f} s)."]
    if locks["top_pages"]:
        hottest = locks["top_pages"][0]
        share = 100 * hottest["wait_us"] / (locks["total_wait_ms"] * 1000 or 1)
        found[0] += (f" {share:.0f}% of that time was on one page, space {hottest['space']} "
                     f"page {hottest['page_no']}: a hot spot (hot rows, a small table or an "
                     "index root).")
    purge_us = stacks.loc[stacks["stack"].str.contains("row_purge", regex=False), "wait_us"].sum()
    if purge_us > 0.05 * locks["total_wait_ms"] * 1000:
        found.append(f"Purge itself waited {purge_us / 1e6:.2f} s on block latches: it contends "
                     "with user DML for the same pages, which slows it down.")
    if locks["page_io_waits"]:
        found.append(f"{locks['page_io_waits']} waits were for a page being read from disk "
                     "(page I/O, not latch contention).")
    return found


def top_wait_stacks(stacks: pd.DataFrame, top: int = 5, frames: int = 5) -> list[str]:
    return [f"  {w.mode:<3} {w.wait_us / 1000:9.1f} ms {w.waits:>8} waits  {leaf_path(w.stack, frames)}"
            for w in stacks.nlargest(top, "wait_us").itertuples()]


def render_undo(rec: Recording, undo: dict) -> list[str]:
    if not undo["recorded"]:
        return ["", "Undo page reads: not recorded (probe undo_read)"]
    reads, fetches, lat = undo["page_reads"], undo["fetches"], undo["read_latency_us"]
    lines = ["", "Undo page reads (by who caused them)" + sampled_note(rec, "undo_read"),
             f"  physical reads inside version walks {reads['walk']} (undo pages), inside purge "
             f"batches {reads['purge']} (the coordinator's undo and index pages), elsewhere "
             f"{reads['other']} (any page)"]
    if rec.probe_attached("undo_fetch") or rec.probe_attached("purge_undo_fetch"):
        lines.append(f"  undo page lookups: version walks {fetches['walk']}, purge {fetches['purge']}, "
                     f"other {fetches['other']}")
    if sum(reads.values()):
        lines.append(f"  read latency p50 ~{lat['p50']:.0f} us, p99 ~{lat['p99']:.0f} us")
        if reads["walk"] > max(10, 0.2 * sum(reads.values())):
            lines.append(f"  finding: version walks read {reads['walk']} undo pages from disk: the "
                         "history they need no longer fits the buffer pool, so old snapshots make "
                         "reads wait for I/O.")
        lines += ["", "Physical page read latency", format_log2(rec.hist("page_read_latency"), "usecs")]
    return lines


def render_block_locks(rec: Recording, locks: dict, others: dict) -> list[str]:
    if not locks["recorded"]:
        return ["", "Block-lock waits: not recorded (probes block_lock_s, block_lock_x)"]
    lat, modes = locks["wait_us"], locks["by_mode"]
    lines = ["", "Block-lock waits (buffer-block latches, slow paths only)"
             + sampled_note(rec, "block_lock_s"),
             f"  waits {locks['waits']} (S {modes['S']}, X {modes['X']}, SX/U {modes['SX']}), "
             f"{locks['total_wait_ms']:.1f} ms in all, {locks['page_io_waits']} on page I/O"]
    if locks["waits"]:
        lines.append(f"  wait time p50 ~{lat['p50']:.0f} us, p99 ~{lat['p99']:.0f} us, "
                     f"max <= {lat['max']} us")
    lines.append(f"  other latches (index, lock system, purge, dictionary ...): {others['waits']} "
                 f"waits, {others['total_wait_ms']:.1f} ms, counted apart")
    lines += [f"  finding: {text}" for text in block_lock_findings(locks, rec.wait_stacks, rec.duration_s)]
    lines += ["", "Block-lock wait time",
              format_log2(rec.hist(list(BLOCK_WAIT_HISTS.values())), "usecs")]
    if locks["top_pages"]:
        lines += ["", "Most contended pages (by wait time)",
                  f"  {'space':>6} {'page':>8} {'waits':>8} {'wait ms':>10}"]
        lines += [f"  {p['space']:>6} {p['page_no']:>8} {p['waits']:>8} {p['wait_us'] / 1000:>10.1f}"
                  for p in locks["top_pages"][:5]]
    block_stacks = rec.wait_stacks[rec.wait_stacks["mode"] != "other"]
    if len(block_stacks):
        lines += ["", "Stacks waiting longest (leaf first)"] + top_wait_stacks(block_stacks)
    return lines


def header(rec: Recording) -> list[str]:
    meta, target = rec.meta, rec.meta["target"]
    server = server_label(target.get("family"), target.get("version"))
    started = meta.get("start_real_ns")
    when = (dt.datetime.fromtimestamp(started / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            if started else "unknown time")
    ending = meta.get("end_reason") or "cut short (recorder killed)"
    lines = [f"innostall report: {rec.path}",
             f"  server    {server} (pid {target.get('pid')}, {target.get('exe')})",
             f"  recorded  {when}, {rec.duration_s:.1f} s at {meta['interval_s']:g} s intervals, "
             f"ended by {ending}"]
    for p in meta["probes"]:
        state = demangle(p["symbol"]) if p["attached"] else f"missing: {p['reason']}"
        lines.append(f"  probe     {p['name']:<14} {state}")
    return lines


def short_frame(frame: str) -> str:
    """A demangled frame without its argument list, for narrow terminal lines."""
    depth = 0
    for i, ch in enumerate(frame):
        depth += ch in "<"
        depth -= ch in ">"
        if ch == "(" and depth == 0 and i:
            return frame[:i]
    return frame


def leaf_path(folded: str, frames: int) -> str:
    """The innermost frames of a folded stack (root first), leaf first, without arguments."""
    leaf_first = [short_frame(f) for f in reversed(str(folded).split(";")) if f]
    return " <- ".join(leaf_first[:frames])


def deepest_walks(walks: pd.DataFrame, top: int = 5, frames: int = 4) -> list[str]:
    return [f"  depth {w.depth:<7} {w.latency_us:9.0f} us  tid {w.tid:<8} at {w.t_s:6.1f} s  "
            f"{leaf_path(w.stack, frames)}" for w in walks.nlargest(top, "depth").itertuples()]


def render_walks(rec: Recording, walks: dict, drops: int) -> list[str]:
    if not walks["recorded"]:
        return ["", "Version-chain walks: not recorded (probes version_walk and version_step)"]
    per_s = walks["reads"] / rec.duration_s if rec.duration_s else 0
    lines = ["", "Version-chain walks (consistent reads building old row versions)"
             + sampled_note(rec, "version_walk"),
             f"  reads that built versions {walks['reads']} ({per_s:.1f}/s), versions built "
             f"{walks['versions']}, max depth {walks['max_depth']}"]
    if walks["reads"]:
        depth, lat = walks["depth"], walks["latency_us"]
        lines.append(f"  depth p50 ~{depth['p50']:.0f}, p99 ~{depth['p99']:.0f}; latency p50 "
                     f"~{lat['p50']:.0f} us, p99 ~{lat['p99']:.0f} us, max <= {lat['max']} us")
    lines.append(f"  version steps outside consistent reads (purge, locking, DDL) "
                 f"{walks['steps_outside']}; reads that needed no version {walks['reads_without_versions']}")
    lines.append(f"  deep walks (>= {walks['deep_walk_threshold']} versions) {walks['deep_walks']}, "
                 f"with stacks {walks['deep_walks_kept']}; events lost {drops}")
    lines += [f"  finding: {text}" for text in walk_findings(walks, drops)]
    if walks["reads"]:
        lines += ["", "Version-walk depth", format_log2(rec.hist("version_walk_depth"), "versions"),
                  "", "Version-walk latency", format_log2(rec.hist("version_walk_latency"), "usecs")]
    if len(rec.walks):
        lines += ["", "Deepest walks (stack leaf first)"] + deepest_walks(rec.walks)
    return lines


def render_text(rec: Recording) -> str:
    full = summary(rec)
    s = full["purge"]
    lat = s["latency_us"]
    per_s = s["batches"] / rec.duration_s if rec.duration_s else 0
    per_batch = s["pages"] / s["batches"] if s["batches"] else 0
    lines = header(rec) + [
        "",
        "Purge",
        f"  batches {s['batches']} ({per_s:.1f}/s), empty {s['empty_batches']}, "
        f"undo pages {s['pages']} ({per_batch:.1f} per batch)",
    ]
    if s["batches"]:
        lines.append(f"  batch latency p50 ~{lat['p50']:.0f} us, p99 ~{lat['p99']:.0f} us, "
                     f"max <= {lat['max']} us")
    if rec.probe_attached("purge_record"):
        lines.append(f"  undo records handed to purge {s['records']}{sampled_note(rec, 'purge_record')}"
                     + (f" ({s['records'] / s['batches']:.1f} per batch)" if s["batches"] else ""))
    if rec.probe_attached("dml_delay"):
        lines.append(f"  DML delayed by innodb_max_purge_lag: {s['dml_delays']} row operations, "
                     f"{s['dml_delay_ms']:.1f} ms in all{sampled_note(rec, 'dml_delay')}")
    series = per_interval(rec, ["purge_batches", "purge_empty_batches", "purge_pages"])
    lines += [f"  finding: {text}" for text in findings(series)]
    if s["dml_delays"]:
        lines.append(f"  finding: purge lag throttled DML: {s['dml_delays']} inserts/updates slept "
                     f"{s['dml_delay_ms'] / 1000:.2f} s in all (innodb_max_purge_lag).")
    lines += ["", "Purge over time (one character per interval, scaled to the peak)"]
    for name, label in [("purge_batches", "batches"), ("purge_empty_batches", "empty"),
                        ("purge_pages", "pages")]:
        lines.append(f"  {label:<8} |{sparkline(series[name])}| peak {series[name].max()}")
    lines += ["", "Purge batch latency", format_log2(rec.hist("purge_batch_latency"), "usecs"),
              "", "Undo pages per purge batch", format_log2(rec.hist("purge_batch_pages"), "pages")]
    if rec.probe_attached("purge_record"):
        lines += ["", "Undo records per purge batch",
                  format_log2(rec.hist("purge_batch_records"), "records")]
    lines += render_walks(rec, full["version_walk"], full["drops"])
    lines += render_undo(rec, full["undo"])
    lines += render_block_locks(rec, full["block_lock"], full["other_latch"])
    lines += render_cost(full["governor"])
    return "\n".join(lines)
