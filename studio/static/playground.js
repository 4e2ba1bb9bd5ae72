// Playground: talk to any agent over the AG-UI wire, as any AG-UI client
// does. The reply streams in; tool calls and their results are blocks that
// unfold. The threadId is the session key, so every conversation here is a
// session (listed under Sessions); New conversation starts another.
import { h, say, put, noProviderNote, api, can, session, field, explain, clear, readOnlyNote, ApiError, agentOptions } from "./lib.js";
import { testCallPanel } from "./testcall.js";

const THREADS = "stackbone.studio.threads";

function threads() {
  try { return JSON.parse(sessionStorage.getItem(THREADS)) || {}; } catch { return {}; }
}

function newThread(agent) {
  const t = threads();
  t[agent] = { id: "studio-" + crypto.randomUUID(), messages: [] };
  sessionStorage.setItem(THREADS, JSON.stringify(t));
  return t[agent];
}

function thread(agent) { return threads()[agent] || newThread(agent); }

const CONTINUED = "stackbone.studio.continue";

// sessionId is the box's id of a kept session (agent.SessionID): the first
// 32 hex digits of SHA-256 over kind, agent, identity address and key, each
// followed by a zero byte. The address is what the agent's fixed identity
// key selects from the identities (identity.Selection.Address).
export async function sessionId(agent, key, identityKey, props) {
  if (!crypto.subtle) throw new Error("Recomputing a session id needs a secure page (https or localhost).");
  const set = Object.assign({}, props.identities || {});
  if (props.customerId) set.customerId = props.customerId;
  let address = "";
  if (identityKey) address = set[identityKey] ? identityKey + "=" + set[identityKey] : "missing:" + identityKey;
  else if (set.customerId) address = "customerId=" + set.customerId;
  const enc = new TextEncoder();
  const parts = ["session", agent, address, key].flatMap((x) => [...enc.encode(x), 0]);
  const sum = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array(parts)));
  return "ses_" + [...sum].map((b) => b.toString(16).padStart(2, "0")).join("").slice(0, 32);
}

// identityKeyOf reads the agent's fixed identity key ("" when none).
export async function identityKeyOf(agent) {
  const v = await api("GET", "/api/memory/settings/" + encodeURIComponent(agent));
  return v.binding ? v.binding.identityKey : "";
}

// continueIn opens session s in the Playground on its thread key: its
// turns are shown, and the next message goes on the same session.
export function continueIn(s, key, props) {
  const t = threads();
  t[s.agent] = { id: key, props, messages: [],
    history: s.transcript.flatMap((x) => [{ id: "h-u" + x.turn, role: "user", content: x.user }, { id: "h-a" + x.turn, role: "assistant", content: x.reply }]) };
  sessionStorage.setItem(THREADS, JSON.stringify(t));
  location.hash = "#/playground?agent=" + encodeURIComponent(s.agent);
}

function saveThread(agent, th) {
  const t = threads();
  t[agent] = th;
  sessionStorage.setItem(THREADS, JSON.stringify(t));
}

export async function playgroundScreen(main, params) {
  const note = noProviderNote("talking to an agent");
  main.append(h("h1", {}, "Playground"));
  const opts = await agentOptions("(pick an agent)");
  put(main, await note);
  const agentSel = opts ? h("select", { name: "agent" }, opts.map(([v, l]) => h("option", { value: v, selected: v === (params.get("agent") || "") }, l)))
    : h("input", { name: "agent", value: params.get("agent") || "", placeholder: "agent name", maxlength: 100 });
  const customer = h("input", { name: "customerId", maxlength: 500, placeholder: "customerId (optional)" });
  const ids = h("input", { name: "identities", maxlength: 16000, placeholder: '{"email": "ana@example.com"} (optional)' });
  const log = h("div", { class: "chat", id: "chat", "aria-live": "polite" });
  const text = h("textarea", { name: "message", rows: 3, maxlength: 100000, placeholder: "Message" });
  const send = h("button", { type: "submit", id: "send" }, "Send");
  const status = h("p", { class: "status", id: "chat-status", role: "status" });
  // The conversation's session key (its threadId): with the identity typed
  // above, it reopens the session from Sessions (Continue in Playground),
  // and a client sending it goes on with the same session.
  const keyField = h("input", { readonly: true, size: 44, "aria-label": "Session key" });
  const keyLine = h("p", { class: "hint", id: "session-key", hidden: true }, "Session key ", keyField, " ",
    h("button", { type: "button", class: "link", onclick: () => { keyField.select(); navigator.clipboard?.writeText(keyField.value); } }, "Copy"),
    " (with the identity above, it continues this conversation from Sessions or from a client)");
  const form = h("form", { id: "composer", novalidate: true }, text, h("div", { class: "actions" }, send,
    h("button", { type: "button", id: "new-conversation", class: "link", onclick: () => { if (agentSel.value) newThread(agentSel.value); render(); say(status, "New conversation.", ""); } }, "New conversation")), status);
  // props reads the customer id and identities the operator typed, or
  // throws a sentence saying what is wrong with them.
  const props = () => {
    const out = {};
    if (customer.value) out.customerId = customer.value;
    if (ids.value.trim()) {
      let o;
      try { o = JSON.parse(ids.value); } catch { o = null; }
      if (!o || typeof o !== "object" || Array.isArray(o)) throw new Error("Identities must be a JSON object of names to values.");
      out.identities = o;
    }
    return out;
  };
  // A voice test call with the same agent and identities, in place.
  const call = can("voice") ? testCallPanel(() => agentSel.value, () => {
    const p = props();
    return Object.assign({}, p.identities || {}, p.customerId ? { customerId: p.customerId } : {});
  }) : readOnlyNote("voice", "place a test call");
  main.append(h("div", { class: "filters" }, field("Agent", agentSel), field("Customer id", customer), field("Identities (JSON object)", ids)), log, keyLine, form, h("h2", {}, "Test call"), call);
  if (!can("agents:run")) { form.replaceWith(readOnlyNote("agents:run", "talk to agents")); return; }

  const render = () => {
    clear(log);
    keyLine.hidden = !agentSel.value;
    if (!agentSel.value) { log.append(h("p", { class: "empty" }, "Pick an agent to talk to.")); return; }
    const th = thread(agentSel.value);
    log.dataset.thread = th.id;
    keyField.value = th.id;
    if (th.props) { customer.value = th.props.customerId || ""; ids.value = th.props.identities ? JSON.stringify(th.props.identities) : ""; }
    for (const m of [...(th.history || []), ...th.messages]) log.append(bubble(m));
    if (!th.messages.length && !(th.history || []).length) log.append(h("p", { class: "empty" }, "A new conversation with " + agentSel.value + "."));
  };
  agentSel.addEventListener("change", render);
  render();

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const agent = agentSel.value;
    const msg = text.value;
    if (!agent) { say(status, "Pick an agent."); return; }
    if (!msg.trim()) { say(status, "Type a message."); return; }
    let forwarded;
    try { forwarded = props(); } catch (e) { say(status, e.message); return; }
    const th = thread(agent);
    th.props = forwarded;
    const sent = th.messages.length;
    th.messages.push({ id: "u-" + crypto.randomUUID(), role: "user", content: msg });
    saveThread(agent, th);
    text.value = "";
    render();
    send.disabled = true;
    say(status, "…", "");
    try {
      await run(agent, th, forwarded, log);
      say(status, "", "");
    } catch (e) {
      // A message the agent did not answer leaves the conversation (with
      // any part of a reply): it would be sent again with the next one.
      // Its text goes back to the composer to send again.
      th.messages.length = sent;
      saveThread(agent, th);
      if (!text.value) text.value = msg;
      render();
      say(status, explain(e));
    } finally {
      saveThread(agent, th);
      send.disabled = false;
      log.dataset.runs = String(Number(log.dataset.runs || 0) + 1);
    }
  });
}

// bubble draws one message of the history: text, or tool blocks.
function bubble(m) {
  if (m.role === "tool") return toolBlock(m.toolName || "tool", m.args || "", m.content);
  const el = h("div", { class: "msg " + m.role, dataset: { id: m.id } }, h("b", {}, m.role === "user" ? "You" : "Agent"), h("p", {}, m.content || ""));
  for (const tc of m.toolCalls || []) el.append(toolBlock(tc.function.name, tc.function.arguments, null));
  return el;
}

function toolBlock(name, args, result) {
  return h("details", { class: "tool" }, h("summary", {}, result === null ? "tool_use " : "tool_result ", h("code", {}, name)),
    h("pre", { class: "args" }, args), result !== null ? h("pre", { class: "result" }, result) : null);
}

// run sends the thread over the AG-UI wire and draws the event stream.
async function run(agent, th, props, log) {
  const input = { threadId: th.id, runId: "run-" + crypto.randomUUID(), state: {}, tools: [], context: [], forwardedProps: props,
    messages: th.messages.map(({ id, role, content, toolCalls, toolCallId }) => ({ id, role, content: content ?? "", toolCalls, toolCallId })) };
  const res = await fetch("/agui/" + encodeURIComponent(agent), {
    method: "POST", cache: "no-store", credentials: "omit",
    headers: { authorization: "Bearer " + session.key(), "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(input),
  });
  if (!res.ok) {
    let msg = res.statusText;
    try { const b = await res.json(); msg = (b.error && (b.error.message || b.error)) || b.message || msg; } catch { /* not JSON */ }
    if (res.status === 401) api("GET", "/api/keys/self").catch(() => {});
    throw new ApiError(res.status, "", String(msg));
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let current = null; // the assistant message being streamed
  let currentP = null;
  const calls = {};
  const handle = (ev) => {
    switch (ev.type) {
      case "TEXT_MESSAGE_START":
        current = { id: ev.messageId, role: "assistant", content: "", toolCalls: [] };
        th.messages.push(current);
        currentP = h("p", {});
        log.append(h("div", { class: "msg assistant", dataset: { id: ev.messageId } }, h("b", {}, "Agent"), currentP));
        break;
      case "TEXT_MESSAGE_CONTENT":
        current.content += ev.delta;
        currentP.append(ev.delta);
        break;
      case "TOOL_CALL_START": {
        if (!current || current.id !== ev.parentMessageId) {
          current = { id: ev.parentMessageId || "a-" + ev.toolCallId, role: "assistant", content: "", toolCalls: [] };
          th.messages.push(current);
        }
        const tc = { id: ev.toolCallId, type: "function", function: { name: ev.toolCallName, arguments: "" } };
        current.toolCalls.push(tc);
        calls[ev.toolCallId] = { tc, block: toolBlock(ev.toolCallName, "", null) };
        log.append(calls[ev.toolCallId].block);
        break;
      }
      case "TOOL_CALL_ARGS":
        calls[ev.toolCallId].tc.function.arguments += ev.delta;
        calls[ev.toolCallId].block.querySelector("pre.args").append(ev.delta);
        break;
      case "TOOL_CALL_RESULT": {
        const c = calls[ev.toolCallId];
        th.messages.push({ id: ev.messageId, role: "tool", toolCallId: ev.toolCallId, content: ev.content, toolName: c ? c.tc.function.name : "", args: c ? c.tc.function.arguments : "" });
        log.append(toolBlock(c ? c.tc.function.name : "tool", c ? c.tc.function.arguments : "", ev.content));
        break;
      }
      case "RUN_FINISHED":
        if (ev.outcome && ev.outcome.type === "interrupt") log.append(h("p", { class: "held" }, "The agent is waiting for a decision on a held tool: decide it in Sessions."));
        break;
      case "RUN_ERROR":
        throw new ApiError(0, ev.code || "", ev.message);
    }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const chunk = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = chunk.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data) handle(JSON.parse(data));
    }
  }
}
