#!/usr/bin/env python3
"""`opscope diff --fail-above / --fail-op-above` end to end: exit status and the verdict line.

Profiles: src/analysis/testdata/model_before.json and model_after.json (a detector before and
after removing a layout Transpose: "after" is faster), and variants made here from
model_before.json: 20% slower with the same run-to-run spread (beyond the noise), and 8% slower
with runs spread +-50% (within the noise).
usage: diff_gate_cli_test.py OPSCOPE SOURCE_DIR
"""
import copy
import json
import os
import subprocess
import sys
import tempfile


def stats(v):
    s = sorted(v)
    n = len(s)
    k = int(n * 0.10)
    t = s[k:n - k]
    mean = sum(s) / n
    med = (s[n // 2 - 1] + s[n // 2]) / 2 if n % 2 == 0 else s[n // 2]
    return {"n": n, "mean": mean, "median": med, "trimmed_mean": sum(t) / len(t), "min": s[0], "max": s[-1],
            "p90": s[-1], "stddev": 0, "cv": 0}


def scaled(p, factor, spread=None):
    q = copy.deepcopy(p)
    def f(runs):
        out = []
        for i, x in enumerate(runs):
            k = factor
            if spread is not None:
                k *= 1 + spread * (1 if i % 2 else -1) * (0.5 + (i % 3) / 4)
            out.append(round(x * k, 6))
        return out
    q["e2e"]["runs_ms"] = f(q["e2e"]["runs_ms"])
    q["e2e"]["stats"] = stats(q["e2e"]["runs_ms"])
    for op in q["ops"]:
        op["runs_ms"] = f(op["runs_ms"])
        op["stats"] = stats(op["runs_ms"])
    return q


def main():
    opscope, src = sys.argv[1], sys.argv[2]
    data = os.path.join(src, "src", "analysis", "testdata")
    before = os.path.join(data, "model_before.json")
    after_faster = os.path.join(data, "model_after.json")
    base = json.load(open(before))
    tmp = tempfile.mkdtemp(prefix="opscope-gate-")
    P = lambda n: os.path.join(tmp, n)
    json.dump(scaled(base, 1.20), open(P("slower.json"), "w"))
    json.dump(scaled(base, 1.00, spread=0.5), open(P("noisy_before.json"), "w"))
    json.dump(scaled(base, 1.08, spread=0.5), open(P("noisy_after.json"), "w"))
    failures = []

    def check(name, args, code, stderr_has):
        r = subprocess.run([opscope, "diff", *args], capture_output=True, text=True, timeout=60)
        if r.returncode != code or stderr_has not in r.stderr:
            failures.append(f"{name}: exit {r.returncode} (want {code}), stderr {r.stderr.strip()!r} "
                            f"(want {stderr_has!r})")
        else:
            print(f"{name}: exit {r.returncode}: {r.stderr.strip()}")

    check("slower beyond the threshold", [before, P("slower.json"), "--fail-above", "5"], 1,
          "opscope: diff gate: FAIL: end-to-end")
    check("slower, under a higher threshold", [before, P("slower.json"), "--fail-above", "30"], 0,
          "diff gate: pass")
    check("slower per op", [before, P("slower.json"), "--fail-op-above", "10"], 1,
          "diff gate: FAIL: 6 node(s) slower than the --fail-op-above 10% threshold")
    check("slower within the noise", [P("noisy_before.json"), P("noisy_after.json"), "--fail-above", "5",
                                      "--fail-op-above", "5"], 0, "within the noise")
    check("faster", [before, after_faster, "--fail-above", "1", "--fail-op-above", "1"], 0, "diff gate: pass")
    check("gate with the html page", [before, P("slower.json"), "--fail-above", "5", "-o", P("d.html")], 1,
          "diff gate: FAIL")
    if not os.path.exists(P("d.html")):
        failures.append("the page was not written when the gate failed")
    check("bad threshold", [before, after_faster, "--fail-above", "-3"], 2, "--fail-above")
    one = copy.deepcopy(base)
    one["e2e"]["runs_ms"] = one["e2e"]["runs_ms"][:1]
    one["e2e"]["stats"] = stats(one["e2e"]["runs_ms"])
    json.dump(one, open(P("one_run.json"), "w"))
    check("one run: refused", [P("one_run.json"), P("slower.json"), "--fail-above", "5"], 2,
          "--fail-above needs per-run end-to-end times")
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
