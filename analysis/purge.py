"""What the report says of purge over the whole recording (purge_story): the per-interval
table (purge_history.purge_table) cut into phases (phases.py), each told by its figures and
words (phase_figures.py), with the history and the views that pinned it. The watch's
child process (purge_phases.py) reads its phases; the summary puts the same parts together
itself for the report's purge section (summary.purge_story), a floor lower."""
from __future__ import annotations

from .phase_figures import phase_list
from .purge_history import purge_table, story_of
from .recording import Recording


def purge_story(rec: Recording) -> dict:
    """What summary() gives under purge besides the section's counters: purge_history.story_of."""
    table = purge_table(rec)
    return story_of(rec, table, phase_list(table, rec.probe_attached("purge_batch")))
