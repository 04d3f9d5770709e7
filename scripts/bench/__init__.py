"""make bench: what tracing with innostall costs the server it traces.

1. microbenchmark: the loader's own probe-hit calibration (innostall-loader --calibrate);
2. steady load: one continuous sysbench oltp_read_write run, at half its untraced capacity,
   while the arms none, default, exact (the default set with --exact), full (innostall
   record --probes SET) and bpftrace (the equivalent bpftrace script) take turns, one
   window each;
3. performance_schema: its latch instruments off and on, toggled live under the same kind
   of load, for scale;
4. worst case: a full scan inside an old snapshot over long version chains, untraced, under
   each probe set and under the bpftrace script.

On a small, noisy machine TPS swings more than any probe costs, so the main metric is the
server's CPU time per transaction: uprobe and BPF time is charged to the traced thread.
Every comparison is interleaved: each traced window lies between two untraced ones, and
gives a ratio B/A against their mean (a slow drift cancels out), summarised as median,
min and max. Writes bench/results/latest.json and bench/results/latest.md and prints the ratios and the
targets. Runs as root; durations are in settings.py, each with an env override (--help).

python -m bench, with scripts/ on the path (make bench sets PYTHONPATH). Its modules:
  settings     every knob and path, the BENCH_* environment overrides
  server       the fixture server (scripts/fixture_servers.py) with a fixed pid and a connection
  load         sysbench for a whole phase, its per-second lines, the untraced capacity
  tracers      innostall record and bpftrace, started, attached, stopped and accounted for
  procfs       CPU time, peak RSS and children, from /proc
  processes    ending the process groups it starts
  measure      one window: server CPU per transaction, TPS, p95, tracer CPU
  harness      the state of one run: server, load, tracer alive, results so far
  bracketing   base, traced, base, ...: the order of windows and the ratios against their mean
  phases/      calibrate, steady, pfs, worst
  targets      pass or fail against the targets (docs/overhead.md)
  tables, markdown, results   the printed summary, bench/results/latest.md and bench/results/latest.json
  errors, log  what a failed step raises; progress lines
Apart from make bench, run alone (no server, no root):
  long_recording  an hours-long recording built from a short one's journal (issue 30)
  long_report     the report's time, peak memory and HTML size on such a recording
Apart from make bench, with root and the fixture server (make soak):
  soak            one recording of an hour under the steady load: its disk, the recorder's and
                  loader's memory and CPU every 10 minutes, the report's time, issue 30's targets
  soak_summary    the soak's 8-hour disk estimate, targets and soak.md
"""
