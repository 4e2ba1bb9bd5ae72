// Sessions: every conversation the box keeps, newest activity first, and a
// session's transcript with its held tool decision.
import { h, api, qs, can, pager, badge, fmtAge, fmtInt, fmtTime, field, select, explain, notice, readOnlyNote, clear, agentFilter } from "./lib.js";

export async function sessionsScreen(main, params) {
  const agent = params.get("agent") || "", status = params.get("status") || "";
  const pending = agentFilter("agent", agent);
  const statusSel = select("status", [["", "Any status"], ["running", "running"], ["held", "held"], ["completed", "completed"], ["failed", "failed"]], status);
  const cols = [
    { title: "Agent", cell: (s) => s.agent },
    { title: "Status", cell: (s) => badge(s.status) },
    { title: "Turns", class: "num", cell: (s) => fmtInt(s.turns) },
    { title: "Last activity", cell: (s) => h("time", { datetime: s.lastActivityAt, title: fmtTime(s.lastActivityAt) }, fmtAge(s.lastActivityAt)) },
    { title: "Tokens", class: "num", cell: (s) => fmtInt(s.inputTokens + s.outputTokens) },
    { title: "First message", class: "preview", cell: (s) => s.preview },
  ];
  const list = pager(cols, (before, limit) => api("GET", "/api/sessions" + qs({ agent, status, before, limit })),
    { href: (s) => "#/sessions/" + encodeURIComponent(s.id), empty: "No session matches. Talk to an agent with a session key (or in the Playground) and it appears here.", class: "sessions" });
  // The list and the filter's agents load at once, not one after the other.
  const first = list.first();
  const agentSel = await pending;
  const apply = () => { location.hash = "#/sessions" + qs({ agent: agentSel.value, status: statusSel.value }); };
  agentSel.addEventListener("change", apply);
  statusSel.addEventListener("change", apply);
  main.append(h("h1", {}, "Sessions"),
    h("div", { class: "filters" }, field("Agent", agentSel), field("Status", statusSel)), list.el);
  await first;
}

export async function sessionScreen(main, id) {
  const s = await api("GET", "/api/sessions/" + encodeURIComponent(id));
  main.append(
    h("p", { class: "crumbs" }, h("a", { href: "#/sessions" }, "Sessions"), " / ", s.id),
    h("h1", {}, "Session of ", s.agent, " ", badge(s.status)),
    h("dl", { class: "facts" },
      h("dt", {}, "Turns"), h("dd", {}, fmtInt(s.turns)),
      h("dt", {}, "Tokens"), h("dd", {}, fmtInt(s.inputTokens + s.outputTokens), " (", fmtInt(s.inputTokens), " in, ", fmtInt(s.outputTokens), " out)"),
      h("dt", {}, "Started"), h("dd", {}, fmtTime(s.createdAt)),
      h("dt", {}, "Last activity"), h("dd", {}, fmtTime(s.lastActivityAt)),
      h("dt", {}, "Kind"), h("dd", {}, s.kind)));
  if (s.kind === "session" && can("agents:run")) main.append(continueForm(s));
  if (s.pending) main.append(heldTool(s));
  const turns = h("ol", { class: "turns", id: "turns" }, s.transcript.map((t) => h("li", { class: "turn", dataset: { turn: t.turn } },
    h("div", { class: "msg user" }, h("b", {}, "User"), h("p", {}, t.user)),
    h("div", { class: "msg assistant" }, h("b", {}, "Agent"), h("p", {}, t.reply)),
    h("div", { class: "meta" }, badge(t.status), " ", fmtInt(t.inputTokens + t.outputTokens), " tokens · ",
      (t.durationMs / 1000).toFixed(2), " s · ", fmtTime(t.at), " · ",
      can("runs:read") ? h("a", { href: "#/runs/" + t.runId, class: "run" }, "Run detail") : h("span", { title: "needs runs:read" }, "run " + t.runId)))));
  main.append(h("h2", {}, "Transcript"), s.transcript.length ? turns : h("p", { class: "empty" }, "No finished turn yet."));
}

// continueForm reopens the session in the Playground. The box never keeps
// or returns a session's key; the operator types it (the threadId or
// x-stackbone-session value) with the identity it was used with, and Studio
// checks that they name this very session before anything is sent.
function continueForm(s) {
  const key = h("input", { name: "key", maxlength: 500, placeholder: "session key (threadId, x-stackbone-session)", class: "wide" });
  const customer = h("input", { name: "customerId", maxlength: 500, placeholder: "customerId (if one was sent)" });
  const ids = h("input", { name: "identities", maxlength: 16000, placeholder: '{"phoneNumber": "+34…"} (if sent)' });
  const out = h("p", { class: "error", role: "alert" });
  const form = h("form", { id: "continue", class: "inline", novalidate: true }, field("Session key", key), field("Customer id", customer), field("Identities", ids),
    h("button", { type: "submit" }, "Continue in Playground"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    out.textContent = "";
    if (!key.value) { out.textContent = "Enter the key this conversation was kept under."; return; }
    const props = {};
    if (customer.value) props.customerId = customer.value;
    if (ids.value.trim()) {
      try { props.identities = JSON.parse(ids.value); } catch { props.identities = null; }
      if (!props.identities || typeof props.identities !== "object" || Array.isArray(props.identities)) { out.textContent = "Identities must be a JSON object."; return; }
    }
    try {
      const { sessionId, identityKeyOf, continueIn } = await import("./playground.js");
      const idKey = can("config:read") ? await identityKeyOf(s.agent) : "";
      if (await sessionId(s.agent, key.value, idKey, props) !== s.id) {
        out.textContent = "That key and identity do not name this session: nothing was sent.";
        return;
      }
      continueIn(s, key.value, props);
    } catch (e) { out.textContent = explain(e); }
  });
  return h("details", { class: "continue" }, h("summary", {}, "Continue in Playground"), form);
}

// heldTool shows the parked tool call with Approve and Reject.
function heldTool(s) {
  const box = h("section", { class: "held", id: "held" }, h("h2", {}, "Held for a decision"),
    h("p", {}, "The agent wants to call ", h("code", {}, s.pending.name), " with:"),
    h("pre", { class: "args" }, pretty(s.pending.arguments)));
  if (!can("sessions:write")) {
    box.append(readOnlyNote("sessions:write", "approve or reject a held tool"));
    return box;
  }
  const reason = h("input", { name: "reason", maxlength: 500, placeholder: "reason (optional, shown to the model on reject)" });
  const decide = async (decision, btn) => {
    for (const b of box.querySelectorAll("button")) b.disabled = true;
    try {
      const res = await api("POST", "/api/sessions/" + encodeURIComponent(s.id) + "/decision", { decision, reason: reason.value });
      notice(decision === "approve" ? "Approved: the turn ran on." : "Rejected: the model was told.", "ok");
      clear(box).append(h("p", { class: "ok" }, "Decided (" + decision + "). The turn finished: " + (res.finish || "")));
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    } catch (e) {
      notice(explain(e));
      for (const b of box.querySelectorAll("button")) b.disabled = false;
    }
  };
  const approve = h("button", { type: "button", id: "approve", onclick: (ev) => decide("approve", ev.target) }, "Approve");
  const reject = h("button", { type: "button", id: "reject", class: "danger", onclick: (ev) => decide("reject", ev.target) }, "Reject");
  box.append(field("Reason", reason), h("div", { class: "actions" }, approve, reject));
  return box;
}

export function pretty(json) {
  try { return JSON.stringify(JSON.parse(json), null, 2); } catch { return String(json); }
}
