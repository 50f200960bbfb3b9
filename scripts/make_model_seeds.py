#!/usr/bin/python3
# Writes the small valid ONNX models that seed the model fuzzers (tests/fuzz_corpus/model_*):
# one graph per operator family the engine runs, with attributes set (strides, pads, dilations,
# groups, axes, modes), so the structure-aware mutator has attributes, shapes and initializers to
# mutate. The repository's own models (models/, tests/models/) are too large to be useful seeds.
#   /usr/bin/python3 scripts/make_model_seeds.py tests/fuzz_corpus/model_struct_fuzz
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
rng = np.random.default_rng(7)


def init(name, *shape, dtype=np.float32):
    if dtype == np.int64:
        return numpy_helper.from_array(np.array(shape, dtype=np.int64), name)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(dtype), name)


def save(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out_dir, "seed_" + name + ".onnx"))


def vi(name, *shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, list(shape))


x4 = vi("x", 1, 4, 8, 8)
save("conv", [helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                               dilations=[1, 1], kernel_shape=[3, 3])],
     [x4], [vi("y", 1, 8, 4, 4)], [init("w", 8, 4, 3, 3), init("b", 8)])
save("conv_group", [helper.make_node("Conv", ["x", "w"], ["y"], group=4, kernel_shape=[3, 3],
                                     pads=[1, 1, 1, 1])],
     [x4], [vi("y", 1, 4, 8, 8)], [init("w", 4, 1, 3, 3)])
save("conv_transpose", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2],
                                         kernel_shape=[2, 2])],
     [x4], [vi("y", 1, 2, 16, 16)], [init("w", 4, 2, 2, 2)])
save("maxpool", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
     [x4], [vi("y", 1, 4, 4, 4)])
save("averagepool", [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                      strides=[1, 1], pads=[1, 1, 1, 1])],
     [x4], [vi("y", 1, 4, 8, 8)])
save("gemm", [helper.make_node("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)],
     [vi("a", 3, 5)], [vi("y", 3, 6)], [init("w", 6, 5), init("c", 6)])
save("matmul_add_relu", [helper.make_node("MatMul", ["a", "w"], ["m"]),
                         helper.make_node("Add", ["m", "c"], ["s"]),
                         helper.make_node("Relu", ["s"], ["y"])],
     [vi("a", 2, 3, 5)], [vi("y", 2, 3, 4)], [init("w", 5, 4), init("c", 4)])
save("softmax_layernorm", [helper.make_node("Softmax", ["x"], ["s"], axis=-1),
                           helper.make_node("LayerNormalization", ["s", "g", "b"], ["y"],
                                            axis=-1, epsilon=1e-5)],
     [vi("x", 2, 6)], [vi("y", 2, 6)], [init("g", 6), init("b", 6)], opset=17)
save("batchnorm", [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                                    epsilon=1e-5)],
     [x4], [vi("y", 1, 4, 8, 8)],
     [init("s", 4), init("b", 4), init("m", 4), numpy_helper.from_array(
         np.abs(rng.standard_normal(4)).astype(np.float32) + 0.5, "v")])
save("reshape_transpose", [helper.make_node("Reshape", ["x", "shape"], ["r"]),
                           helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1])],
     [x4], [vi("y", 1, 64, 4)], [init("shape", 1, 4, 64, dtype=np.int64)])
save("concat_split", [helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
                      helper.make_node("Split", ["c", "sp"], ["y0", "y1"], axis=1)],
     [x4], [vi("y0", 1, 3, 8, 8), vi("y1", 1, 5, 8, 8)], [init("sp", 3, 5, dtype=np.int64)])
save("slice_gather", [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s"]),
                      helper.make_node("Gather", ["s", "idx"], ["y"], axis=1)],
     [x4], [vi("y", 1, 2, 4, 8)],
     [init("st", 0, 1, dtype=np.int64), init("en", 4, 8, dtype=np.int64),
      init("ax", 1, 2, dtype=np.int64), init("sp", 1, 2, dtype=np.int64),
      init("idx", 0, 3, dtype=np.int64)])
save("resize", [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
     [x4], [vi("y", 1, 4, 16, 16)],
     [numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), "scales")])
save("pad_reduce", [helper.make_node("Pad", ["x", "pads"], ["p"], mode="reflect"),
                    helper.make_node("ReduceMean", ["p"], ["y"], axes=[2, 3], keepdims=1)],
     [x4], [vi("y", 1, 4, 1, 1)], [init("pads", 0, 0, 1, 1, 0, 0, 1, 1, dtype=np.int64)])
# A small backbone: Conv-Relu-MaxPool-Conv-Add-GlobalAveragePool-Flatten-Gemm (fusions apply).
save("backbone", [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"]),
    helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", "w2"], ["c2"], kernel_shape=[1, 1]),
    helper.make_node("Add", ["c2", "p1"], ["a"]),
    helper.make_node("GlobalAveragePool", ["a"], ["g"]),
    helper.make_node("Flatten", ["g"], ["f"]),
    helper.make_node("Gemm", ["f", "w3"], ["y"], transB=1)],
    [x4], [vi("y", 1, 3)], [init("w1", 8, 4, 3, 3), init("b1", 8), init("w2", 8, 8, 1, 1),
                            init("w3", 3, 8)])
