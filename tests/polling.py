"""Waiting for a server's figure to settle: read it until it stops moving."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def settled(read: Callable[[], T], quiet_s: float, timeout_s: float, every_s: float = 0.2,
            moved: Callable[[T, T], bool] = lambda a, b: a != b,
            done: Callable[[T], bool] = lambda value: False) -> tuple[T, bool]:
    """read() every every_s until it has not moved for quiet_s or done() says so: (the last
    value, True), or (the last value, False) once timeout_s has passed first."""
    deadline = time.monotonic() + timeout_s
    last, since = read(), time.monotonic()
    while not done(last):
        if time.monotonic() - since >= quiet_s:
            return last, True
        if time.monotonic() >= deadline:
            return last, False
        time.sleep(every_s)
        now = read()
        if moved(last, now):
            since = time.monotonic()
        last = now
    return last, True
