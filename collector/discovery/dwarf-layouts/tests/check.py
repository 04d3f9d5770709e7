#!/usr/bin/env python3
"""Runs dwarf-layouts with queries.txt on every binary in out/ and compares the
layout figures with expected.json (figures checked against gdb `ptype /o` on
out/g-dw4). Prints one line per binary and 'N passed, N failed'."""
import json, os, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
# DWARF_LAYOUTS: another build to test (e.g. the rustc 1.63 one)
tool = os.environ.get("DWARF_LAYOUTS") or os.path.join(here, "..", "target", "release", "dwarf-layouts")
exp_path = os.path.join(here, "expected.json")
expected = json.load(open(exp_path)) if os.path.exists(exp_path) else {}

def figures(out):
    f = {}
    for q, v in out["paths"].items():
        f[q] = [v["offset"], v["size"], v["bit_offset"], v["bit_size"]]
    for q, v in out["constants"].items():
        f[q] = v["value"]
    for q, v in out["globals"].items():
        f[q] = [v["pointer"], v["size"], v["object_size"]]
    for q, v in out.get("at", {}).items():
        f["at " + q] = [v["path"], v["offset"], v["delta"]]
    f["missing"] = sorted(m["query"] for m in out["missing"])
    f["odr_t variants"] = len(out["types"].get("odr_t", {}).get("odr_conflict", [])) 
    return f

if len(sys.argv) > 1 and sys.argv[1] == "--write":
    ref = os.path.join(here, "out", "g-dw4")
    out = json.loads(subprocess.check_output([tool, ref, "-f", os.path.join(here, "queries.txt"), "--at", "sys_obj+100", "--at", "sys_ptr+81"]))
    json.dump(figures(out), open(os.path.join(here, "expected.json"), "w"), indent=1)
    sys.exit(0)

passed = failed = 0
bins = sorted(os.listdir(os.path.join(here, "out")))
for b in bins + ["split/prog"]:
    p = os.path.join(here, "out", b)
    if not os.path.isfile(p):
        continue
    r = subprocess.run([tool, p, "-f", os.path.join(here, "queries.txt"), "--at", "sys_obj+100", "--at", "sys_ptr+81"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {b}: exit {r.returncode}: {r.stderr.strip()}")
        failed += 1
        continue
    out = json.loads(r.stdout)
    got = figures(out)
    exp = dict(expected)
    if b.startswith("clang") and b.endswith("-tu"):
        # clang names a type unit by the type's name, so the linker keeps one odr_t:
        # the conflict is gone from the file, nothing can report it.
        exp["odr_t variants"] = 0
    diffs = [k for k in set(exp) | set(got) if exp.get(k) != got.get(k)]
    d = out["dwarf"]
    info = f"v{d['versions']} units={d['units']} tu={d['type_units']} z={d['compressed']} dbg={os.path.relpath(out['debug_file'], here)}"
    if diffs:
        failed += 1
        print(f"FAIL {b}: {info}")
        for k in sorted(diffs):
            print(f"   {k}: expected {exp.get(k)} got {got.get(k)}")
    else:
        passed += 1
        print(f"ok   {b}: {info}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
