// A browser test call in place, the call page's flow (rooms/static/call.js)
// through Studio's API client: open a room (POST /api/voice/rooms), join it
// with this tab's microphone over the box's embedded WebRTC peer (one SDP
// offer and answer through the room's offerUrl), play the agent, poll the
// room for the heard transcript and, once the call has ended, the call's
// record until its memory report is settled. A box whose rooms run on
// LiveKit is sent to the call page (its SDK is not loaded into Studio).
// window.stackboneStudioCall exposes the state for tests.
import { h, api, clear, explain } from "./lib.js";
import { memoryReport, memorySettled } from "./calls.js";

const state = { status: "idle", roomId: null, callId: null, transcript: [], memory: null, error: "" };
window.stackboneStudioCall = state;

let pc = null, mic = null, audioEl = null, timer = null;

function teardown() {
  if (pc) { pc.close(); pc = null; }
  if (mic) { mic.getTracks().forEach((t) => t.stop()); mic = null; }
  if (audioEl) { audioEl.srcObject = null; audioEl.remove(); audioEl = null; }
}

// Leaving the page hangs up at once rather than waiting for the network.
window.addEventListener("pagehide", teardown);

async function join(offerUrl) {
  mic = await navigator.mediaDevices.getUserMedia({ audio: true, video: false });
  pc = new RTCPeerConnection({ iceServers: [] });
  for (const t of mic.getAudioTracks()) pc.addTrack(t, mic);
  pc.ontrack = (ev) => {
    audioEl = audioEl || h("audio", { autoplay: true, class: "hidden" });
    audioEl.srcObject = ev.streams[0] || new MediaStream([ev.track]);
    document.body.append(audioEl);
    audioEl.play().catch(() => {});
  };
  await pc.setLocalDescription(await pc.createOffer());
  // No trickle: the offer goes with its candidates.
  await new Promise((resolve) => {
    if (pc.iceGatheringState === "complete") return resolve();
    const t = setTimeout(resolve, 3000);
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc && pc.iceGatheringState === "complete") { clearTimeout(t); resolve(); }
    });
  });
  const answer = await api("POST", offerUrl, { type: "offer", sdp: pc.localDescription.sdp });
  await pc.setRemoteDescription(answer);
}

// testCallPanel is the Call button with its transcript and memory report.
// agent() names the agent; identities() returns the identities to pass (or
// throws a sentence for the operator).
export function testCallPanel(agent, identities) {
  const status = h("span", { id: "call-status", role: "status" }, "");
  const start = h("button", { type: "button", id: "call-start" }, "Call");
  const end = h("button", { type: "button", id: "call-end", disabled: true }, "Hang up");
  const heard = h("ol", { class: "heard", id: "call-transcript", "aria-live": "polite" });
  const memory = h("section", { class: "memory", id: "call-memory" });
  const panel = h("section", { class: "testcall", id: "test-call" },
    h("div", { class: "actions" }, start, end, status), heard, memory);

  const set = (s, error) => {
    state.status = s;
    state.error = error || "";
    panel.dataset.status = s;
    status.textContent = error ? s + ": " + error : s;
  };
  const paint = (transcript) => {
    state.transcript = transcript || [];
    clear(heard).append(...state.transcript.map((e) => h("li", { class: e.role }, h("b", {}, e.role === "user" ? "You" : "Agent"), " ", e.text)));
  };
  const paintMemory = (m, callStatus) => {
    state.memory = m || null;
    clear(memory);
    if (m) memory.append(h("h3", {}, "What memory did"), memoryReport(m, callStatus));
  };
  const stop = (s, error) => {
    clearTimeout(timer);
    teardown();
    set(s, error);
    start.disabled = false;
    end.disabled = true;
  };

  // After the call: the call's record until memory has settled (saved,
  // failed, or why not).
  const settle = async () => {
    if (!panel.isConnected) return;
    try {
      const c = await api("GET", "/api/voice/calls/" + encodeURIComponent(state.callId));
      paint(c.transcript);
      paintMemory(c.memory, c.status);
      if (c.status === "ended" && memorySettled(c.memory)) { set("ended (" + (c.outcome || "done") + ")"); panel.dataset.settled = "1"; return; }
    } catch (e) { status.textContent = "ended; " + explain(e); }
    timer = setTimeout(settle, 500);
  };
  const watch = async () => {
    if (!panel.isConnected) { // the operator left the Playground: hang up
      teardown();
      api("DELETE", "/api/voice/rooms/" + encodeURIComponent(state.roomId)).catch(() => {});
      return;
    }
    try {
      const room = await api("GET", "/api/voice/rooms/" + encodeURIComponent(state.roomId));
      paint(room.transcript);
      paintMemory(room.memory, room.status);
      if (room.status === "ended") { stop("ended"); settle(); return; }
      if (room.status === "active" && state.status !== "active") set("active");
    } catch (e) { status.textContent = state.status + "; " + explain(e); }
    timer = setTimeout(watch, 500);
  };

  start.addEventListener("click", async () => {
    let ids;
    const name = agent();
    try {
      if (!name) throw new Error("Pick an agent.");
      ids = identities();
    } catch (e) { set("idle", e.message); return; }
    start.disabled = true;
    delete panel.dataset.settled;
    Object.assign(state, { roomId: null, callId: null });
    paint([]);
    paintMemory(null);
    set("opening");
    try {
      const room = await api("POST", "/api/voice/rooms", { agent: name, identities: ids });
      Object.assign(state, { roomId: room.id, callId: room.callId });
      panel.dataset.callId = room.callId;
      end.disabled = false;
      if (!room.join || !room.join.offerUrl) {
        await api("DELETE", "/api/voice/rooms/" + encodeURIComponent(room.id)).catch(() => {});
        throw new Error("this box's rooms run on LiveKit: place the test call from the call page (/call)");
      }
      set("joining");
      await join(room.join.offerUrl);
      set("joined");
      watch();
    } catch (e) {
      if (state.roomId) api("DELETE", "/api/voice/rooms/" + encodeURIComponent(state.roomId)).catch(() => {});
      stop("failed", explain(e));
    }
  });
  end.addEventListener("click", async () => {
    end.disabled = true;
    set("ending");
    try { await api("DELETE", "/api/voice/rooms/" + encodeURIComponent(state.roomId)); } catch (e) { status.textContent = "ending; " + explain(e); }
    teardown();
  });
  return panel;
}
