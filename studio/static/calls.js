// Calls: every phone and browser call, a call's heard transcript, what
// memory did and where each turn's time went; a form to dial out.
import { h, say, put, noProviderNote, api, qs, can, pager, badge, fmtTime, fmtSeconds, field, select, explain, notice, readOnlyNote, poll, clear, agentFilter, count } from "./lib.js";
import { recordingPlayer } from "./recording.js";
import { callCost } from "./costs.js";

const outcomes = ["completed", "caller_hangup", "operator_hangup", "transferred", "machine", "media_timeout", "max_duration", "cancelled", "failed", "shutdown", "no_answer", "busy", "box_lost", "provider_failed"];

// toISO reads a datetime-local input as an RFC 3339 time (or "").
function toISO(v) { return v ? new Date(v).toISOString() : ""; }
function fromISO(v) {
  if (!v) return "";
  const d = new Date(v);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

export async function callsScreen(main, params) {
  const f = Object.fromEntries(["direction", "agent", "status", "outcome", "number", "from", "to", "success", "field"].map((k) => [k, params.get(k) || ""]));
  const cols = [
    { title: "Started", cell: (c) => fmtTime(c.startedAt) },
    { title: "Direction", cell: (c) => c.direction },
    { title: "Agent", cell: (c) => c.agent },
    { title: "Number", cell: (c) => c.phoneNumber || "—" },
    { title: "Status", cell: (c) => badge(c.status) },
    { title: "Outcome", cell: (c) => c.outcome ? badge(c.outcome, "outcome " + c.outcome) : "—" },
    { title: "Duration", class: "num", cell: (c) => fmtSeconds(c.durationSeconds) },
    { title: "Success", cell: (c) => successBadge(c.analysis) },
  ];
  const list = pager(cols, (before, limit) => api("GET", "/api/voice/calls" + qs({ ...callQuery(f), before, limit })),
    { href: (c) => "#/calls/" + encodeURIComponent(c.id), empty: "No call matches.", class: "calls" });
  const first = list.first(); // at once, beside the filters' agents
  const form = h("form", { class: "filters", id: "call-filters" },
    field("Direction", select("direction", [["", "Any"], ["inbound", "inbound"], ["outbound", "outbound"], ["browser", "browser"]], f.direction)),
    field("Agent", await agentFilter("agent", f.agent)),
    field("Status", select("status", [["", "Any"], ["ringing", "ringing"], ["active", "active"], ["ended", "ended"]], f.status)),
    field("Outcome", select("outcome", [["", "Any"], ...outcomes.map((o) => [o, o])], f.outcome)),
    field("Number", h("input", { name: "number", value: f.number, placeholder: "+34600111222", maxlength: 64 })),
    field("From", h("input", { name: "from", type: "datetime-local", value: fromISO(f.from) })),
    field("To", h("input", { name: "to", type: "datetime-local", value: fromISO(f.to) })),
    field("Success", select("success", [["", "Any"], ["true", "passed"], ["false", "failed"]], f.success)),
    field("Analysis field", h("input", { name: "field", value: f.field, placeholder: "appointmentBooked=true", maxlength: 200 })),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const d = Object.fromEntries(new FormData(form));
    d.from = toISO(d.from); d.to = toISO(d.to);
    location.hash = "#/calls" + qs(d);
  });
  form.addEventListener("change", (ev) => { if (ev.target.tagName === "SELECT") form.requestSubmit(); });
  const note = noProviderNote("a call (it needs speech-to-text, a model and text-to-speech)");
  put(main, h("h1", {}, "Calls"), form, list.el, h("h2", {}, "Place a call"), await note, await dialForm());
  await first;
}

// transferText says how each warm transfer of the call ended.
const transferText = { bridged: "joined", no_answer: "no answer: back to the caller", declined: "declined: back to the caller", failed: "failed: back to the caller" };

// transferFact is the call's warm transfers, as facts.
function transferFact(metrics) {
  const list = metrics.filter((m) => m.transfer).map((m) => m.transfer);
  if (!list.length) return null;
  return [h("dt", {}, "Transfer"), h("dd", { id: "transfer" }, list.map((tr) =>
    "to " + tr.target + ": " + (transferText[tr.result] || tr.result) + (tr.ringMs ? " (rang " + fmtMs(tr.ringMs) + ")" : "")).join("; "))];
}

// callQuery is the list's API query: the analysis field filter
// "name=value" becomes field.name=value.
export function callQuery(f) {
  const { field: fieldFilter, ...q } = f;
  const i = (fieldFilter || "").indexOf("=");
  if (i > 0) q["field." + fieldFilter.slice(0, i).trim()] = fieldFilter.slice(i + 1).trim();
  return q;
}

// successBadge says whether a call's analysis judged it a success.
function successBadge(a) {
  if (!a) return "—";
  if (a.status === "failed") return badge("analysis failed", "outcome failed");
  if (a.success === undefined || a.success === null) return "—";
  return a.success ? badge("passed", "outcome completed") : badge("failed", "outcome failed");
}

// analysisReport shows what the post-call analysis found.
function analysisReport(a, status) {
  if (!a) return h("p", { class: "hint" }, status === "ended" ? "No analysis (the agent has none, or it has not run yet)." : "Analyzed once the call ends.");
  if (a.status === "failed") return h("p", { class: "error", id: "analysis-error" }, "The analysis failed: ", a.error || "no reason given");
  return h("div", {},
    h("p", { id: "analysis-summary" }, a.summary),
    a.fields ? h("dl", { class: "facts", id: "analysis-fields" }, ...Object.entries(a.fields).map(([k, v]) =>
      [h("dt", {}, k), h("dd", {}, v === null ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v))])) : null,
    (a.criteria || []).length ? h("ul", { class: "criteria", id: "analysis-criteria" }, ...a.criteria.map((c) =>
      h("li", {}, c.pass ? badge("pass", "outcome completed") : badge("fail", "outcome failed"), " ", c.criterion, h("span", { class: "hint" }, " — ", c.reason)))) : null);
}

// The dial form checks what it can before sending (the box checks it all
// again): a number as the box reads it (spaces, dashes, dots, brackets and
// slashes dropped: 1 to 32 digits, * or #, an optional leading +), and the
// identities as one JSON object of strings. Whatever the box answers is
// shown as text.
const NUMBER = /^\+?[0-9*#]{1,32}$/;

export function dialProblem(agent, to, identities) {
  if (!agent) return "Pick an agent.";
  if (!to) return "Enter the number to call.";
  const n = to.replace(/[\s\-.()/]/g, "");
  if (!NUMBER.test(n)) return "The number must be 1 to 32 digits, * or #, with an optional leading + (spaces and dashes are fine).";
  if (!identities) return "";
  let v;
  try { v = JSON.parse(identities); } catch { return "Identities must be a JSON object, such as {\"customerId\": \"crm/1\"}."; }
  if (v === null || typeof v !== "object" || Array.isArray(v)) return "Identities must be a JSON object, such as {\"customerId\": \"crm/1\"}.";
  for (const [k, x] of Object.entries(v)) if (typeof x !== "string") return "Each identity must be a string; " + JSON.stringify(k).slice(0, 66) + " is not.";
  return "";
}

async function dialForm() {
  const agent = await agentFilter("agent", "");
  if (agent.tagName === "SELECT") agent.firstChild.textContent = "(pick an agent)";
  const to = h("input", { name: "to", required: true, placeholder: "+34600111222", maxlength: 64 });
  const trunk = h("input", { name: "trunk", placeholder: "(first outbound trunk)", maxlength: 128 });
  const ids = h("input", { name: "identities", placeholder: '{"customerId": "crm/1"} (optional)', maxlength: 4096 });
  // Who answered: this call's own answering-machine policy, over the
  // agent's (Agents, voice.answeringMachine).
  const vm = h("select", { name: "voicemail" }, h("option", { value: "" }, "(the agent's policy)"),
    h("option", { value: "hangup" }, "screen; hang up on a voicemail"), h("option", { value: "message" }, "screen; leave a message after the beep"));
  const msg = h("input", { name: "message", placeholder: "Hello {name}, … (with a message)", maxlength: 1000 });
  const out = h("p", { class: "result", id: "dial-result", role: "alert" });
  const form = h("form", { class: "inline", id: "dial", novalidate: true }, field("Agent", agent), field("To", to), field("Trunk", trunk),
    field("Identities", ids), field("Voicemail", vm), field("Message", msg), h("button", { type: "submit" }, "Call"), out);
  if (!can("voice")) {
    for (const c of form.querySelectorAll("input,select,button")) c.disabled = true;
    form.append(readOnlyNote("voice", "place calls"));
  }
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    out.textContent = "";
    const problem = dialProblem(agent.value, to.value.trim(), ids.value.trim());
    if (problem) { out.textContent = problem; return; }
    if (vm.value === "message" && !msg.value.trim()) { out.textContent = "Write the message to leave after the beep."; return; }
    const body = { agent: agent.value, to: to.value.trim(), trunk: trunk.value.trim() };
    if (ids.value.trim()) body.identities = JSON.parse(ids.value);
    if (vm.value) body.answeringMachine = { detect: "outbound", voicemail: vm.value, message: vm.value === "message" ? msg.value.trim() : "" };
    try {
      const r = await api("POST", "/api/voice/calls", body);
      location.hash = "#/calls/" + encodeURIComponent(r.callId);
    } catch (e) { out.textContent = explain(e); }
  });
  return form;
}

export async function callScreen(main, id) {
  const c = await api("GET", "/api/voice/calls/" + encodeURIComponent(id));
  const head = h("div", {});
  const tr = h("ol", { class: "heard", id: "heard" });
  const mem = h("section", { class: "memory", id: "memory-report" });
  const analyzed = h("section", { class: "analysis", id: "analysis" });
  const costs = h("section", { class: "cost", id: "call-cost" });
  const bars = h("section", { class: "latency", id: "latency" });
  const toolList = h("ul", { class: "tools", id: "tool-calls" });
  const rec = h("div", {});
  main.append(h("p", { class: "crumbs" }, h("a", { href: "#/calls" }, "Calls"), " / ", c.id), head, rec,
    h("h2", {}, "Heard transcript"), h("p", { class: "hint" }, "What the caller actually heard, and what speech-to-text made of their words."), tr,
    h("h2", {}, "Memory"), mem, h("h2", {}, "Analysis"), analyzed, h("h2", {}, "Usage and cost"), costs,
    h("h2", {}, "Per-turn latency"), bars, h("h2", {}, "Tool calls"), toolList);
  // A ringing or running call can be ended from here (operator_hangup).
  const hangStatus = h("p", { class: "status", role: "status", id: "hangup-status" });
  const hangup = h("button", { type: "button", class: "danger", id: "hangup", onclick: async () => {
    hangup.disabled = true;
    say(hangStatus, "Hanging up…", "");
    try {
      await api("POST", "/api/voice/calls/" + encodeURIComponent(id) + "/hangup");
      say(hangStatus, "Hanging up: the call ends in a moment.", "ok");
    } catch (e) { hangup.disabled = false; say(hangStatus, "Not hung up: " + explain(e)); }
  } }, "Hang up");
  const paint = (c) => {
    const live = c.status !== "ended" && can("voice");
    if (!live) hangStatus.textContent = "";
    put(clear(head), h("h1", {}, c.direction, " call with ", c.agent, " ", badge(c.status), c.outcome ? badge(c.outcome, "outcome " + c.outcome) : null),
      live ? h("div", { class: "inline" }, hangup, hangStatus) : null,
      h("dl", { class: "facts" },
        h("dt", {}, "Number"), h("dd", {}, c.phoneNumber || "—"),
        h("dt", {}, "Trunk"), h("dd", {}, c.trunk || "—"),
        h("dt", {}, "Started"), h("dd", {}, fmtTime(c.startedAt)),
        h("dt", {}, "Answered"), h("dd", {}, fmtTime(c.answeredAt)),
        h("dt", {}, "Ended"), h("dd", {}, fmtTime(c.endedAt)),
        h("dt", {}, "Duration"), h("dd", {}, fmtSeconds(c.durationSeconds)),
        c.answeredBy ? [h("dt", {}, "Answered by"), h("dd", { id: "answered-by" }, answeredByText[c.answeredBy] || c.answeredBy,
          c.answerDecisionMs != null ? " (known after " + fmtMs(c.answerDecisionMs) + ")" : "")] : null,
        c.endReason ? [h("dt", {}, "End reason"), h("dd", {}, c.endReason)] : null,
        transferFact(c.metrics || [])));
    clear(tr).append(...(c.transcript || []).map((e) => h("li", { class: "msg " + e.role, dataset: { turn: e.turn } },
      h("b", {}, e.role === "user" ? "Caller" : "Agent"), h("p", {}, e.text),
      e.cut ? h("span", { class: "badge" }, "cut: the caller spoke over the rest") : null)));
    if (!tr.children.length) tr.append(h("li", { class: "empty" }, c.status === "ended" ? "Nothing was heard." : "Waiting for the first words…"));
    // The recording is kept once the call ended: its player is made once.
    if (c.recording && !rec.firstChild) rec.append(h("h2", {}, "Recording"), recordingPlayer(c.id, c.recording, tr));
    clear(mem).append(memoryReport(c.memory || {}, c.status));
    clear(analyzed).append(analysisReport(c.analysis, c.status));
    clear(costs).append(callCost(c));
    clear(bars).append(latency(c.metrics || []));
    clear(toolList).append(...toolCalls(c.metrics || []));
    main.dataset.callStatus = c.status;
  };
  paint(c);
  // A live call updates by itself until it has ended and its memory is settled.
  if (c.status !== "ended" || !memorySettled(c.memory))
    poll(main, 1000, async () => {
      const n = await api("GET", "/api/voice/calls/" + encodeURIComponent(id));
      paint(n);
      return n.status === "ended" && memorySettled(n.memory);
    });
}

// memorySettled says whether an ended call's memory has nothing more to
// do: saved, failed, refused with a reason, or save off.
export function memorySettled(m) {
  return !!m && !!(m.saved || m.saveError || m.notSavedReason || !m.save);
}

export function memoryReport(m, status) {
  const yes = (b) => (b ? "on" : "off");
  let saved = "—";
  if (m.saved) saved = "saved";
  else if (m.saveError) saved = "save failed: " + m.saveError;
  else if (m.notSavedReason) saved = "not saved: " + m.notSavedReason;
  else if (!m.save) saved = "not saved: save is off for this call";
  else if (status !== "ended") saved = "saves when the call ends";
  return h("dl", { class: "facts" },
    h("dt", {}, "Settings snapshot"), h("dd", {}, "read ", yes(m.read), ", save ", yes(m.save)),
    h("dt", {}, "Identity"), h("dd", {}, m.identityKey ? [h("code", {}, m.identityKey), " = ", m.identity || "—"] : (m.off || "none")),
    m.off ? [h("dt", {}, "Without memory"), h("dd", {}, m.off)] : null,
    h("dt", {}, "Recalled"), h("dd", {}, count(m.recalledFacts, "fact"), ", ", count(m.recalledCalls, "call")),
    h("dt", {}, "After the call"), h("dd", { id: "saved" }, saved));
}

// toolCalls lists each tool call of the call's turns with its duration and
// outcome (never its arguments or result), and whether the filler played.
function toolCalls(metrics) {
  const items = [];
  for (const m of metrics) {
    for (const t of m.tools || []) {
      items.push(h("li", { dataset: { turn: m.turn } }, "turn " + m.turn + ": ", h("code", {}, t.name), " " + t.durationMs + " ms, " + t.outcome,
        m.fillerAfterMs !== undefined ? " (filler after " + m.fillerAfterMs + " ms)" : ""));
    }
  }
  return items.length ? items : [h("li", { class: "empty" }, "No tool call.")];
}

// The stages of a spoken turn, in order, as the metrics name them.
const stages = [
  ["endOfUtteranceMs", "end of speech → endpoint"],
  ["speechToTextMs", "speech-to-text"],
  ["timeToFirstTokenMs", "model: first token"],
  ["textToSpeechFirstByteMs", "text-to-speech: first audio"],
];

// How a caller's turn ended, as the metrics' endpoint names it.
// Who answered a screened call, as the detail says it.
const answeredByText = {
  human: "a person", voicemail: "a voicemail greeting", ivr: "an automated menu", fax: "a fax", unknown: "nobody heard (went on as with a person)",
};

const fmtMs = (ms) => ms >= 1000 ? (ms / 1000).toFixed(1) + " s" : ms + " ms";

const endReasons = {
  complete: "a question or a closing (short silence)",
  closed: "a closed clause (short silence)",
  sentence: "an opener or a statement (longer silence)",
  trailing: "the longest wait (trailing word)",
  silence: "silence",
  turn: "the speech-to-text provider's end of turn",
  background: "the caller's words stopped, other voices went on",
};

function latency(metrics) {
  if (!metrics.length) return h("p", { class: "empty" }, "No spoken turn yet.");
  const max = Math.max(1, ...metrics.map((m) => Math.max(m.wireToWireMs || 0, stages.reduce((a, [k]) => a + (m[k] || 0), 0))));
  return h("div", {},
    h("ul", { class: "legend" }, stages.map(([k, l], i) => h("li", {}, h("i", { class: "s" + i }), l))),
    h("table", { class: "bars" }, h("tbody", {}, metrics.map((m) => {
      const bar = h("div", { class: "bar" });
      stages.forEach(([k, l], i) => {
        if (!m[k]) return;
        const seg = h("span", { class: "s" + i, title: l + ": " + m[k] + " ms" });
        seg.style.width = (100 * m[k] / max).toFixed(2) + "%"; // CSSOM: allowed under the CSP
        bar.append(seg);
      });
      return h("tr", { dataset: { turn: m.turn } }, h("th", {}, "turn " + m.turn), h("td", {}, bar),
        h("td", { class: "num" }, m.wireToWireMs !== undefined ? m.wireToWireMs + " ms to first audio" : "—"),
        h("td", { class: "turn-end" }, m.endpoint ? "ended by " + (endReasons[m.endpoint] || m.endpoint) : ""),
        h("td", { class: "interruptions" }, (m.interruptions || []).map((x) => h("span", { class: "badge", dataset: { outcome: x.outcome } },
          x.outcome === "yielded" ? "yielded to the caller" : x.outcome === "resumed" ? "paused " + (x.pausedMs || 0) + " ms, resumed" : "talked over, ignored"))));
    }))));
}
