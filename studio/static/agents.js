// Agents: each agent's memory settings and provider chains (model,
// speech-to-text, text-to-speech) with the value in force and where it
// comes from (studio, code, default), each chain's entries with the state
// of their provider's circuit, toggles, instructions, the identity key's
// binding, resets and the activity log.
import { h, say, put, noProviderNote, api, can, badge, fmtTime, field, explain, notice, readOnlyNote, clear, ask } from "./lib.js";

export async function agentsScreen(main) {
  const note = noProviderNote("the agents' text turns and calls");
  const agents = await api("GET", "/api/agents");
  put(main, h("h1", {}, "Agents"), await note,
    h("p", { class: "hint" }, "Memory settings and models resolve from Studio, then the agent's code (the config), then the platform default. A call takes a snapshot when it opens: changes apply to the next call."));
  if (!can("config:write")) main.append(readOnlyNote("config:write", "change memory settings and models"));
  const cards = h("div", { class: "cards" });
  main.append(cards);
  await Promise.all(agents.map(async (a) => {
    const card = h("section", { class: "card agent", id: "agent-" + a.name, dataset: { agent: a.name } });
    cards.append(card);
    await renderAgent(card, a);
  }));
}

async function renderAgent(card, a) {
  const path = "/api/memory/settings/" + encodeURIComponent(a.name);
  // The circuits are read with each render, so a card redrawn after a
  // change shows them as they are now; a box that cannot say shows the
  // chains without them.
  const [v, chains, circuits] = await Promise.all([api("GET", path), api("GET", "/api/agents/" + encodeURIComponent(a.name) + "/models"),
    api("GET", "/api/system/providers").catch((e) => { if (e.status === 401) throw e; return null; })]);
  const write = can("config:write");
  const status = h("p", { class: "status", role: "status" });
  const act = async (method, url, body, done) => {
    for (const c of card.querySelectorAll("input,textarea,button")) c.disabled = true;
    // It runs from an event: every failure ends here, said on the card,
    // or not at all once a refused key sent the operator to sign-in.
    let failed = null;
    try { await api(method, url, body); } catch (e) { failed = e; }
    if (failed && failed.status === 401) return;
    if (failed) notice(explain(failed));
    try {
      await renderAgent(clear(card), a);
    } catch (e) {
      if (e.status !== 401) clear(card).append(h("p", { class: "error", role: "alert" }, explain(e)));
      return;
    }
    const st = card.querySelector(".status");
    if (failed) say(st, "Not saved: " + explain(failed));
    else say(st, done + " Applies to the next call.", "ok");
  };
  const toggle = (name) => {
    const box = h("input", { type: "checkbox", name, checked: v.value[name], disabled: !write });
    box.addEventListener("change", () => act("PUT", path, { [name]: box.checked }, name + " is now " + (box.checked ? "on." : "off.")));
    return h("div", { class: "setting", dataset: { field: name } },
      h("label", {}, box, " ", name === "read" ? "Read (recall the person before answering)" : "Save (remember after the conversation)"),
      " ", badge(v.origins[name], "origin " + v.origins[name]),
      write && v.origins[name] === "studio" ? h("button", { type: "button", class: "link reset", onclick: () => act("DELETE", path + "?field=" + name, undefined, name + " reset to the " + "code or default value.") }, "reset") : null);
  };
  const instr = h("textarea", { name: "instructions", rows: 4, maxlength: 20000, disabled: !write, placeholder: "(generic person-memory policy)" });
  instr.value = v.value.instructions || "";
  const saveInstr = h("button", { type: "button", disabled: !write, onclick: () => {
    const t = instr.value;
    if (!t.trim()) { say(status, "Instructions cannot be blank: use reset to go back to the code or default."); return; }
    if (t.length > 20000) { say(status, "Instructions are at most 20,000 characters."); return; }
    act("PUT", path, { instructions: t }, "Instructions saved.");
  } }, "Save instructions");
  const b = v.binding;
  let binding;
  if (b) {
    binding = h("p", { class: "binding" }, "Identity key ", h("code", {}, b.identityKey), " fixed ", fmtTime(b.fixedAt), " by ", b.source, ". It cannot change.");
  } else {
    const key = h("input", { name: "identityKey", placeholder: "phoneNumber, email, customerId…", maxlength: 100, disabled: !write });
    binding = h("div", { class: "binding" }, h("p", {}, "No identity key: this agent runs without memory until one is fixed. Fixing it is permanent."),
      write ? h("div", { class: "inline" }, key, h("button", { type: "button", class: "fix", onclick: (ev) => {
        const k = key.value.trim();
        if (!k) { say(status, "Enter an identity key."); return; }
        ask(ev.target.parentNode, ["Fix the identity key ", h("code", {}, k), " for " + a.name + "? It can never change."], "Fix it",
          () => act("PUT", path, { identityKey: k }, "Identity key fixed."));
      } }, "Fix identity key")) : null);
  }
  const log = h("ol", { class: "activity" });
  put(card, h("h2", {}, a.name, " ", h("small", {}, chains.value.model[0] || "")), toggle("read"), toggle("save"),
    field("Instructions", instr), h("div", { class: "row" }, badge(v.origins.instructions, "origin " + v.origins.instructions), " ", write ? saveInstr : null,
      write && v.origins.instructions === "studio" ? h("button", { type: "button", class: "link reset", onclick: () => act("DELETE", path + "?field=instructions", undefined, "Instructions reset.") }, "reset") : null),
    binding,
    write ? h("button", { type: "button", class: "danger reset-all", onclick: (ev) => ask(ev.target, "Remove every Studio override of " + a.name + "'s memory settings? The code or default values apply again.", "Reset memory settings",
      () => act("DELETE", path, undefined, "Every memory override removed.")) }, "Reset memory settings") : null,
    models(a, chains, circuits, write, act, status),
    lineSection(a.line),
    status, h("details", { class: "log" }, h("summary", {}, "Activity"), log));
  card.querySelector("details").addEventListener("toggle", async (ev) => {
    if (!ev.target.open) return;
    try {
      const entries = await api("GET", "/api/activity?subject=" + encodeURIComponent("agent:" + a.name));
      clear(log).append(...entries.map((e) => h("li", {}, fmtTime(e.at), " ", e.actor, " ", e.action, " ", (e.fields || []).join(", "))));
      if (!entries.length) log.append(h("li", { class: "empty" }, "No change yet."));
    } catch (e) { clear(log).append(h("li", { class: "error" }, explain(e))); }
  });
}

// lineSection shows what the agent does on a phone line, as its config
// sets it: who answered, keys, warm transfer targets, recording and the
// analysis after the call.
function lineSection(l) {
  if (!l) return null;
  const am = l.answeringMachine;
  const facts = [
    am ? [h("dt", {}, "Who answered"), h("dd", { dataset: { line: "answeringMachine" } }, "screens ", am.detect === "all" ? "every call" : "outbound calls",
      "; voicemail: ", am.voicemail === "message" ? "leaves a message" : "hangs up", "; menu: ", am.menu === "hangup" ? "hangs up" : "talks")] : null,
    l.keypad ? [h("dt", {}, "Keypad"), h("dd", { dataset: { line: "keypad" } }, "presses keys (send_dtmf)")] : null,
    l.recording ? [h("dt", {}, "Recording"), h("dd", { dataset: { line: "recording" } }, "on, kept ", Math.round(l.recordingRetentionHours / 24), " days",
      l.recordingConsent ? ["; says first: ", h("q", {}, l.recordingConsent)] : "; no consent sentence")] : null,
    (l.analysisFields || l.analysisCriteria) ? [h("dt", {}, "Analysis"), h("dd", { dataset: { line: "analysis" } },
      (l.analysisFields || []).length ? ["fields ", (l.analysisFields || []).join(", ")] : "no fields",
      "; ", (l.analysisCriteria || []).length === 1 ? "1 criterion" : (l.analysisCriteria || []).length + " criteria")] : null,
  ];
  const targets = (l.transferTargets || []).length ? h("table", { class: "targets" },
    h("thead", {}, h("tr", {}, h("th", {}, "Transfer to"), h("th", {}, "When"), h("th", {}, "Number"))),
    h("tbody", {}, ...l.transferTargets.map((t) => h("tr", { dataset: { target: t.name } }, h("td", {}, t.name), h("td", {}, t.description), h("td", {}, t.number, t.trunk ? " via " + t.trunk : ""))))) : null;
  return h("section", { class: "line" }, h("h3", {}, "Phone line"),
    h("p", { class: "hint" }, "Set in the agent's config (voice.answeringMachine, voice.keypad, voice.transfer, voice.recording, analysis)."),
    h("dl", { class: "facts" }, ...facts), targets);
}

// The chains an operator can override, in the order shown, with the
// provider endpoint whose circuit each entry goes through.
const CHAINS = [
  ["model", "Model", "text turns and calls", "chat"],
  ["stt", "Speech-to-text", "calls", "transcriptions"],
  ["tts", "Text-to-speech", "calls; espeak is the offline voice", "speech"],
];

// circuitOf is the badge of the circuit an entry of a chain goes through
// (its provider's endpoint): closed, open or half-open, with its latest
// failure in the title; null for the offline voice, which has none, or
// when the circuits are not known.
function circuitOf(id, endpoint, circuits) {
  const c = (circuits || []).find((c) => c.provider === id.split("/")[0] && c.endpoint === endpoint);
  if (!c) return null;
  const last = c.lastFailures.length ? c.lastFailures[c.lastFailures.length - 1] : null;
  const b = badge(c.state, "circuit " + c.state.replace("-", "_"));
  b.title = c.provider + " " + c.endpoint + ": circuit " + c.state + (last ? "; latest failure " + fmtTime(last.at) + " " + last.reason : "");
  return b;
}

// models is the agent's provider chains: each an ordered list (the first
// is tried first, each entry with its circuit) with its origin; with
// config:write, a comma-separated
// input per chain, one Save for the chains that changed, and a reset per
// chain overridden in Studio.
function models(a, chains, circuits, write, act, status) {
  const path = "/api/agents/" + encodeURIComponent(a.name) + "/models";
  const inputs = {};
  const rows = CHAINS.map(([name, label, hint, endpoint]) => {
    const value = chains.value[name];
    const origin = chains.origins[name];
    const list = h("ol", { class: "chain", "aria-label": label + " chain, in the order tried" },
      value.length ? value.map((id) => {
        const circuit = circuitOf(id, endpoint, circuits);
        return h("li", { dataset: { circuit: circuit ? circuit.textContent : "" } }, h("code", {}, id), circuit ? " " : null, circuit);
      }) : h("li", { class: "empty" }, "none"));
    const input = h("input", { name: "chain-" + name, value: value.join(", "), maxlength: 1200,
      "aria-label": label + " chain, ids separated by commas", disabled: !write });
    inputs[name] = input;
    return h("div", { class: "setting chain", dataset: { chain: name } },
      h("div", { class: "row" }, h("strong", {}, label), " ", h("small", { class: "hint" }, hint), " ", badge(origin, "origin " + origin),
        write && origin === "studio" ? h("button", { type: "button", class: "link reset", onclick: () => act("DELETE", path + "?field=" + name, undefined, label + " reset to the code or default chain.") }, "reset") : null),
      list, write ? input : null);
  });
  const save = h("button", { type: "button", class: "save-models", onclick: () => {
    const body = {};
    for (const [name, label] of CHAINS) {
      const ids = inputs[name].value.split(",").map((x) => x.trim()).filter((x) => x);
      if (!ids.length) { say(status, label + ": list at least one id, or use reset to go back to the code or default chain."); return; }
      if (ids.join(",") !== chains.value[name].join(",")) body[name] = ids;
    }
    if (!Object.keys(body).length) { say(status, "No model chain changed.", ""); return; }
    act("PUT", path, body, "Models saved.");
  } }, "Save models");
  return h("section", { class: "models", "aria-label": "Models" }, h("h3", {}, "Models"),
    h("p", { class: "hint" }, "Each chain is tried in order: the next answers when one fails, and one whose provider's circuit is open is skipped at once (System shows the circuits). Ids are provider/model on a configured provider (",
      chains.providers.length ? chains.providers.join(", ") : "none configured", "), at most 5 per chain."),
    rows, write ? h("div", { class: "row" }, save) : null);
}
