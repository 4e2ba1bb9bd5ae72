// The call page: places the call with the SDK's browser call module
// (sdk/call.js, built from @stackbone/sdk/call), which opens the room,
// joins it over the embedded peer or LiveKit (with the LiveKit client the
// page loads) and follows the heard transcript; the page shows the call
// and measures the agent's audio. window.stackboneCall exposes the state
// for tests.
import { createClient } from "./sdk/index.js";
import { placeCall } from "./sdk/call.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
// ?raw=1 turns off the browser's echo cancellation, noise suppression and
// gain control (a recorded microphone in tests).
const raw = params.get("raw") === "1";

const state = {
  status: "idle", connection: null, roomId: null, callId: null, backend: null,
  transcript: [], memory: null, outcome: null, error: null,
  agentLevelMax: 0, agentVoicedMs: 0,
};
window.stackboneCall = state;

let call = null, audioCtx = null, meterTimer = null;

function setStatus(s, text) { state.status = s; $("status").textContent = text || s; }
function showError(msg) { state.error = msg; $("error").textContent = msg || ""; }
const client = () => createClient({ baseURL: location.origin, apiKey: $("key").value.trim() });

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
    const res = await fetch("/api/agents", { headers: { "Authorization": "Bearer " + $("key").value.trim() } });
    const env = await res.json().catch(() => ({ error: { code: "bad_response", message: "HTTP " + res.status } }));
    if (env.error) { throw new Error(env.error.code + ": " + env.error.message); }
    const sel = $("agent");
    sel.innerHTML = "";
    for (const a of env.data) {
      const o = document.createElement("option");
      o.value = a.name; o.textContent = a.name + " (" + a.model + ")";
      sel.appendChild(o);
    }
    if (params.get("agent")) { sel.value = params.get("agent"); }
    showError("");
  } catch (e) { showError("Agents: " + e.message); }
}

// meter measures the agent's audio as it plays: RMS of the analyser's
// window every 50 ms. Chrome feeds a remote WebRTC stream to Web Audio
// only while a media element plays it as well, which the SDK's does.
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

function renderTranscript(entries) {
  state.transcript = entries;
  const ol = $("transcript");
  ol.innerHTML = "";
  for (const e of entries) {
    const li = document.createElement("li");
    li.className = e.role;
    li.textContent = (e.role === "user" ? "You: " : "Agent: ") + e.text;
    ol.appendChild(li);
  }
}

function renderMemory(room) {
  const m = room.memory;
  state.memory = m || null;
  state.outcome = room.outcome || null;
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

function ended(e) {
  clearInterval(meterTimer);
  if (e.error) { showError(e.error.code + ": " + e.error.message); }
  const text = e.room && e.room.status === "ended" ?
    e.state + " (" + e.outcome + ")" + (e.room.endReason ? ": " + e.room.endReason : "") : e.state;
  setStatus(e.state, text);
  $("start").disabled = false;
  $("end").disabled = true;
  call = null;
}

function start() {
  showError("");
  $("start").disabled = true;
  Object.assign(state, { connection: null, roomId: null, callId: null, backend: null, memory: null, outcome: null, agentLevelMax: 0, agentVoicedMs: 0 });
  renderTranscript([]);
  $("memory").textContent = "";
  const microphone = raw ? { echoCancellation: false, noiseSuppression: false, autoGainControl: false } : undefined;
  // The LiveKit client is the UMD build the page loads; the SDK uses it
  // only when the box's rooms run on LiveKit.
  call = placeCall(client(), { agent: $("agent").value, identities: identities(), microphone, livekit: window.LivekitClient });
  call.on("state", (s) => { if (s !== "ended" && s !== "failed") { setStatus(s); } });
  call.on("room", (room) => {
    if (!state.roomId) {
      Object.assign(state, { roomId: room.id, callId: room.callId, backend: room.backend });
      $("end").disabled = false;
    }
    renderMemory(room);
  });
  call.on("connection", (c) => { state.connection = c; });
  call.on("audio", meter);
  call.on("transcript", renderTranscript);
  call.on("end", ended);
}

async function end() {
  $("end").disabled = true;
  const r = call ? await call.hangup() : { error: null };
  if (r.error) { showError(r.error.code + ": " + r.error.message); }
}

$("start").onclick = start;
$("end").onclick = end;
$("reload").onclick = loadAgents;
$("addId").onclick = () => addIdentity();

addIdentity(params.get("idName") || "phoneNumber", params.get("idValue") || "");
loadAgents();
