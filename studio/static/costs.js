// Costs: what calls and text sessions used and cost by the price table of
// the config, per agent or per day, and a call's usage and cost per part.
// Usage with no price in the table says "not priced", never 0.
import { h, api, qs, table, field, select, badge, agentFilter, fmtInt, fmtSeconds } from "./lib.js";

const partNames = { model: "Model", speechToText: "Speech-to-text", textToSpeech: "Text-to-speech", telephony: "Telephony", text: "Text turns" };

// money writes an amount in its currency, with the digits small amounts
// need (a call's tokens cost fractions of a cent).
export function money(v, currency) {
  if (v === null || v === undefined) return badge("not priced", "unpriced");
  return new Intl.NumberFormat("en-US", { style: "currency", currency: currency || "USD", minimumFractionDigits: 2, maximumFractionDigits: 6 }).format(v);
}

// totalCell is a total: the sum, or "not priced" with what is known of it
// and the parts that have no price.
function totalCell(cost, currency) {
  if (cost.total !== null && cost.total !== undefined) return h("b", {}, money(cost.total, currency));
  return h("span", {}, money(null), " (priced parts: ", money(cost.priced, currency), "; no price for ",
    cost.unpriced.map((p) => (partNames[p] || p).toLowerCase()).join(", "), ")");
}

// callCost is a call's usage and cost per part, for its detail screen.
export function callCost(c) {
  const u = c.usage;
  if (!u) return h("p", { class: "hint" }, "This call recorded no usage.");
  const cost = c.cost;
  const tokens = (m) => fmtInt(m.inputTokens) + " in, " + fmtInt(m.outputTokens) + " out tokens";
  const by = (m, fmt) => {
    const ids = Object.keys(m || {}).sort();
    return ids.length > 1 || (ids.length === 1 && ids[0]) ? " (" + ids.map((id) => id + ": " + fmt(m[id])).join("; ") + ")" : "";
  };
  const rows = [
    { part: "model", used: tokens(u.model) + by(u.model.byModel, tokens) },
    { part: "speechToText", used: fmtSeconds(u.speechToText.seconds) + " of audio" + by(u.speechToText.byModel, fmtSeconds) },
    { part: "textToSpeech", used: fmtInt(u.textToSpeech.characters) + " characters" + by(u.textToSpeech.byModel, fmtInt) },
    { part: "telephony", used: u.telephony.trunk ? fmtSeconds(u.telephony.seconds) + " answered on trunk " + u.telephony.trunk : "not a phone line" },
  ];
  return h("div", {},
    table([
      { title: "Part", cell: (r) => partNames[r.part] },
      { title: "Used", cell: (r) => r.used },
      { title: "Cost", class: "num", cell: (r) => (cost ? money(cost[r.part], cost.currency) : "—") },
    ], rows, { id: (r) => r.part, class: "call-cost" }),
    cost ? h("p", { id: "call-cost-total" }, "Total: ", totalCell(cost, cost.currency))
      : h("p", { class: "hint", id: "call-cost-total" }, "Priced once the call ends."));
}

// costsScreen totals calls and text turns per agent or per day (UTC).
export async function costsScreen(main, params) {
  const f = { by: params.get("by") || "agent", agent: params.get("agent") || "", from: params.get("from") || "", to: params.get("to") || "" };
  const day = (d, end) => (d ? new Date(d + "T00:00:00Z").getTime() + (end ? 86400000 : 0) : null);
  const query = { by: f.by, agent: f.agent, from: f.from ? new Date(day(f.from)).toISOString() : "", to: f.to ? new Date(day(f.to, true)).toISOString() : "" };
  const totals = await api("GET", "/api/costs" + qs(query));
  const form = h("form", { class: "filters", id: "cost-filters" },
    field("Per", select("by", [["agent", "agent"], ["day", "day (UTC)"]], f.by)),
    field("Agent", await agentFilter("agent", f.agent)),
    field("From", h("input", { name: "from", type: "date", value: f.from })),
    field("To", h("input", { name: "to", type: "date", value: f.to })),
    h("button", { type: "submit" }, "Show"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); location.hash = "#/costs" + qs(Object.fromEntries(new FormData(form))); });
  form.addEventListener("change", (ev) => { if (ev.target.tagName === "SELECT") form.requestSubmit(); });
  const part = (p) => ({ title: partNames[p], class: "num", cell: (t) => money(t.cost[p], t.currency) });
  const list = totals.rows.length ? table([
    { title: f.by === "day" ? "Day" : "Agent", cell: (t) => t.key },
    { title: "Calls", class: "num", cell: (t) => fmtInt(t.calls) },
    { title: "Sessions", class: "num", cell: (t) => fmtInt(t.sessions) },
    part("model"), part("speechToText"), part("textToSpeech"), part("telephony"), part("text"),
    { title: "Total", class: "num", cell: (t) => totalCell(t.cost, t.currency) },
  ], totals.rows, { id: (t) => t.key + "/" + t.currency, class: "costs" }) : h("p", { class: "empty" }, "No call or text turn in this period.");
  main.append(h("h1", {}, "Costs"),
    h("p", { class: "hint" }, "What calls and text turns cost by the price table of the config (providers' model prices, trunks' prices per minute). ",
      "A call is priced when it ends; usage whose model or trunk has no price is counted and shown as not priced."),
    form, list);
}
