// Campaigns: batch outbound calling. The list with each campaign's
// progress; the form for a draft (agent, trunk, cap, calling windows, zone,
// retry rules); a campaign's page with its live progress, the contacts
// upload (a refused one names its bad lines) and the contacts by state,
// each with its last call.
import { h, put, api, qs, can, session, badge, table, row, fmtTime, fmtInt, field, select, explain, notice, ask, clear, poll, agents, count, say, ApiError } from "./lib.js";

const base = "/api/voice/campaigns";
const path = (id) => base + "/" + encodeURIComponent(id);

const days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const states = ["waiting", "queued", "calling", "done", "failed", "cancelled"];

// The parts of a progress bar, in the order they fill: queued and calling
// are both in progress.
const parts = [
  ["done", "done", (s) => s.done || 0],
  ["inprogress", "in progress", (s) => (s.queued || 0) + (s.calling || 0)],
  ["waiting", "waiting", (s) => s.waiting || 0],
  ["failed", "failed", (s) => s.failed || 0],
  ["cancelled", "cancelled", (s) => s.cancelled || 0],
];

// The retry rules, as the API names them and as the form says them.
const rules = [["busy", "Busy"], ["noAnswer", "No answer"], ["voicemail", "Voicemail"], ["failed", "Failed"]];

// What each status lets the operator do.
const actions = {
  draft: ["start", "cancel", "delete"],
  running: ["pause", "cancel"],
  paused: ["resume", "cancel", "delete"],
  cancelled: ["delete"],
  finished: ["delete"],
};
const actionLabel = { start: "Start", pause: "Pause", resume: "Resume", cancel: "Cancel campaign", delete: "Delete" };

export async function campaignsScreen(main) {
  const holder = h("div", { id: "campaigns" });
  const draw = async () => {
    const list = await api("GET", base);
    clear(holder).append(list.length ? campaignTable(list) : h("p", { class: "empty" }, "No campaign yet: create one below, then upload its contacts."));
    holder.dataset.rows = list.length;
    return !list.some(moving); // read again while a campaign's progress moves
  };
  put(main, h("h1", {}, "Campaigns"),
    h("p", { class: "hint" }, "A campaign calls a list of contacts with one agent, inside calling windows on each contact's clock, with a cap on calls up at once and retries by outcome."),
    holder, await newCampaign());
  if (!(await draw())) poll(holder, 2000, draw);
}

// moving says whether a campaign's progress can change by itself: it runs,
// or calls of it are still up.
function moving(c) {
  const s = c.progress.byState;
  return c.status === "running" || (s.queued || 0) + (s.calling || 0) > 0;
}

function campaignTable(list) {
  return table([
    { title: "Name", cell: (c) => h("a", { href: "#/campaigns/" + encodeURIComponent(c.id) }, c.name) },
    { title: "Agent", cell: (c) => c.agent },
    { title: "Status", cell: (c) => badge(c.status) },
    { title: "Progress", class: "progress", cell: (c) => progressBar(c.progress) },
    { title: "Contacts", class: "num", cell: (c) => fmtInt(c.progress.contacts) },
    { title: "Created", cell: (c) => fmtTime(c.createdAt) },
  ], list, { class: "campaigns", href: (c) => "#/campaigns/" + encodeURIComponent(c.id) });
}

// progressBar shows a campaign's contacts by state, with a legend.
function progressBar(p) {
  const total = p.contacts || 0;
  const by = p.byState || {};
  const bar = h("div", { class: "bar campaign" });
  for (const [key, label, n] of parts) {
    const v = n(by);
    if (!v) continue;
    const seg = h("span", { class: "p-" + key, title: label + ": " + fmtInt(v) });
    seg.style.width = (100 * v / total).toFixed(2) + "%"; // CSSOM: allowed under the CSP
    bar.append(seg);
  }
  return h("div", { class: "campaign-progress" }, bar,
    h("ul", { class: "legend" }, parts.map(([key, label, n]) => h("li", { dataset: { part: key } }, h("i", { class: "p-" + key }), label + " " + fmtInt(n(by))))));
}

// fmtDur writes a Go duration ("10m0s") as an operator would ("10m").
function fmtDur(d) { return String(d).replace(/([hm])0s$/, "$1").replace(/h0m$/, "h"); }

function windowText(w) {
  const d = w.days && w.days.length && w.days.length < 7 ? w.days.join(", ") : "every day";
  return d + " " + w.start + "–" + w.end;
}

function retryText(r) {
  return rules.map(([k, l]) => l.toLowerCase() + " " + r[k].attempts + "×" + fmtDur(r[k].delay)).join(", ") + "; jitter " + Math.round(r.jitter * 100) + "%";
}

// newCampaign is the form for a draft campaign.
async function newCampaign() {
  let agent;
  if (can("config:read")) {
    const list = await agents();
    agent = select("agent", [["", "(pick an agent)"], ...list.map((a) => [a.name, a.name])], "");
  } else {
    agent = h("input", { name: "agent", placeholder: "agent name", maxlength: 100 });
  }
  const name = h("input", { name: "name", maxlength: 200, placeholder: "Renewal reminders, March", size: 32 });
  const trunk = h("input", { name: "trunk", placeholder: "(first outbound trunk)", maxlength: 128 });
  const cap = h("input", { name: "maxConcurrent", type: "number", min: 1, max: 1000, value: 5 });
  const zone = h("input", { name: "zone", placeholder: "Europe/Madrid", maxlength: 64 });
  const windows = h("div", { class: "windows", id: "windows" });
  const addWindow = (w) => windows.append(windowRow(w));
  addWindow({ days, start: "09:00", end: "20:00" });
  const retry = h("table", { class: "retry" }, h("thead", {}, h("tr", {}, h("th", {}, "After"), h("th", {}, "Tries again"), h("th", {}, "Waiting"))),
    h("tbody", {}, rules.map(([k, l], i) => h("tr", { dataset: { rule: k } }, h("th", {}, l),
      h("td", {}, h("input", { name: "attempts", type: "number", min: 0, max: 10, value: [2, 2, 1, 1][i] })),
      h("td", {}, h("input", { name: "delay", maxlength: 16, size: 6, value: ["10m", "30m", "1h", "5m"][i] }))))));
  const jitter = h("input", { name: "jitter", type: "number", min: 0, max: 50, value: 10 });
  const out = h("div", { id: "new-campaign-result", role: "alert" });
  const form = h("form", { id: "new-campaign", class: "card", novalidate: true }, h("h2", {}, "New campaign"),
    h("div", { class: "filters" }, field("Name", name), field("Agent", agent), field("Trunk", trunk), field("Calls up at once", cap),
      field("Zone", zone, "for numbers that name no country")),
    h("h3", {}, "Calling windows"), h("p", { class: "hint" }, "On each contact's own clock; a number in international form gives its country's zones, and a contact with several zones is called when every one of them is inside a window."),
    windows, h("button", { type: "button", class: "more", id: "add-window", onclick: () => addWindow({ days: [], start: "09:00", end: "18:00" }) }, "Add a window"),
    h("h3", {}, "Retries"), h("p", { class: "hint" }, "Voicemail is told apart only when the agent screens who answers (voice.answeringMachine)."), retry,
    h("div", { class: "filters" }, field("Jitter (%)", jitter, "spreads each wait by up to this much either way")),
    h("button", { type: "submit" }, "Create draft"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const problem = (text) => clear(out).append(h("p", { class: "error" }, text));
    if (!name.value.trim()) return problem("Name the campaign.");
    if (!agent.value.trim()) return problem("Pick an agent.");
    const ws = [...windows.children].map((r) => ({
      days: [...r.querySelectorAll("input[name=day]:checked")].map((b) => b.value),
      start: r.querySelector("input[name=start]").value.trim(),
      end: r.querySelector("input[name=end]").value.trim(),
    }));
    if (!ws.length) return problem("Add at least one calling window.");
    if (ws.some((w) => !w.days.length)) return problem("Tick at least one day in each window.");
    const body = { name: name.value.trim(), agent: agent.value.trim(), trunk: trunk.value.trim(), maxConcurrent: Number(cap.value), zone: zone.value.trim(),
      windows: ws.map((w) => (w.days.length === 7 ? { start: w.start, end: w.end } : w)), retry: { jitter: Number(jitter.value) / 100 } };
    for (const tr of retry.querySelectorAll("tbody tr")) {
      body.retry[tr.dataset.rule] = { attempts: Number(tr.querySelector("input[name=attempts]").value), delay: tr.querySelector("input[name=delay]").value.trim() };
    }
    try {
      const c = await api("POST", base, body);
      location.hash = "#/campaigns/" + encodeURIComponent(c.id);
    } catch (e) { problem(explain(e)); }
  });
  return form;
}

// windowRow is one calling window: its days, start and end.
function windowRow(w) {
  const r = h("div", { class: "window" },
    h("span", { class: "days" }, days.map((d) => h("label", {}, h("input", { type: "checkbox", name: "day", value: d, checked: w.days.includes(d) }), " ", d))),
    field("From", h("input", { name: "start", value: w.start, maxlength: 5, size: 5, placeholder: "09:00" })),
    field("To", h("input", { name: "end", value: w.end, maxlength: 5, size: 5, placeholder: "24:00" })),
    h("button", { type: "button", class: "link danger", onclick: () => r.remove() }, "Remove"));
  return r;
}

export async function campaignScreen(main, id) {
  let c = await api("GET", path(id));
  const head = h("div", {});
  const status = h("p", { class: "status", role: "status", id: "campaign-status" });
  const buttons = h("div", { class: "actions", id: "campaign-actions" });
  const progress = h("section", { id: "progress" });
  const upload = h("div", {});
  const contacts = contactList(id);
  main.append(h("p", { class: "crumbs" }, h("a", { href: "#/campaigns" }, "Campaigns"), " / ", c.id), head, buttons, status,
    h("h2", {}, "Progress"), progress, upload, h("h2", {}, "Contacts"), contacts.el);

  const act = async (name) => {
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    say(status, "", "");
    try {
      if (name === "delete") {
        await api("DELETE", path(id));
        location.hash = "#/campaigns";
        return;
      }
      c = await api("POST", path(id) + "/" + name);
      say(status, "The campaign is " + c.status + ".", "ok");
      paint();
      await contacts.reload();
      follow();
    } catch (e) {
      for (const b of buttons.querySelectorAll("button")) b.disabled = false;
      if (e.status !== 401) say(status, actionLabel[name] + " refused: " + explain(e));
    }
  };
  const paint = () => {
    put(clear(head), h("h1", {}, c.name, " ", badge(c.status)),
      h("dl", { class: "facts", id: "campaign" },
        h("dt", {}, "Agent"), h("dd", {}, c.agent),
        h("dt", {}, "Trunk"), h("dd", {}, c.trunk || "the first outbound trunk"),
        h("dt", {}, "Calls up at once"), h("dd", {}, "at most " + fmtInt(c.maxConcurrent) + ", across every box"),
        h("dt", {}, "Windows"), h("dd", {}, c.windows.map(windowText).join("; ")),
        h("dt", {}, "Zone"), h("dd", {}, c.zone || "— (contacts' numbers name theirs)"),
        h("dt", {}, "Retries"), h("dd", {}, retryText(c.retry)),
        h("dt", {}, "Created"), h("dd", {}, fmtTime(c.createdAt), " by ", c.createdBy || "—"),
        h("dt", {}, "Started"), h("dd", {}, fmtTime(c.startedAt)),
        h("dt", {}, "Finished"), h("dd", {}, fmtTime(c.finishedAt))));
    clear(buttons).append(...(actions[c.status] || []).map((name) => {
      const b = h("button", { type: "button", id: "campaign-" + name, class: name === "cancel" || name === "delete" ? "danger" : "" }, actionLabel[name]);
      b.addEventListener("click", () => {
        if (name === "cancel") ask(buttons, ["Cancel this campaign? Waiting contacts are cancelled; calls up go on, without retries. It cannot be started again."], "Cancel campaign", () => act(name));
        else if (name === "delete") ask(buttons, ["Delete this campaign with its contacts? Its calls stay in Calls."], "Delete", () => act(name));
        else act(name);
      });
      return b;
    }));
    const p = c.progress;
    const outcomes = Object.entries(p.byOutcome || {}).sort((a, b) => b[1] - a[1]);
    clear(progress).append(progressBar(p),
      h("ul", { class: "stats", id: "campaign-counts" }, h("li", {}, h("b", {}, fmtInt(p.contacts)), " ", p.contacts === 1 ? "contact" : "contacts"),
        h("li", {}, h("b", {}, fmtInt(p.attempts)), " ", p.attempts === 1 ? "call placed" : "calls placed")),
      h("h3", {}, "Last call's outcome"),
      outcomes.length ? h("ul", { class: "stats", id: "by-outcome" }, outcomes.map(([o, n]) => h("li", { dataset: { outcome: o } }, badge(o, "outcome " + o), " ", fmtInt(n))))
        : h("p", { class: "empty", id: "by-outcome" }, "No call has ended yet."));
    const open = c.status === "draft" || c.status === "running" || c.status === "paused";
    if (open && !upload.firstChild) upload.append(uploadForm(id, async () => {
      c = await api("GET", path(id));
      paint();
      await contacts.reload();
    }));
    if (!open) clear(upload);
    main.dataset.campaignStatus = c.status;
  };
  paint();
  await contacts.first();

  // While the campaign runs, or calls of it are still up, its progress and
  // contacts are read again every 1.5 s; leaving the screen ends it.
  let following = false;
  const follow = () => {
    if (following || !moving(c)) return;
    following = true;
    poll(progress, 1500, async () => {
      c = await api("GET", path(id));
      paint();
      await contacts.reload();
      following = moving(c);
      return !following;
    });
  };
  follow();
}

// uploadForm sends a .csv (text/csv) or .json file of contacts; a refused
// upload lists its bad lines.
function uploadForm(id, done) {
  const file = h("input", { type: "file", name: "file", accept: ".csv,.json,text/csv,application/json" });
  const out = h("div", { id: "upload-result", role: "status" });
  const form = h("form", { id: "upload-contacts", class: "inline", novalidate: true },
    field("Contacts (.csv or .json)", file, "CSV: a header line with number, and optionally zone, identity.NAME and variable columns"),
    h("button", { type: "submit" }, "Upload contacts"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = file.files[0];
    const problem = (...text) => clear(out).append(h("p", { class: "error" }, ...text));
    if (!f) return problem("Choose a .csv or .json file.");
    const type = /\.csv$/i.test(f.name) ? "text/csv" : /\.json$/i.test(f.name) ? "application/json" : "";
    if (!type) return problem(f.name + " is not a .csv or .json file. Nothing was uploaded.");
    clear(out).append(h("p", { class: "hint" }, "Uploading " + f.name + "…"));
    try {
      const r = await send("POST", path(id) + "/contacts", f, type);
      form.reset();
      clear(out).append(h("p", { class: "ok" }, "Added " + count(r.added, "contact") + " from " + f.name + "."));
      await done();
    } catch (e) {
      if (e.status === 401) return;
      const bad = badLines(e);
      if (!bad) return problem(explain(e));
      clear(out).append(h("p", { class: "error" }, f.name + ": " + count(bad.total, "line") + " refused; nothing was added."),
        h("ul", { class: "bad-lines error", id: "bad-lines" }, bad.lines.map((l) => h("li", { dataset: { line: l.line } }, h("b", {}, "line " + l.line), ": " + l.problem))),
        bad.more ? h("p", { class: "error" }, "and " + count(bad.more, "more line") + ".") : null);
    }
  });
  return h("section", { class: "card", id: "upload" }, h("h2", {}, "Upload contacts"),
    h("p", { class: "hint" }, "All or nothing: one bad line refuses the whole file, and every bad line is named. A number already in the campaign is a bad line."), form);
}

// badLines reads the lines a refused upload names ("line 3: number is
// required; line 9: …; and 4 more"), or null for another refusal.
export function badLines(e) {
  if (!(e instanceof ApiError) || e.code !== "campaign_invalid_request") return null;
  const m = /(\d+) contact line\(s\) refused, nothing was added: (.*)$/s.exec(e.message);
  if (!m) return null;
  let rest = m[2];
  let more = 0;
  const tail = /; and (\d+) more$/.exec(rest);
  if (tail) { more = Number(tail[1]); rest = rest.slice(0, tail.index); }
  const lines = rest.split(/; (?=line \d+: )/).map((s) => {
    const l = /^line (\d+): (.*)$/s.exec(s);
    return l ? { line: Number(l[1]), problem: l[2] } : { line: "?", problem: s };
  });
  return { total: Number(m[1]), lines, more };
}

// send posts a file as it is, with its Content-Type, and returns the
// envelope's data (api sends only JSON and forms).
async function send(method, url, body, type) {
  let res;
  try {
    res = await fetch(url, { method, body, headers: { authorization: "Bearer " + session.key(), "content-type": type }, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
  } catch (e) {
    throw new ApiError(0, "network", "The box did not answer: " + e.message);
  }
  let env = null;
  try { env = await res.json(); } catch { /* not JSON */ }
  if (res.ok && env && !env.error) return env.data;
  // A refused key: asking the box again through api signs the operator out.
  if (res.status === 401) await api("GET", "/api/keys/self").catch(() => {});
  const err = env && env.error ? env.error : { code: "http_" + res.status, message: res.statusText || "request failed" };
  throw new ApiError(res.status, err.code, err.message);
}

// contactList is the campaign's contacts in upload order, filtered by
// state, paged by seq; reload reads the rows shown again (their states
// move while the campaign runs).
function contactList(id) {
  const limit = 50;
  const filter = select("state", [["", "All states"], ...states.map((s) => [s, s])], "");
  const cols = [
    { title: "#", class: "num", cell: (k) => String(k.seq) },
    { title: "Number", cell: (k) => k.number },
    { title: "Zones", cell: (k) => k.zones.join(", ") },
    { title: "Identities", cell: (k) => pairs(k.identities) },
    { title: "Variables", cell: (k) => pairs(k.variables) },
    { title: "State", cell: (k) => [badge(k.state), k.reason ? h("small", { class: "hint" }, " " + k.reason) : null] },
    { title: "Calls", class: "num", cell: (k) => fmtInt(k.attempts) },
    { title: "Next try", cell: (k) => fmtTime(k.nextAt) },
    { title: "Last call", cell: (k) => k.lastCallId ? [h("a", { href: "#/calls/" + encodeURIComponent(k.lastCallId), class: "last-call" }, k.lastOutcome || "in progress")] : "—" },
  ];
  const tbl = table(cols, [], { class: "contacts", id: (k) => String(k.seq) });
  const tbody = tbl.querySelector("tbody");
  const more = h("button", { type: "button", class: "more", hidden: true }, "Load more");
  const empty = h("p", { class: "empty", hidden: true }, "No contact here yet.");
  let after = 0;
  const fill = (page, replace) => {
    if (replace) clear(tbody);
    for (const k of page) tbody.append(row(cols, k, { id: (x) => String(x.seq) }));
    if (page.length) after = page[page.length - 1].seq;
    empty.hidden = tbody.children.length > 0;
    tbl.dataset.rows = tbody.children.length;
  };
  const next = async () => {
    const page = await api("GET", path(id) + "/contacts" + qs({ state: filter.value, after, limit }));
    fill(page, false);
    more.hidden = page.length < limit;
  };
  const first = async () => {
    after = 0;
    clear(tbody);
    await next();
  };
  const reload = async () => {
    const n = Math.min(1000, Math.max(limit, tbody.children.length));
    const page = await api("GET", path(id) + "/contacts" + qs({ state: filter.value, limit: n }));
    fill(page, true);
    more.hidden = page.length < n;
  };
  more.addEventListener("click", () => next().catch((e) => notice(explain(e))));
  filter.addEventListener("change", () => first().catch((e) => notice(explain(e))));
  return { el: h("div", { id: "contacts" }, h("form", { class: "filters", id: "contact-filters" }, field("State", filter)), tbl, empty, more), first, reload };
}

// pairs writes identities or variables as name=value, one a line.
function pairs(m) {
  const e = Object.entries(m || {});
  return e.length ? e.map(([k, v], i) => [i ? h("br", {}) : null, k + "=" + v]) : "—";
}
