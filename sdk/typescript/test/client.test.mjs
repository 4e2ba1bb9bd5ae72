// Every SDK method against the box, the error envelope of the documented
// codes, pagination, retries, idempotent adds and aborts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { boxURL, boxKey, ok, fails, proxy, eventually } from './lib.mjs';
import { createClient, stackbone, SdkError } from '@stackbone/sdk';

const box = createClient({ baseURL: boxURL, apiKey: boxKey });
const once = createClient({ baseURL: boxURL, apiKey: boxKey, maxRetries: 0 });

test('memory: the error envelope of each code', async () => {
  const who = { agentId: 'support', userId: 'err-person' };
  fails(await box.memory.add('hello', { agentId: 'support', userId: '' }), 'memory_invalid_request', 400);
  fails(await box.memory.recall({ ...who, calls: 101 }), 'memory_invalid_request', 400);
  fails(await box.memory.add('hello', { agentId: 'ghost', userId: 'p' }), 'agent_not_found', 404);
  fails(await box.memory.add('PROVIDER DOWN', who), 'memory_model_failed', 502);
  fails(await box.memory.add('GARBLED', who), 'memory_invalid_model_output', 502);
  // Invalid output changed nothing.
  assert.deepEqual(ok(await box.memory.recall(who)), { facts: [], calls: [] });
  fails(await box.memory.search('What plan is the user on?', { userId: 'user_42', limit: 5 }), 'not_implemented');
  for (const m of ['get', 'list', 'update', 'delete', 'history', 'endSession']) {
    fails(await box.memory[m]('x'), 'not_implemented');
  }
  fails(await createClient({ baseURL: boxURL, apiKey: 'wrong' }).memory.recall(who), 'unauthorized', 401);
});

test('memory: memory_conflict when an erasure lands while the model is asked', async () => {
  const who = { agentId: 'support', userId: 'race-person' };
  const adding = box.memory.add('CONFLICT: the caller asks to be remembered', who);
  await eventually(async () => (await fetch(`${process.env.MODEL_SEEN_URL}?text=CONFLICT`)).ok, 20000, 'the extraction request');
  ok(await box.memory.deleteAll(who));
  fails(await adding, 'memory_conflict', 409);
  assert.deepEqual(ok(await box.memory.recall(who)), { facts: [], calls: [] });
});

test('memory: a retried add with one Idempotency-Key is applied once', async () => {
  const who = { agentId: 'support', userId: 'idem-person' };
  const first = ok(await box.memory.add('Caller: where is my order?', { ...who, idempotencyKey: 'add-1' }));
  const again = ok(await box.memory.add('Caller: where is my order?', { ...who, idempotencyKey: 'add-1' }));
  assert.equal(again.call.id, first.call.id);
  const other = ok(await box.memory.add('Caller: where is my order?', who)); // a new key each add
  assert.notEqual(other.call.id, first.call.id);
  assert.equal(ok(await box.memory.recall(who)).calls.length, 2);
  assert.equal(ok(await box.memory.deleteAll(who)).deleted, 3);
});

test('memory: capability_unavailable on a box without memory.basic', async () => {
  const p = await proxy((req) =>
    req.url === '/api/capabilities' ? { status: 200, body: { data: { capabilities: ['rag'] }, error: null } } : null,
  );
  try {
    const c = createClient({ baseURL: p.url, apiKey: boxKey });
    fails(await c.memory.recall({ agentId: 'support', userId: 'p' }), 'capability_unavailable');
    fails(await c.memory.add('x', { agentId: 'support', userId: 'p' }), 'capability_unavailable');
    assert.equal(p.count(), 1); // asked once, then remembered
  } finally {
    await p.close();
  }
});

test('memory settings: get, update, reset', async () => {
  const s = ok(await box.memory.settings.get('support'));
  assert.equal(s.agentId, 'support');
  assert.equal(s.value.read, true);
  const off = ok(await box.memory.settings.update('support', { read: false }));
  assert.equal(off.value.read, false);
  assert.equal(off.origins.read, 'studio');
  const back = ok(await box.memory.settings.reset('support', 'read'));
  assert.equal(back.value.read, true);
  assert.equal(back.origins.read, 'code');
  ok(await box.memory.settings.reset('support'));
  fails(await box.memory.settings.get('ghost'), 'agent_not_found', 404);
  fails(await box.memory.settings.update('support', { identityKey: 'email' }), 'memory_identity_key_fixed', 409);
});

test('rag: collections, ingest, retrieve, upload, documents and jobs', async () => {
  const col = ok(await box.rag.collections.create({ name: 'manuals' }));
  assert.equal(col.name, 'manuals');
  fails(await box.rag.collections.create({ name: 'manuals' }), 'rag_collection_exists', 409);
  fails(await box.rag.collections.create({ name: 'Not Valid!' }), 'rag_invalid_request', 400);
  fails(await box.rag.ingest({ id: 'x', collection: 'nowhere', chunks: [{ content: 'a' }] }), 'rag_collection_not_found', 404);
  const doc = ok(await box.rag.ingest({ id: 'kettle', collection: 'manuals', chunks: [{ content: 'Descale the kettle monthly.' }] }));
  assert.equal(doc.chunks, 1);
  const hits = ok(await box.rag.retrieve({ text: 'descale', namespace: 'manuals', topK: 1 }));
  assert.equal(hits[0].documentId, 'kettle');
  assert.ok(hits[0].score >= 0 && hits[0].score <= 1);

  const text = 'The toaster has three settings.';
  const up = ok(await box.rag.documents.upload('manuals', new Blob([text], { type: 'text/plain' }), { filename: 'toaster.txt', metadata: { lang: 'en' } }));
  const id = up.document.id;
  const done = await eventually(async () => {
    const d = ok(await box.rag.documents.get(id));
    return d.status === 'succeeded' || d.status === 'failed' ? d : null;
  }, 30000, 'the upload to be ingested');
  assert.equal(done.status, 'succeeded');
  const original = ok(await box.rag.documents.original(id));
  assert.equal(await original.text(), text);
  const jobs = ok(await box.rag.jobs.list({ collection: 'manuals' }));
  assert.ok(jobs.some((j) => j.documentId === id));
  const jobId = jobs.find((j) => j.documentId === id).id;
  await eventually(async () => ok(await box.rag.jobs.get(jobId)).state === 'completed', 20000, 'the job to complete');
  fails(await box.rag.jobs.get(999999), 'rag_job_not_found', 404);
  fails(await box.rag.jobs.retry(999999), 'rag_job_not_found', 404);
  fails(await box.rag.jobs.cancel(999999), 'rag_job_not_found', 404);

  const docs = ok(await box.rag.documents.list('manuals'));
  assert.deepEqual(docs.map((d) => d.id).sort(), [id, 'kettle'].sort());
  assert.ok(ok(await box.rag.collections.list()).some((c) => c.name === 'manuals' && c.documents === 2));
  assert.deepEqual(ok(await box.rag.documents.delete('kettle')), { id: 'kettle', deleted: true });
  fails(await box.rag.documents.get('kettle'), 'rag_document_not_found', 404);
});

test('stores: stores, memories and versions', async () => {
  const st = ok(await box.stores.create({ name: 'Release policy', description: 'How we ship.' }));
  const sid = st.memory_store_id;
  ok(await box.stores.create({ name: 'Second store' }));
  ok(await box.stores.create({ name: 'Third store' }));
  assert.equal(ok(await box.stores.get(sid)).slug, 'release-policy');
  assert.equal(ok(await box.stores.update(sid, { description: 'How we version and ship.' })).description, 'How we version and ship.');
  const all = [];
  for await (const s of box.stores.list({ limit: 1, origin: 'curated' })) all.push(s.name);
  assert.deepEqual(all.sort(), ['Release policy', 'Second store', 'Third store']);
  assert.equal(ok(await box.stores.list({ limit: 2 })).length, 2);

  const m = ok(await box.stores.memories.create(sid, { path: '/releases/versioning.md', summary: 'How versions are chosen.', content: 'Bump the minor version for features.' }));
  fails(await box.stores.memories.create(sid, { path: '/releases/versioning.md', summary: 's', content: 'c' }), 'memory_path_exists', 409);
  assert.equal(ok(await box.stores.memories.get(sid, m.memory_id)).content, 'Bump the minor version for features.');
  assert.equal(ok(await box.stores.memories.getByPath(sid, '/releases/versioning.md')).memory_id, m.memory_id);
  assert.equal(ok(await box.stores.memories.list(sid, { path_prefix: '/releases/' })).entries.length, 1);
  assert.ok(ok(await box.stores.memories.search(sid, { query: 'minor' })).memories.length >= 1);
  fails(await box.stores.memories.update(sid, m.memory_id, { content: 'x', content_sha256: '0'.repeat(64) }), 'content_sha256_mismatch', 409);
  const m2 = ok(await box.stores.memories.update(sid, m.memory_id, { content: 'Bump the major version for breaking changes.', content_sha256: m.content_sha256 }));
  const versions = ok(await box.stores.versions.list(sid, { memory_id: m.memory_id })).memory_versions;
  assert.equal(versions.length, 2);
  const oldest = versions[versions.length - 1];
  assert.equal(ok(await box.stores.versions.get(sid, oldest.memory_version_id)).content, 'Bump the minor version for features.');
  const restored = ok(await box.stores.versions.restore(sid, oldest.memory_version_id));
  assert.equal(restored.content, 'Bump the minor version for features.');
  assert.notEqual(restored.head_version_id, m2.head_version_id);
  ok(await box.stores.versions.redact(sid, versions[0].memory_version_id));
  ok(await box.stores.memories.delete(sid, m.memory_id));
  fails(await box.stores.memories.get(sid, m.memory_id), 'not_found', 404);
  ok(await box.stores.archive(sid));
  assert.equal(ok(await box.stores.get(sid)).status, 'archived');
  ok(await box.stores.delete(sid));
  fails(await box.stores.get(sid), 'not_found', 404);
});

test('voice: every call, page by page, over 250 calls', async () => {
  const first = ok(await box.voice.calls.list({ limit: 100 }));
  assert.equal(first.length, 100);
  const ids = [];
  for await (const c of box.voice.calls.list({ limit: 100, direction: 'inbound' })) ids.push(c.id);
  assert.ok(ids.length >= 250, `${ids.length} calls`);
  assert.equal(new Set(ids).size, ids.length);
  const paged = ids.filter((id) => id.startsWith('call_page_'));
  assert.equal(paged.length, 250);
  assert.deepEqual(paged, [...paged].sort()); // newest first: call_page_001 is the newest
  const c = ok(await box.voice.calls.get('call_page_001'));
  assert.equal(c.outcome, 'completed');
  assert.equal(c.direction, 'inbound');
  fails(await box.voice.calls.get('call_nope'), 'call_not_found', 404);
  fails(await box.voice.calls.hangup('call_page_001'), 'call_ended', 409);
  fails(await box.voice.calls.hangup('call_nope'), 'call_not_found', 404);
  fails(await once.voice.calls.dial({ agent: '', to: '+34600111222' }), 'voice_invalid_request', 400);
  fails(await once.voice.calls.dial({ agent: 'support', to: '+34600111222' }), 'voice_no_trunk', 503);
  fails(await box.voice.calls.list({ direction: 'sideways' }), 'voice_invalid_request', 400);
});

test('voice: a browser room', async () => {
  fails(await box.voice.rooms.create({ agent: 'ghost' }), 'agent_not_found', 404);
  const room = ok(await box.voice.rooms.create({ agent: 'support', identities: { customerId: 'crm/1' } }));
  assert.equal(room.agent, 'support');
  assert.ok(room.join);
  assert.equal(ok(await box.voice.rooms.get(room.id)).id, room.id);
  assert.ok(ok(await box.voice.rooms.list()).some((r) => r.id === room.id));
  assert.deepEqual(ok(await box.voice.rooms.end(room.id)), { id: room.id, status: 'ending' });
  await eventually(async () => (await box.voice.calls.get(room.callId)).data?.status === 'ended', 20000, 'the room call to end');
  fails(await box.voice.rooms.get('room_nope'), 'room_not_found', 404);
});

test('sessions and runs', async () => {
  for (const content of ['Where is order A-1001?', 'Can I still return it?']) {
    const res = await fetch(`${boxURL}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${boxKey}`, 'content-type': 'application/json', 'x-stackbone-session': 'customer-4711' },
      body: JSON.stringify({ model: 'support', messages: [{ role: 'user', content }] }),
    });
    assert.equal(res.status, 200, await res.text());
  }
  const sessions = ok(await box.sessions.list({ agent: 'support' }));
  assert.equal(sessions.length, 1);
  const s = ok(await box.sessions.get(sessions[0].id));
  assert.equal(s.turns, 2);
  assert.equal(s.transcript[1].user, 'Can I still return it?');
  fails(await box.sessions.decide(s.id, { decision: 'approve' }), 'no_decision_pending', 409);
  fails(await box.sessions.get('nope'), 'session_not_found', 404);
  const seen = [];
  for await (const x of box.sessions.list({ limit: 1 })) seen.push(x.id);
  assert.deepEqual(seen, [s.id]);

  const runs = [];
  for await (const r of box.runs.list({ limit: 2 })) runs.push(r);
  assert.ok(runs.length >= 2);
  assert.equal(new Set(runs.map((r) => r.id)).size, runs.length);
  assert.equal(ok(await box.runs.get(s.transcript[0].runId)).id, s.transcript[0].runId);
  fails(await box.runs.get('00000000-0000-0000-0000-000000000000'), 'not_found', 404);
});

test('keys: self, create, list, revoke; a key without the scope', async () => {
  const self = ok(await box.keys.self());
  assert.ok(self.scopes.includes('keys:admin'));
  const made = ok(await box.keys.create({ name: 'reader', scopes: ['rag:read'] }));
  assert.equal(made.key.name, 'reader');
  fails(await box.keys.create({ name: 'reader', scopes: ['rag:read'] }), 'key_exists', 409);
  assert.ok(ok(await box.keys.list()).some((k) => k.name === 'reader'));
  const reader = createClient({ baseURL: boxURL, apiKey: made.secret });
  ok(await reader.rag.collections.list());
  fails(await reader.memory.recall({ agentId: 'support', userId: 'p' }), 'forbidden', 403);
  fails(await reader.keys.list(), 'forbidden', 403);
  assert.deepEqual(ok(await box.keys.revoke('reader')), { revoked: 'reader' });
  fails(await reader.rag.collections.list(), 'unauthorized', 401);
  fails(await box.keys.revoke('reader'), 'key_not_found', 404);
});

test('retries a 503 after its Retry-After, and a 429 with backoff', async () => {
  const p = await proxy((req, n) =>
    n === 1
      ? { status: 503, headers: { 'retry-after': '1' }, body: { data: null, error: { code: 'unavailable', message: 'busy' } } }
      : n === 2
        ? { status: 429, body: { data: null, error: { code: 'rate_limited', message: 'slow down' } } }
        : null,
  );
  try {
    const c = createClient({ baseURL: p.url, apiKey: boxKey, retryDelayMs: 50 });
    const start = Date.now();
    const caps = ok(await c.capabilities());
    const took = Date.now() - start;
    assert.ok(caps.includes('memory.basic'));
    assert.equal(p.count(), 3);
    assert.ok(took >= 1000, `retried after ${took} ms, before Retry-After`);
    assert.ok(took < 5000, `took ${took} ms`);

    const none = createClient({ baseURL: p.url, apiKey: boxKey, maxRetries: 0 });
    const p2 = await proxy(() => ({ status: 503, headers: { 'retry-after': '7' }, body: { data: null, error: { code: 'unavailable', message: 'busy' } } }));
    try {
      const e = fails(await createClient({ baseURL: p2.url, apiKey: boxKey, maxRetries: 0 }).capabilities(), 'unavailable', 503);
      assert.equal(e.retryAfter, 7);
      assert.ok(e instanceof SdkError && e instanceof Error);
    } finally {
      await p2.close();
    }
    ok(await none.capabilities());
  } finally {
    await p.close();
  }
});

test('abort: in flight, during a retry wait, and by timeout', async () => {
  const ac = new AbortController();
  const started = Date.now();
  setTimeout(() => ac.abort(), 200);
  fails(await box.memory.add('SLOW', { agentId: 'support', userId: 'abort-person' }, { signal: ac.signal }), 'aborted');
  assert.ok(Date.now() - started < 5000);

  const p = await proxy(() => ({ status: 503, headers: { 'retry-after': '30' }, body: { data: null, error: { code: 'unavailable', message: 'busy' } } }));
  try {
    const c = createClient({ baseURL: p.url, apiKey: boxKey });
    const ac2 = new AbortController();
    const t0 = Date.now();
    setTimeout(() => ac2.abort(), 200);
    fails(await c.capabilities({ signal: ac2.signal }), 'aborted');
    assert.ok(Date.now() - t0 < 5000, 'the retry wait ended with the abort');
    assert.equal(p.count(), 1);
  } finally {
    await p.close();
  }
  fails(await box.memory.add('SLOW', { agentId: 'support', userId: 'abort-person' }, { signal: AbortSignal.timeout(150) }), 'timeout');
  fails(await box.keys.self({ signal: AbortSignal.abort() }), 'aborted');
});

test('a request without an answer is sent again only if it cannot apply twice', async () => {
  const dropped = [];
  const p = await proxy((req) => {
    const first = !dropped.includes(`${req.method} ${req.url}`);
    if (first && req.url !== '/api/capabilities') {
      dropped.push(`${req.method} ${req.url}`);
      return { drop: true };
    }
    return null;
  });
  try {
    const c = createClient({ baseURL: p.url, apiKey: boxKey, retryDelayMs: 10 });
    fails(await c.keys.create({ name: 'once', scopes: ['rag:read'] }), 'network_error', 0);
    assert.ok(!ok(await box.keys.list()).some((k) => k.name === 'once'), 'the dropped create reached the box');
    assert.equal(ok(await c.keys.self()).name, 'test'); // a GET is sent again
    const added = ok(await c.memory.add('Caller: where is my order?', { agentId: 'support', userId: 'drop-person' })); // keyed
    assert.equal(added.facts.length, 1);
    assert.deepEqual(dropped, ['POST /api/keys', 'GET /api/keys/self', 'POST /api/memory/add']);
  } finally {
    await p.close();
  }
});

test('network errors are results, not throws', async () => {
  const c = createClient({ baseURL: 'http://127.0.0.1:9', apiKey: 'k', maxRetries: 1, retryDelayMs: 10 });
  fails(await c.keys.self(), 'network_error', 0);
});

test('the ambient client reads STACKBONE_URL and STACKBONE_API_KEY', async () => {
  assert.equal(stackbone.baseURL, boxURL);
  assert.equal(ok(await stackbone.keys.self()).name, 'test');
});

test('the CommonJS build', async () => {
  const require = createRequire(import.meta.url);
  const cjs = require('@stackbone/sdk');
  const c = cjs.createClient({ baseURL: boxURL, apiKey: boxKey });
  assert.ok(ok(await c.capabilities()).includes('rag'));
  const e = (await c.runs.get('nope')).error;
  assert.ok(e instanceof cjs.SdkError);
});
