"""The page cleaners' batches (probes flush_batch, flush_lru_batch; probes/flush_batch.bpf.c):
per list, how many batches wrote pages, how many pages and in how long, and their latency.
Only what was written counts: a call that found nothing to write (MariaDB 10.5+ returns at
once when another batch is running or nothing is due) is counted apart.

This module keeps the lists and what is said of the batches' figures: how they are told
(batch_lines) and when they make a finding (slow_batch_findings), functions of the figures
alone. The figures are read from the recording with the rest of flushing's
(redo.flush_batches), so that the redo section's words and the findings, which import this
module, stay a floor below them (scripts/import_floors.py)."""
from __future__ import annotations

LISTS = {"list": "flush list", "lru": "LRU list"}


def batch_lines(batches: dict | None, sampled: str = "") -> list[str]:
    """'  page cleaners: 3 flush-list batches wrote 1,048 pages in 38.9 ms (349.3 a batch),
    0 LRU-list batches; 5 calls wrote nothing; batch latency p50 ~...', then what sampled
    the batches' probes (sampling.sampled_words of batches["coverage"])."""
    if not batches:
        return []
    told = [(f"{b['batches']:,} {LISTS[name]} batches wrote {b['pages']:,} pages in {b['seconds'] * 1e3:,.1f} ms"
             f" ({b['pages_per_batch']:,.1f} a batch)") if b["batches"] else f"no {LISTS[name]} batch"
            for name, b in ((n, batches[n]) for n in LISTS) if b]
    lat = batches["latency_us"]
    latency = (f"; batch latency p50 ~{lat['p50']:.0f} µs, p99 ~{lat['p99']:.0f} µs, max ≤ {lat['max']:.0f} µs"
               if lat.get("p50") is not None else "")
    return [f"  page cleaners: {', '.join(told)}; {batches['empty']:,} calls wrote nothing{latency}"
            f"{sampled}"]


SLOW_BATCH_S = 1.0  # a batch this long means the disk did not keep up: writers stall behind it


def slow_batch_findings(batches: dict | None, sampled: bool = False) -> list[str]:
    """A page-cleaner batch of SLOW_BATCH_S or more: the disk's writes could not keep up.
    sampled: the batches' probes were attached only batches["coverage"] of the time."""
    if not batches or batches["slowest_s"] < SLOW_BATCH_S:
        return []
    pages = sum(batches[n]["pages"] for n in LISTS if batches[n])
    seconds = sum(batches[n]["seconds"] for n in LISTS if batches[n])
    watched = f", watched {100 * batches['coverage']:.0f}% of the time" if sampled else ""
    return [f"The page cleaners' slowest batch took {batches['slowest_s']:.1f} s (their batches wrote "
            f"{pages:,} pages in {seconds:.1f} s in all){watched}: the disk did not keep up with their writes, "
            "and writers that need a page being written, or room in the log, wait behind them."]
