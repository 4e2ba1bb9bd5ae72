// Keys: list, create with scopes (the secret shown once), revoke.
import { h, api, self, table, badge, fmtTime, field, explain, ask, clear } from "./lib.js";

export async function keysScreen(main) {
  const keys = await api("GET", "/api/keys");
  const name = h("input", { name: "name", required: true, maxlength: 100, placeholder: "ci-deploy" });
  const boxes = self.allScopes.map((s) => h("label", { class: "scope" },
    h("input", { type: "checkbox", name: "scope", value: s, disabled: !self.scopes.includes(s) }), " ", s));
  const out = h("div", { id: "key-result", role: "status" });
  // Each new key's secret stays here until the operator dismisses it: a
  // refusal or another key never wipes one (it is not shown again).
  const secrets = h("div", { id: "key-secrets" });
  // A key that may act for persons says whom, as the CLI asks: one person
  // (or a pattern of them), or any person its holder names.
  const idField = h("input", { name: "identity-field", value: "customerId", maxlength: 100, "aria-label": "Identity field" });
  const idValue = h("input", { name: "identity-value", maxlength: 500, placeholder: "cust_42 or tenant-a:*", "aria-label": "Identity value or pattern" });
  const whom = h("fieldset", { class: "whom", hidden: true }, h("legend", {}, "Acts for"),
    h("label", {}, h("input", { type: "radio", name: "whom", value: "one", checked: true }), " one person, or persons matching a pattern (* is any run of characters): "),
    idField, " = ", idValue,
    h("label", {}, h("input", { type: "radio", name: "whom", value: "any" }), " any person the caller names (a trusted backend)"));
  const personScopes = self.personScopes || [];
  const showWhom = () => {
    whom.hidden = ![...form.querySelectorAll("input[name=scope]:checked")].some((b) => personScopes.includes(b.value));
  };
  const form = h("form", { id: "new-key", class: "card", novalidate: true, onchange: () => showWhom() }, h("h2", {}, "New key"), field("Name", name),
    h("fieldset", { class: "scopes" }, h("legend", {}, "Scopes (a key can grant only the scopes it holds)"), boxes),
    whom, h("button", { type: "submit" }, "Create key"), out, secrets);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const scopes = [...form.querySelectorAll("input[name=scope]:checked")].map((b) => b.value);
    if (!name.value.trim()) { clear(out).append(h("p", { class: "error" }, "Enter a name.")); return; }
    if (!scopes.length) { clear(out).append(h("p", { class: "error" }, "Pick at least one scope.")); return; }
    const body = { name: name.value.trim(), scopes };
    if (!whom.hidden) {
      if (form.querySelector("input[name=whom]:checked").value === "any") body.anyIdentity = true;
      else if (!idField.value.trim() || !idValue.value.trim()) { clear(out).append(h("p", { class: "error" }, "Say whom the key acts for: an identity field and its value or pattern.")); return; }
      else body.identities = { [idField.value.trim()]: idValue.value.trim() };
    }
    try {
      const r = await api("POST", "/api/keys", body);
      clear(out);
      name.value = "";
      secrets.prepend(secretOnce(r));
      list.replaceWith(list = keyTable(await api("GET", "/api/keys")));
    } catch (e) { clear(out).append(h("p", { class: "error" }, explain(e))); }
  });
  let list = keyTable(keys);
  main.append(h("h1", {}, "Keys"), list, form);
}

// secretOnce shows a new key's secret, in the page only (never in a URL,
// never stored), until Dismiss.
function secretOnce(r) {
  const secret = h("input", { class: "secret", readonly: true, value: r.secret, size: 44, "aria-label": "Secret of " + r.key.name });
  const box = h("div", { class: "secret-once", dataset: { name: r.key.name } },
    h("p", { class: "ok" }, "Key ", h("b", {}, r.key.name), " created. Copy its secret now: it is not shown again."), secret,
    h("button", { type: "button", onclick: () => { secret.select(); navigator.clipboard?.writeText(r.secret); } }, "Copy"), " ",
    h("button", { type: "button", class: "link dismiss", onclick: () => box.remove() }, "I have copied it"));
  return box;
}

function keyTable(keys) {
  return table([
    { title: "Name", cell: (k) => k.name },
    { title: "Scopes", cell: (k) => k.scopes.join(", ") },
    { title: "Acts for", cell: (k) => (k.anyIdentity ? "any person" : Object.entries(k.identities || {}).map(([f, v]) => f + " = " + v).join(", ")) },
    { title: "Created", cell: (k) => fmtTime(k.createdAt) },
    { title: "State", cell: (k) => (k.revokedAt ? badge("revoked") : badge("live")) },
    { title: "", cell: (k) => (k.revokedAt ? "revoked " + fmtTime(k.revokedAt) : h("button", { type: "button", class: "danger revoke", onclick: (ev) =>
      ask(ev.target, ["Revoke ", h("b", {}, k.name), "? Every client using it is refused at once." + (k.name === self.name ? " This is the key you are signed in with." : "")], "Revoke", async () => {
        try {
          await api("DELETE", "/api/keys/" + encodeURIComponent(k.name));
          window.dispatchEvent(new HashChangeEvent("hashchange"));
        } catch (e) { ev.target.after(h("span", { class: "error" }, explain(e))); }
      }) }, "Revoke")) },
  ], keys, { id: (k) => k.name, class: "keys" });
}
