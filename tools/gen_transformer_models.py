#!/usr/bin/python3
"""Generates opscope's small transformer test models, reproducibly (fixed seeds).

    /usr/bin/python3 tools/gen_transformer_models.py OUT_DIR [NAME ...]

Names:
  bert_tiny  a 2-layer BERT encoder (hidden 64, 4 heads, sequence 16, FFN 256) laid out as
             PyTorch's exporter writes HuggingFace's BertModel at opset 14: scoped node names
             ("/encoder/layer.0/attention/self/query/MatMul"), embeddings (three Gathers, Adds),
             LayerNorm decomposed (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add),
             attention as MatMul+Add, Reshape, Transpose, scores MatMul, Div by sqrt(head size),
             the extended mask Add ((1 - mask) * -10000), Softmax, context MatMul, Transpose,
             Reshape; the residual Add before each LayerNorm; erf GELU in the FFN; the pooler.
             ONNX Runtime 1.30 at level `all` makes SkipLayerNormalization (also of the
             embeddings' Add and LayerNorm), Gelu, Gemm (MatMulAddFusion) and FusedMatMul nodes of
             it; no Attention (MatMulAddFusion takes the projections first).
  vit_tiny   a 2-block ViT (32x32 image, 8x8 patches, hidden 64, 4 heads, MLP 256) at opset 17 as
             timm's VisionTransformer exports: Conv patch embedding, class token Concat, position
             Add, pre-norm blocks with the LayerNormalization op, one QKV MatMul split by
             Reshape/Transpose/Gather, q scaled by a Mul, k transposed. Block 0's MLP uses GELU's
             tanh approximation (FastGelu), block 1's CLIP's QuickGELU (x * sigmoid(1.702 x)).
Without names, all are written. Uses Debian's python3-onnx and python3-numpy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models import write_models  # noqa: E402


class TorchStyle:
    """Nodes named as torch.onnx.export names them: "/scope/Op" (then "/scope/Op_1"), outputs
    "<node>_output_0", parameters by their state_dict names, other constants "onnx::Op_N"."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.used, self.const_id = [], [], set(), 100

    def param(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def const(self, op, array):
        self.const_id += 1
        return self.param(f"onnx::{op}_{self.const_id}", array)

    def node(self, scope, op, inputs, outputs=1, **attrs):
        base = f"{scope}/{op}"
        nm, k = base, 0
        while nm in self.used:
            k += 1
            nm = f"{base}_{k}"
        self.used.add(nm)
        outs = [f"{nm}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=nm, **attrs))
        return outs[0] if outputs == 1 else outs

    def weights(self, shape, fan_in):
        return (self.rng.standard_normal(shape) * np.sqrt(1.0 / fan_in)).astype(np.float32)

    def linear(self, scope, x, din, dout, param):
        """nn.Linear: MatMul by the transposed weight (a constant), then Add(bias, y)."""
        y = self.node(scope, "MatMul", [x, self.const("MatMul", self.weights((din, dout), din))])
        b = self.param(param + ".bias", (0.02 * self.rng.standard_normal(dout)).astype(np.float32))
        return self.node(scope, "Add", [b, y])

    def layer_norm(self, scope, x, d, param, eps=1e-12):
        """nn.LayerNorm as opset < 17 exports it."""
        mean = self.node(scope, "ReduceMean", [x], axes=[-1])
        diff = self.node(scope, "Sub", [x, mean])
        sq = self.node(scope, "Pow", [diff, self.const("Pow", np.float32(2.0))])
        var = self.node(scope, "ReduceMean", [sq], axes=[-1])
        var = self.node(scope, "Add", [var, self.const("Add", np.float32(eps))])
        std = self.node(scope, "Sqrt", [var])
        y = self.node(scope, "Div", [diff, std])
        y = self.node(scope, "Mul", [y, self.param(param + ".weight", np.ones(d, np.float32))])
        return self.node(scope, "Add", [y, self.param(param + ".bias", np.zeros(d, np.float32))])

    def model(self, inputs, outputs, opset, name):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, producer_name="opscope tools/gen_transformer_models.py",
                              opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m


def bert_tiny():
    t = TorchStyle(42)
    seq, d, heads, ff, layers, vocab = 16, 64, 4, 256, 2, 128
    hd = d // heads
    # Embeddings.
    e = "/embeddings"
    words = t.node(f"{e}/word_embeddings", "Gather",
                   [t.param("embeddings.word_embeddings.weight", t.weights((vocab, d), 1)),
                    "input_ids"])
    types = t.node(f"{e}/token_type_embeddings", "Gather",
                   [t.param("embeddings.token_type_embeddings.weight", t.weights((2, d), 1)),
                    "token_type_ids"])
    x = t.node(e, "Add", [words, types])
    pos = t.node(f"{e}/position_embeddings", "Gather",
                 [t.param("embeddings.position_embeddings.weight", t.weights((64, d), 1)),
                  t.const("Gather", np.arange(seq, dtype=np.int64).reshape(1, seq))])
    x = t.node(e, "Add", [x, pos])
    x = t.layer_norm(f"{e}/LayerNorm", x, d, "embeddings.LayerNorm")
    # The extended attention mask: (1 - mask[:, None, None, :]) * -10000.
    m = t.node("", "Unsqueeze", ["attention_mask", t.const("Unsqueeze", np.array([1], np.int64))])
    m = t.node("", "Unsqueeze", [m, t.const("Unsqueeze", np.array([2], np.int64))])
    m = t.node("", "Cast", [m], to=TensorProto.FLOAT)
    m = t.node("", "Sub", [t.const("Sub", np.float32(1.0)), m])
    mask = t.node("", "Mul", [m, t.const("Mul", np.float32(-10000.0))])
    for li in range(layers):
        s = f"/encoder/layer.{li}"
        p = f"encoder.layer.{li}"
        a = f"{s}/attention/self"

        def heads_of(y, scope, perm):
            y = t.node(scope, "Reshape", [y, t.const("Reshape", np.array([0, 0, heads, hd], np.int64))])
            return t.node(scope, "Transpose", [y], perm=perm)

        q = heads_of(t.linear(f"{a}/query", x, d, d, f"{p}.attention.self.query"), a, [0, 2, 1, 3])
        k = heads_of(t.linear(f"{a}/key", x, d, d, f"{p}.attention.self.key"), a, [0, 2, 3, 1])
        v = heads_of(t.linear(f"{a}/value", x, d, d, f"{p}.attention.self.value"), a, [0, 2, 1, 3])
        sc = t.node(a, "MatMul", [q, k])
        sc = t.node(a, "Div", [sc, t.const("Div", np.float32(np.sqrt(hd)))])
        sc = t.node(a, "Add", [sc, mask])
        pr = t.node(a, "Softmax", [sc], axis=-1)
        c = t.node(a, "MatMul", [pr, v])
        c = t.node(a, "Transpose", [c], perm=[0, 2, 1, 3])
        c = t.node(a, "Reshape", [c, t.const("Reshape", np.array([0, 0, d], np.int64))])
        o = t.linear(f"{s}/attention/output/dense", c, d, d, f"{p}.attention.output.dense")
        o = t.node(f"{s}/attention/output", "Add", [o, x])
        x = t.layer_norm(f"{s}/attention/output/LayerNorm", o, d, f"{p}.attention.output.LayerNorm")
        h = t.linear(f"{s}/intermediate/dense", x, d, ff, f"{p}.intermediate.dense")
        g = f"{s}/intermediate/intermediate_act_fn"
        y = t.node(g, "Div", [h, t.const("Div", np.float32(1.4142135381698608))])
        y = t.node(g, "Erf", [y])
        y = t.node(g, "Add", [y, t.const("Add", np.float32(1.0))])
        y = t.node(g, "Mul", [h, y])
        y = t.node(g, "Mul", [y, t.const("Mul", np.float32(0.5))])
        o = t.linear(f"{s}/output/dense", y, ff, d, f"{p}.output.dense")
        o = t.node(f"{s}/output", "Add", [o, x])
        x = t.layer_norm(f"{s}/output/LayerNorm", o, d, f"{p}.output.LayerNorm")
    last = t.node("", "Identity", [x])
    first = t.node("/pooler", "Gather", [x, t.const("Gather", np.array(0, np.int64))], axis=1)
    pooled = t.node("/pooler/activation", "Tanh",
                    [t.linear("/pooler/dense", first, d, d, "pooler.dense")])
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, seq])
            for n in ("input_ids", "token_type_ids", "attention_mask")]
    return t.model(ints, [helper.make_tensor_value_info(last, TensorProto.FLOAT, [1, seq, d]),
                          helper.make_tensor_value_info(pooled, TensorProto.FLOAT, [1, d])],
                   14, "bert_tiny")


def vit_tiny():
    t = TorchStyle(17)
    img, patch, d, heads, ff, blocks = 32, 8, 64, 4, 256, 2
    n = (img // patch) ** 2 + 1
    hd = d // heads
    x = t.node("/patch_embed/proj", "Conv",
               ["pixel_values", t.param("patch_embed.proj.weight", t.weights((d, 3, patch, patch), 3 * patch * patch)),
                t.param("patch_embed.proj.bias", np.zeros(d, np.float32))],
               kernel_shape=[patch, patch], strides=[patch, patch])
    x = t.node("/patch_embed", "Reshape", [x, t.const("Reshape", np.array([1, d, n - 1], np.int64))])
    x = t.node("/patch_embed", "Transpose", [x], perm=[0, 2, 1])
    x = t.node("", "Concat", [t.param("cls_token", t.weights((1, 1, d), 1)), x], axis=1)
    x = t.node("", "Add", [x, t.param("pos_embed", t.weights((1, n, d), 50))])
    ln = lambda scope, y, param: t.node(  # noqa: E731
        scope, "LayerNormalization",
        [y, t.param(param + ".weight", np.ones(d, np.float32)), t.param(param + ".bias", np.zeros(d, np.float32))],
        axis=-1, epsilon=1e-6)
    for bi in range(blocks):
        s, p = f"/blocks.{bi}", f"blocks.{bi}"
        a = f"{s}/attn"
        y = ln(f"{s}/norm1", x, f"{p}.norm1")
        qkv = t.linear(f"{a}/qkv", y, d, 3 * d, f"{p}.attn.qkv")
        qkv = t.node(a, "Reshape", [qkv, t.const("Reshape", np.array([1, n, 3, heads, hd], np.int64))])
        qkv = t.node(a, "Transpose", [qkv], perm=[2, 0, 3, 1, 4])
        q = t.node(a, "Gather", [qkv, t.const("Gather", np.array(0, np.int64))], axis=0)
        k = t.node(a, "Gather", [qkv, t.const("Gather", np.array(1, np.int64))], axis=0)
        v = t.node(a, "Gather", [qkv, t.const("Gather", np.array(2, np.int64))], axis=0)
        q = t.node(a, "Mul", [q, t.const("Mul", np.float32(hd ** -0.5))])
        kt = t.node(a, "Transpose", [k], perm=[0, 1, 3, 2])
        sc = t.node(a, "MatMul", [q, kt])
        pr = t.node(a, "Softmax", [sc], axis=-1)
        c = t.node(a, "MatMul", [pr, v])
        c = t.node(a, "Transpose", [c], perm=[0, 2, 1, 3])
        c = t.node(a, "Reshape", [c, t.const("Reshape", np.array([1, n, d], np.int64))])
        o = t.linear(f"{a}/proj", c, d, d, f"{p}.attn.proj")
        x = t.node(s, "Add", [x, o])
        y = ln(f"{s}/norm2", x, f"{p}.norm2")
        h = t.linear(f"{s}/mlp/fc1", y, d, ff, f"{p}.mlp.fc1")
        g = f"{s}/mlp/act"
        if bi == 0:  # GELU(approximate='tanh')
            c3 = t.node(g, "Pow", [h, t.const("Pow", np.float32(3.0))])
            c3 = t.node(g, "Mul", [c3, t.const("Mul", np.float32(0.044715))])
            u = t.node(g, "Add", [h, c3])
            u = t.node(g, "Mul", [u, t.const("Mul", np.float32(np.sqrt(2.0 / np.pi)))])
            u = t.node(g, "Tanh", [u])
            u = t.node(g, "Add", [u, t.const("Add", np.float32(1.0))])
            hh = t.node(g, "Mul", [h, t.const("Mul", np.float32(0.5))])
            h = t.node(g, "Mul", [hh, u])
        else:  # QuickGELU: x * sigmoid(1.702 x)
            u = t.node(g, "Mul", [h, t.const("Mul", np.float32(1.702))])
            u = t.node(g, "Sigmoid", [u])
            h = t.node(g, "Mul", [h, u])
        o = t.linear(f"{s}/mlp/fc2", h, ff, d, f"{p}.mlp.fc2")
        x = t.node(s, "Add", [x, o])
    x = ln("/norm", x, "norm")
    cls = t.node("", "Gather", [x, t.const("Gather", np.array(0, np.int64))], axis=1)
    logits = t.linear("/head", cls, d, 10, "head")
    return t.model([helper.make_tensor_value_info("pixel_values", TensorProto.FLOAT, [1, 3, img, img])],
                   [helper.make_tensor_value_info(logits, TensorProto.FLOAT, [1, 10])], 17, "vit_tiny")


MODELS = {"bert_tiny": bert_tiny, "vit_tiny": vit_tiny}



def main():
    return write_models(MODELS, __doc__)


if __name__ == "__main__":
    sys.exit(main())
