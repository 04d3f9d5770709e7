"""Tables of the ratios and the targets, as text for the terminal and as Markdown."""
from __future__ import annotations

RATIO_HEADER = ["phase", "comparison (B/A)", "metric", "median", "min", "max", "pairs", "per pair"]
TARGET_HEADER = ["target", "measured", "result"]


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in [header] + rows)


def md_table(header: list[str], rows: list[list[str]]) -> str:
    def line(cells):
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
    return "\n".join([line(header), "|" + "---|" * len(header)] + [line(r) for r in rows])


def comparison_rows(results: dict) -> list[list[str]]:
    rows = []
    for section in ("steady", "pfs", "worst"):
        for name, metrics in results.get(section, {}).get("comparisons", {}).items():
            for metric, s in metrics.items():
                rows.append([section, name, metric, fmt(s["median"]), fmt(s["min"]), fmt(s["max"]),
                             str(s["pairs"]), " ".join(fmt(r) for r in s["ratios"])])
    return rows


def target_rows(results: dict) -> list[list[str]]:
    return [[t["target"], t["measured"], t["result"]] for t in results["targets"]]
