package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stackbone/box/auth"
)

// Any key can learn its own scopes; keys:admin lists, creates and revokes
// keys, but a key can only grant scopes it holds.
func TestKeysRoutes(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	ctx := context.Background()
	reader, _, err := b.keys.Create(ctx, "reader", []string{auth.ScopeConfigRead})
	if err != nil {
		t.Fatal(err)
	}
	env := b.expect("GET", "/api/keys/self", reader, "", 200, "")
	var self struct {
		Name      string   `json:"name"`
		Scopes    []string `json:"scopes"`
		AllScopes []string `json:"allScopes"`
	}
	if err := json.Unmarshal(env.Data, &self); err != nil || self.Name != "reader" || strings.Join(self.Scopes, ",") != "config:read" ||
		len(self.AllScopes) != len(auth.AllScopes) || strings.Contains(string(env.Data), reader) {
		t.Fatalf("self: %s", env.Data)
	}
	b.expect("GET", "/api/keys/self", "", "", 401, "unauthorized")
	b.expect("GET", "/api/keys", reader, "", 403, "forbidden")
	b.expect("POST", "/api/keys", reader, `{"name":"x","scopes":["config:read"]}`, 403, "forbidden")

	// A key admin that lacks voice cannot mint a key that has it.
	admin, _, err := b.keys.Create(ctx, "keyadmin", []string{auth.ScopeKeysAdmin, auth.ScopeRunsRead})
	if err != nil {
		t.Fatal(err)
	}
	b.expect("POST", "/api/keys", admin, `{"name":"wider","scopes":["voice"]}`, 403, "forbidden")
	b.expect("POST", "/api/keys", admin, `{"name":"","scopes":["runs:read"]}`, 400, "invalid_request")
	b.expect("POST", "/api/keys", admin, `{"name":"`+strings.Repeat("n", 101)+`","scopes":["runs:read"]}`, 400, "invalid_request")
	b.expect("POST", "/api/keys", admin, `{"name":"tab\there","scopes":["runs:read"]}`, 400, "invalid_request")
	b.expect("POST", "/api/keys", admin, `{"name":"none","scopes":[]}`, 400, "invalid_request")
	b.expect("POST", "/api/keys", admin, `{"name":"odd","scopes":["root"]}`, 400, "invalid_request")
	b.expect("POST", "/api/keys", admin, `{"name":"x","scopes":["runs:read"],"extra":1}`, 400, "invalid_request")
	env = b.expect("POST", "/api/keys", admin, `{"name":"ci","scopes":["runs:read"]}`, 201, "")
	var made struct {
		Key    auth.Key `json:"key"`
		Secret string   `json:"secret"`
	}
	if err := json.Unmarshal(env.Data, &made); err != nil || made.Key.Name != "ci" || !strings.HasPrefix(made.Secret, "sbk_") {
		t.Fatalf("create: %s", env.Data)
	}
	b.expect("GET", "/api/runs", made.Secret, "", 200, "")
	b.expect("POST", "/api/keys", admin, `{"name":"ci","scopes":["runs:read"]}`, 409, "key_exists")
	env = b.expect("GET", "/api/keys", admin, "", 200, "")
	if strings.Contains(string(env.Data), made.Secret) || !strings.Contains(string(env.Data), `"name":"ci"`) {
		t.Fatalf("list: %s", env.Data)
	}
	b.expect("DELETE", "/api/keys/ci", admin, "", 200, "")

	// A key that may act for persons says whom, as the CLI asks: never
	// trusted with every person by leaving it out.
	wide, _, err := b.keys.Create(ctx, "widekeyadmin", []string{auth.ScopeKeysAdmin, auth.ScopeAgentsRun, auth.ScopeMemoryRead})
	if err != nil {
		t.Fatal(err)
	}
	before := b.keyCount()
	for _, body := range []string{
		`{"name":"app","scopes":["agents:run"]}`,
		`{"name":"app","scopes":["memory:read"],"identities":{"customerId":"c1"},"anyIdentity":true}`,
		`{"name":"app","scopes":["agents:run"],"identities":{}}`,
		`{"name":"app","scopes":["agents:run"],"identities":{"customerId":"*"}}`,
		`{"name":"app","scopes":["agents:run"],"identities":{"customerId":""}}`,
	} {
		b.expect("POST", "/api/keys", wide, body, 400, "key_identity_required")
	}
	if n := b.keyCount(); n != before {
		t.Fatalf("%d keys made by refused requests", n-before)
	}
	env = b.expect("POST", "/api/keys", wide, `{"name":"app","scopes":["agents:run"],"identities":{"customerId":"cust_*"}}`, 201, "")
	if !strings.Contains(string(env.Data), `"identities":{"customerId":"cust_*"}`) || !strings.Contains(string(env.Data), `"anyIdentity":false`) {
		t.Fatalf("restricted key: %s", env.Data)
	}
	env = b.expect("POST", "/api/keys", wide, `{"name":"backend","scopes":["agents:run"],"anyIdentity":true}`, 201, "")
	if !strings.Contains(string(env.Data), `"anyIdentity":true`) {
		t.Fatalf("trusted key: %s", env.Data)
	}
	env = b.expect("GET", "/api/keys", wide, "", 200, "")
	if !strings.Contains(string(env.Data), `"name":"app","scopes":["agents:run"],"identities":{"customerId":"cust_*"}`) {
		t.Fatalf("list: %s", env.Data)
	}
	b.expect("GET", "/api/runs", made.Secret, "", 401, "unauthorized")
	b.expect("DELETE", "/api/keys/ci", admin, "", 404, "key_not_found")
}

func (b *box) keyCount() int {
	b.t.Helper()
	var n int
	if err := b.pool.QueryRow(b.t.Context(), `SELECT count(*) FROM stackbone_platform.api_keys`).Scan(&n); err != nil {
		b.t.Fatal(err)
	}
	return n
}
