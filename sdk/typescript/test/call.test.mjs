// @stackbone/sdk/call in Node: it imports (ES module and CommonJS)
// without a browser, and placing a call there ends at once and says why.
// The call itself, in a real browser, is Studio's TestSDKPlacesABrowserCall
// (the embedded peer) and the call page's browser tests in rooms (both
// backends).
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

test('call: a livekit option that is not the LiveKit client fails with invalid_request and opens no room', async () => {
  for (const livekit of [{}, null, { Room: class {}, RoomEvent: {}, Track: { Source: {} } }]) {
    const call = placeCall(box, { agent: 'support', livekit });
    const end = await call.ended;
    assert.equal(end.state, 'failed');
    assert.equal(end.error.code, 'invalid_request', end.error.message);
    assert.equal(call.roomId, null);
  }
});

test('call: the LiveKit client the box serves is taken as the livekit option', async () => {
  // The call page's UMD build: Node loads it as CommonJS, with no browser.
  const require = createRequire(import.meta.url);
  const livekit = require('../../../rooms/static/livekit-client.umd.js');
  const call = placeCall(box, { agent: 'support', livekit });
  const end = await call.ended;
  // Past the option's check, the call stops where Node lacks WebRTC.
  assert.equal(end.error.code, 'not_configured');
  assert.equal(call.roomId, null);
  // What the call drives of a room exists on one made as the call makes it.
  const room = new livekit.Room({ adaptiveStream: false, dynacast: false });
  for (const m of ['on', 'connect', 'disconnect']) assert.equal(typeof room[m], 'function', m);
  assert.equal(typeof room.localParticipant.publishTrack, 'function');
  // The room's connection states the call maps onto the WebRTC ones.
  assert.deepEqual(Object.values(livekit.ConnectionState).sort(), ['connected', 'connecting', 'disconnected', 'reconnecting', 'signalReconnecting']);
  await room.disconnect();
});
