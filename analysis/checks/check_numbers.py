"""How the checkers (verdict_check.py, replica_check.py, figure_bounds_check.py) read a
number back: as printed, to the precision it was printed at, against the true one; and a
figure as JSON has it, for their messages. Apart, so that the checkers share it without
importing one another."""
from __future__ import annotations

import math

TOLERANCE = 2e-3  # seconds: times are kept to the millisecond
NUMBER = r"[+-]?\d[\d,]*(?:\.\d+)?"


def inside(index, from_s: float, to_s: float):
    """Which snapshot times (a table's index) end an interval of the span (from_s, to_s],
    whose ends are rounded to the millisecond. The edge allows for that rounding, but never
    half the span or more: a span of the 2 ms between a last snapshot and the final one
    must still hold the final one."""
    edge = min(TOLERANCE, (to_s - from_s) / 2)
    return (index > from_s + edge) & (index <= to_s + edge)


def said(text: str, real) -> bool:
    """Whether a number as printed is the true one, to the precision it was printed at.
    The words print figures kept to three decimals, so a rate of -26.5004/s, kept as -26.5,
    reads '-26' (rounding half to even): that half-thousandth is allowed for too."""
    if real is None or (isinstance(real, float) and math.isnan(real)):
        return False
    decimals = len(text.split(".")[1]) if "." in text else 0
    kept = 0.5e-3 if decimals < 3 else 0.0
    return (abs(float(text.replace(",", "")) - float(real))
            <= 0.5 * 10 ** -decimals + kept + 1e-6 * abs(float(real)))


def shown(value):
    """A figure as JSON would have it, for a message."""
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    if value is None or isinstance(value, str):
        return value
    value = float(value)
    return None if math.isnan(value) else int(value) if value.is_integer() else round(value, 3)


def same(told, real) -> bool:
    if told is None or real is None or (isinstance(real, float) and math.isnan(real)):
        return (told is None) == (real is None or (isinstance(real, float) and math.isnan(real)))
    if isinstance(real, str) or isinstance(told, str):
        return told == real
    return abs(float(told) - float(real)) <= max(TOLERANCE, 1e-6 * abs(float(real)))
