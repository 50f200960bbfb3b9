#!/usr/bin/python3
"""Names the first node whose output differs between opscope and ONNX Runtime.

    /usr/bin/python3 tools/divergence.py MODEL.onnx [--inputs 'x=1x3x224x224;sr=@16000']
        [--id CORPUS_ID] [--opscope build/release/opscope] [--batch N] [--seed S]

The model is rewritten so that the outputs of its top-level nodes become graph outputs as well
(typed by ONNX shape inference; values without a type or rank are skipped and counted), both
engines run it on the same seeded inputs (tools/ort_compare.py), and the values are compared in
topological order with the corpus test's tolerance. The first node with a differing output is
printed with its op type, attributes, input and output shapes and the error metric; its inputs
agreed, so the node itself (or opscope's kernel for it) is the suspect. With --batch N the values
are exposed N at a time (several runs per engine) to bound memory on large models.

opscope runs with --no-fuse: fusion would merge nodes, and their intermediate values would no
longer exist to compare. A divergence that only appears with fusion on therefore shows here as
"no divergence" while the corpus test fails: then compare `opscope profile` with and without
--no-fuse.

--id takes the input spec of a corpus model from models/corpus/MANIFEST.tsv.
Exit 0: no divergence; 1: a divergence (or an engine refused the model); 2: usage error.
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_compare as oc  # noqa: E402


def attr_text(a):
    v = helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        arr = onnx.numpy_helper.to_array(v)
        return f"{a.name}=tensor{list(arr.shape)}" + (f"({arr.item()})" if arr.size == 1 else "")
    if isinstance(v, onnx.GraphProto):
        return f"{a.name}=<subgraph with {len(v.node)} nodes>"
    if isinstance(v, bytes):
        v = v.decode(errors="replace")
    if isinstance(v, list):
        v = [x.decode(errors="replace") if isinstance(x, bytes) else x for x in v]
    return f"{a.name}={v}"


def typed_values(model):
    """{value name: ValueInfoProto} for every value shape inference could type."""
    try:
        inferred = shape_inference.infer_shapes(model)
    except Exception as e:  # noqa: BLE001 -- inference is best effort; say so and go on.
        print(f"divergence: shape inference failed ({str(e).splitlines()[0]}); "
              "only the graph's own outputs can be compared", file=sys.stderr)
        inferred = model
    g = inferred.graph
    # A value needs an element type and a known rank: the ONNX checker (which opscope runs on
    # load) rejects a graph output whose type has no shape.
    return {vi.name: vi for vi in list(g.value_info) + list(g.output)
            if vi.type.tensor_type.elem_type != 0 and vi.type.tensor_type.HasField("shape")}


def expose(model, names, typed):
    """A copy of MODEL whose graph outputs are the original ones plus NAMES."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    existing = {o.name for o in m.graph.output}
    for n in names:
        if n not in existing:
            m.graph.output.append(typed[n])
    return m


def shape_of(name, values, model):
    if name in values:
        return list(values[name].shape)
    for init in model.graph.initializer:
        if init.name == name:
            return list(init.dims)
    return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--inputs", default="", help="NAME=DIMS[@VALUE];... for dynamic inputs")
    ap.add_argument("--id", help="take --inputs from this corpus model's MANIFEST.tsv row")
    ap.add_argument("--opscope", default=os.path.join(oc.ROOT, "build", "release", "opscope"))
    ap.add_argument("--batch", type=int, default=0, help="values exposed per run (0: all)")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()

    if not os.path.isfile(a.model):
        print(f"divergence: {a.model}: no such file", file=sys.stderr)
        return 2
    if not oc.ort_available():
        print(f"divergence: onnxruntime-node not found in {oc.ORT_MODULES}; run "
              "`cd bench && npm install`", file=sys.stderr)
        return 2
    spec = a.inputs
    if a.id:
        sys.path.insert(0, os.path.join(oc.ROOT, "tests"))
        from corpus_vs_ort import read_manifest
        rows = [r for r in read_manifest(os.path.join(oc.ROOT, "models", "corpus",
                                                      "MANIFEST.tsv")) if r["id"] == a.id]
        if not rows:
            print(f"divergence: no corpus model '{a.id}' in MANIFEST.tsv", file=sys.stderr)
            return 2
        spec = rows[0]["inputs"]

    model = onnx.load(a.model)
    try:
        feeds = oc.make_inputs(model, spec, a.seed)
    except oc.SpecError as e:
        print(f"divergence: {e}", file=sys.stderr)
        return 2
    typed = typed_values(model)
    order = []  # (node index, value name) in topological (= file) order
    untyped = 0
    for i, node in enumerate(model.graph.node):
        for out in node.output:
            if not out:
                continue
            if out in typed:
                order.append((i, out))
            else:
                untyped += 1
    batch = a.batch if a.batch > 0 else max(1, len(order))
    print(f"divergence: {len(model.graph.node)} nodes, {len(order)} values to compare"
          + (f", {untyped} skipped (shape inference found no type or rank)" if untyped else "")
          + "; opscope runs with --no-fuse", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="divergence_") as work:
        in_dir = os.path.join(work, "in")
        args = oc.write_inputs(feeds, in_dir)
        compared = 0
        for start in range(0, len(order), batch):
            chunk = order[start:start + batch]
            path = os.path.join(work, f"exposed_{start}.onnx")
            onnx.save(expose(model, [n for _, n in chunk], typed), path)
            rc, err, ours = oc.run_opscope(a.opscope, path, args,
                                           os.path.join(work, f"opscope_{start}"), no_fuse=True)
            if rc != 0:
                print(f"divergence: opscope could not run the model (exit {rc}): {err}")
                return 1
            rc, err, ref = oc.run_ort(path, in_dir, os.path.join(work, f"ort_{start}"))
            if rc != 0:
                print(f"divergence: ONNX Runtime could not run the model: {err}")
                return 1
            values = dict(ref)
            for node_index, name in chunk:
                if name not in ours or name not in ref:
                    continue
                ok, metric = oc.compare(ours[name], ref[name])
                compared += 1
                if ok:
                    continue
                node = model.graph.node[node_index]
                print(f"first divergence: node #{node_index} '{node.name}' ({node.op_type}), "
                      f"output '{name}': {metric}")
                attrs = ", ".join(attr_text(x) for x in node.attribute) or "none"
                print(f"  attributes: {attrs}")
                for i in node.input:
                    if i:
                        print(f"  input  '{i}': shape {shape_of(i, {**feeds, **values}, model)}")
                for o in node.output:
                    if o:
                        ours_shape = list(ours[o].shape) if o in ours else "?"
                        print(f"  output '{o}': ORT shape {shape_of(o, values, model)}, "
                              f"opscope shape {ours_shape}")
                a_, r_ = np.asarray(ours[name]), np.asarray(ref[name])
                if a_.shape == r_.shape and a_.size:
                    k = int(np.argmax(np.abs(a_.astype(np.float64) - r_.astype(np.float64))))
                    print(f"  worst element: flat index {k}: opscope {a_.flat[k]!r}, "
                          f"ORT {r_.flat[k]!r}")
                return 1
    print(f"no divergence among {compared} compared values"
          + (f" ({len(order) - compared} not produced by one of the engines)"
             if compared < len(order) else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
