"""The checkers: each reads a report back against the recording it summarizes, so that a
sentence or a figure drifting from the tables is caught, not repeated. verdict_check.check
is the entry point (the verdict, the findings, the replica section and the figures' bounds
in JSON, text and HTML); the others are its parts. They stand above everything they check:
nothing outside this folder imports them."""
