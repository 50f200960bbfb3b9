// Reads the tensors that tools/ort_compare.py writes for ONNX Runtime: DIR/tensors.json
// ([{name, dtype, dims, file}]) plus one raw little-endian file per tensor. Shared by
// tools/ort_run.js (the differential tests) and bench/ort_bench.js (the corpus benchmark).
'use strict';
const fs = require('fs');
const path = require('path');

const kArrays = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  int8: Int8Array, uint8: Uint8Array, bool: Uint8Array, float16: Uint16Array,
};

function readTensor(ort, dir, t) {
  const buf = fs.readFileSync(path.join(dir, t.file));
  const Ctor = kArrays[t.dtype];
  if (!Ctor) throw new Error(`input '${t.name}': dtype ${t.dtype} is not supported here`);
  const copy = buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  return new ort.Tensor(t.dtype, new Ctor(copy), t.dims);
}

// {name: ort.Tensor} for every tensor listed in DIR/tensors.json.
function readFeeds(ort, dir) {
  const feeds = {};
  for (const t of JSON.parse(fs.readFileSync(path.join(dir, 'tensors.json'), 'utf8')))
    feeds[t.name] = readTensor(ort, dir, t);
  return feeds;
}

module.exports = { readFeeds };
