// @stackbone/sdk/call in Node: it imports (ES module and CommonJS)
// without a browser, and placing a call there ends at once and says why.
// The call itself, in a real browser, is Studio's TestSDKPlacesABrowserCall.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { boxURL, boxKey, fails } from './lib.mjs';
import { createClient } from '@stackbone/sdk';
import { placeCall, BrowserCall } from '@stackbone/sdk/call';

const box = createClient({ baseURL: boxURL, apiKey: boxKey });

test('call: the module imports in Node as an ES module and as CommonJS', () => {
  const require = createRequire(import.meta.url);
  const cjs = require('@stackbone/sdk/call');
  assert.equal(typeof cjs.placeCall, 'function');
  assert.equal(typeof placeCall, 'function');
});

test('call: placing a call without WebRTC fails with not_configured and opens no room', async () => {
  const states = [];
  const call = placeCall(box, { agent: 'support', identities: { customerId: 'crm/1' } });
  assert.ok(call instanceof BrowserCall);
  call.on('state', (s) => states.push(s));
  const end = await call.ended;
  assert.equal(end.state, 'failed');
  assert.equal(end.error.code, 'not_configured');
  assert.equal(end.reason, end.error.message);
  assert.equal(call.roomId, null);
  assert.deepEqual(states, ['failed']);
  assert.deepEqual(await call.hangup(), { data: undefined, error: null });
});

test('voice.rooms.offer: an offer that is not SDP is refused', async () => {
  const room = (await box.voice.rooms.create({ agent: 'support', identities: { customerId: 'crm/1' } })).data;
  assert.ok(room.join.offerUrl.endsWith(`/api/voice/rooms/${room.id}/offer`));
  fails(await box.voice.rooms.offer(room.id, { type: 'offer', sdp: 'not sdp' }), 'rooms_invalid_request', 400);
  await box.voice.rooms.end(room.id);
});
