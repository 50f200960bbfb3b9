#!/usr/bin/env bash
# The shipped models are exactly what tools/gen_models.py generates (the generator is the source).
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$src/tools/gen_models.py" "$tmp" bev_demo twin_matmul control_flow >/dev/null
cmp "$tmp/bev_demo.onnx" "$src/models/bev_demo.onnx"
cmp "$tmp/twin_matmul.onnx" "$src/tests/models/twin_matmul.onnx"
cmp "$tmp/control_flow.onnx" "$src/tests/models/control_flow.onnx"
/usr/bin/python3 "$src/tools/gen_quant_models.py" "$tmp" qdq_convnet qlinear_ops >/dev/null
cmp "$tmp/qdq_convnet.onnx" "$src/tests/models/qdq_convnet.onnx"
cmp "$tmp/qlinear_ops.onnx" "$src/tests/models/qlinear_ops.onnx"
/usr/bin/python3 "$src/tools/gen_transformer_models.py" "$tmp" bert_tiny vit_tiny >/dev/null
cmp "$tmp/bert_tiny.onnx" "$src/tests/models/bert_tiny.onnx"
cmp "$tmp/vit_tiny.onnx" "$src/tests/models/vit_tiny.onnx"
echo "models reproduce byte for byte"
