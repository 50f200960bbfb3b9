// Runs a model on ONNX Runtime's CPU execution provider (onnxruntime-node) with ORT's own
// profiler on and prints the path of the profile JSON it wrote (for `opscope import` examples
// and fixtures).
//   node tools/ort_profile.js MODEL.onnx PREFIX [RUNS] [NAME=D1xD2...]...
// Float inputs get a fixed ramp, integer inputs zeros; symbolic dimensions take the NAME=DIMS
// values given, else 1. ORT_OPT picks the graph optimization level (default "all"),
// ORT_THREADS the intra-op threads (default 1); ORT_SAVE_OPTIMIZED=FILE.onnx saves the graph as
// ORT's transformers left it (to see what each fused row is made of).
'use strict';
const path = require('path');
const modules = process.env.ORT_NODE_MODULES || path.join(__dirname, '..', 'bench', 'node_modules');
const ort = require(path.join(modules, 'onnxruntime-node'));

async function main() {
  const [model, prefix, runsArg, ...shapeArgs] = process.argv.slice(2);
  if (!prefix) {
    console.error('usage: node tools/ort_profile.js MODEL.onnx PREFIX [RUNS] [NAME=DIMS]...');
    process.exit(2);
  }
  const shapes = {};
  for (const a of shapeArgs) {
    const [n, d] = a.split('=');
    shapes[n] = d.split('x').map(Number);
  }
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(process.env.ORT_THREADS || 1),
    executionMode: 'sequential',
    graphOptimizationLevel: process.env.ORT_OPT || 'all',
    enableProfiling: true,
    profileFilePrefix: prefix,
    ...(process.env.ORT_SAVE_OPTIMIZED ? { optimizedModelFilePath: process.env.ORT_SAVE_OPTIMIZED } : {}),
  });
  const kArrays = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array,
    float64: Float64Array, uint8: Uint8Array, int8: Int8Array, bool: Uint8Array };
  const feeds = {};
  const meta = session.inputMetadata || [];
  session.inputNames.forEach((name, i) => {
    const m = meta[i] || {};
    const type = m.type || 'float32';
    const dims = shapes[name] ||
        (m.shape || [1]).map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const Ctor = kArrays[type] || Float32Array;
    const data = new Ctor(n);
    if (Ctor === Float32Array || Ctor === Float64Array)
      for (let k = 0; k < n; ++k) data[k] = ((k % 17) - 8) / 8;
    feeds[name] = new ort.Tensor(type, data, dims);
  });
  const runs = Number(runsArg || 3);
  for (let r = 0; r < runs; ++r) await session.run(feeds);
  const file = session.endProfiling ? session.endProfiling() : undefined;
  await session.release();
  if (file) console.log(file);
}
main().catch((e) => { console.error(String(e)); process.exit(1); });
