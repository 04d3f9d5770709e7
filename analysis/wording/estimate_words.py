"""How an estimate of a sampled count is said (estimates.estimated_figures gives it): the
figure, and beside it how far the estimator strayed where make bench measured it."""
from __future__ import annotations


def error_words(error: dict | None) -> str:
    """'make bench: 65-76% low', '9% low to 3% high', or 'its error not measured'."""
    if not error:
        return "its error not measured"
    low, high = round(100 * error["low"]), round(100 * error["high"])
    if high < 0:
        span = f"{-high}%" if low == high else f"{-high}–{-low}%"
        return f"make bench: {span} low"
    if low > 0:
        span = f"{low}%" if low == high else f"{low}–{high}%"
        return f"make bench: {span} high"
    return f"make bench: {-low}% low to {high}% high"

def estimate_words(estimated: dict | None, units: dict[str, str]) -> str:
    """'about 1.620 s (make bench: 9% low to 3% high), 1,234 waits (make bench: 14% low to
    13% high)', from estimated_figures; units gives each figure's words: a noun ('waits'),
    or 's' for seconds."""
    if not estimated:
        return ""
    errors = estimated.get("errors", {})
    parts = [(f"{estimated[figure]:.3f} s" if unit == "s" else f"{estimated[figure]:,.0f} {unit}")
             + f" ({error_words(errors.get(figure))})"
             for figure, unit in units.items()]  # a thousandth of a second: a quiet minute's waits
    return "about " + ", ".join(parts)
