"""innostall verify: a load run against a server as it is and again with one change, each run
recorded, and the change judged by its expected effect (analysis/advice/judge.py)."""
