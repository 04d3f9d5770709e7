"""Attach: the C loader (BPF programs, cost governor, calibration; its sources are here) run
from Python, and the bpftrace script generated for ad-hoc use."""
