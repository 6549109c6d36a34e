#!/usr/bin/env node
// Runs an ONNX model in ONNX Runtime (the npm package onnxruntime-node) the way
// `session-run MODEL --repeat N` runs it in libsession, for bench/onnx_bench.sh:
//
//   node bench/ort_run.js MODEL.onnx INPUT.npy [--output OUT.npy] [--threads T] [--repeat N]
//
// The model's first input is fed from INPUT.npy (float32, C order); its first output is written
// to OUT.npy (raw little-endian float32 after a .npy header that gives the shape). One
// InferenceSession with intraOpNumThreads T (default 1), interOpNumThreads 1, sequential
// execution and every graph optimization; N runs of the same input, each timed with
// process.hrtime. Prints, as session-run does:
//   runs 2 to N: min A ms, median B ms, max C ms
// where the median of runs 2..N is taken the way session-run takes it (sorted, element
// (N-1)/2 of the N-1 times, counting from 0). The package is found through NODE_PATH or the
// folder given by ORT_NODE_MODULES. Exit 0, 1 (an error), 2 (bad usage).
'use strict';
const fs = require('fs');
const path = require('path');

function usage(msg) {
  if (msg) console.error('ort_run.js: ' + msg);
  console.error('usage: node ort_run.js MODEL.onnx INPUT.npy [--output OUT.npy] [--threads T] [--repeat N]');
  process.exit(2);
}

// Reads a float32 C-order .npy file: {data: Float32Array, shape: [..]}.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY')
    throw new Error(file + ': not a .npy file');
  const major = buf.readUInt8(6);
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(file + ': want float32 (<f4), header ' + header);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': Fortran order');
  const m = /'shape':\s*\(([^)]*)\)/.exec(header);
  const shape = m[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  // Copied into its own buffer: the data need not be 4-byte aligned within the file's.
  const data = new Float32Array(count);
  Buffer.from(data.buffer).set(buf.subarray(start, start + 4 * count));
  return { data, shape };
}

function writeNpy(file, data, shape) {
  let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
    shape.join(', ') + (shape.length === 1 ? ',' : '') + '), }';
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.writeUInt8(0x93, 0);
  pre.write('NUMPY', 1, 'latin1');
  pre.writeUInt8(1, 6);
  pre.writeUInt8(0, 7);
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

async function main() {
  const args = process.argv.slice(2);
  const pos = [];
  let output = null, threads = 1, repeat = 1;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--output' && i + 1 < args.length) output = args[++i];
    else if (a === '--threads' && i + 1 < args.length) threads = Number(args[++i]);
    else if (a === '--repeat' && i + 1 < args.length) repeat = Number(args[++i]);
    else if (a.startsWith('--')) usage('unknown option ' + a);
    else pos.push(a);
  }
  if (pos.length !== 2) usage('want MODEL.onnx and INPUT.npy');
  if (!(threads >= 1) || !(repeat >= 1 && Number.isInteger(repeat))) usage('bad --threads or --repeat');

  let ort;
  try {
    ort = process.env.ORT_NODE_MODULES
      ? require(path.join(process.env.ORT_NODE_MODULES, 'onnxruntime-node'))
      : require('onnxruntime-node');
  } catch (e) {
    console.error('ort_run.js: cannot load onnxruntime-node: ' + e.message.split('\n')[0]);
    process.exit(1);
  }
  const session = await ort.InferenceSession.create(pos[0], {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const x = readNpy(pos[1]);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
  const outName = session.outputNames[0];
  const times = [];
  let result = null;
  for (let r = 0; r < repeat; r++) {
    const t0 = process.hrtime.bigint();
    result = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  console.log('onnxruntime ' + ort.env.versions.common + ': ' + pos[0] + ', ' + threads +
    ' intra-op thread(s); first run ' + times[0].toFixed(3) + ' ms');
  if (repeat > 1) {
    const rest = times.slice(1).sort((a, b) => a - b);
    console.log('runs 2 to ' + repeat + ': min ' + rest[0].toFixed(3) + ' ms, median ' +
      rest[Math.floor((repeat - 1) / 2)].toFixed(3) + ' ms, max ' + rest[rest.length - 1].toFixed(3) + ' ms');
  }
  const y = result[outName];
  if (output) writeNpy(output, y.data, y.dims);
  await session.release();
}

main().catch((e) => {
  console.error('ort_run.js: ' + (e && e.message ? e.message : e));
  process.exit(1);
});
