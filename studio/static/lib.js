// Studio's small toolkit: DOM building without markup parsing, the API
// client, formatting. Text always goes in through textContent (h's string
// children), never innerHTML, so nothing from the box or the operator is
// parsed as markup.

const KEY = "stackbone.studio.key";
const SELF = "stackbone.studio.self";

// h(tag, props, ...children): props are attributes, except on* (event
// listeners), class, dataset and value/checked/disabled (properties).
// Children are nodes or strings (text nodes); null, false and undefined are
// skipped; arrays are flattened.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "value" || k === "checked" || k === "disabled" || k === "selected") el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// put appends children to el as h does (null, false and undefined
// skipped, arrays flattened), where DOM append would write "null".
export function put(el, ...children) {
  append(el, children);
  return el;
}

// clear empties a node.
export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// The signed-in key lives in this tab's sessionStorage only: it is gone
// when the tab closes and never appears in a page, a URL or a cookie.
export const session = {
  key() { return sessionStorage.getItem(KEY) || ""; },
  set(k) { sessionStorage.setItem(KEY, k); },
  clear() { sessionStorage.removeItem(KEY); sessionStorage.removeItem(SELF); self.scopes = []; self.name = ""; },
  // The key's name and scopes (not secret), kept so a reload paints at once;
  // the box checks the key on every request anyway.
  saveSelf(me) { sessionStorage.setItem(SELF, JSON.stringify(me)); },
  cachedSelf() { try { return JSON.parse(sessionStorage.getItem(SELF)); } catch { return null; } },
};

// self is the signed-in key's name and scopes (GET /api/keys/self).
export const self = { name: "", scopes: [], allScopes: [] };

export function can(scope) { return !scope || self.scopes.includes(scope); }

// ApiError is an /api error envelope with its HTTP status.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// onUnauthorized is called when the box refuses the key (revoked mid-session).
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

// api calls an /api route with the signed-in key and returns the envelope's
// data, or throws ApiError. body: an object (sent as JSON) or FormData.
export async function api(method, path, body, opts = {}) {
  const headers = { authorization: "Bearer " + (opts.key || session.key()) };
  let payload;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) { headers["content-type"] = "application/json"; payload = JSON.stringify(body); }
  let res;
  try {
    res = await fetch(path, { method, headers, body: payload, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
  } catch (e) {
    throw new ApiError(0, "network", "The box did not answer: " + e.message);
  }
  if (res.status === 204) return null; // e.g. a redact or a delete: done, no body
  let env = null;
  try { env = await res.json(); } catch { /* not JSON */ }
  if (!res.ok || !env || env.error) {
    const err = env && env.error ? env.error : { code: "http_" + res.status, message: res.statusText || "request failed" };
    const e = new ApiError(res.status, err.code, err.message);
    if (res.status === 401 && !opts.key) onUnauthorized(e);
    throw e;
  }
  return env.data;
}

// qs builds a query string from the non-empty values of obj.
export function qs(obj) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) if (v !== "" && v !== null && v !== undefined) p.set(k, v);
  const s = p.toString();
  return s ? "?" + s : "";
}

export function fmtTime(t) {
  if (!t) return "—";
  const d = new Date(t);
  return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

export function fmtAge(t) {
  if (!t) return "—";
  const s = Math.max(0, (Date.now() - new Date(t).getTime()) / 1000);
  if (s < 60) return Math.round(s) + " s ago";
  if (s < 3600) return Math.round(s / 60) + " min ago";
  if (s < 86400) return Math.round(s / 3600) + " h ago";
  return Math.round(s / 86400) + " d ago";
}

export function fmtSeconds(s) {
  if (s === null || s === undefined) return "—";
  if (s < 60) return s.toFixed(1) + " s";
  return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
}

export function fmtInt(n) { return (n ?? 0).toLocaleString("en-US"); }

// count is n and its noun, singular for one: "1 fact", "2 facts".
export function count(n, one, many = one + "s") { return fmtInt(n) + " " + ((n ?? 0) === 1 ? one : many); }

// counted is count with its figure in bold, for a line of stats.
export function counted(n, one, many = one + "s") { return [h("b", {}, fmtInt(n)), " " + ((n ?? 0) === 1 ? one : many)]; }

// badge is a small coloured label; kind picks the colour.
export function badge(text, kind) {
  return h("span", { class: "badge " + (kind || String(text).toLowerCase().replace(/[^a-z_]/g, "")) }, text);
}

// say writes a message in a status line in the colour of what it says:
// "error" (the default) for a refusal or a failure, "ok" for a change
// made, "" for neither.
export function say(el, text, kind = "error") {
  el.textContent = text;
  el.classList.toggle("error", kind === "error" && text !== "");
  el.classList.toggle("ok", kind === "ok");
  return el;
}

// notice shows a message in the page's message bar (role=alert for errors).
export function notice(msg, kind = "error") {
  const bar = document.getElementById("notice");
  if (!bar) return;
  clear(bar).append(h("div", { class: "notice " + kind, role: kind === "error" ? "alert" : "status" }, msg,
    h("button", { type: "button", class: "link", "aria-label": "dismiss", onclick: () => clear(bar) }, "×")));
}

// explain turns an error into a sentence for the operator.
export function explain(e) {
  if (e instanceof ApiError) {
    if (e.status === 403) return "Not allowed: " + e.message;
    return e.message + (e.code ? " (" + e.code + ")" : "");
  }
  return String(e && e.message ? e.message : e);
}

// readOnlyNote says why a part of a screen is disabled.
export function readOnlyNote(scope, what) {
  return h("p", { class: "readonly", dataset: { scope } }, "Read-only: this key lacks the scope ", h("code", {}, scope),
    " needed to " + what + ".");
}

// table builds a table: cols are {title, cell(row) -> node|string}.
export function table(cols, rows, opts = {}) {
  const body = h("tbody", {}, rows.map((r) => row(cols, r, opts)));
  return h("table", { class: "list" + (opts.class ? " " + opts.class : "") },
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { class: c.class }, c.title)))), body);
}

export function row(cols, r, opts = {}) {
  const tr = h("tr", { dataset: { id: opts.id ? opts.id(r) : r.id } }, cols.map((c) => h("td", { class: c.class }, c.cell(r))));
  if (opts.href) {
    // The row opens with a click, or from the keyboard: Tab to it, Enter.
    tr.classList.add("link");
    tr.tabIndex = 0;
    tr.addEventListener("click", (ev) => { if (!ev.target.closest("a,button,input,select,textarea")) location.hash = opts.href(r); });
    tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter" && ev.target === tr) location.hash = opts.href(r); });
  }
  return tr;
}

// pager appends pages of a keyset-paginated list: load(before) returns the
// next page (an array); it shows "Load more" while a full page came back.
export function pager(cols, load, opts = {}) {
  const limit = opts.limit || 50;
  const tbl = table(cols, [], opts);
  const tbody = tbl.querySelector("tbody");
  const more = h("button", { type: "button", class: "more", hidden: true }, "Load more");
  const empty = h("p", { class: "empty", hidden: true }, opts.empty || "Nothing here yet.");
  let last = "";
  async function next() {
    more.disabled = true;
    try {
      const page = await load(last, limit);
      for (const r of page) tbody.append(row(cols, r, opts));
      if (page.length) last = opts.id ? opts.id(page[page.length - 1]) : page[page.length - 1].id;
      more.hidden = page.length < limit;
      empty.hidden = tbody.children.length > 0;
      tbl.dataset.rows = tbody.children.length;
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener("click", () => next().catch((e) => notice(explain(e))));
  return { el: h("div", { class: "pager" }, tbl, empty, more), first: () => next().then(markPainted) };
}

// markPainted records when a list's first page is in the document
// (studio:list-rendered) and, two animation frames later, on screen
// (studio:list-painted): the figures `stackbone bench studio` reads through
// the Performance Timeline.
export function markPainted() {
  performance.mark("studio:list-rendered");
  requestAnimationFrame(() => requestAnimationFrame(() => performance.mark("studio:list-painted")));
}

// field wraps a labelled control.
export function field(label, control, hint) {
  return h("label", { class: "field" }, h("span", {}, label), control, hint ? h("small", {}, hint) : null);
}

// select builds a <select> of [value, label] pairs.
export function select(name, options, value) {
  return h("select", { name }, options.map(([v, l]) => h("option", { value: v, selected: v === value }, l)));
}

// poll calls fn every ms until it returns true or the node leaves the page.
export function poll(node, ms, fn) {
  const tick = async () => {
    if (!node.isConnected) return;
    let done = false;
    try { done = await fn(); } catch { /* try again */ }
    if (!done && node.isConnected) setTimeout(tick, ms);
  };
  setTimeout(tick, ms);
}

// ask shows an in-page confirmation after anchor (no native dialog, so
// nothing blocks the page): body is a node or text; onYes runs on confirm.
export function ask(anchor, body, yesLabel, onYes) {
  const old = anchor.parentNode.querySelector(":scope > .confirm");
  if (old) old.remove();
  const box = h("div", { class: "confirm", role: "alertdialog" }, h("div", {}, body),
    h("div", { class: "actions" },
      h("button", { type: "button", class: "danger yes", onclick: () => { box.remove(); onYes(); } }, yesLabel),
      h("button", { type: "button", class: "no", onclick: () => box.remove() }, "Cancel")));
  anchor.after(box);
  return box;
}

// noProviderNote says, when no model provider is configured, that what
// (a screen's work) cannot happen and which setting to set; null when one
// is, or when this key cannot ask (config:read). The providers change
// only with a restart of the box: one request per page load.
let providersOnce = null;
export async function noProviderNote(what) {
  if (!can("config:read")) return null;
  if (!providersOnce) providersOnce = api("GET", "/api/system/providers").catch((e) => { providersOnce = null; throw e; });
  let circuits;
  try { circuits = await providersOnce; } catch { return null; }
  if (circuits.length) return null;
  return h("p", { class: "readonly", id: "no-provider", role: "status" }, "No model provider is configured, so " + what + " cannot work. Set ",
    h("code", {}, "OPENAI_API_KEY"), " (with ", h("code", {}, "OPENAI_BASE_URL"), " for another OpenAI-compatible endpoint) in the box's environment, or ",
    h("code", {}, "providers.NAME.baseURL"), " and ", h("code", {}, "apiKeyEnv"), " in its config, then restart the box.");
}

// agentOptions lists the agents for a filter (needs config:read; without
// it the filter is a free text box).
// The agents of the config change only with a restart of the box: one
// request per page load serves every filter.
let agentsOnce = null;
export function agents() {
  if (!agentsOnce) agentsOnce = api("GET", "/api/agents").catch((e) => { agentsOnce = null; throw e; });
  return agentsOnce;
}

export async function agentOptions(all = "All agents") {
  if (!can("config:read")) return null;
  const list = await agents();
  return [["", all], ...list.map((a) => [a.name, a.name])];
}

export async function agentFilter(name, value) {
  const opts = await agentOptions();
  return opts ? select(name, opts, value) : h("input", { name, value, placeholder: "agent name", maxlength: 100 });
}
