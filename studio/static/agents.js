// Agents: each agent's memory settings, provider chains (model,
// speech-to-text, text-to-speech) and turn-taking on calls with the value
// in force and where it comes from (studio, code, default), each chain's
// entries with the state of their provider's circuit, toggles,
// instructions, the identity key's binding, resets and the activity log.
import { h, say, put, noProviderNote, api, can, badge, fmtTime, field, explain, notice, readOnlyNote, clear, ask, select } from "./lib.js";

export async function agentsScreen(main) {
  const note = noProviderNote("the agents' text turns and calls");
  const agents = await api("GET", "/api/agents");
  put(main, h("h1", {}, "Agents"), await note,
    h("p", { class: "hint" }, "Memory settings, models and turn-taking resolve from Studio, then the agent's code (the config), then the platform default. A call takes a snapshot when it opens: changes apply to the next call."));
  if (!can("config:write")) main.append(readOnlyNote("config:write", "change memory settings, models and turn-taking"));
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
  const [v, chains, turns, circuits] = await Promise.all([api("GET", path), api("GET", "/api/agents/" + encodeURIComponent(a.name) + "/models"),
    api("GET", "/api/agents/" + encodeURIComponent(a.name) + "/turntaking"),
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
    turnTaking(a, turns, write, act, status),
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

// The turn-taking settings an operator can override, in the order shown:
// [name, label, hint, kind], kind the values of a choice, "ms" for a
// duration, "n" for a count, "list" for phrases separated by commas.
const TURNS = [
  ["vad", "Voice detection", "auto: energy while the line is quiet, silero once it is noisy; energy: loud enough over the line's noise; silero: a speech model, steadier on noisy lines", ["auto", "energy", "silero"]],
  ["endpointingMode", "Endpointing", "words: the caller's words decide how long to wait; cautious: every statement waits the sentence delay; silence: the words are ignored", ["words", "cautious", "silence"]],
  ["turnDetection", "Turn detection", "box: the box's endpointing; provider: the live speech-to-text's end of turn as well (sttMode realtime or deepgram)", ["box", "provider"]],
  ["eagerness", "Eagerness", "how soon the provider ends a turn, with turn detection provider", ["low", "medium", "high", "auto"]],
  ["minEndpointDelayMs", "Shortest end of turn", "silence after a question or a closing", "ms"],
  ["maxEndpointDelayMs", "Longest end of turn", "silence a caller who trailed off gets to go on", "ms"],
  ["interruptionMode", "Interruption", "words: the agent pauses at the caller's sound and yields to words; immediate: it stops after a short sound", ["words", "immediate"]],
  ["minWords", "Words that interrupt", "backchannels not counted, 1 to 20", "n"],
  ["minVoicedMs", "Talk-over before yielding", "the caller's voice with no words known yet", "ms"],
  ["resumeAfterMs", "Resume after", "a paused agent goes on when no words came", "ms"],
  ["immediateAfterMs", "Stop after", "voiced sound that stops the agent in mode immediate", "ms"],
  ["backchannels", "Backchannels", "phrases that never interrupt, separated by commas", "list"],
];

// turnTaking is the agent's turn-taking on calls: each setting in force
// with its origin (the default filled in where neither Studio nor the
// config sets it) and the delays the endpointing derives; with
// config:write, a control per setting, one Save for the settings that
// changed, a reset per setting overridden in Studio and one for all.
function turnTaking(a, turns, write, act, status) {
  const path = "/api/agents/" + encodeURIComponent(a.name) + "/turntaking";
  const v = turns.value;
  const shown = (name, kind) => kind === "ms" ? v[name] + " ms" : kind === "list" ? v[name].length + (v[name].length === 1 ? " phrase" : " phrases") : String(v[name]);
  const controls = {};
  const rows = TURNS.map(([name, label, hint, kind]) => {
    const origin = turns.origins[name];
    let control = null;
    if (write) {
      if (Array.isArray(kind)) control = select("turn-" + name, kind.map((x) => [x, x]), v[name]);
      else if (kind === "list") control = h("textarea", { name: "turn-" + name, rows: 2, maxlength: 9000 });
      else control = h("input", { name: "turn-" + name, type: "number", min: 1, step: kind === "n" ? 1 : 10, value: String(v[name]) });
      if (kind === "list") control.value = v[name].join(", ");
      control.setAttribute("aria-label", label);
      controls[name] = control;
    }
    // The phrases take a row of their own under their setting.
    const list = kind === "list";
    return [h("tr", { dataset: { turn: name } },
      h("th", {}, label, h("small", { class: "hint" }, hint)),
      h("td", { class: "value" }, list || !control ? shown(name, kind) : [control, kind === "ms" ? " ms" : null]),
      h("td", {}, badge(origin, "origin " + origin),
        write && origin === "studio" ? h("button", { type: "button", class: "link reset", onclick: () => act("DELETE", path + "?field=" + name, undefined, label + " reset to the code or default value.") }, "reset") : null)),
    list ? h("tr", { class: "phrases", dataset: { turn: name } }, h("td", { colspan: 3 }, control || h("small", { class: "hint" }, v[name].join(", ")))) : null];
  });
  const save = h("button", { type: "button", class: "save-turns", onclick: () => {
    const body = {};
    for (const [name, label, , kind] of TURNS) {
      const raw = controls[name].value;
      if (kind === "ms" || kind === "n") {
        const n = Number(raw.trim());
        if (!raw.trim() || !Number.isInteger(n) || n < 1) {
          say(status, label + ": enter a whole number" + (kind === "ms" ? " of milliseconds" : "") + " above 0, or use reset to go back to the code or default value.");
          return;
        }
        if (n !== v[name]) body[name] = n;
      } else if (kind === "list") {
        const list = raw.split(",").map((x) => x.trim()).filter((x) => x);
        if (!list.length) { say(status, label + ": list at least one phrase, or use reset to go back to the code or default list."); return; }
        if (list.join(",") !== v[name].join(",")) body[name] = list;
      } else if (raw !== v[name]) body[name] = raw;
    }
    if (!Object.keys(body).length) { say(status, "No turn-taking setting changed.", ""); return; }
    act("PUT", path, body, "Turn-taking saved.");
  } }, "Save turn-taking");
  const overridden = TURNS.some(([name]) => turns.origins[name] === "studio");
  return h("section", { class: "turntaking", "aria-label": "Turn-taking" }, h("h3", {}, "Turn-taking"),
    h("p", { class: "hint" }, "How the agent takes turns on calls (speech-to-text mode ", h("code", {}, v.sttMode),
      "). The endpointing derives the other delays from the two ends of turn: a closed clause ends after ", v.closedClauseDelayMs,
      " ms, an opener after ", v.sentenceDelayMs, " ms, words not known yet after ", v.silenceDelayMs, " ms."),
    h("table", { class: "turns" }, h("tbody", {}, ...rows.flat())),
    write ? h("div", { class: "row" }, save, overridden ? h("button", { type: "button", class: "danger reset-turns", onclick: (ev) => ask(ev.target,
      "Remove every Studio override of " + a.name + "'s turn-taking? The code or default values apply again.", "Reset turn-taking",
      () => act("DELETE", path, undefined, "Every turn-taking override removed.")) }, "Reset turn-taking") : null) : null);
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
