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

const { readFeeds } = require('./ort_tensors.js');

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
  const feeds = readFeeds(ort, inDir);
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
