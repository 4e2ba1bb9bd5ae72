// A browser test call in place, placed by the SDK's browser call module
// (sdk/call.js, built from sdk/typescript): it opens a room, joins it with
// this tab's microphone over the box's embedded WebRTC peer, plays the
// agent and follows the room for the heard transcript. Once the call has
// ended, this panel reads the call's record until its memory report is
// settled. A box whose rooms run on LiveKit is sent to the call page (its
// SDK is not loaded into Studio). window.stackboneStudioCall exposes the
// state for tests.
import { h, api, can, clear, explain, session } from "./lib.js";
import { memoryReport, memorySettled } from "./calls.js";
import { createClient } from "./sdk/index.js";
import { placeCall } from "./sdk/call.js";

const state = { status: "idle", roomId: null, callId: null, transcript: [], memory: null, error: "" };
window.stackboneStudioCall = state;

let current = null; // the call in progress

// Leaving the page hangs up at once rather than waiting for the network.
window.addEventListener("pagehide", () => { if (current) current.hangup(); });

// why is an SDK error for the operator: the box's message and its code.
function why(e) {
  if (e.status === 401) api("GET", "/api/keys/self").catch(() => {}); // signs out a revoked key
  if (e.code === "not_implemented") return "this box's rooms run on LiveKit: place the test call from the call page (/call)";
  return e.message + (e.code ? " (" + e.code + ")" : "");
}

// NO_PROVIDER says which settings give the box a model provider: without
// one a call cannot hear or speak.
const NO_PROVIDER = "No model provider is configured: set OPENAI_BASE_URL or OPENAI_API_KEY (providers.openai.baseURL / apiKey in the config) and restart the box.";

// noProvider resolves true when the box has no model provider (read with
// config:read; without it the box's own reason has to do).
async function noProvider() {
  if (!can("config:read")) return false;
  try { return (await api("GET", "/api/system/providers")).length === 0; } catch { return false; }
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
  const hint = h("p", { class: "hint", id: "call-provider", hidden: true }, NO_PROVIDER);
  const panel = h("section", { class: "testcall", id: "test-call" },
    h("div", { class: "actions" }, start, end, status), hint, heard, memory);
  let timer = null;
  noProvider().then((none) => { hint.hidden = !none; });

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

  // After the call: the call's record until memory has settled (saved,
  // failed, or why not). A failed call keeps saying why it failed.
  const settle = async () => {
    if (!panel.isConnected) return;
    try {
      const c = await api("GET", "/api/voice/calls/" + encodeURIComponent(state.callId));
      paint(c.transcript);
      paintMemory(c.memory, c.status);
      if (c.status === "ended" && memorySettled(c.memory)) {
        if (state.status !== "failed") set("ended (" + (c.outcome || "done") + ")");
        panel.dataset.settled = "1";
        return;
      }
    } catch (e) { status.textContent = state.status + "; " + explain(e); }
    timer = setTimeout(settle, 500);
  };

  const ended = async (e) => {
    current = null;
    start.disabled = false;
    end.disabled = true;
    if (e.state === "failed") {
      const reason = e.error ? why(e.error) : e.reason || "the call failed (" + (e.outcome || "no outcome") + ")";
      set("failed", (await noProvider()) ? reason + ". " + NO_PROVIDER : reason);
    } else set("ended");
    if (state.callId && e.room) settle();
  };

  start.addEventListener("click", () => {
    let ids;
    const name = agent();
    try {
      if (!name) throw new Error("Pick an agent.");
      ids = identities();
    } catch (e) { set("idle", e.message); return; }
    start.disabled = true;
    clearTimeout(timer);
    delete panel.dataset.settled;
    delete panel.dataset.callId;
    Object.assign(state, { roomId: null, callId: null });
    paint([]);
    paintMemory(null);
    set("opening");
    const client = createClient({ baseURL: location.origin, apiKey: session.key() });
    const call = placeCall(client, { agent: name, identities: ids });
    current = call;
    call.on("state", (s) => { if (s !== "ended" && s !== "failed") set(s); });
    call.on("room", (room) => {
      if (!panel.isConnected) { call.hangup(); return; } // the operator left the Playground
      if (!state.callId) {
        Object.assign(state, { roomId: room.id, callId: room.callId });
        panel.dataset.callId = room.callId;
        end.disabled = false;
      }
      paintMemory(room.memory, room.status);
    });
    call.on("transcript", paint);
    call.on("end", ended);
  });
  end.addEventListener("click", async () => {
    end.disabled = true;
    const r = current ? await current.hangup() : { error: null };
    if (r.error) status.textContent = "ending; " + why(r.error);
  });
  return panel;
}
