// The call page: opens a room (POST /api/voice/rooms), joins it over the
// embedded peer (one SDP offer and answer over HTTP) or LiveKit (its
// browser SDK), plays the agent, and polls the room for the heard
// transcript. window.stackboneCall exposes the state for tests.
"use strict";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
// ?raw=1 turns off the browser's echo cancellation, noise suppression and
// gain control (a recorded microphone in tests).
const raw = params.get("raw") === "1";

const state = {
  status: "idle", roomId: null, callId: null, backend: null,
  transcript: [], memory: null, outcome: null, error: null,
  agentLevelMax: 0, agentVoicedMs: 0,
};
window.stackboneCall = state;

let pc = null, lkRoom = null, mic = null, audioCtx = null, meterTimer = null, pollTimer = null;

function setStatus(s) { state.status = s; $("status").textContent = s; }
function showError(msg) { state.error = msg; $("error").textContent = msg || ""; }

async function api(method, path, body) {
  const res = await fetch(path, {
    method, headers: { "Authorization": "Bearer " + $("key").value.trim(), "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const env = await res.json().catch(() => ({ error: { code: "bad_response", message: "HTTP " + res.status } }));
  if (env.error) { throw new Error(env.error.code + ": " + env.error.message); }
  return env.data;
}

function addIdentity(name, value) {
  const row = document.createElement("div");
  row.className = "row";
  row.innerHTML = '<input placeholder="name (phoneNumber, email, customerId…)"><input placeholder="value"><button type="button">×</button>';
  row.children[0].value = name || "";
  row.children[1].value = value || "";
  row.children[2].onclick = () => row.remove();
  $("ids").appendChild(row);
}

function identities() {
  const out = {};
  for (const row of $("ids").children) {
    const k = row.children[0].value.trim(), v = row.children[1].value.trim();
    if (k && v) { out[k] = v; }
  }
  return out;
}

async function loadAgents() {
  try {
    const agents = await api("GET", "/api/agents");
    const sel = $("agent");
    sel.innerHTML = "";
    for (const a of agents) {
      const o = document.createElement("option");
      o.value = a.name; o.textContent = a.name + " (" + a.model + ")";
      sel.appendChild(o);
    }
    if (params.get("agent")) { sel.value = params.get("agent"); }
    showError("");
  } catch (e) { showError("Agents: " + e.message); }
}

// meter measures the agent's audio as it plays: RMS of the analyser's
// window every 50 ms.
function meter(stream) {
  audioCtx = audioCtx || new AudioContext();
  audioCtx.resume();
  const src = audioCtx.createMediaStreamSource(stream);
  const an = audioCtx.createAnalyser();
  an.fftSize = 2048;
  src.connect(an);
  const buf = new Float32Array(an.fftSize);
  clearInterval(meterTimer);
  meterTimer = setInterval(() => {
    an.getFloatTimeDomainData(buf);
    let sum = 0;
    for (const v of buf) { sum += v * v; }
    const rms = Math.sqrt(sum / buf.length);
    state.agentLevelMax = Math.max(state.agentLevelMax, rms);
    if (rms > 0.01) { state.agentVoicedMs += 50; }
    $("level").value = Math.min(1, rms * 4);
  }, 50);
}

function playRemote(stream) {
  // Chrome feeds a remote WebRTC stream to Web Audio only while a media
  // element plays it as well.
  const el = new Audio();
  el.autoplay = true;
  el.srcObject = stream;
  el.play().catch(() => {});
  document.body.appendChild(el);
  meter(stream);
}

async function microphone() {
  const c = raw ? { echoCancellation: false, noiseSuppression: false, autoGainControl: false } : true;
  return navigator.mediaDevices.getUserMedia({ audio: c, video: false });
}

async function joinEmbedded(join) {
  mic = await microphone();
  pc = new RTCPeerConnection({ iceServers: [] });
  for (const t of mic.getAudioTracks()) { pc.addTrack(t, mic); }
  pc.ontrack = (ev) => playRemote(ev.streams[0] || new MediaStream([ev.track]));
  pc.onconnectionstatechange = () => {
    if (pc && (pc.connectionState === "failed" || pc.connectionState === "closed")) { setStatus("disconnected"); }
  };
  await pc.setLocalDescription(await pc.createOffer());
  // No trickle: send the offer with its candidates (loopback gathers at once).
  await new Promise((resolve) => {
    if (pc.iceGatheringState === "complete") { return resolve(); }
    const t = setTimeout(resolve, 3000);
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") { clearTimeout(t); resolve(); }
    });
  });
  const ans = await api("POST", join.offerUrl, { type: "offer", sdp: pc.localDescription.sdp });
  await pc.setRemoteDescription(ans);
}

async function joinLiveKit(join) {
  const LK = window.LivekitClient;
  if (!LK) { throw new Error("the LiveKit browser SDK did not load"); }
  lkRoom = new LK.Room({ adaptiveStream: false, dynacast: false });
  lkRoom.on(LK.RoomEvent.TrackSubscribed, (track) => {
    if (track.kind === "audio") { playRemote(new MediaStream([track.mediaStreamTrack])); }
  });
  lkRoom.on(LK.RoomEvent.Disconnected, () => setStatus("disconnected"));
  await lkRoom.connect(join.url, join.token);
  const c = raw ? { echoCancellation: false, noiseSuppression: false, autoGainControl: false } : {};
  await lkRoom.localParticipant.setMicrophoneEnabled(true, c);
}

function render(room) {
  state.transcript = room.transcript || [];
  state.memory = room.memory || null;
  state.outcome = room.outcome || null;
  const ol = $("transcript");
  ol.innerHTML = "";
  for (const e of state.transcript) {
    const li = document.createElement("li");
    li.className = e.role;
    li.textContent = (e.role === "user" ? "You: " : "Agent: ") + e.text;
    ol.appendChild(li);
  }
  const m = room.memory;
  let text = "";
  if (m) {
    text = m.off ? "Memory off: " + m.off + "." :
      "Memory for " + m.identityKey + " " + m.identity + ": read " + (m.read ? "on" : "off") + ", save " + (m.save ? "on" : "off") +
      ", recalled " + m.recalledFacts + " facts and " + m.recalledCalls + " calls.";
    if (room.status === "ended") {
      text += m.saved ? " Saved after the call." : (m.notSavedReason ? " Not saved: " + m.notSavedReason + "." : "") +
        (m.saveError ? " Save failed: " + m.saveError + "." : "");
    }
  }
  $("memory").textContent = text;
}

async function poll() {
  if (!state.roomId) { return; }
  try {
    const room = await api("GET", "/api/voice/rooms/" + state.roomId);
    render(room);
    if (room.status === "ended") {
      setStatus("ended (" + room.outcome + ")" + (room.endReason ? ": " + room.endReason : ""));
      state.status = "ended";
      teardown();
      finish();
      return;
    }
    if (room.status === "active" && state.status !== "active") { setStatus("active"); }
  } catch (e) { showError(e.message); }
  pollTimer = setTimeout(poll, 500);
}

function teardown() {
  if (pc) { pc.close(); pc = null; }
  if (lkRoom) { lkRoom.disconnect(); lkRoom = null; }
  if (mic) { mic.getTracks().forEach((t) => t.stop()); mic = null; }
  clearInterval(meterTimer);
}

function finish() {
  $("start").disabled = false;
  $("end").disabled = true;
}

async function start() {
  showError("");
  $("start").disabled = true;
  Object.assign(state, { transcript: [], memory: null, outcome: null, agentLevelMax: 0, agentVoicedMs: 0 });
  $("transcript").innerHTML = "";
  setStatus("opening");
  try {
    const room = await api("POST", "/api/voice/rooms", { agent: $("agent").value, identities: identities() });
    Object.assign(state, { roomId: room.id, callId: room.callId, backend: room.backend });
    render(room);
    $("end").disabled = false;
    setStatus("joining");
    if (room.join.offerUrl) { await joinEmbedded(room.join); } else { await joinLiveKit(room.join); }
    setStatus("joined");
    clearTimeout(pollTimer);
    poll();
  } catch (e) {
    showError(e.message);
    setStatus("failed");
    teardown();
    finish();
  }
}

async function end() {
  $("end").disabled = true;
  setStatus("ending");
  try { if (state.roomId) { await api("DELETE", "/api/voice/rooms/" + state.roomId); } } catch (e) { showError(e.message); }
  teardown();
}

$("start").onclick = start;
$("end").onclick = end;
$("reload").onclick = loadAgents;
$("addId").onclick = () => addIdentity();
// Leaving the page hangs up at once rather than waiting for the network to
// notice.
window.addEventListener("pagehide", teardown);

addIdentity(params.get("idName") || "phoneNumber", params.get("idValue") || "");
loadAgents();
