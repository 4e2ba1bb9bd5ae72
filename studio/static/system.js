// System → Memory extraction: the extractor's model and reasoning effort,
// and the guidance prompt (draft, publish, reset), with what is in force.
import { h, say, put, noProviderNote, api, can, fmtTime, field, select, explain, readOnlyNote, clear, ask, table, badge } from "./lib.js";

// OTHER is the model choice that reads the text field (no model id is
// without a slash).
const OTHER = "other";

const efforts = ["none", "minimal", "low", "medium", "high", "xhigh"];

export async function systemScreen(main) {
  put(main, h("h1", {}, "System"), await noProviderNote("memory extraction"));
  const card = h("section", { class: "card", id: "extraction" });
  const providers = h("section", { class: "card", id: "providers" });
  main.append(card, providers);
  await render(card);
  await renderProviders(providers);
}

// renderProviders shows each provider's circuit: whether the box sends it
// requests, how often it was cut off, and its latest failures.
async function renderProviders(card) {
  const list = await api("GET", "/api/system/providers").catch(() => null);
  card.append(h("h2", {}, "Providers"),
    h("p", { class: "hint" }, "A provider that fails again and again is skipped for a while (its circuit is open) and an agent's next model answers; one request then probes it."));
  if (!list || !list.length) { card.append(h("p", {}, "No provider is configured.")); return; }
  card.append(table([
    { title: "Provider", cell: (c) => c.provider },
    { title: "Endpoint", cell: (c) => c.endpoint },
    { title: "Circuit", cell: (c) => badge(c.state) },
    { title: "Opened", cell: (c) => (c.opened ? c.opened + (c.opened === 1 ? " time, last " : " times, last ") + fmtTime(c.openedAt) : "never") },
    { title: "Latest failures", cell: (c) => (c.lastFailures.length ? c.lastFailures.slice(-3).reverse().map((f) => fmtTime(f.at) + " " + f.reason).join("; ") : "none") },
  ], list, { id: (c) => c.provider + "/" + c.endpoint, class: "providers" }));
}

async function render(card, msg) {
  const v = await api("GET", "/api/system/memory-extraction");
  // The models the config names, offered as choices; "Other" (or a box
  // that cannot list them) takes any provider/model as text.
  const known = await api("GET", "/api/system/models").then((m) => m.models || [], () => []);
  const write = can("config:write");
  const status = h("p", { class: "status", role: "status" }, msg || "");
  const run = async (method, path, body, done) => {
    try { await api(method, path, body); await render(clear(card), done); } catch (e) { say(status, "Not saved: " + explain(e)); }
  };
  const model = h("input", { name: "model", value: v.selection.model || "", placeholder: v.fallback.model, maxlength: 200, disabled: !write });
  const current = v.selection.model || "";
  const choice = known.length ? select("modelChoice", [["", "(fallback: " + v.fallback.model + ")"], ...known.map((m) => [m, m]), [OTHER, "Other model…"]],
    !current || known.includes(current) ? current : OTHER) : null;
  if (choice) {
    choice.disabled = !write;
    const sync = () => model.classList.toggle("hidden", choice.value !== OTHER);
    choice.addEventListener("change", sync);
    sync();
  }
  const effort = select("reasoningEffort", [["", "(fallback: " + v.fallback.reasoningEffort + ")"], ...efforts.map((e) => [e, e])], v.selection.reasoningEffort || "");
  effort.disabled = !write;
  const inForce = v.selection.model ? "the System selection" : "the fallback (environment, config or platform default)";
  const draft = h("textarea", { name: "draft", rows: 6, maxlength: 20000, disabled: !write });
  draft.value = v.prompt.draft ?? v.prompt.published ?? "";
  put(card, h("h2", {}, "Memory extraction"),
    h("p", {}, "In force: ", h("code", { id: "model-in-force" }, v.selection.model || v.fallback.model), " (from " + inForce + "), reasoning effort ",
      h("code", {}, v.selection.reasoningEffort || v.fallback.reasoningEffort), "; guidance: ", h("b", { id: "guidance-in-force" }, v.activeGuidance), "."),
    write ? null : readOnlyNote("config:write", "change the extractor"),
    h("form", { class: "inline", id: "selection" }, field("Model (provider/model)", h("span", {}, choice, model)), field("Reasoning effort", effort),
      write ? h("button", { type: "submit" }, "Save") : null,
      write ? h("button", { type: "button", class: "link", onclick: () => run("PUT", "/api/system/memory-extraction", { model: null, reasoningEffort: null }, "Selection cleared: the fallback applies.") }, "Use the fallback") : null),
    h("h3", {}, "Guidance prompt"),
    h("p", { class: "hint" }, v.prompt.published ? ["Published ", fmtTime(v.prompt.publishedAt), "."] : "Nothing published: the built-in guidance applies.",
      v.prompt.draft != null ? [" Draft saved ", fmtTime(v.prompt.draftSavedAt), " (a draft does not run until published)."] : null),
    field("Draft", draft),
    write ? h("div", { class: "actions" },
      h("button", { type: "button", id: "save-draft", onclick: () => {
        if (!draft.value.trim()) { say(status, "The draft is empty: use Reset to go back to the built-in guidance."); return; }
        run("PUT", "/api/system/memory-extraction/prompt", { text: draft.value }, "Draft saved; publish it to use it.");
      } }, "Save draft"),
      h("button", { type: "button", id: "publish", disabled: v.prompt.draft == null, onclick: () => run("POST", "/api/system/memory-extraction/prompt/publish", undefined, "Published: the next extraction uses it.") }, "Publish"),
      h("button", { type: "button", class: "danger", id: "reset-prompt", onclick: (ev) => ask(ev.target, "Unpublish the guidance and go back to the built-in one?", "Reset",
        () => run("DELETE", "/api/system/memory-extraction/prompt", undefined, "Reset: the built-in guidance applies.")) }, "Reset")) : null,
    h("details", {}, h("summary", {}, "Built-in guidance"), h("pre", {}, v.builtInGuidance)),
    status);
  const sel = card.querySelector("#selection");
  sel.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const m = choice && choice.value !== OTHER ? choice.value : model.value.trim();
    if (m && !/^[^/\s]+\/\S+$/.test(m)) { say(status, "The model is provider/model, e.g. openai/gpt-4o-mini."); return; }
    run("PUT", "/api/system/memory-extraction", { model: m || null, reasoningEffort: effort.value || null }, "Saved: the next extraction uses it.");
  });
}
