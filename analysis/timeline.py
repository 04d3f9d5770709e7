"""Per-interval series of a recording, and a one-line terminal view of them."""
from __future__ import annotations

import pandas as pd

from .recording import Recording

BLOCKS = " ▁▂▃▄▅▆▇█"


def per_interval(rec: Recording, names: list[str]) -> pd.DataFrame:
    """One row per interval, one column per counter (its delta), indexed by end time."""
    rows = rec.counters[rec.counters["name"].isin(names)]
    table = rows.pivot_table(index="t_s", columns="name", values="value", aggfunc="sum",
                             observed=True)
    return table.reindex(columns=names, fill_value=0).fillna(0).astype("int64")


def sparkline(values: pd.Series) -> str:
    peak = values.max()
    if not peak:
        return BLOCKS[0] * len(values)
    return "".join(BLOCKS[round(v * (len(BLOCKS) - 1) / peak)] if v else BLOCKS[0]
                   for v in values)
