// Keys: list, create with scopes (the secret shown once), revoke.
import { h, api, self, table, badge, fmtTime, field, explain, ask, clear } from "./lib.js";

export async function keysScreen(main) {
  const keys = await api("GET", "/api/keys");
  const name = h("input", { name: "name", required: true, maxlength: 100, placeholder: "ci-deploy" });
  const boxes = self.allScopes.map((s) => h("label", { class: "scope" },
    h("input", { type: "checkbox", name: "scope", value: s, disabled: !self.scopes.includes(s) }), " ", s));
  const out = h("div", { id: "key-result", role: "status" });
  const form = h("form", { id: "new-key", class: "card", novalidate: true }, h("h2", {}, "New key"), field("Name", name),
    h("fieldset", { class: "scopes" }, h("legend", {}, "Scopes (a key can grant only the scopes it holds)"), boxes),
    h("button", { type: "submit" }, "Create key"), out);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const scopes = [...form.querySelectorAll("input[name=scope]:checked")].map((b) => b.value);
    if (!name.value.trim()) { clear(out).append(h("p", { class: "error" }, "Enter a name.")); return; }
    if (!scopes.length) { clear(out).append(h("p", { class: "error" }, "Pick at least one scope.")); return; }
    try {
      const r = await api("POST", "/api/keys", { name: name.value.trim(), scopes });
      // The secret is shown once, in the page only: never in a URL, never stored.
      const secret = h("input", { id: "new-secret", readonly: true, value: r.secret, size: 44 });
      clear(out).append(h("p", { class: "ok" }, "Key ", h("b", {}, r.key.name), " created. Copy its secret now: it is not shown again."), secret,
        h("button", { type: "button", onclick: () => { secret.select(); navigator.clipboard?.writeText(r.secret); } }, "Copy"));
      list.replaceWith(list = keyTable(await api("GET", "/api/keys")));
    } catch (e) { clear(out).append(h("p", { class: "error" }, explain(e))); }
  });
  let list = keyTable(keys);
  main.append(h("h1", {}, "Keys"), list, form);
}

function keyTable(keys) {
  return table([
    { title: "Name", cell: (k) => k.name },
    { title: "Scopes", cell: (k) => k.scopes.join(", ") },
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
