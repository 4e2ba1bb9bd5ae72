// Agents: each agent's memory settings with the value in force and where it
// comes from (studio, code, default), toggles, instructions, the identity
// key's binding, resets and the activity log.
import { h, api, can, badge, fmtTime, field, explain, notice, readOnlyNote, clear, ask } from "./lib.js";

export async function agentsScreen(main) {
  const agents = await api("GET", "/api/agents");
  main.append(h("h1", {}, "Agents"),
    h("p", { class: "hint" }, "Memory settings resolve from Studio, then the agent's code (the config), then the platform default. A call takes a snapshot when it opens: changes apply to the next call."));
  if (!can("config:write")) main.append(readOnlyNote("config:write", "change memory settings"));
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
  const v = await api("GET", path);
  const write = can("config:write");
  const status = h("p", { class: "status", role: "status" });
  const act = async (method, url, body, done) => {
    for (const c of card.querySelectorAll("input,textarea,button")) c.disabled = true;
    try {
      await api(method, url, body);
      await renderAgent(clear(card), a);
      card.querySelector(".status").textContent = done + " Applies to the next call.";
    } catch (e) {
      notice(explain(e));
      await renderAgent(clear(card), a);
      card.querySelector(".status").textContent = "Not saved: " + explain(e);
    }
  };
  const toggle = (name) => {
    const box = h("input", { type: "checkbox", name, checked: v.value[name], disabled: !write });
    box.addEventListener("change", () => act("PUT", path, { [name]: box.checked }, name + " is now " + (box.checked ? "on." : "off.")));
    return h("div", { class: "setting", dataset: { field: name } },
      h("label", {}, box, " ", name === "read" ? "Read (recall the person before answering)" : "Save (remember after the conversation)"),
      " ", badge(v.origins[name], "origin"),
      write && v.origins[name] === "studio" ? h("button", { type: "button", class: "link reset", onclick: () => act("DELETE", path + "?field=" + name, undefined, name + " reset to the " + "code or default value.") }, "reset") : null);
  };
  const instr = h("textarea", { name: "instructions", rows: 4, maxlength: 20000, disabled: !write, placeholder: "(generic person-memory policy)" });
  instr.value = v.value.instructions || "";
  const saveInstr = h("button", { type: "button", disabled: !write, onclick: () => {
    const t = instr.value;
    if (!t.trim()) { status.textContent = "Instructions cannot be blank: use reset to go back to the code or default."; return; }
    if (t.length > 20000) { status.textContent = "Instructions are at most 20,000 characters."; return; }
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
        if (!k) { status.textContent = "Enter an identity key."; return; }
        ask(ev.target.parentNode, ["Fix the identity key ", h("code", {}, k), " for " + a.name + "? It can never change."], "Fix it",
          () => act("PUT", path, { identityKey: k }, "Identity key fixed."));
      } }, "Fix identity key")) : null);
  }
  const log = h("ol", { class: "activity" });
  card.append(h("h2", {}, a.name, " ", h("small", {}, a.model || "")), toggle("read"), toggle("save"),
    field("Instructions", instr), h("div", { class: "row" }, badge(v.origins.instructions, "origin"), " ", write ? saveInstr : null,
      write && v.origins.instructions === "studio" ? h("button", { type: "button", class: "link reset", onclick: () => act("DELETE", path + "?field=instructions", undefined, "Instructions reset.") }, "reset") : null),
    binding,
    write ? h("button", { type: "button", class: "danger reset-all", onclick: (ev) => ask(ev.target, "Remove every Studio override of " + a.name + "? The code or default values apply again.", "Reset all",
      () => act("DELETE", path, undefined, "Every override removed.")) }, "Reset all") : null,
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
