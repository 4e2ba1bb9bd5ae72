// RAG: collections with their stats, upload with progress, the documents
// with their ingest status (updating by itself), a JSONB filter, and the
// Search panel that runs the query an agent's tool would run.
import { h, put, noProviderNote, api, qs, can, session, badge, fmtInt, field, explain, notice, readOnlyNote, ask, clear, table, row, poll, ApiError, markPainted, count, counted } from "./lib.js";

const maxUpload = 25 << 20;
const allowed = /\.(txt|md|pdf)$/i;

export async function ragScreen(main, params) {
  return collectionScreen(main, "", params);
}

export async function collectionScreen(main, name, params) {
  const note = noProviderNote("ingesting documents and searching them");
  const cols = await api("GET", "/api/rag/collections");
  const current = cols.find((c) => c.name === name) || (name ? null : cols[0]);
  const rail = h("nav", { class: "rail", id: "collections" }, cols.map((c) => h("a", { href: "#/rag/" + encodeURIComponent(c.name), class: current && c.name === current.name ? "active" : "", dataset: { name: c.name } },
    h("b", {}, c.name), h("small", {}, railCounts(c)))));
  const body = h("div", { class: "rag-body" });
  put(main, h("h1", {}, "RAG"), await note, h("div", { class: "rag" }, h("div", {}, rail, newCollection()), body));
  if (!current) {
    body.append(h("p", { class: "empty" }, name ? "No collection named " + name + "." : "No collection yet: create one to upload documents."));
    return;
  }
  put(body, h("h2", {}, current.name), current.description ? h("p", { class: "hint" }, current.description) : null,
    stats(current));
  body.append(searchPanel(current));
  body.append(can("rag:write") ? upload(current) : readOnlyNote("rag:write", "upload or delete documents"));
  await documents(body, current, params.get("filter") || "");
}

function railCounts(c) { return count(c.documents, "doc") + " · " + count(c.chunks, "chunk"); }

function stats(c) {
  return h("ul", { class: "stats", id: "stats" },
    h("li", {}, counted(c.documents, "doc")), h("li", {}, counted(c.chunks, "chunk")),
    h("li", {}, counted(c.dimensions, "dimension")), h("li", {}, "embedded with ", h("code", {}, c.model)));
}

// recount reads the collections again and redraws the counts of c (its
// stats and its place in the rail), which change as documents are ingested.
async function recount(c) {
  const fresh = (await api("GET", "/api/rag/collections")).find((x) => x.name === c.name);
  if (!fresh) return;
  const old = document.getElementById("stats");
  if (old) old.replaceWith(stats(fresh));
  const small = [...document.querySelectorAll("#collections a")].find((a) => a.dataset.name === c.name)?.querySelector("small");
  if (small) small.textContent = railCounts(fresh);
}

function newCollection() {
  if (!can("rag:write")) return null;
  const name = h("input", { name: "name", maxlength: 100, placeholder: "help-center" });
  const desc = h("input", { name: "description", maxlength: 1000, placeholder: "what it holds" });
  const out = h("p", { class: "error", role: "alert" });
  const form = h("form", { id: "new-collection", class: "card", novalidate: true }, h("h3", {}, "New collection"), field("Name", name), field("Description", desc),
    h("button", { type: "submit" }, "Create"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!name.value.trim()) { out.textContent = "Enter a name."; return; }
    try {
      const c = await api("POST", "/api/rag/collections", { name: name.value.trim(), description: desc.value });
      location.hash = "#/rag/" + encodeURIComponent(c.name);
    } catch (e) { out.textContent = explain(e); }
  });
  return form;
}

// upload sends the file with XMLHttpRequest, whose upload events give the
// progress bar (fetch has none), with the key as a bearer header.
function upload(c) {
  const file = h("input", { type: "file", name: "file", accept: ".txt,.md,.pdf" });
  const meta = h("input", { name: "metadata", placeholder: '{"lang": "en"}', maxlength: 16000 });
  const bar = h("progress", { max: 100, value: 0, hidden: true, id: "upload-progress" });
  const out = h("p", { id: "upload-result", role: "status" });
  const form = h("form", { id: "upload", class: "inline", novalidate: true }, field("Document (.txt, .md, .pdf; up to 25 MB)", file), field("Metadata (JSON object)", meta),
    h("button", { type: "submit" }, "Upload"), bar, out);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = file.files[0];
    out.className = "error";
    if (!f) { out.textContent = "Choose a file."; return; }
    if (!allowed.test(f.name)) { out.textContent = f.name + " is not a .txt, .md or .pdf file."; return; }
    if (f.size > maxUpload) { out.textContent = f.name + " is " + (f.size / 1048576).toFixed(1) + " MB: the limit is 25 MB. Nothing was uploaded."; return; }
    const fd = new FormData();
    if (meta.value.trim()) {
      let m;
      try { m = JSON.parse(meta.value); } catch { m = null; }
      if (!m || typeof m !== "object" || Array.isArray(m)) { out.textContent = "Metadata must be a JSON object, like {\"lang\": \"en\"}."; return; }
      fd.append("metadata", JSON.stringify(m));
    }
    fd.append("file", f);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/rag/collections/" + encodeURIComponent(c.name) + "/documents");
    xhr.setRequestHeader("authorization", "Bearer " + session.key());
    bar.hidden = false; bar.value = 0;
    xhr.upload.addEventListener("progress", (e) => { if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total); });
    xhr.addEventListener("load", () => {
      let env = null;
      try { env = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      if (xhr.status === 202 && env && env.data) {
        bar.value = 100;
        out.className = "ok";
        out.textContent = "Uploaded " + f.name + ": ingest queued.";
        form.reset();
        window.dispatchEvent(new HashChangeEvent("hashchange"));
        return;
      }
      if (xhr.status === 401) { api("GET", "/api/keys/self").catch(() => {}); }
      out.textContent = env && env.error ? env.error.message + " (" + env.error.code + ")" : "The upload failed (" + xhr.status + ").";
    });
    xhr.addEventListener("error", () => { out.textContent = "The upload did not reach the box."; });
    xhr.send(fd);
  });
  return form;
}

async function documents(body, c, filter) {
  const box = h("input", { name: "filter", value: filter, placeholder: '{"lang": "en"}', maxlength: 16000, class: "wide" });
  const out = h("p", { class: "error", role: "alert" });
  const form = h("form", { class: "filters", id: "doc-filter", novalidate: true }, field("JSONB filter (metadata contains)", box), h("button", { type: "submit" }, "Filter"), out);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = box.value.trim();
    if (v) {
      let m;
      try { m = JSON.parse(v); } catch { m = null; }
      if (!m || typeof m !== "object" || Array.isArray(m)) { out.textContent = "The filter must be a JSON object, like {\"lang\": \"en\"}."; return; }
    }
    location.hash = "#/rag/" + encodeURIComponent(c.name) + qs({ filter: v });
  });
  const cols = [
    { title: "Document", cell: (d) => d.filename || d.id },
    { title: "Status", cell: (d) => [badge(d.status), d.error ? h("small", { class: "error" }, " " + d.error.message) : null] },
    { title: "Chunks", class: "num", cell: (d) => fmtInt(d.chunks) },
    { title: "Metadata", cell: (d) => h("code", {}, JSON.stringify(d.metadata)) },
    { title: "Preview", class: "preview", cell: (d) => d.preview || "" },
    { title: "", cell: (d) => docActions(d) },
  ];
  const limit = 50;
  const tbl = table(cols, [], { class: "documents" });
  const tbody = tbl.querySelector("tbody");
  const more = h("button", { type: "button", class: "more", hidden: true }, "Load more");
  let last = "";
  const load = async () => {
    const page = await api("GET", "/api/rag/collections/" + encodeURIComponent(c.name) + "/documents" + qs({ filter, before: last, limit }));
    for (const d of page) tbody.append(row(cols, d));
    if (page.length) last = page[page.length - 1].id;
    more.hidden = page.length < limit;
    tbl.dataset.rows = tbody.children.length;
  };
  more.addEventListener("click", () => load().catch((e) => notice(explain(e))));
  body.append(h("h3", {}, "Documents"), form, tbl, more);
  await load();
  markPainted();
  // Ingest status updates by itself while a document is queued or running:
  // the rows shown are read again (one keyset query, as many rows as shown).
  // The collection's counts are read again with them, so they follow the
  // ingest.
  // The counts drawn with the screen were read before its table: a
  // document that finished in between shows done here while they do not
  // count it yet, so they are read once more when nothing is in progress.
  let recounted = false;
  poll(tbl, 1000, async () => {
    if (![...tbody.querySelectorAll("td:nth-child(2)")].some((td) => /queued|running|retrying/.test(td.textContent))) {
      if (!recounted) {
        recounted = true;
        await recount(c);
      }
      return false;
    }
    recounted = false;
    const n = Math.min(1000, Math.max(limit, tbody.children.length));
    const page = await api("GET", "/api/rag/collections/" + encodeURIComponent(c.name) + "/documents" + qs({ filter, limit: n }));
    clear(tbody).append(...page.map((d) => row(cols, d)));
    tbl.dataset.rows = tbody.children.length;
    await recount(c);
    return false;
  });
}

function docActions(d) {
  return h("span", { class: "actions" },
    d.runId && can("runs:read") ? h("a", { href: "#/runs/" + d.runId }, "View run") : null,
    d.source === "upload" || d.filename ? h("button", { type: "button", class: "link download", onclick: () => download(d) }, "Download") : null,
    // A failed or cancelled upload's ingest job can run again.
    d.jobId && can("rag:write") && (d.status === "failed" || d.status === "cancelled") ? h("button", { type: "button", class: "link retry", onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        const j = await api("POST", "/api/rag/jobs/" + d.jobId + "/retry");
        if (j.state === "running") { ev.target.disabled = false; notice("The failed attempt is still being closed: Retry again in a moment.", "ok"); return; }
        window.dispatchEvent(new HashChangeEvent("hashchange"));
      } catch (e) { ev.target.disabled = false; notice(explain(e)); }
    } }, "Retry") : null,
    can("rag:write") ? h("button", { type: "button", class: "link danger delete", onclick: (ev) => ask(ev.target.closest("td"), ["Delete ", h("b", {}, d.filename || d.id), " with its chunks and original?"], "Delete", async () => {
      try { await api("DELETE", "/api/rag/documents/" + encodeURIComponent(d.id)); window.dispatchEvent(new HashChangeEvent("hashchange")); }
      catch (e) { notice(explain(e)); }
    }) }, "Delete") : null);
}

// download fetches the original with the key in a header (never in a URL)
// and saves it from a blob.
async function download(d) {
  try {
    const res = await fetch("/api/rag/originals/" + encodeURIComponent(d.id), { headers: { authorization: "Bearer " + session.key() }, cache: "no-store" });
    if (!res.ok) {
      let msg = res.statusText;
      try { msg = (await res.json()).error.message; } catch { /* not JSON */ }
      throw new ApiError(res.status, "", msg);
    }
    const url = URL.createObjectURL(await res.blob());
    const a = h("a", { href: url, download: d.filename || d.id });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) { notice(explain(e)); }
}

function searchPanel(c) {
  const text = h("input", { name: "text", class: "wide", maxlength: 8000, placeholder: "How long do I have to return an item?" });
  const topK = h("input", { name: "topK", type: "number", min: 1, max: 100, value: 10 });
  const filter = h("input", { name: "filter", placeholder: '{"lang": "en"}', maxlength: 16000 });
  const out = h("div", { id: "search-result" });
  const form = h("form", { id: "search", class: "card", novalidate: true }, h("h3", {}, "Search this collection"),
    h("div", { class: "inline" }, field("Question", text), field("topK", topK), field("Filter", filter), h("button", { type: "submit" }, "Search")), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clear(out);
    const q = text.value.trim();
    const k = Number(topK.value);
    if (!q) { out.append(h("p", { class: "error" }, "Type a question.")); return; }
    if (!Number.isInteger(k) || k < 1 || k > 100) { out.append(h("p", { class: "error" }, "topK is a whole number from 1 to 100.")); return; }
    const req = { text: q, topK: k, namespace: c.name };
    if (filter.value.trim()) {
      try { req.filter = JSON.parse(filter.value); } catch { req.filter = null; }
      if (!req.filter || typeof req.filter !== "object" || Array.isArray(req.filter)) { out.append(h("p", { class: "error" }, "The filter must be a JSON object.")); return; }
    }
    try {
      const hits = await api("POST", "/api/rag/retrieve", req);
      out.append(h("p", { class: "hint", id: "search-head" }, count(hits.length, "hit") + " · dim " + c.dimensions + " · embed_with " + (hits[0] ? hits[0].model : c.model)),
        table([
          { title: "Score", class: "num", cell: (x) => x.score.toFixed(4) },
          { title: "Content", cell: (x) => x.content },
          { title: "Metadata", cell: (x) => h("code", {}, JSON.stringify(x.metadata)) },
          { title: "Document", cell: (x) => x.documentId + " #" + x.chunkIndex },
        ], hits, { id: (x) => String(x.chunkId), class: "hits" }));
    } catch (e) { out.append(h("p", { class: "error", role: "alert" }, explain(e))); }
  });
  return form;
}
