// Runs: every turn, extraction and ingest, with tokens, cost, latency and
// tool timings; never prompt or response text (the box does not keep it).
import { h, api, qs, pager, badge, fmtTime, fmtInt, field, select, agentFilter } from "./lib.js";

export async function runsScreen(main, params) {
  const f = { kind: params.get("kind") || "", agent: params.get("agent") || "", status: params.get("status") || "" };
  const kind = h("input", { name: "kind", value: f.kind, placeholder: "agent_turn, memory_extraction, rag_ingest…", maxlength: 64 });
  const list = pager(runCols, (before, limit) => api("GET", "/api/runs" + qs({ ...f, before, limit })), { class: "runs", empty: "No run matches.", href: (r) => "#/runs/" + r.id });
  const first = list.first(); // at once, beside the filter's agents
  const form = h("form", { class: "filters", id: "run-filters" }, field("Kind", kind), field("Agent", await agentFilter("agent", f.agent)),
    field("Status", select("status", [["", "Any"], ["running", "running"], ["succeeded", "succeeded"], ["failed", "failed"], ["cancelled", "cancelled"]], f.status)),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); location.hash = "#/runs" + qs(Object.fromEntries(new FormData(form))); });
  main.append(h("h1", {}, "Runs"), form, list.el);
  await first;
}

const runCols = [
  { title: "Started", cell: (r) => fmtTime(r.startedAt) },
  { title: "Kind", cell: (r) => r.kind },
  { title: "Agent", cell: (r) => r.agentId || "—" },
  { title: "Status", cell: (r) => badge(r.status) },
  { title: "Model", cell: (r) => r.model || "—" },
  { title: "Tokens", class: "num", cell: (r) => fmtInt(r.inputTokens + r.outputTokens) },
  { title: "Cost", class: "num", cell: (r) => (r.costUsd == null ? "—" : "$" + r.costUsd.toFixed(5)) },
  { title: "Duration", class: "num", cell: (r) => (r.durationMs == null ? "—" : r.durationMs + " ms") },
  { title: "Tools", cell: (r) => tools(r.metadata) },
];

function tools(meta) {
  const t = meta && (meta.tools || meta.toolCalls);
  if (!Array.isArray(t) || !t.length) return "—";
  return t.map((x) => (typeof x === "string" ? x : (x.name || "?") + (x.durationMs != null ? " " + x.durationMs + " ms" : ""))).join(", ");
}

export async function runScreen(main, id) {
  const r = await api("GET", "/api/runs/" + encodeURIComponent(id));
  main.append(h("p", { class: "crumbs" }, h("a", { href: "#/runs" }, "Runs"), " / ", r.id),
    h("h1", {}, r.kind, " run ", badge(r.status)),
    h("dl", { class: "facts", id: "run" },
      h("dt", {}, "Agent"), h("dd", {}, r.agentId || "—"),
      h("dt", {}, "Model"), h("dd", {}, r.model || "—"),
      h("dt", {}, "Tokens"), h("dd", {}, fmtInt(r.inputTokens), " in, ", fmtInt(r.outputTokens), " out"),
      h("dt", {}, "Cost"), h("dd", {}, r.costUsd == null ? "not priced" : "$" + r.costUsd.toFixed(6)),
      h("dt", {}, "Started"), h("dd", {}, fmtTime(r.startedAt)),
      h("dt", {}, "Duration"), h("dd", {}, r.durationMs == null ? "—" : r.durationMs + " ms"),
      h("dt", {}, "Error"), h("dd", {}, r.errorCode || "—"),
      h("dt", {}, "Tools"), h("dd", {}, tools(r.metadata))),
    h("h2", {}, "Metadata"), h("pre", {}, JSON.stringify(r.metadata || {}, null, 2)));
}
