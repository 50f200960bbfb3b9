#!/usr/bin/python3
"""Generates opscope's small quantized test models, reproducibly (fixed seeds).

    /usr/bin/python3 tools/gen_quant_models.py OUT_DIR [NAME ...]

Names:
  qdq_convnet   a static-quantization (QDQ) CNN as ONNX Runtime's quantizer writes it: uint8
                activations, int8 weights (per output channel for the first Conv, per tensor for
                the second and the Gemm), float biases. Every heavy op sits between
                DequantizeLinear and QuantizeLinear, so opscope runs each as one int8 kernel;
                the MaxPool and GlobalAveragePool stay float with a Q/DQ pair around them (the
                conversions the quant-conversion finding reports).
  qlinear_ops   the operator form: QLinearConv -> QLinearMatMul -> DequantizeLinear, plus
                MatMulInteger and ConvInteger with DynamicQuantizeLinear (ORT's dynamic
                quantization pattern), uint8 throughout.
Without names, all are written. Uses Debian's python3-onnx and python3-numpy.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models import Builder, write_models  # noqa: E402


def q_params(b, base, scale, zp, dtype):
    return b.const(base + ".scale", np.float32(scale)), b.const(base + ".zp", np.array(zp, dtype))


def qdq(b, x, base, scale, zp, dtype=np.uint8):
    """QuantizeLinear followed by DequantizeLinear with the same per-tensor parameters."""
    s, z = q_params(b, base, scale, zp, dtype)
    q = b.node("QuantizeLinear", [x, s, z], base + ".q")
    return b.node("DequantizeLinear", [q, s, z], base + ".dq")


def int8_weight(b, base, w, axis):
    """Symmetric int8 weight (per tensor when axis is None, else per channel along axis) and its
    DequantizeLinear."""
    if axis is None:
        scale = np.float32(np.abs(w).max() / 127)
        zp = np.int8(0)
    else:
        red = tuple(i for i in range(w.ndim) if i != axis)
        scale = (np.abs(w).max(axis=red) / 127).astype(np.float32)
        zp = np.zeros(scale.shape, np.int8)
    shape = [1] * w.ndim
    if axis is not None:
        shape[axis] = -1
    wq = np.clip(np.round(w / np.reshape(scale, shape)), -127, 127).astype(np.int8)
    ins = [b.const(base + ".wq", wq), b.const(base + ".wscale", scale), b.const(base + ".wzp", zp)]
    attrs = {} if axis is None else {"axis": axis}
    return b.node("DequantizeLinear", ins, base + ".wdq", **attrs)


def qdq_convnet():
    b = Builder(11)
    x = qdq(b, "x", "x", 1 / 127.5, 128)
    w1 = int8_weight(b, "conv1", b.weights((16, 3, 3, 3), 27), axis=0)
    y = b.node("Conv", [x, w1, b.const("conv1.bias", (0.05 * b.rng.standard_normal(16)).astype(np.float32))],
               "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    y = b.node("Relu", [y], "conv1.relu")
    y = qdq(b, y, "conv1.out", 4 / 255, 0)
    y = b.node("MaxPool", [y], "pool", kernel_shape=[2, 2], strides=[2, 2])
    y = qdq(b, y, "pool.out", 4 / 255, 0)
    w2 = int8_weight(b, "conv2", b.weights((32, 16, 3, 3), 144), axis=None)
    y = b.node("Conv", [y, w2, b.const("conv2.bias", (0.05 * b.rng.standard_normal(32)).astype(np.float32))],
               "conv2", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    y = qdq(b, y, "conv2.out", 6 / 127, 0, np.int8)
    y = b.node("GlobalAveragePool", [y], "gap")
    y = b.node("Flatten", [y], "flatten", axis=1)
    y = qdq(b, y, "gap.out", 3 / 127, 0, np.int8)
    w3 = int8_weight(b, "fc", b.weights((10, 32), 32), axis=None)
    y = b.node("Gemm", [y, w3, b.const("fc.bias", (0.05 * b.rng.standard_normal(10)).astype(np.float32))],
               "fc", transB=1)
    b.nodes[-1].output[0] = "logits"
    g = helper.make_graph(b.nodes, "qdq_convnet",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], b.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="opscope-gen")


def qlinear_ops():
    b = Builder(12)
    rng = b.rng
    xs, xz = q_params(b, "x", 1 / 127.5, 128, np.uint8)
    xq = b.node("QuantizeLinear", ["x", xs, xz], "x.q")
    wq = b.const("qconv.w", rng.integers(0, 256, (8, 3, 3, 3)).astype(np.uint8))
    ws, wz = q_params(b, "qconv.w", 0.004, 128, np.uint8)
    ys, yz = q_params(b, "qconv.y", 0.05, 100, np.uint8)
    bias = b.const("qconv.bias", rng.integers(-500, 500, 8).astype(np.int32))
    y = b.node("QLinearConv", [xq, xs, xz, wq, ws, wz, ys, yz, bias], "qconv",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    shape = b.const("reshape.shape", np.array([8, 64], np.int64))
    y = b.node("Reshape", [y, shape], "reshape")  # [1,8,8,8] -> [8,64]
    mw = b.const("qmm.b", rng.integers(0, 256, (64, 5)).astype(np.uint8))
    bs, bz = q_params(b, "qmm.b", 0.003, 120, np.uint8)
    ms, mz = q_params(b, "qmm.y", 0.1, 128, np.uint8)
    y = b.node("QLinearMatMul", [y, ys, yz, mw, bs, bz, ms, mz], "qmm")
    b.node("DequantizeLinear", [y, ms, mz], "out.dq")
    b.nodes[-1].output[0] = "qlinear_out"
    # Dynamic quantization: DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul(scale product).
    dq = b.node("DynamicQuantizeLinear", ["x"], "dyn", outputs=3)
    dq_y, dq_s, dq_z = dq
    cw = b.const("ci.w", rng.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8))
    cwz = b.const("ci.wz", np.uint8(131))
    acc = b.node("ConvInteger", [dq_y, cw, dq_z, cwz], "ci", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    accf = b.node("Cast", [acc], "ci.cast", to=TensorProto.FLOAT)
    scale = b.node("Mul", [dq_s, b.const("ci.wscale", np.float32(0.002))], "ci.scale")
    b.node("Mul", [accf, scale], "ci.out")
    b.nodes[-1].output[0] = "convinteger_out"
    # MatMulInteger on the flattened dynamic-quantized input, uint8 weights with per-column zero
    # points. (uint8 x int8 with full-range values is not a fair comparison: ONNX Runtime's AVX2
    # u8s8 kernel multiplies with vpmaddubsw, whose int16 pair sums saturate; opscope's result is
    # the exact integer, docs/ops-quant.md.)
    flat = b.node("Reshape", [dq_y, b.const("flat.shape", np.array([3, 256], np.int64))], "flat")
    mmw = b.const("mi.w", rng.integers(0, 256, (256, 6)).astype(np.uint8))
    mi = b.node("MatMulInteger", [flat, mmw, dq_z,
                                  b.const("mi.wz", np.array([128, 129, 127, 130, 126, 131], np.uint8))], "mi")
    b.nodes[-1].output[0] = "matmulinteger_out"
    g = helper.make_graph(b.nodes, "qlinear_ops",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("qlinear_out", TensorProto.FLOAT, [8, 5]),
                           helper.make_tensor_value_info("convinteger_out", TensorProto.FLOAT, [1, 4, 16, 16]),
                           helper.make_tensor_value_info("matmulinteger_out", TensorProto.INT32, [3, 6])],
                          b.inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="opscope-gen")


MODELS = {"qdq_convnet": qdq_convnet, "qlinear_ops": qlinear_ops}



def main():
    return write_models(MODELS, __doc__)


if __name__ == "__main__":
    sys.exit(main())
