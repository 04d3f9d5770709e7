"""Log2 histograms: slot s counts values in [2^s, 2^(s+1)); slot 0 also counts 0."""
from __future__ import annotations

import pandas as pd

BAR_WIDTH = 40


def slot_bounds(slot: int) -> tuple[int, int]:
    return (0 if slot == 0 else 1 << slot), (1 << (slot + 1)) - 1


def percentile(hist: pd.Series, q: float) -> float | None:
    """Estimate the q-quantile (0..1), interpolating linearly inside the slot it falls in."""
    total = int(hist.sum())
    if not total:
        return None
    rank = q * total
    seen = 0
    for slot, count in hist.sort_index().items():
        if count and seen + count >= rank:
            low, high = slot_bounds(int(slot))
            return low + (high - low) * (rank - seen) / count
        seen += count
    return float(slot_bounds(int(hist.index.max()))[1])


def stats(hist: pd.Series) -> dict:
    """p50 and p99 (interpolated) and max, the top of the highest non-empty slot: an upper
    bound. All None when the histogram is empty."""
    if hist.empty or not hist.sum():
        return {"p50": None, "p99": None, "max": None}
    return {"p50": round(percentile(hist, 0.50), 1), "p99": round(percentile(hist, 0.99), 1),
            "max": slot_bounds(int(hist[hist > 0].index.max()))[1]}


def format_log2(hist: pd.Series, unit: str) -> str:
    """A histogram laid out exactly as bcc's libbpf-tools print it (print_log2_hist): the
    unit after five spaces in a 19-wide column, bounds 10 wide, counts 8 wide, 40 stars,
    from slot 0 to the highest non-empty one; so a line pasted beside a bcc tool's lines up."""
    counts = hist[hist > 0]
    if counts.empty:
        return f"{'':5}{unit:<19} : (no events)"
    top = int(counts.index.max())
    peak = int(counts.max())
    lines = [f"{'':5}{unit:<19} : count    distribution"]
    for slot in range(top + 1):
        n = int(hist.get(slot, 0))
        low, high = slot_bounds(slot)
        bar = "*" * (n * BAR_WIDTH // peak)
        lines.append(f"{low:>10} -> {high:<10} : {n:<8} |{bar:<{BAR_WIDTH}}|")
    return "\n".join(lines)
