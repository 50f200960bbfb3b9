// Runs one model once on ONNX Runtime's CPU execution provider (onnxruntime-node) and writes
// every output as raw little-endian data, for tools/ort_compare.py (the corpus differential test
// and the divergence finder). Tensors travel as DIR/tensors.json
// ([{name, dtype, dims, file}]) plus one raw file per tensor: TensorProto needs a protobuf
// library that onnxruntime-node does not ship.
//   node tools/ort_run.js MODEL.onnx INPUT_DIR OUTPUT_DIR
// The onnxruntime-node package is looked up in ORT_NODE_MODULES (default: bench/node_modules).
'use strict';
const fs = require('fs');
const path = require('path');

const modules = process.env.ORT_NODE_MODULES || path.join(__dirname, '..', 'bench', 'node_modules');
const ort = require(path.join(modules, 'onnxruntime-node'));

const kArrays = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array, float16: Uint16Array,
};

function readTensor(dir, t) {
  const buf = fs.readFileSync(path.join(dir, t.file));
  const Ctor = kArrays[t.dtype];
  if (!Ctor) throw new Error(`input '${t.name}': dtype ${t.dtype} is not supported here`);
  const copy = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  return new ort.Tensor(t.dtype, new Ctor(copy), t.dims);
}

async function main() {
  const [model, inDir, outDir] = process.argv.slice(2);
  if (!outDir) {
    console.error('usage: node tools/ort_run.js MODEL.onnx INPUT_DIR OUTPUT_DIR');
    process.exit(2);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(process.env.ORT_THREADS || 1),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    // Constant folding and redundant-node removal only: no fused kernels with their own
    // rounding, so ORT stays the plainest reference.
    graphOptimizationLevel: 'basic',
  });
  const feeds = {};
  for (const t of JSON.parse(fs.readFileSync(path.join(inDir, 'tensors.json'), 'utf8')))
    feeds[t.name] = readTensor(inDir, t);
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  const index = [];
  session.outputNames.forEach((name, i) => {
    const t = results[name];
    const file = `output_${i}.bin`;
    const data = t.data;
    const bytes = data instanceof Array
      ? Buffer.from(Uint8Array.from(data.map((v) => (v ? 1 : 0))))
      : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    fs.writeFileSync(path.join(outDir, file), bytes);
    index.push({ name, dtype: t.type, dims: t.dims.map(Number), file });
  });
  fs.writeFileSync(path.join(outDir, 'tensors.json'), JSON.stringify(index));
}

main().catch((e) => {
  console.error('ort_run: ' + String(e.message || e).split('\n')[0]);
  process.exit(1);
});
