"""Runs one ONNX model on opscope and on ONNX Runtime with the same inputs and compares outputs.

Shared by the corpus differential test (tests/corpus_vs_ort.py) and the divergence finder
(tools/divergence.py). Needs Debian's /usr/bin/python3 (python3-onnx, numpy) and Node.js with
onnxruntime-node (bench/node_modules; `cd bench && npm install`).

Inputs are seeded random tensors shaped from the model, with dynamic dims and fixed values taken
from a spec string `NAME=DIMS[@VALUE];...` (MANIFEST.tsv's `inputs` column). opscope gets them
as TensorProto files (--input NAME=FILE.pb) and writes its outputs with --save-outputs; ORT gets
the same bytes raw through tools/ort_run.js.

Tolerance: a float output agrees when its relative L2 error is <= 1e-3, or when its largest
absolute difference is <= 1e-6 (saturated outputs, where the reference norm is ~0); integer and
bool outputs must be equal; shapes must be equal.
"""
import json
import os
import subprocess

import numpy as np
import onnx
from onnx import numpy_helper

REL_L2_TOL = 1e-3
ABS_TOL = 1e-6
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_NP_OF_ONNX = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.BOOL: np.bool_, onnx.TensorProto.FLOAT16: np.float16,
}
_ORT_NAME = {np.float32: "float32", np.float64: "float64", np.int64: "int64", np.int32: "int32",
             np.int8: "int8", np.uint8: "uint8", np.bool_: "bool", np.float16: "float16"}
_NP_OF_ORT = {v: k for k, v in _ORT_NAME.items()}


class SpecError(Exception):
    pass


def parse_spec(spec):
    """'x=1x3x48x320;sr=@16000' -> {'x': ([1, 3, 48, 320], None), 'sr': ([], '16000')}."""
    out = {}
    for item in filter(None, (s.strip() for s in (spec or "").split(";"))):
        if "=" not in item:
            raise SpecError(f"input spec '{item}': expected NAME=DIMS[@VALUE]")
        name, rest = item.split("=", 1)
        dims, _, value = rest.partition("@")
        try:
            shape = [int(d) for d in dims.split("x")] if dims else []
        except ValueError:
            raise SpecError(f"input spec '{item}': dims must look like 1x3x224x224") from None
        out[name] = (shape, value or None)
    return out


def model_inputs(model):
    """[(name, numpy dtype, dims with None for dynamic)] of the graph inputs that need feeding."""
    inits = {i.name for i in model.graph.initializer}
    result = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if tt.elem_type not in _NP_OF_ONNX:
            raise SpecError(f"input '{vi.name}': element type "
                            f"{onnx.TensorProto.DataType.Name(tt.elem_type)} is not supported here")
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        result.append((vi.name, _NP_OF_ONNX[tt.elem_type], dims))
    return result


def make_inputs(model, spec, seed):
    """Seeded inputs {name: ndarray}; raises SpecError when a dynamic dim has no value."""
    specs = parse_spec(spec)
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, dtype, dims in model_inputs(model):
        shape, value = specs.get(name, (None, None))
        if shape is None:
            if any(d is None for d in dims):
                raise SpecError(f"input '{name}' has dynamic dims {dims}: give its shape "
                                f"(e.g. '{name}=1x3x224x224')")
            shape = dims
        if value is not None:
            arr = np.full(shape, value, dtype=dtype)
        elif dtype in (np.float32, np.float64, np.float16):
            arr = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        elif dtype == np.bool_:
            arr = rng.integers(0, 2, size=shape).astype(np.bool_)
        elif dtype == np.uint8:
            arr = rng.integers(0, 256, size=shape).astype(np.uint8)
        else:
            arr = rng.integers(0, 8, size=shape).astype(dtype)
        feeds[name] = arr
    return feeds


def write_inputs(feeds, directory):
    """Writes NAME.pb files for opscope and raw files + tensors.json for ORT; returns the
    opscope arguments."""
    os.makedirs(directory, exist_ok=True)
    args, index = [], []
    for i, (name, arr) in enumerate(feeds.items()):
        pb = os.path.join(directory, f"input_{i}.pb")
        with open(pb, "wb") as f:
            f.write(numpy_helper.from_array(arr, name).SerializeToString())
        args += ["--input", f"{name}={pb}"]
        raw = f"input_{i}.bin"
        np.ascontiguousarray(arr).tofile(os.path.join(directory, raw))
        index.append({"name": name, "dtype": _ORT_NAME[arr.dtype.type],
                      "dims": list(arr.shape), "file": raw})
    with open(os.path.join(directory, "tensors.json"), "w") as f:
        json.dump(index, f)
    return args


def _last_line(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def run_opscope(binary, model_path, input_args, out_dir, no_fuse=False, timeout=900):
    """(returncode, error line, {name: ndarray}). returncode is -N for a signal, like subprocess,
    and 124 on timeout."""
    cmd = [binary, "profile", model_path, *input_args, "--warmup", "0", "--runs", "1",
           "--no-overhead", "--threads", "1", "--save-outputs", out_dir, "--format", "json"]
    if no_fuse:
        cmd.append("--no-fuse")
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"no answer after {timeout} s", {}
    if p.returncode != 0:
        return p.returncode, _last_line(p.stderr), {}
    outs = {}
    for f in sorted(os.listdir(out_dir)):
        if f.endswith(".pb"):
            t = onnx.TensorProto()
            with open(os.path.join(out_dir, f), "rb") as fh:
                t.ParseFromString(fh.read())
            outs[t.name] = numpy_helper.to_array(t)
    return 0, "", outs


def ort_available():
    """True when onnxruntime-node is completely installed: its folder alone also exists while
    `npm install` is still unpacking it."""
    pkg = os.path.join(ORT_MODULES, "onnxruntime-node")
    return (os.path.isfile(os.path.join(pkg, "package.json"))
            and os.path.isfile(os.path.join(pkg, "dist", "index.js"))
            and any(f == "onnxruntime_binding.node"
                    for _, _, files in os.walk(os.path.join(pkg, "bin")) for f in files))


ORT_MODULES = os.environ.get("ORT_NODE_MODULES", os.path.join(ROOT, "bench", "node_modules"))


def run_ort(model_path, in_dir, out_dir, timeout=900):
    """(returncode, error line, {name: ndarray}) from onnxruntime-node via tools/ort_run.js."""
    env = dict(os.environ, ORT_NODE_MODULES=ORT_MODULES)
    cmd = ["node", os.path.join(ROOT, "tools", "ort_run.js"), model_path, in_dir, out_dir]
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return 124, f"no answer after {timeout} s", {}
    if p.returncode != 0:
        return p.returncode, _last_line(p.stderr), {}
    with open(os.path.join(out_dir, "tensors.json")) as f:
        index = json.load(f)
    outs = {}
    for t in index:
        dtype = _NP_OF_ORT[t["dtype"]]
        raw = np.fromfile(os.path.join(out_dir, t["file"]),
                          dtype=np.uint8 if dtype == np.bool_ else dtype)
        outs[t["name"]] = raw.astype(dtype).reshape(t["dims"])
    return 0, "", outs


def compare(ours, ref):
    """(agrees, metric text) for one output; see the module docstring for the tolerance."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    if ours.shape != ref.shape:
        return False, f"shape {list(ours.shape)} vs ORT {list(ref.shape)}"
    if ref.size == 0:
        return True, "empty"
    if ref.dtype.kind in "fc" or ours.dtype.kind in "fc":
        a, b = ours.astype(np.float64), ref.astype(np.float64)
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if (nan_a != nan_b).any():
            return False, f"NaN in {int((nan_a != nan_b).sum())} of {b.size} elements differs"
        a, b = np.where(nan_a, 0, a), np.where(nan_b, 0, b)
        inf_a, inf_b = np.isinf(a), np.isinf(b)
        if (inf_a != inf_b).any() or (a[inf_a] != b[inf_b]).any():
            return False, "infinities differ"
        a, b = np.where(inf_a, 0, a), np.where(inf_b, 0, b)
        diff = a - b
        max_abs = float(np.abs(diff).max())
        ref_norm = float(np.linalg.norm(b))
        err_norm = float(np.linalg.norm(diff))
        rel = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else float("inf"))
        ok = rel <= REL_L2_TOL or max_abs <= ABS_TOL
        return ok, f"rel_l2={rel:.3g} max_abs={max_abs:.3g}"
    bad = int((ours != ref).sum())
    return bad == 0, f"{bad} of {ref.size} elements differ"
