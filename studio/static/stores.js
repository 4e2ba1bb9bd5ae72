// Memory stores: each agent's learned store and the curated ones; browse
// memories as a path tree; read, create, edit (a stale edit is refused and
// shown), delete; versions newest first with a diff between any two,
// restore and redact; the learning state of an agent's learned store.
import { h, api, qs, can, badge, fmtTime, fmtInt, field, explain, notice, readOnlyNote, ask, clear, table, count, counted } from "./lib.js";

const S = "/api/memory_stores/";

export async function storesScreen(main, params) { return storeScreen(main, "", params); }

export async function storeScreen(main, slug, params) {
  const page = await api("GET", "/api/memory_stores?limit=100");
  const stores = page.memory_stores;
  const current = stores.find((s) => s.slug === slug || s.memory_store_id === slug) || (slug ? null : stores[0]);
  const rail = h("nav", { class: "rail", id: "stores" }, stores.map((s) => h("a", { href: "#/stores/" + encodeURIComponent(s.slug),
    class: current && s.memory_store_id === current.memory_store_id ? "active" : "", dataset: { slug: s.slug } },
    h("b", {}, s.name), h("small", {}, s.origin + (s.agent_id ? " · " + s.agent_id : "") + " · " + count(s.memory_count, "memory", "memories")))));
  const body = h("div", { class: "rag-body", id: "store" });
  main.append(h("h1", {}, "Memory stores"), h("div", { class: "rag" }, h("div", {}, rail, newStore()), body));
  if (!current) { body.append(h("p", { class: "empty" }, slug ? "No store " + slug + "." : "No store yet.")); return; }
  const learned = current.origin === "reflection";
  body.append(h("h2", {}, current.name, " ", badge(learned ? "learned" : "curated", "origin " + (learned ? "learned" : "curated"))),
    h("p", { class: "hint" }, current.description || ""),
    h("ul", { class: "stats" }, h("li", {}, counted(current.memory_count, "memory", "memories")), h("li", {}, counted(current.total_bytes, "byte")),
      h("li", {}, "revision ", String(current.revision))));
  if (learned && current.agent_id) body.append(await learning(current.agent_id));
  const writable = can("stores:write") && !learned && current.status === "active";
  if (learned) body.append(h("p", { class: "readonly" }, "An agent's learned memory is written by its learning runs: read its history, it cannot be edited by hand."));
  else if (!can("stores:write")) body.append(readOnlyNote("stores:write", "change memories"));
  const path = params.get("path") || "/";
  const memoryId = params.get("memory") || "";
  const base = "#/stores/" + encodeURIComponent(current.slug);
  body.append(await tree(current, base, path));
  if (memoryId) body.append(await editor(current, base, path, memoryId, writable));
  else if (writable) body.append(createForm(current, base, path));
}

function newStore() {
  if (!can("stores:write")) return null;
  const name = h("input", { name: "name", maxlength: 200, placeholder: "Release policy" });
  const desc = h("input", { name: "description", maxlength: 2000, placeholder: "when an agent should look here" });
  const out = h("p", { class: "error", role: "alert" });
  const form = h("form", { id: "new-store", class: "card", novalidate: true }, h("h3", {}, "New curated store"), field("Name", name), field("Description", desc), h("button", { type: "submit" }, "Create"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!name.value.trim()) { out.textContent = "Enter a name."; return; }
    try {
      const s = await api("POST", "/api/memory_stores", { name: name.value.trim(), description: desc.value });
      location.hash = "#/stores/" + encodeURIComponent(s.slug);
    } catch (e) { out.textContent = explain(e); }
  });
  return form;
}

async function learning(agent) {
  try {
    const m = await api("GET", "/api/agents/" + encodeURIComponent(agent) + "/memory");
    const label = { waiting: "Waiting for sessions", idle: "Learning automatically", updating: "Updating", delayed: "Updates delayed" }[m.state] || m.state;
    return h("p", { id: "learning" }, "Learning: ", badge(label, m.state), " model ", h("code", {}, m.effective_model || "—"),
      m.next_retry_at ? " · retries " + fmtTime(m.next_retry_at) : "", " · ", String(m.pending_session_count ?? 0), " sessions waiting");
  } catch (e) { return h("p", { class: "error" }, explain(e)); }
}

// tree lists one level of the store under path: folders and memories.
async function tree(st, base, path) {
  const l = await api("GET", S + st.memory_store_id + "/memories" + qs({ path_prefix: path === "/" ? "" : path, limit: 100 }));
  const crumbs = [h("a", { href: base }, "/")];
  let acc = "/";
  for (const part of path.split("/").filter(Boolean)) {
    acc += part + "/";
    crumbs.push(h("a", { href: base + qs({ path: acc }) }, part + "/"));
  }
  const rows = l.entries.map((e) => e.type === "memory_prefix"
    ? h("li", { class: "folder", dataset: { path: e.path } }, h("a", { href: base + qs({ path: e.path }) }, "📁 " + e.path), " ", h("small", {}, count(e.count, "memory", "memories")))
    : h("li", { class: "memory", dataset: { path: e.path } }, h("a", { href: base + qs({ path, memory: e.memory_id }) }, e.path), " ", h("small", {}, e.summary || "")));
  return h("section", { class: "tree" }, h("p", { class: "crumbs", id: "path" }, crumbs), h("ul", { id: "entries" }, rows.length ? rows : h("li", { class: "empty" }, "Nothing under " + path)));
}

function createForm(st, base, path) {
  const p = h("input", { name: "path", value: path === "/" ? "/" : path, maxlength: 1024, class: "wide" });
  const summary = h("input", { name: "summary", maxlength: 512, class: "wide" });
  const content = h("textarea", { name: "content", rows: 6 });
  const out = h("p", { class: "error", role: "alert" });
  const form = h("form", { id: "new-memory", class: "card", novalidate: true }, h("h3", {}, "New memory"), field("Path", p), field("Summary (one line)", summary), field("Content", content),
    h("button", { type: "submit" }, "Create"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!p.value.trim() || !summary.value.trim() || !content.value) { out.textContent = "Path, summary and content are all required."; return; }
    if (summary.value.length > 512) { out.textContent = "The summary is at most 512 characters."; return; }
    if (new TextEncoder().encode(content.value).length > 102400) { out.textContent = "The content is at most 100 KiB: split it into several memories."; return; }
    try {
      const m = await api("POST", S + st.memory_store_id + "/memories", { path: p.value.trim(), summary: summary.value, content: content.value });
      location.hash = base + qs({ path, memory: m.memory_id });
    } catch (e) { out.textContent = explain(e); }
  });
  return form;
}

async function editor(st, base, path, id, writable) {
  const m = await api("GET", S + st.memory_store_id + "/memories/" + encodeURIComponent(id));
  const p = h("input", { name: "path", value: m.path, maxlength: 1024, class: "wide", disabled: !writable });
  const summary = h("input", { name: "summary", value: m.summary, maxlength: 512, class: "wide", disabled: !writable });
  const content = h("textarea", { name: "content", rows: 10, disabled: !writable });
  content.value = m.content;
  const out = h("p", { id: "memory-status", role: "status" });
  const form = h("form", { id: "memory", class: "card", novalidate: true, dataset: { sha: m.content_sha256 } }, h("h3", {}, m.path),
    field("Path", p), field("Summary", summary), field("Content", content), out);
  if (writable) {
    form.append(h("div", { class: "actions" }, h("button", { type: "submit" }, "Save"),
      h("button", { type: "button", class: "danger", id: "delete-memory", onclick: (ev) => ask(ev.target, "Delete " + m.path + "? Its history stays and it can be restored.", "Delete", async () => {
        try { await api("DELETE", S + st.memory_store_id + "/memories/" + id); location.hash = base + qs({ path }); }
        catch (e) { out.className = "error"; out.textContent = explain(e); }
      }) }, "Delete")));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      out.className = "error";
      if (!summary.value.trim() || !content.value) { out.textContent = "Summary and content cannot be empty."; return; }
      if (new TextEncoder().encode(content.value).length > 102400) { out.textContent = "The content is at most 100 KiB."; return; }
      const body = { content_sha256: m.content_sha256 };
      if (content.value !== m.content) body.content = content.value;
      if (summary.value !== m.summary) body.summary = summary.value;
      if (p.value.trim() !== m.path) body.path = p.value.trim();
      try {
        const u = await api("POST", S + st.memory_store_id + "/memories/" + id, body);
        location.hash = base + qs({ path, memory: u.memory_id, saved: u.head_version_id });
      } catch (e) {
        out.textContent = e.code === "content_sha256_mismatch"
          ? "Not saved: someone changed this memory after you opened it. Your text is still here; reload to see theirs, then apply your change again."
          : "Not saved: " + explain(e);
      }
    });
  }
  return h("div", {}, form, await versions(st, base, path, m, writable));
}

// versions lists the memory's history, newest first, with a diff between
// any two, restore and redact.
async function versions(st, base, path, m, writable) {
  const page = await api("GET", S + st.memory_store_id + "/memory_versions" + qs({ memory_id: m.memory_id, limit: 100 }));
  const diffOut = h("div", { id: "diff" });
  const picks = [];
  const cols = [
    { title: "", cell: (v) => h("input", { type: "checkbox", name: "pick", value: v.memory_version_id, disabled: v.redacted, onchange: (ev) => {
      if (ev.target.checked) picks.push(v.memory_version_id); else picks.splice(picks.indexOf(v.memory_version_id), 1);
      while (picks.length > 2) { const old = picks.shift(); const box = diffOut.parentNode.querySelector(`input[value="${old}"]`); if (box) box.checked = false; }
      showDiff(st, picks, diffOut);
    } }) },
    { title: "When", cell: (v) => fmtTime(v.created_at) },
    { title: "Operation", cell: (v) => v.operation },
    { title: "By", cell: (v) => v.author_kind + (v.author_id ? " " + v.author_id : "") },
    { title: "Size", class: "num", cell: (v) => (v.byte_size == null ? "—" : fmtInt(v.byte_size)) },
    { title: "", cell: (v) => v.redacted ? badge("redacted") : v.memory_version_id === m.head_version_id ? badge("current", "live") : writable ? h("span", { class: "actions" },
      h("button", { type: "button", class: "link restore", onclick: async (ev) => {
        try { await api("POST", S + st.memory_store_id + "/memory_versions/" + v.memory_version_id + "/restore"); location.hash = base + qs({ path, memory: m.memory_id, restored: v.memory_version_id }); }
        catch (e) { notice(explain(e)); }
      } }, "Restore"),
      h("button", { type: "button", class: "link danger redact", onclick: (ev) => ask(ev.target.closest("td"), "Redact this version? Its content is removed for good; who wrote it and when are kept.", "Redact", async () => {
        try { await api("POST", S + st.memory_store_id + "/memory_versions/" + v.memory_version_id + "/redact"); window.dispatchEvent(new HashChangeEvent("hashchange")); }
        catch (e) { notice(explain(e)); }
      }) }, "Redact")) : "" },
  ];
  return h("section", { id: "versions" }, h("h3", {}, "Versions (newest first)"), h("p", { class: "hint" }, "Tick two versions to compare them."),
    table(cols, page.memory_versions, { id: (v) => v.memory_version_id, class: "versions" }), diffOut);
}

async function showDiff(st, picks, out) {
  clear(out);
  if (picks.length !== 2) return;
  try {
    const [a, b] = await Promise.all(picks.map((id) => api("GET", S + st.memory_store_id + "/memory_versions/" + id)));
    const [older, newer] = new Date(a.created_at) <= new Date(b.created_at) ? [a, b] : [b, a];
    out.append(h("h4", {}, "From ", fmtTime(older.created_at), " to ", fmtTime(newer.created_at)),
      h("pre", { class: "diff" }, diffLines(older.content ?? "", newer.content ?? "").map(([op, line]) =>
        h("span", { class: op === "+" ? "add" : op === "-" ? "del" : "same" }, op + " " + line + "\n"))));
  } catch (e) { out.append(h("p", { class: "error" }, explain(e))); }
}

// diffLines is a line diff by longest common subsequence (contents are at
// most 100 KiB, so the table stays small).
export function diffLines(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  const n = x.length, m = y.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < n) out.push(["-", x[i++]]);
  while (j < m) out.push(["+", y[j++]]);
  return out;
}
