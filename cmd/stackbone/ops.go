package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/postgres/pgcluster"
	"github.com/stackbone/box/runs"
)

func keysCmd() *cobra.Command {
	var configPath, dataDir string
	cmd := &cobra.Command{Use: "keys", Short: "Manage API keys (talks to the database directly)"}
	cmd.PersistentFlags().StringVar(&configPath, "config", "", "config file holding database.url (else STACKBONE_DATABASE_URL)")
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", ".stackbone", "where `stackbone dev` keeps its private PostgreSQL, used when no database URL is given")
	open := func(cmd *cobra.Command) (*auth.Store, func(), error) {
		u, stop, err := devAwareDatabaseURL(cmd.Context(), configPath, dataDir)
		if err != nil {
			return nil, nil, err
		}
		pool, err := pgxpool.New(cmd.Context(), u)
		if err != nil {
			stop()
			return nil, nil, err
		}
		return auth.NewStore(pool), func() { pool.Close(); stop() }, nil
	}
	var (
		scopes, idents []string
		role           string
		anyIdentity    bool
	)
	create := &cobra.Command{
		Use:   "create NAME (--scope S,... | --role R) [--identity FIELD=VALUE | --any-identity]",
		Short: "Create a key; its secret is printed once",
		Long: "Create a key with the scopes given (--scope) or a role's (--role " + roleNames() + ").\n" +
			"A key that may act for a person (" + strings.Join(auth.PersonScopes, ", ") + ") must also say whom:\n" +
			"  --identity customerId=cust_42     only that person (a browser or a customer-facing app)\n" +
			"  --identity 'customerId=tenant-a:*' persons whose customerId matches (* is any run of characters)\n" +
			"  --any-identity                    any person the caller names (a trusted backend)",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			chosen, allowed, err := keySpec(scopes, role, idents, anyIdentity)
			if err != nil {
				return err
			}
			store, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			secret, k, err := store.CreateRestricted(cmd.Context(), args[0], chosen, allowed)
			if err != nil {
				return err
			}
			who := "any identity the caller names"
			if k.Restricted() {
				who = "only " + identitiesText(k.Identities)
			}
			fmt.Fprintf(os.Stderr, "created key %s with scopes %s, acting for %s; the secret is shown once:\n", k.Name, strings.Join(k.Scopes, ","), who)
			fmt.Println(secret)
			return nil
		},
	}
	create.Flags().StringSliceVar(&scopes, "scope", nil, "scopes: "+strings.Join(auth.AllScopes, ", "))
	create.Flags().StringVar(&role, "role", "", "a named set of scopes: "+roleNames())
	create.Flags().StringArrayVar(&idents, "identity", nil, "FIELD=VALUE or FIELD=PATTERN the key may act for (repeatable)")
	create.Flags().BoolVar(&anyIdentity, "any-identity", false, "the key is trusted to name any identity (a backend)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List keys",
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			keys, err := store.List(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSCOPES\tIDENTITIES\tCREATED\tREVOKED")
			for _, k := range keys {
				rev := "-"
				if k.RevokedAt != nil {
					rev = k.RevokedAt.Format(time.RFC3339)
				}
				who := "any"
				if k.Restricted() {
					who = identitiesText(k.Identities)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Name, strings.Join(k.Scopes, ","), who, k.CreatedAt.Format(time.RFC3339), rev)
			}
			return tw.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a key",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			return store.Revoke(cmd.Context(), args[0])
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

// devAwareDatabaseURL is databaseURL, else the private cluster `stackbone
// dev` keeps under dataDir (reused while dev runs, started and afterwards
// stopped when it does not), so the CLI finds the dev database on its own.
func devAwareDatabaseURL(ctx context.Context, configPath, dataDir string) (string, func(), error) {
	u, err := databaseURL(configPath)
	if err == nil {
		return u, func() {}, nil
	}
	pgDir := filepath.Join(dataDir, "postgres")
	if _, serr := os.Stat(filepath.Join(pgDir, "data", "PG_VERSION")); serr != nil {
		return "", nil, fmt.Errorf("%w (and no dev database under %s)", err, pgDir)
	}
	cluster, cerr := pgcluster.Start(ctx, pgcluster.Config{Dir: pgDir})
	if cerr != nil {
		return "", nil, fmt.Errorf("the dev database under %s: %w", pgDir, cerr)
	}
	stop := func() {
		if cluster.Started() {
			_ = cluster.Stop(context.WithoutCancel(ctx))
		}
	}
	return cluster.URL(pgcluster.DefaultDatabase), stop, nil
}

// keySpec turns the flags of `keys create` into scopes and an identity
// restriction (nil: trusted). Scopes are never implied: a key gets what
// --scope or --role names, and a key that may act for a person says whom.
func keySpec(scopes []string, role string, idents []string, anyIdentity bool) ([]string, map[string]string, error) {
	switch {
	case len(scopes) > 0 && role != "":
		return nil, nil, errors.New("give --scope or --role, not both")
	case role != "":
		rs, ok := auth.Roles[role]
		if !ok {
			return nil, nil, fmt.Errorf("unknown role %q; roles: %s", role, roleNames())
		}
		scopes = rs
	case len(scopes) == 0:
		return nil, nil, fmt.Errorf("a key needs --scope (%s) or --role (%s)", strings.Join(auth.AllScopes, ", "), roleNames())
	}
	var allowed map[string]string
	for _, kv := range idents {
		field, value, ok := strings.Cut(kv, "=")
		if !ok || field == "" || value == "" {
			return nil, nil, fmt.Errorf("--identity %q: want FIELD=VALUE, such as customerId=cust_42", kv)
		}
		if allowed == nil {
			allowed = map[string]string{}
		}
		allowed[field] = value
	}
	if err := auth.CheckWhom(scopes, allowed, anyIdentity); err != nil {
		if anyIdentity && allowed != nil {
			return nil, nil, errors.New("give --identity or --any-identity, not both")
		}
		return nil, nil, fmt.Errorf("the key may act for persons (%s): say whom with --identity FIELD=VALUE (one person or a pattern) or --any-identity (a trusted backend)",
			strings.Join(auth.PersonScopes, ", "))
	}
	return scopes, allowed, nil
}

func roleNames() string {
	names := make([]string, 0, len(auth.Roles))
	for n := range auth.Roles {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func identitiesText(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for f, v := range m {
		parts = append(parts, f+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// boxClient talks to a running box at STACKBONE_URL (default
// http://127.0.0.1:4242) with STACKBONE_API_KEY (default local-dev).
type boxClient struct {
	base, key string
	http      *http.Client
}

func newBoxClient() *boxClient {
	c := &boxClient{base: os.Getenv("STACKBONE_URL"), key: os.Getenv("STACKBONE_API_KEY"), http: &http.Client{Timeout: 30 * time.Second}}
	if c.base == "" {
		c.base = "http://127.0.0.1:4242"
	}
	if c.key == "" {
		c.key = auth.DevKey
	}
	c.base = strings.TrimRight(c.base, "/")
	return c
}

// get fetches path and decodes the envelope's data into v.
func (c *boxClient) get(cmd *cobra.Command, path string, v any) error {
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the box at %s (set STACKBONE_URL): %w", c.base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("the box answered %s with a body that is not the API envelope", resp.Status)
	}
	if env.Error != nil {
		return fmt.Errorf("%s: %s", env.Error.Code, env.Error.Message)
	}
	if resp.StatusCode >= 300 {
		return errors.New("the box answered " + resp.Status)
	}
	return json.Unmarshal(env.Data, v)
}

func runsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "runs", Short: "Read run history from a running box"}
	var kind, agent, status string
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for k, v := range map[string]string{"kind": kind, "agent": agent, "status": status} {
				if v != "" {
					q.Set(k, v)
				}
			}
			q.Set("limit", fmt.Sprint(limit))
			var list []runs.Run
			if err := newBoxClient().get(cmd, "/api/runs?"+q.Encode(), &list); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tAGENT\tSTATUS\tMODEL\tTOKENS IN/OUT\tMS\tSTARTED\tERROR")
			for _, r := range list {
				ms := "-"
				if r.DurationMS != nil {
					ms = fmt.Sprint(*r.DurationMS)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", r.ID, r.Kind, dash(r.AgentID), r.Status, dash(r.Model),
					r.InputTokens, r.OutputTokens, ms, r.StartedAt.Local().Format(time.DateTime), dash(r.ErrorCode))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&kind, "kind", "", "only runs of this kind (memory_extraction, ...)")
	list.Flags().StringVar(&agent, "agent", "", "only runs of this agent")
	list.Flags().StringVar(&status, "status", "", "only runs with this status (running, succeeded, failed, cancelled)")
	list.Flags().IntVar(&limit, "limit", 50, "how many (1 to 200)")
	cmd.AddCommand(list)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
