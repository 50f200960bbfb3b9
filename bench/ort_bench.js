// Times one model on ONNX Runtime's CPU execution provider (graph optimizations on) and prints
// {"median_ms": ..., "runs_ms": [...]} as one JSON line.
//   node ort_bench.js MODEL.onnx THREADS WARMUP RUNS [INPUT_DIR]
// INPUT_DIR: the inputs tools/ort_compare.py wrote (tensors.json + raw files); without it every
// input is seeded float32 data with dynamic dims set to 1.
'use strict';
const ort = require('onnxruntime-node');
const { readFeeds } = require('../tools/ort_tensors.js');

function randomTensor(meta) {
  const dims = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let seed = 12345;
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    data[i] = (seed / 0x7fffffff) * 2 - 1;
  }
  return new ort.Tensor('float32', data, dims);
}

async function main() {
  const [model, threads, warmup, runs, inputDir] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads),
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = inputDir ? readFeeds(ort, inputDir) : {};
  for (const name of inputDir ? [] : session.inputNames) {
    const meta = session.inputMetadata ? session.inputMetadata.find((m) => m.name === name) : null;
    feeds[name] = randomTensor(meta && meta.shape ? meta : { shape: [1] });
  }
  for (let i = 0; i < Number(warmup); i++) await session.run(feeds);
  const times = [];
  for (let i = 0; i < Number(runs); i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  console.log(JSON.stringify({ median_ms: median, runs_ms: times }));
}

main().catch((e) => {
  console.error('ort_bench: ' + e.message);
  process.exit(1);
});
