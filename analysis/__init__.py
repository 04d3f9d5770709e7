"""Offline analysis of recordings: pandas tables, reports."""

from .frames import load_frames  # noqa: F401  (the one-call helper: innostall.analysis.load_frames)
