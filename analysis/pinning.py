"""The read views that pin purge: the oldest one open at each snapshot (the table's view_*
columns), the ones that held history worth the name, and how they are named in words.

Purge may remove an undo log only when no read view can still need it, so the oldest open
view pins the history added since it opened (purge.split_history)."""
from __future__ import annotations

import math

import pandas as pd

from .interval_columns import BACKLOG_MIN, columns
from .recording import Recording

PIN_LISTED = 10  # pinning views listed at most
VIEW_COLUMNS = ["tid", "opened_s", "age_s", "history_at_open", "stack", "connection_id",
                "user", "statement", "source", "seen_open", "open"]
# How the recorder kept the statements (meta.json's sql.statements), said where they are shown
STATEMENTS_NOTES = {
    "fingerprinted": "statements shown as fingerprints (literals replaced by ?); record --keep-literals keeps them",
    "literals kept": "statements shown with their literals (record --keep-literals)",
}


def oldest_views(rec: Recording, ends: pd.Index) -> pd.DataFrame:
    """Per interval end, the oldest read view open at its snapshot (view_* columns)."""
    views = rec.read_views
    columns = [f"view_{c}" for c in VIEW_COLUMNS]
    if not len(views):
        return pd.DataFrame({c: pd.Series([None] * len(ends), index=ends, dtype=object)
                             for c in columns})
    oldest = views.sort_values(["interval", "opened_s"]).groupby("interval").head(1)
    ends_of = rec.counters.groupby("interval")["t_s"].first()
    oldest = oldest.assign(t_s=oldest["interval"].map(ends_of)).set_index("t_s")
    oldest = oldest[VIEW_COLUMNS].rename(columns=lambda c: f"view_{c}").reindex(ends).astype(object)
    return oldest.where(oldest.notna(), None)


def view_keys(table: pd.DataFrame) -> list:
    """Which view each interval's oldest is, as (tid, opened_s), or None when none was
    seen (the tid itself may be unknown: a transaction found by SQL without one)."""
    return [None if opened is None else (int(tid) if tid is not None else None, round(float(opened), 3))
            for tid, opened in zip(table["view_tid"], table["view_opened_s"])]


def is_known(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def phase_views(rows) -> list[dict]:
    """The distinct oldest views of a phase's intervals, each as at its last interval (rows:
    an interval_columns.Span of the table)."""
    seen: dict = {}
    fields = {c: rows[f"view_{c}"] for c in VIEW_COLUMNS}
    for i, opened in enumerate(fields["opened_s"]):
        if opened is not None:
            seen[(fields["tid"][i], opened)] = plain_view({c: fields[c][i] for c in VIEW_COLUMNS})
    return list(seen.values())


def plain_view(view: dict) -> dict:
    """A view's fields as JSON has them: whole numbers as int, unknowns as None."""
    out = {k: (v if is_known(v) else None) for k, v in view.items()}
    for k in ("tid", "connection_id", "history_at_open", "open"):
        out[k] = int(out[k]) if out.get(k) is not None else None
    return out


def pinning_views(table: pd.DataFrame) -> list[dict]:
    """The read views that pinned purge: oldest open in at least two snapshots, and holding
    a history worth the name (or every batch found nothing) in one. Each with its age at
    the last interval it pinned; the ones holding most first, at most PIN_LISTED."""
    found: dict = {}
    c = columns(table)
    tids, opened, pinned, all_empty = c["view_tid"], c["view_opened_s"], c["pinned"], c["all_empty"]
    for i, t in enumerate(c.t.tolist()):
        if opened[i] is None:
            continue
        holds = (not math.isnan(pinned[i]) and pinned[i] > BACKLOG_MIN) or all_empty[i]
        entry = found.setdefault((tids[i], opened[i]), {"seen": 0, "pinned": False, "held": 0.0})
        entry["seen"] += 1
        if holds:
            entry.update(pinned=True, last=i, until_s=t,
                         held=max(entry["held"], 0.0 if math.isnan(pinned[i]) else float(pinned[i])))
            entry.setdefault("since_s", t)
    listed = [e for e in found.values() if e["pinned"] and e["seen"] >= 2]
    listed.sort(key=lambda e: (-e["held"], opened[e["last"]]))
    return [view_json(e, {col: c[f"view_{col}"][e["last"]] for col in VIEW_COLUMNS}) for e in listed[:PIN_LISTED]]


def view_json(entry: dict, last: dict) -> dict:
    """A pinning view as JSON has it; last: its fields at the last interval it pinned."""
    view = plain_view(last)
    return {"tid": view["tid"], "opened_s": round(float(view["opened_s"]), 3),
            "age_s": round(float(view["age_s"]), 3), "stack": view["stack"] or "",
            "connection_id": view["connection_id"], "user": view["user"],
            "statement": view["statement"], "source": view["source"],
            "seen_open": bool(view["seen_open"]), "history_at_open": view["history_at_open"],
            "pinned_from_s": round(float(entry["since_s"]), 3),
            "pinned_to_s": round(float(entry["until_s"]), 3),
            "pinned_max": int(entry["held"])}


def statements_kept(meta: dict) -> str:
    """"fingerprinted" or "literals kept", as the recorder (or innostall redact) said; "as
    recorded" for a recording made before either was said (its literals kept)."""
    sql = meta.get("sql")
    kept = sql.get("statements") if isinstance(sql, dict) else None
    return kept if isinstance(kept, str) and kept in STATEMENTS_NOTES else "as recorded"


def statements_note(kept: str, views: list[dict]) -> str | None:
    """The line said under the views when one of them shows a statement; none for a
    recording that does not say how it kept them."""
    return STATEMENTS_NOTES.get(kept) if any(v.get("statement") for v in views) else None
