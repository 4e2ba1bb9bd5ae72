// People: look a person up by agent and identity, see their facts and
// recent calls, erase them with a confirmation that shows what goes.
import { h, api, can, fmtAge, fmtTime, fmtSeconds, field, explain, readOnlyNote, ask, clear, agentFilter, count } from "./lib.js";

export async function peopleScreen(main, params) {
  const agent = await agentFilter("agent", params.get("agent") || "");
  if (agent.tagName === "SELECT") agent.firstChild.textContent = "(pick an agent)";
  const user = h("input", { name: "user", required: true, maxlength: 500, placeholder: "+34600111222 or a customer id", value: params.get("user") || "" });
  const out = h("div", { id: "person" });
  const form = h("form", { class: "filters", id: "lookup", novalidate: true }, field("Agent", agent), field("Identity (userId)", user), h("button", { type: "submit" }, "Look up"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!agent.value || !user.value) { clear(out).append(h("p", { class: "error" }, "Pick an agent and enter the person's identity.")); return; }
    await show(out, agent.value, user.value);
  });
  main.append(h("h1", {}, "People"), h("p", { class: "hint" }, "Each agent keeps its own memory of a person, keyed by the identity its fixed key selects (the exact value, byte for byte)."), form, out);
  if (params.get("agent") && params.get("user")) await show(out, agent.value, user.value);
}

async function show(out, agentId, userId, message) {
  clear(out);
  let p;
  try {
    p = await api("POST", "/api/memory/recall", { agentId, userId, calls: 20 });
  } catch (e) { out.append(h("p", { class: "error", role: "alert" }, explain(e))); return; }
  const facts = h("ul", { class: "facts-list", id: "facts" }, p.facts.map((f) => h("li", { dataset: { id: f.id } }, h("span", {}, f.content), " ",
    h("small", { title: "created " + fmtTime(f.createdAt) }, "updated " + fmtAge(f.updatedAt)))));
  const calls = h("ul", { class: "calls-list", id: "recent-calls" }, p.calls.map((c) => h("li", {}, h("b", {}, fmtTime(c.startedAt)), " · ",
    fmtSeconds(c.durationSeconds), c.outcome ? " · " + c.outcome : "", h("p", {}, c.summary))));
  const result = h("p", { id: "erase-result", role: "status", class: message ? "ok" : "" }, message || "");
  out.append(h("h2", {}, "Facts (" + p.facts.length + ")"), p.facts.length ? facts : h("p", { class: "empty" }, "No fact about this person."),
    h("h2", {}, "Recent calls (" + p.calls.length + ")"), p.calls.length ? calls : h("p", { class: "empty" }, "No call recorded."));
  if (!can("memory:write")) { out.append(readOnlyNote("memory:write", "erase a person's memory"), result); return; }
  const erase = h("button", { type: "button", class: "danger", id: "erase", onclick: () =>
    ask(erase, [h("p", {}, "Erase everything ", h("b", {}, agentId), " remembers about ", h("code", {}, userId), "?"),
      h("p", {}, count(p.facts.length, "fact") + " and every call record (" + p.calls.length + " shown here) will be deleted for good. The agent's identity key stays.")],
    "Erase", async () => {
      try {
        const r = await api("POST", "/api/memory/delete-all", { agentId, userId });
        await show(out, agentId, userId, "Erased: " + count(r.deleted, "row") + " deleted (facts and call records).");
      } catch (e) { result.className = "error"; result.textContent = explain(e); }
    }) }, "Erase this person");
  out.append(erase, result);
}
