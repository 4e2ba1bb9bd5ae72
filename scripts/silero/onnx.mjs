// A small reader of the protobuf messages of an ONNX file (ModelProto, GraphProto,
// NodeProto, AttributeProto, TensorProto): the fields convert.mjs needs, by
// their numbers in onnx.proto, so the conversion needs no protobuf package.
export function fields(buf) {
  const out = [];
  let p = 0;
  const varint = () => {
    let v = 0n, s = 0n;
    for (;;) { const b = buf[p++]; v |= BigInt(b & 0x7f) << s; if (!(b & 0x80)) break; s += 7n; }
    return v;
  };
  while (p < buf.length) {
    const key = Number(varint()), num = key >>> 3, wt = key & 7;
    if (wt === 0) out.push({ num, wt, v: varint() });
    else if (wt === 1) { out.push({ num, wt, b: buf.subarray(p, p + 8) }); p += 8; }
    else if (wt === 2) { const n = Number(varint()); out.push({ num, wt, b: buf.subarray(p, p + n) }); p += n; }
    else if (wt === 5) { out.push({ num, wt, b: buf.subarray(p, p + 4) }); p += 4; }
    else throw new Error(`wire type ${wt}`);
  }
  return out;
}
const str = (b) => Buffer.from(b).toString('utf8');
function packedVarints(f) {
  if (f.wt === 0) return [f.v];
  const r = []; let p = 0; const b = f.b;
  while (p < b.length) { let v = 0n, s = 0n; for (;;) { const c = b[p++]; v |= BigInt(c & 0x7f) << s; if (!(c & 0x80)) break; s += 7n; } r.push(v); }
  return r;
}
const signed = (v) => BigInt.asIntN(64, v);
export function tensor(buf) {
  const t = { dims: [], type: 0, name: '', floats: [], ints: [], raw: null };
  for (const f of fields(buf)) {
    if (f.num === 1) t.dims.push(...packedVarints(f).map((v) => Number(signed(v))));
    else if (f.num === 2) t.type = Number(f.v);
    else if (f.num === 4) { if (f.wt === 5) t.floats.push(Buffer.from(f.b).readFloatLE(0)); else { const d = Buffer.from(f.b); for (let i = 0; i < d.length; i += 4) t.floats.push(d.readFloatLE(i)); } }
    else if (f.num === 7) t.ints.push(...packedVarints(f).map((v) => Number(signed(v))));
    else if (f.num === 8) t.name = str(f.b);
    else if (f.num === 9) t.raw = Buffer.from(f.b);
  }
  return t;
}
export function values(t) {
  if (t.raw) {
    if (t.type === 1) { const r = []; for (let i = 0; i < t.raw.length; i += 4) r.push(t.raw.readFloatLE(i)); return r; }
    if (t.type === 7) { const r = []; for (let i = 0; i < t.raw.length; i += 8) r.push(Number(t.raw.readBigInt64LE(i))); return r; }
    if (t.type === 6) { const r = []; for (let i = 0; i < t.raw.length; i += 4) r.push(t.raw.readInt32LE(i)); return r; }
    if (t.type === 9) return [...t.raw];
    throw new Error(`tensor type ${t.type}`);
  }
  return t.type === 1 ? t.floats : t.ints;
}
function attribute(buf) {
  const a = { name: '', ints: [], floats: [] };
  for (const f of fields(buf)) {
    if (f.num === 1) a.name = str(f.b);
    else if (f.num === 2) a.f = Buffer.from(f.b).readFloatLE(0);
    else if (f.num === 3) a.i = Number(signed(f.v));
    else if (f.num === 4) a.s = str(f.b);
    else if (f.num === 5) a.t = tensor(f.b);
    else if (f.num === 6) a.g = graph(f.b);
    else if (f.num === 7) { if (f.wt === 5) a.floats.push(Buffer.from(f.b).readFloatLE(0)); else { const d = Buffer.from(f.b); for (let i = 0; i < d.length; i += 4) a.floats.push(d.readFloatLE(i)); } }
    else if (f.num === 8) a.ints.push(...packedVarints(f).map((v) => Number(signed(v))));
  }
  return a;
}
function node(buf) {
  const n = { inputs: [], outputs: [], name: '', op: '', attrs: {} };
  for (const f of fields(buf)) {
    if (f.num === 1) n.inputs.push(str(f.b));
    else if (f.num === 2) n.outputs.push(str(f.b));
    else if (f.num === 3) n.name = str(f.b);
    else if (f.num === 4) n.op = str(f.b);
    else if (f.num === 5) { const a = attribute(f.b); n.attrs[a.name] = a; }
  }
  return n;
}
function valueInfo(buf) { for (const f of fields(buf)) if (f.num === 1) return str(f.b); return ''; }
export function graph(buf) {
  const g = { nodes: [], inits: [], inputs: [], outputs: [], name: '' };
  for (const f of fields(buf)) {
    if (f.num === 1) g.nodes.push(node(f.b));
    else if (f.num === 2) g.name = str(f.b);
    else if (f.num === 5) g.inits.push(tensor(f.b));
    else if (f.num === 11) g.inputs.push(valueInfo(f.b));
    else if (f.num === 12) g.outputs.push(valueInfo(f.b));
  }
  return g;
}
export function model(buf) {
  const m = { opsets: [] };
  for (const f of fields(buf)) {
    if (f.num === 7) m.graph = graph(f.b);
    if (f.num === 8) for (const o of fields(f.b)) if (o.num === 2) m.opsets.push(Number(o.v));
  }
  return m;
}
