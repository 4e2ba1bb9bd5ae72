// Studio's shell: sign-in, navigation and the router. Screens live in
// their own modules and render into the main area.
import { h, clear, api, session, self, can, setUnauthorizedHandler, explain, notice } from "./lib.js";
import { sessionsScreen, sessionScreen } from "./sessions.js";
import { callsScreen, callScreen } from "./calls.js";
import { agentsScreen } from "./agents.js";
import { keysScreen } from "./keys.js";
import { peopleScreen } from "./people.js";
import { runsScreen, runScreen } from "./runs.js";
import { costsScreen } from "./costs.js";
import { systemScreen } from "./system.js";
import { ragScreen, collectionScreen } from "./rag.js";
import { playgroundScreen } from "./playground.js";
import { storesScreen, storeScreen } from "./stores.js";
import { webhooksScreen, webhookScreen } from "./webhooks.js";
import { campaignsScreen, campaignScreen } from "./campaigns.js";

// The screens in the sidebar. scope is what a key needs to open it.
const screens = [
  { id: "sessions", title: "Sessions", scope: "sessions:read", render: sessionsScreen, detail: sessionScreen },
  { id: "playground", title: "Playground", scope: "agents:run", render: playgroundScreen },
  { id: "calls", title: "Calls", scope: "voice", render: callsScreen, detail: callScreen },
  { id: "campaigns", title: "Campaigns", scope: "voice", render: campaignsScreen, detail: campaignScreen },
  { id: "agents", title: "Agents", scope: "config:read", render: agentsScreen },
  { id: "rag", title: "RAG", scope: "rag:read", render: ragScreen, detail: collectionScreen },
  { id: "stores", title: "Memory stores", scope: "stores:read", render: storesScreen, detail: storeScreen },
  { id: "people", title: "People", scope: "memory:read", render: peopleScreen },
  { id: "runs", title: "Runs", scope: "runs:read", render: runsScreen, detail: runScreen },
  { id: "costs", title: "Costs", scope: "runs:read", render: costsScreen },
  { id: "system", title: "System", scope: "config:read", render: systemScreen },
  { id: "webhooks", title: "Webhooks", scope: "config:read", render: webhooksScreen, detail: webhookScreen },
  { id: "keys", title: "Keys", scope: "keys:admin", render: keysScreen },
];

const root = document.getElementById("root");

setUnauthorizedHandler(() => {
  session.clear();
  signIn("The box refused this key (revoked or invalid). Nothing was changed. Sign in with a valid key.");
});

function signIn(message) {
  root.dataset.state = "signin";
  const key = h("input", { type: "password", name: "key", id: "signin-key", autocomplete: "off", required: true, placeholder: "API key", maxlength: 200 });
  const err = h("p", { class: "error", id: "signin-error", role: "alert" }, message || "");
  const form = h("form", { class: "signin", id: "signin" },
    h("h1", {}, "Stackbone Studio"),
    h("p", {}, "Sign in with an API key. It stays in this tab only and is forgotten when the tab closes."),
    key, h("button", { type: "submit" }, "Sign in"), err);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const k = key.value.trim();
    if (!k) { err.textContent = "Enter an API key."; return; }
    try {
      const me = await api("GET", "/api/keys/self", undefined, { key: k });
      session.set(k);
      session.saveSelf(me);
      Object.assign(self, me);
      shell();
    } catch (e) {
      err.textContent = e.status === 401 ? "This key is invalid or revoked." : explain(e);
    }
  });
  clear(root).append(form);
  key.focus();
}

let main;

function shell() {
  const nav = h("nav", { class: "side" },
    h("div", { class: "brand" }, "Stackbone ", h("b", {}, "Studio")),
    screens.map((s) => h("a", {
      href: "#/" + s.id, id: "nav-" + s.id, class: can(s.scope) ? "" : "disabled",
      title: can(s.scope) ? s.title : "this key lacks the scope " + s.scope,
    }, s.title)),
    h("div", { class: "who" }, h("span", { id: "whoami" }, self.name),
      h("button", { type: "button", class: "link", id: "signout", onclick: () => { session.clear(); location.hash = ""; signIn(); } }, "Sign out")));
  main = h("main", { id: "main" });
  clear(root).append(nav, h("div", { class: "content" }, h("div", { id: "notice" }), main));
  route();
}

// route renders the screen the address names: #/screen or #/screen/id.
async function route() {
  if (!main || !session.key()) return;
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  const [id, ...rest] = path.split("/");
  const sc = screens.find((s) => s.id === id) || screens[0];
  for (const a of document.querySelectorAll("nav.side a")) a.classList.toggle("active", a.id === "nav-" + sc.id);
  clear(document.getElementById("notice"));
  // Each route draws into a main area of its own: a screen still loading
  // when the address changes again (a quick click on, a new collection's
  // page) finishes in an area no longer on the page, and neither draws
  // over the screen asked for since nor says it is ready.
  const mine = h("main", { id: "main" });
  main.replaceWith(mine);
  main = mine;
  root.dataset.state = "loading";
  mine.dataset.screen = sc.id;
  if (!can(sc.scope)) {
    mine.append(h("h1", {}, sc.title), h("p", { class: "readonly", dataset: { scope: sc.scope } },
      "This key cannot open " + sc.title + ": it lacks the scope ", h("code", {}, sc.scope), ". Ask for a key that holds it."));
    root.dataset.state = "ready";
    return;
  }
  const params = new URLSearchParams(query || "");
  try {
    if (rest.length && sc.detail) await sc.detail(mine, decodeURIComponent(rest.join("/")), params);
    else await sc.render(mine, params);
  } catch (e) {
    if (e.status !== 401) mine.append(h("p", { class: "error", role: "alert" }, explain(e)));
  }
  if (mine !== main) return; // a later route has the page
  // A refused key has put the sign-in form up meanwhile: it stays.
  if (root.dataset.state !== "signin") root.dataset.state = "ready";
}

window.addEventListener("hashchange", route);

async function start() {
  if (!session.key()) return signIn();
  const cached = session.cachedSelf();
  if (cached) {
    // A reload paints from the scopes learnt at sign-in while the box is
    // asked again; a change of scopes redraws, a refused key signs out.
    Object.assign(self, cached);
    shell();
  }
  try {
    const me = await api("GET", "/api/keys/self");
    const changed = !cached || JSON.stringify(me.scopes) !== JSON.stringify(cached.scopes);
    session.saveSelf(me);
    Object.assign(self, me);
    if (changed) shell();
  } catch (e) {
    if (e.status !== 401 && !cached) signIn(explain(e));
  }
}

start().catch((e) => notice(explain(e)));
