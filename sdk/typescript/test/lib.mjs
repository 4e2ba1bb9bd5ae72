// The box under test (started by typescript_test.go) configures the
// ambient client, as STACKBONE_URL and STACKBONE_API_KEY do in production.
import assert from 'node:assert/strict';

export const boxURL = process.env.BOX_URL;
export const boxKey = process.env.BOX_KEY;
if (!boxURL || !boxKey) {
  throw new Error('BOX_URL and BOX_KEY name the box under test: run these suites through `go test ./sdk/typescript`');
}
process.env.STACKBONE_URL = boxURL;
process.env.STACKBONE_API_KEY = boxKey;

/** Asserts a success and returns its data. */
export function ok(result) {
  assert.equal(result.error, null, `unexpected error: ${result.error?.code} ${result.error?.message}`);
  return result.data;
}

/** Asserts a failure with code and status, and that data is null. */
export function fails(result, code, status) {
  assert.equal(result.data, null);
  assert.ok(result.error, `expected ${code}, got data ${JSON.stringify(result.data)}`);
  assert.equal(result.error.name, 'SdkError');
  assert.equal(result.error.code, code, result.error.message);
  if (status !== undefined) assert.equal(result.error.status, status);
  return result.error;
}

import { createServer } from 'node:http';

/**
 * A proxy in front of the box: intercept(req, n) may answer the nth
 * request itself ({ status, headers, body }) or drop it without an answer
 * ({ drop: true }); anything else reaches the box unchanged. Returns { url, close, count() }.
 */
export async function proxy(intercept) {
  let n = 0;
  const server = createServer(async (req, res) => {
    n++;
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const own = await intercept(req, n);
    if (own?.drop) {
      req.socket.destroy(); // no answer at all
      return;
    }
    if (own) {
      res.writeHead(own.status, { 'content-type': 'application/json', ...own.headers });
      res.end(typeof own.body === 'string' ? own.body : JSON.stringify(own.body));
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers['content-length'];
    const up = await fetch(boxURL + req.url, { method: req.method, headers, body: body.length ? body : undefined });
    const text = Buffer.from(await up.arrayBuffer());
    const out = {};
    up.headers.forEach((v, k) => {
      if (k !== 'content-length' && k !== 'content-encoding' && k !== 'transfer-encoding') out[k] = v;
    });
    res.writeHead(up.status, out);
    res.end(text);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    count: () => n,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Polls fn until it returns a truthy value, or fails after ms. */
export async function eventually(fn, ms = 20000, what = 'the condition') {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
