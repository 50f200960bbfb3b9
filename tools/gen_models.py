#!/usr/bin/python3
"""Generates opscope's demo, test and benchmark models, reproducibly (fixed seeds).

    /usr/bin/python3 tools/gen_models.py OUT_DIR [NAME ...]

Names: bev_demo (the README's demo), twin_matmul (a test model: one MatMul with 4x the work of
its twin), control_flow (a test model: LSTM, then a Loop whose body holds an If), resnet_style, mobilenet_style, transformer_encoder (benchmark models). Without names,
all are written. Uses Debian's python3-onnx and python3-numpy; run it with /usr/bin/python3.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    """Accumulates nodes and initializers with unique, readable names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.counts = [], [], {}

    def name(self, base):
        self.counts[base] = self.counts.get(base, 0) + 1
        n = self.counts[base]
        return base if n == 1 else f"{base}_{n}"

    def const(self, base, array):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def node(self, op, inputs, base=None, outputs=1, **attrs):
        nm = self.name(base or op.lower())
        outs = [nm] if outputs == 1 else [f"{nm}_out{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=nm, **attrs))
        return outs[0] if outputs == 1 else outs

    def weights(self, shape, fan_in):
        return (self.rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def conv(self, x, cin, cout, k, stride=1, group=1, base="conv", bn=True, act="Relu", bias=False):
        w = self.const(base + ".weight", self.weights((cout, cin // group, k, k), cin // group * k * k))
        ins = [x, w]
        if bias:
            ins.append(self.const(base + ".bias", np.zeros(cout, np.float32)))
        y = self.node("Conv", ins, base, kernel_shape=[k, k], strides=[stride, stride],
                      pads=[k // 2] * 4, group=group)
        if bn:
            y = self.node("BatchNormalization", [
                y,
                self.const(base + ".bn.scale", (1 + 0.1 * self.rng.standard_normal(cout)).astype(np.float32)),
                self.const(base + ".bn.bias", (0.1 * self.rng.standard_normal(cout)).astype(np.float32)),
                self.const(base + ".bn.mean", (0.1 * self.rng.standard_normal(cout)).astype(np.float32)),
                self.const(base + ".bn.var", (1 + 0.1 * self.rng.random(cout)).astype(np.float32)),
            ], base + ".bn", epsilon=1e-5)
        if act == "Relu":
            y = self.node("Relu", [y], base + ".relu")
        elif act == "Relu6":
            y = self.node("Clip", [y, self.const(base + ".min", np.float32(0)),
                                   self.const(base + ".max", np.float32(6))], base + ".relu6")
        return y

    def model(self, inputs, outputs, opset, name):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, producer_name="opscope tools/gen_models.py",
                              opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def bev_demo():
    """A small LSS/BEVDet-style model: 6 cameras -> CNN backbone -> depth distribution (softmax
    over depth bins) and context -> lift (outer product) -> layout transform -> BEV pooling
    (scatter-add into a 128x128 grid) -> BEV encoder -> heads."""
    b = Builder(20261129)
    cams, h, w, depth_bins, ctx_ch, grid = 6, 64, 176, 32, 32, 128
    x = b.conv("images", 3, 16, 3, 2, base="backbone.conv1")
    x = b.conv(x, 16, 32, 3, 2, base="backbone.conv2")
    x = b.conv(x, 32, 32, 3, 1, group=32, base="backbone.dw3")
    x = b.conv(x, 32, 64, 1, 1, base="backbone.pw3")
    fh, fw = h // 4, w // 4
    x = b.conv(x, 64, depth_bins + ctx_ch, 1, 1, base="depthnet", bn=False, act=None, bias=True)
    depth_logits, context = b.node("Split", [x, b.const("split_sizes", np.array([depth_bins, ctx_ch], np.int64))],
                                   "depthnet.split", outputs=2, axis=1)
    depth = b.node("Softmax", [depth_logits], "depth.softmax", axis=1)
    d5 = b.node("Unsqueeze", [depth, b.const("axis2", np.array([2], np.int64))], "lift.depth_unsqueeze")
    c5 = b.node("Unsqueeze", [context, b.const("axis1", np.array([1], np.int64))], "lift.context_unsqueeze")
    frustum = b.node("Mul", [d5, c5], "lift.outer_product")  # [6, D, C, fh, fw]
    # Channels-last for pooling: [6, D, fh, fw, C] — the layout transform BEV models are known for.
    points = b.node("Transpose", [frustum], "lift.to_channels_last", perm=[0, 1, 3, 4, 2])
    n_points = cams * depth_bins * fh * fw
    flat = b.node("Reshape", [points, b.const("points_shape", np.array([n_points, ctx_ch], np.int64))], "lift.flatten")
    # Geometry: camera c looks at yaw c*60deg with a 60deg field of view; depth bins 1..50 m.
    cam = np.arange(cams)[:, None, None, None]
    dep = np.linspace(1.0, 50.0, depth_bins)[None, :, None, None]
    col = np.arange(fw)[None, None, None, :]
    row = np.zeros(fh)[None, None, :, None]
    yaw = np.deg2rad(cam * 60.0 + (col / (fw - 1) - 0.5) * 60.0) + row
    xs, ys = dep * np.cos(yaw), dep * np.sin(yaw)
    gx = np.floor((xs + 51.2) / (102.4 / grid)).astype(np.int64)
    gy = np.floor((ys + 51.2) / (102.4 / grid)).astype(np.int64)
    inside = (gx >= 0) & (gx < grid) & (gy >= 0) & (gy < grid)
    cell = np.where(inside, gy * grid + gx, grid * grid)  # outside -> a trash row, sliced off
    cell = np.broadcast_to(cell, (cams, depth_bins, fh, fw)).reshape(n_points, 1)
    zeros = b.node("ConstantOfShape", [b.const("bev_shape", np.array([grid * grid + 1, ctx_ch], np.int64))],
                   "bev_pool.zeros", value=numpy_helper.from_array(np.zeros(1, np.float32)))
    pooled = b.node("ScatterND", [zeros, b.const("bev_pool.cell_index", cell.astype(np.int64)), flat],
                    "bev_pool.scatter_add", reduction="add")
    pooled = b.node("Slice", [pooled, b.const("s0", np.array([0], np.int64)),
                              b.const("s1", np.array([grid * grid], np.int64)),
                              b.const("s2", np.array([0], np.int64))], "bev_pool.drop_outside")
    bev = b.node("Reshape", [pooled, b.const("bev_nhwc", np.array([1, grid, grid, ctx_ch], np.int64))], "bev.reshape")
    bev = b.node("Transpose", [bev], "bev.to_nchw", perm=[0, 3, 1, 2])
    y = b.conv(bev, ctx_ch, 32, 3, 1, base="bev_encoder.conv1")
    y = b.conv(y, 32, 32, 3, 1, base="bev_encoder.conv2")
    heat = b.conv(y, 32, 10, 1, 1, base="head.heatmap", bn=False, act=None, bias=True)
    heat = b.node("Sigmoid", [heat], "head.heatmap.sigmoid")
    reg = b.conv(y, 32, 8, 1, 1, base="head.regression", bn=False, act=None, bias=True)
    return b.model([helper.make_tensor_value_info("images", TensorProto.FLOAT, [cams, 3, h, w])],
                   [helper.make_tensor_value_info(heat, TensorProto.FLOAT, [1, 10, grid, grid]),
                    helper.make_tensor_value_info(reg, TensorProto.FLOAT, [1, 8, grid, grid])],
                   16, "bev_demo")


def twin_matmul():
    """Two MatMuls on the same input; 'heavy' has 4x the output columns (4x FLOPs and weights)
    of 'light'. Used by the test that checks measured time ratios."""
    b = Builder(7)
    m, k, n = 256, 256, 128
    light = b.node("MatMul", ["x", b.const("w_light", b.weights((k, n), k))], "light")
    heavy = b.node("MatMul", ["x", b.const("w_heavy", b.weights((k, 4 * n), k))], "heavy")
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                   [helper.make_tensor_value_info(light, TensorProto.FLOAT, [m, n]),
                    helper.make_tensor_value_info(heavy, TensorProto.FLOAT, [m, 4 * n])], 13, "twin_matmul")


def resnet_style():
    """ResNet-18 layout (basic blocks, widths 64..512) at 224x224, random weights."""
    b = Builder(18)
    x = b.conv("input", 3, 64, 7, 2, base="stem")
    x = b.node("MaxPool", [x], "stem.pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for blk in range(2):
            stride = 2 if (blk == 0 and stage > 0) else 1
            base = f"layer{stage + 1}.{blk}"
            y = b.conv(x, cin, cout, 3, stride, base=base + ".conv1")
            y = b.conv(y, cout, cout, 3, 1, base=base + ".conv2", act=None)
            sc = x if (stride == 1 and cin == cout) else b.conv(x, cin, cout, 1, stride, base=base + ".down", act=None)
            x = b.node("Relu", [b.node("Add", [y, sc], base + ".add")], base + ".relu")
            cin = cout
    x = b.node("GlobalAveragePool", [x], "pool")
    x = b.node("Flatten", [x], "flatten", axis=1)
    x = b.node("Gemm", [x, b.const("fc.weight", b.weights((1000, 512), 512)),
                        b.const("fc.bias", np.zeros(1000, np.float32))], "fc", transB=1)
    return b.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
                   [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 1000])], 13, "resnet_style")


def mobilenet_style():
    """MobileNetV2 layout: inverted residuals with depthwise 3x3 and ReLU6, 224x224."""
    b = Builder(2)
    x = b.conv("input", 3, 32, 3, 2, base="stem", act="Relu6")
    cin = 32
    cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    idx = 0
    for t, c, n, s in cfg:
        for i in range(n):
            stride = s if i == 0 else 1
            base = f"block{idx}"
            hidden = cin * t
            y = x if t == 1 else b.conv(x, cin, hidden, 1, 1, base=base + ".expand", act="Relu6")
            y = b.conv(y, hidden, hidden, 3, stride, group=hidden, base=base + ".dw", act="Relu6")
            y = b.conv(y, hidden, c, 1, 1, base=base + ".project", act=None)
            if stride == 1 and cin == c:
                y = b.node("Add", [x, y], base + ".add")
            x, cin = y, c
            idx += 1
    x = b.conv(x, cin, 1280, 1, 1, base="head", act="Relu6")
    x = b.node("GlobalAveragePool", [x], "pool")
    x = b.node("Flatten", [x], "flatten", axis=1)
    x = b.node("Gemm", [x, b.const("fc.weight", b.weights((1000, 1280), 1280)),
                        b.const("fc.bias", np.zeros(1000, np.float32))], "fc", transB=1)
    return b.model([helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
                   [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 1000])], 13, "mobilenet_style")


def transformer_encoder():
    """A BERT-style encoder: 4 layers, d_model 256, 4 heads, sequence 128, GELU (Erf) FFN."""
    b = Builder(4)
    seq, d, heads, ff, layers = 128, 256, 4, 1024, 4
    hd = d // heads
    x = "tokens"  # [1, seq, d]
    for l in range(layers):
        p = f"layer{l}"
        def linear(inp, din, dout, name):
            y = b.node("MatMul", [inp, b.const(name + ".weight", b.weights((din, dout), din))], name)
            return b.node("Add", [y, b.const(name + ".bias", np.zeros(dout, np.float32))], name + ".bias_add")
        def heads_view(t, name):
            t = b.node("Reshape", [t, b.const("heads_shape", np.array([1, seq, heads, hd], np.int64))], name + ".split_heads")
            return b.node("Transpose", [t], name + ".to_bhsd", perm=[0, 2, 1, 3])
        q = heads_view(linear(x, d, d, p + ".q"), p + ".q")
        k = heads_view(linear(x, d, d, p + ".k"), p + ".k")
        v = heads_view(linear(x, d, d, p + ".v"), p + ".v")
        kt = b.node("Transpose", [k], p + ".k_t", perm=[0, 1, 3, 2])
        s = b.node("MatMul", [q, kt], p + ".scores")
        s = b.node("Mul", [s, b.const("scale", np.float32(1.0 / np.sqrt(hd)))], p + ".scale")
        a = b.node("Softmax", [s], p + ".softmax", axis=-1)
        o = b.node("MatMul", [a, v], p + ".context")
        o = b.node("Transpose", [o], p + ".to_bshd", perm=[0, 2, 1, 3])
        o = b.node("Reshape", [o, b.const("merge_shape", np.array([1, seq, d], np.int64))], p + ".merge_heads")
        o = linear(o, d, d, p + ".out")
        x = b.node("Add", [x, o], p + ".residual1")
        x = b.node("LayerNormalization", [x, b.const(p + ".ln1.scale", np.ones(d, np.float32)),
                                          b.const(p + ".ln1.bias", np.zeros(d, np.float32))], p + ".ln1", axis=-1)
        h1 = linear(x, d, ff, p + ".ffn1")
        g = b.node("Div", [h1, b.const("sqrt2", np.float32(np.sqrt(2.0)))], p + ".gelu.div")
        g = b.node("Erf", [g], p + ".gelu.erf")
        g = b.node("Add", [g, b.const("one", np.float32(1.0))], p + ".gelu.add")
        g = b.node("Mul", [h1, g], p + ".gelu.mul")
        g = b.node("Mul", [g, b.const("half", np.float32(0.5))], p + ".gelu.half")
        h2 = linear(g, ff, d, p + ".ffn2")
        x = b.node("Add", [x, h2], p + ".residual2")
        x = b.node("LayerNormalization", [x, b.const(p + ".ln2.scale", np.ones(d, np.float32)),
                                          b.const(p + ".ln2.bias", np.zeros(d, np.float32))], p + ".ln2", axis=-1)
    return b.model([helper.make_tensor_value_info("tokens", TensorProto.FLOAT, [1, seq, d])],
                   [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, seq, d])], 17, "transformer_encoder")


def control_flow():
    """LSTM over 16 steps, then a Loop of 4 iterations whose body branches (If) on the iteration
    number: MatMul+Tanh for iterations 0-1, MatMul+Sigmoid after. Used by the tests of subgraph
    profiling (rows named Loop_0/body/If_0/then_branch/...)."""
    b = Builder(11)
    t, i, h = 16, 32, 64
    w = b.const("lstm.W", b.weights((1, 4 * h, i), i))
    r = b.const("lstm.R", b.weights((1, 4 * h, h), h))
    bias = b.const("lstm.B", np.zeros((1, 8 * h), np.float32))
    y, yh, yc = b.node("LSTM", ["x", w, r, bias], "lstm", outputs=3, hidden_size=h)
    h0 = b.node("Reshape", [yh, b.const("h_shape", np.array([1, h], np.int64))], "flatten_h")

    def branch(name, act, seed):
        g = Builder(seed)
        mm = g.node("MatMul", ["h_in", g.const(name + ".W", g.weights((h, h), h))], name + "_mm")
        out = g.node(act, [mm], name + "_" + act.lower())
        return helper.make_graph(g.nodes, name, [], [helper.make_tensor_value_info(
            out, TensorProto.FLOAT, [1, h])], g.inits)

    body = Builder(12)
    two = body.const("two", np.array(2, np.int64))
    early = body.node("Less", ["iter", two], "early")
    body.nodes.append(helper.make_node("If", [early], ["h_next"], name="If_0",
                                       then_branch=branch("fast", "Tanh", 13),
                                       else_branch=branch("slow", "Sigmoid", 14)))
    body.nodes.append(helper.make_node("Identity", ["cond"], ["cond_out"], name="keep_going"))
    body.nodes.append(helper.make_node("Identity", ["h_next"], ["h_scan"], name="scan_copy"))
    body_g = helper.make_graph(
        body.nodes, "loop_body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, h])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, h]),
         helper.make_tensor_value_info("h_scan", TensorProto.FLOAT, [1, h])], body.inits)
    trips = b.const("trips", np.array(4, np.int64))
    go = b.const("go", np.array(True))
    b.nodes.append(helper.make_node("Loop", [trips, go, h0], ["h_final", "h_all"], name="Loop_0",
                                    body=body_g))
    return b.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [t, 1, i])],
                   [helper.make_tensor_value_info("h_final", TensorProto.FLOAT, [1, h]),
                    helper.make_tensor_value_info("h_all", TensorProto.FLOAT, [4, 1, h]),
                    helper.make_tensor_value_info(y, TensorProto.FLOAT, [t, 1, 1, h])],
                   13, "control_flow")


MODELS = {"bev_demo": bev_demo, "twin_matmul": twin_matmul, "control_flow": control_flow, "resnet_style": resnet_style,
          "mobilenet_style": mobilenet_style, "transformer_encoder": transformer_encoder}


def write_models(models, doc):
    """The generators' command line: OUT_DIR [NAME...] writes each model (all by default)."""
    if len(sys.argv) < 2:
        print(doc, file=sys.stderr)
        return 2
    out = sys.argv[1]
    names = sys.argv[2:] or list(models)
    os.makedirs(out, exist_ok=True)
    for n in names:
        if n not in models:
            print(f"unknown model '{n}' (choose from {', '.join(models)})", file=sys.stderr)
            return 2
        m = models[n]()
        path = os.path.join(out, n + ".onnx")
        onnx.save(m, path)
        print(f"wrote {path} ({len(m.graph.node)} nodes, {os.path.getsize(path)} bytes)")
    return 0


def main():
    return write_models(MODELS, __doc__)


if __name__ == "__main__":
    sys.exit(main())
