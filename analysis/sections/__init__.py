"""The report's sections, one module each: each gives, from the recording, its figures (its
keys of `report --json`'s summary, KEYS; figures(rec), or figures(rec, handed) for the three
the summary hands theirs: summary.HANDED), its findings (read from those figures) and what
its lines show beyond them (shown: sampled notes, histograms, kept stacks); its text lines
are made from those three, never from the recording (summary.report reads it once,
text.text_of renders). A section that LEADS (the replica's: on a replica its story comes
first) is told before the others in the text and the findings; the JSON keeps the sections'
own order. A section's HTML is the Jinja partial of its name, templates/sections/NAME.html.j2,
which the page includes where it draws it (block locks and latches share latches', under one
heading; the undo reads have their figures and findings only).

Their one order, which every view follows, is summary.SECTIONS: kept here, it would put this
package a floor between the summary and each section (scripts/import_floors.py), and import
every section wherever one is imported.

The floors (scripts/import_floors.py analysis), lowest first: the recording and its
per-interval columns, how numbers are written and what the cost governor's sampling means
(sampling.py); each domain's figures (cost, pinning, purge_time, phases, estimates,
replica_time's neighbours) and the words, which are functions of figures and import no
figure module above the first floor; the figures composed of those (purge_history,
phase_figures, replica, redo) beside the sections, which put a domain's figures and words
together: a section whose figures are so composed is handed them by the summary
(summary.HANDED; the replica's with its phases' words passed in), importing them would set
it a floor higher; the summary, the page and the text; the views, export, diff, the
checkers and load_frames (the package's __init__), which join the summary to what they give."""
