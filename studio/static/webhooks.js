// Webhooks: subscriptions (the signing secret shown once), each with its
// delivery log (every attempt's status, latency or error) and replay.
import { h, api, can, table, badge, fmtTime, field, explain, ask, clear, readOnlyNote, poll } from "./lib.js";

export async function webhooksScreen(main) {
  const [subs, types] = await Promise.all([api("GET", "/api/webhooks"), api("GET", "/api/webhooks/event-types")]);
  let list = subTable(subs);
  main.append(h("h1", {}, "Webhooks"),
    h("p", {}, "Each event is signed (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature) and retried with backoff for 24 hours. Receivers deduplicate on webhook-id."),
    list);
  if (!can("config:write")) { main.append(readOnlyNote("config:write", "create, delete or replay webhooks")); return; }
  const url = h("input", { name: "url", type: "url", required: true, maxlength: 2000, placeholder: "https://crm.example.com/hooks/stackbone", size: 50 });
  const description = h("input", { name: "description", maxlength: 200, placeholder: "CRM" });
  const boxes = types.map((t) => h("label", { class: "scope" }, h("input", { type: "checkbox", name: "event", value: t }), " ", t));
  const transcript = h("label", {}, h("input", { type: "checkbox", name: "includeTranscript" }), " include what was said (a call's heard transcript)");
  const out = h("div", { id: "webhook-result", role: "status" });
  const form = h("form", { id: "new-webhook", class: "card", novalidate: true }, h("h2", {}, "New subscription"),
    field("URL", url), field("Description", description),
    h("fieldset", { class: "scopes" }, h("legend", {}, "Events"), boxes), transcript,
    h("button", { type: "submit" }, "Create subscription"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const events = [...form.querySelectorAll("input[name=event]:checked")].map((b) => b.value);
    if (!url.value.trim()) { clear(out).append(h("p", { class: "error" }, "Enter the receiver's URL.")); return; }
    if (!events.length) { clear(out).append(h("p", { class: "error" }, "Pick at least one event.")); return; }
    try {
      const s = await api("POST", "/api/webhooks", { url: url.value.trim(), events, description: description.value.trim(),
        includeTranscript: form.querySelector("input[name=includeTranscript]").checked });
      // The secret is shown once, in the page only.
      const secret = h("input", { id: "new-webhook-secret", readonly: true, value: s.secret, size: 56 });
      clear(out).append(h("p", { class: "ok" }, "Subscription created. Copy its signing secret now: it is not shown again."), secret,
        h("button", { type: "button", onclick: () => { secret.select(); navigator.clipboard?.writeText(s.secret); } }, "Copy"));
      list.replaceWith(list = subTable(await api("GET", "/api/webhooks")));
    } catch (e) { clear(out).append(h("p", { class: "error" }, explain(e))); }
  });
  main.append(form);
}

function subTable(subs) {
  return table([
    { title: "URL", cell: (s) => h("a", { href: "#/webhooks/" + encodeURIComponent(s.id) }, s.url) },
    { title: "Events", cell: (s) => s.events.join(", ") },
    { title: "Transcript", cell: (s) => (s.includeTranscript ? "included" : "—") },
    { title: "Description", cell: (s) => s.description || "—" },
    { title: "Created", cell: (s) => fmtTime(s.createdAt) },
  ], subs, { class: "webhooks", href: (s) => "#/webhooks/" + encodeURIComponent(s.id) });
}

export async function webhookScreen(main, id) {
  const s = await api("GET", "/api/webhooks/" + encodeURIComponent(id));
  const path = "/api/webhooks/" + encodeURIComponent(id);
  const log = h("div", { id: "deliveries" });
  const draw = async () => {
    const list = await api("GET", path + "/deliveries?limit=100");
    clear(log).append(list.length ? deliveryTable(list, path) : h("p", { class: "empty" }, "No delivery yet."));
    log.dataset.rows = list.length;
    return false; // keep refreshing while the screen is open
  };
  const del = can("config:write") ? h("button", { type: "button", class: "danger", id: "delete-webhook", onclick: (ev) =>
    ask(ev.target, ["Delete this subscription? Its deliveries and their log go with it; queued deliveries are dropped."], "Delete", async () => {
      try {
        await api("DELETE", path);
        location.hash = "#/webhooks";
      } catch (e) { ev.target.after(h("span", { class: "error" }, explain(e))); }
    }) }, "Delete subscription") : readOnlyNote("config:write", "delete or replay");
  main.append(h("p", { class: "crumbs" }, h("a", { href: "#/webhooks" }, "Webhooks"), " / ", s.id),
    h("h1", {}, s.url),
    h("dl", { class: "facts", id: "webhook" },
      h("dt", {}, "Events"), h("dd", {}, s.events.join(", ")),
      h("dt", {}, "Transcript"), h("dd", {}, s.includeTranscript ? "included" : "not sent"),
      h("dt", {}, "Description"), h("dd", {}, s.description || "—"),
      h("dt", {}, "Created"), h("dd", {}, fmtTime(s.createdAt), " by ", s.createdBy)),
    del, h("h2", {}, "Deliveries"), log);
  await draw();
  poll(log, 2000, draw);
}

function attemptText(a) {
  const what = a.statusCode != null ? String(a.statusCode) : (a.error || "no answer");
  return (a.replay ? "replay " : "#" + a.attempt + " ") + what + " in " + a.latencyMs + " ms";
}

function deliveryTable(list, path) {
  return table([
    { title: "Created", cell: (d) => fmtTime(d.createdAt) },
    { title: "Event", cell: (d) => d.eventType },
    { title: "Event id", cell: (d) => h("code", {}, d.eventId) },
    { title: "Status", cell: (d) => badge(d.status) },
    { title: "Attempts", cell: (d) => h("ol", { class: "attempts" }, d.attempts.map((a) => h("li", {}, attemptText(a), " · ", fmtTime(a.at)))) },
    { title: "", cell: (d) => (can("config:write") ? h("button", { type: "button", class: "replay", onclick: async (ev) => {
      ev.target.disabled = true;
      try {
        await api("POST", path + "/deliveries/" + encodeURIComponent(d.id) + "/replay");
        ev.target.after(h("span", { class: "ok" }, " sent again"));
      } catch (e) { ev.target.after(h("span", { class: "error" }, explain(e))); }
    } }, "Replay") : "") },
  ], list, { class: "deliveries" });
}
