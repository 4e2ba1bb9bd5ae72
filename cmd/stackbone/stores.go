package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/spf13/cobra"
)

// storesCmd is `stackbone memory-stores …`: memory stores of a running box
// (STACKBONE_URL, STACKBONE_API_KEY) for scripts. Every command prints the
// answer's data as JSON on stdout; errors print "code: message" and exit 1.
func storesCmd() *cobra.Command { return storesCommand(newBoxClient) }

func storesCommand(client func() *boxClient) *cobra.Command {
	cmd := &cobra.Command{Use: "memory-stores", Short: "Memory stores and learned memory of a running box (prints JSON)"}
	s := storesCLI{client: client}
	cmd.AddCommand(s.storeCmds()...)
	cmd.AddCommand(s.memoryCmds()...)
	cmd.AddCommand(s.versionCmds()...)
	cmd.AddCommand(s.learningCmds()...)
	return cmd
}

// storesCLI builds the memory-stores commands; each prints the answer's
// data as indented JSON.
type storesCLI struct {
	client func() *boxClient
}

func (s storesCLI) call(c *cobra.Command, method, path string, body any) error {
	var out json.RawMessage
	if err := s.client().storesDo(c, method, path, body, &out); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := c.OutOrStdout().Write(buf.Bytes())
	return err
}

// storePath is the route of the store ref names (its id or slug).
func storePath(ref string) string { return "/api/memory_stores/" + url.PathEscape(ref) }

// storeQuery is the query string of the pairs kv whose value is not empty.
func storeQuery(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// readContent reads --file (or - for stdin) for content.
func readContent(c *cobra.Command, file string) (string, error) {
	if file == "-" {
		b, err := io.ReadAll(io.LimitReader(c.InOrStdin(), 1<<20))
		return string(b), err
	}
	b, err := os.ReadFile(file)
	return string(b), err
}

// storeCmds are the commands on stores themselves.
func (s storesCLI) storeCmds() []*cobra.Command {
	var origin, agent, status string
	var archived bool
	list := &cobra.Command{Use: "list", Short: "List stores (archived ones with --include-archived)", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			inc := ""
			if archived {
				inc = "true"
			}
			return s.call(c, http.MethodGet, "/api/memory_stores"+storeQuery("origin", origin, "agent_id", agent, "status", status, "include_archived", inc, "limit", "100"), nil)
		}}
	list.Flags().StringVar(&origin, "origin", "", "curated or reflection")
	list.Flags().StringVar(&agent, "agent", "", "stores of this agent")
	list.Flags().StringVar(&status, "status", "", "active or archived")
	list.Flags().BoolVar(&archived, "include-archived", false, "list archived stores too")

	var desc, scope string
	create := &cobra.Command{Use: "create NAME", Short: "Create a curated store (--agent scopes it to one agent)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			body := map[string]any{"name": args[0], "description": desc}
			if scope != "" {
				body["agent_id"] = scope
			}
			return s.call(c, http.MethodPost, "/api/memory_stores", body)
		}}
	create.Flags().StringVar(&desc, "description", "", "what an agent would look for in it")
	create.Flags().StringVar(&scope, "agent", "", "scope the store to this agent")

	get := &cobra.Command{Use: "get STORE", Short: "Show a store (STORE is its id or slug)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return s.call(c, http.MethodGet, storePath(args[0]), nil) }}

	var newName, newDesc string
	update := &cobra.Command{Use: "update STORE", Short: "Rename or redescribe a curated store (the slug stays)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			body := map[string]any{}
			if c.Flags().Changed("name") {
				body["name"] = newName
			}
			if c.Flags().Changed("description") {
				body["description"] = newDesc
			}
			return s.call(c, http.MethodPost, storePath(args[0]), body)
		}}
	update.Flags().StringVar(&newName, "name", "", "new name")
	update.Flags().StringVar(&newDesc, "description", "", "new description")

	archive := &cobra.Command{Use: "archive STORE", Short: "Make a curated store read-only for good", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodPost, storePath(args[0])+"/archive", nil)
		}}
	del := &cobra.Command{Use: "delete STORE", Short: "Delete a curated store with its memories and history", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodDelete, storePath(args[0]), nil)
		}}

	return []*cobra.Command{list, create, get, update, archive, del}
}

// memoryCmds are the commands on a store's memories.
func (s storesCLI) memoryCmds() []*cobra.Command {
	var cursor string
	ls := &cobra.Command{Use: "ls STORE [FOLDER]", Short: "List one folder of a store (memories and memory_prefix entries)", Args: cobra.RangeArgs(1, 2),
		RunE: func(c *cobra.Command, args []string) error {
			prefix := "/"
			if len(args) == 2 {
				prefix = args[1]
			}
			return s.call(c, http.MethodGet, storePath(args[0])+"/memories"+storeQuery("path_prefix", prefix, "cursor", cursor, "limit", "100"), nil)
		}}
	ls.Flags().StringVar(&cursor, "cursor", "", "next_cursor of the previous page")

	read := &cobra.Command{Use: "read STORE PATH", Short: "Read a memory with its content and content_sha256", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodGet, storePath(args[0])+"/memory"+storeQuery("path", args[1]), nil)
		}}

	var summary, file string
	write := &cobra.Command{Use: "write STORE PATH --summary S --file F", Short: "Create a memory (never overwrites; --file - reads stdin)", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			content, err := readContent(c, file)
			if err != nil {
				return err
			}
			return s.call(c, http.MethodPost, storePath(args[0])+"/memories", map[string]any{"path": args[1], "summary": summary, "content": content})
		}}
	write.Flags().StringVar(&summary, "summary", "", "one line saying what the memory tells")
	write.Flags().StringVar(&file, "file", "-", "content file, - for stdin")

	var editFile, editSummary, editPath, sha string
	edit := &cobra.Command{Use: "edit STORE MEMORY_ID", Short: "Update a memory; with --sha it is refused if the memory changed since", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			body := map[string]any{}
			if editFile != "" {
				content, err := readContent(c, editFile)
				if err != nil {
					return err
				}
				body["content"] = content
			}
			for k, v := range map[string]string{"summary": editSummary, "path": editPath, "content_sha256": sha} {
				if v != "" {
					body[k] = v
				}
			}
			return s.call(c, http.MethodPost, storePath(args[0])+"/memories/"+url.PathEscape(args[1]), body)
		}}
	edit.Flags().StringVar(&editFile, "file", "", "new content file, - for stdin")
	edit.Flags().StringVar(&editSummary, "summary", "", "new summary")
	edit.Flags().StringVar(&editPath, "path", "", "new path (renames)")
	edit.Flags().StringVar(&sha, "sha", "", "the content_sha256 you read")

	rm := &cobra.Command{Use: "rm STORE MEMORY_ID", Short: "Delete a memory (its history stays restorable)", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodDelete, storePath(args[0])+"/memories/"+url.PathEscape(args[1]), nil)
		}}
	var within string
	search := &cobra.Command{Use: "search STORE QUERY", Short: "Find memories by content, best first", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodGet, storePath(args[0])+"/memories/search"+storeQuery("query", args[1], "path_prefix", within), nil)
		}}
	search.Flags().StringVar(&within, "folder", "", "only under this folder")

	return []*cobra.Command{ls, read, write, edit, rm, search}
}

// versionCmds are the commands on a store's versions.
func (s storesCLI) versionCmds() []*cobra.Command {
	var memoryID, hcursor string
	history := &cobra.Command{Use: "history STORE", Short: "List versions, newest first (--memory for one memory)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodGet, storePath(args[0])+"/memory_versions"+storeQuery("memory_id", memoryID, "cursor", hcursor, "limit", "100"), nil)
		}}
	history.Flags().StringVar(&memoryID, "memory", "", "one memory's versions")
	history.Flags().StringVar(&hcursor, "cursor", "", "next_cursor of the previous page")
	version := &cobra.Command{Use: "version STORE VERSION_ID", Short: "Show one version with its content (unless redacted)", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodGet, storePath(args[0])+"/memory_versions/"+url.PathEscape(args[1]), nil)
		}}
	restore := &cobra.Command{Use: "restore STORE VERSION_ID", Short: "Write a version back as a new version (recreates a deleted memory)", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodPost, storePath(args[0])+"/memory_versions/"+url.PathEscape(args[1])+"/restore", nil)
		}}
	redact := &cobra.Command{Use: "redact STORE VERSION_ID", Short: "Remove a version's content for good (never the current one)", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodPost, storePath(args[0])+"/memory_versions/"+url.PathEscape(args[1])+"/redact", nil)
		}}

	return []*cobra.Command{history, version, restore, redact}
}

// learningCmds are the commands on an agent's learned memory.
func (s storesCLI) learningCmds() []*cobra.Command {
	var model string
	var inherit bool
	learning := &cobra.Command{Use: "learning AGENT", Short: "Show an agent's learned memory; --model or --inherit sets its memory model", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			a := "/api/agents/" + url.PathEscape(args[0])
			switch {
			case model != "" && inherit:
				return errors.New("give --model or --inherit, not both")
			case model != "":
				return s.call(c, http.MethodPatch, a+"/learning", map[string]any{"memory_model_ref": model})
			case inherit:
				return s.call(c, http.MethodPatch, a+"/learning", map[string]any{"memory_model_ref": nil})
			}
			return s.call(c, http.MethodGet, a+"/memory", nil)
		}}
	learning.Flags().StringVar(&model, "model", "", "memory model, a provider/model id")
	learning.Flags().BoolVar(&inherit, "inherit", false, "use the agent's model again")
	activity := &cobra.Command{Use: "activity AGENT", Short: "Learning runs of an agent, newest first", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return s.call(c, http.MethodGet, "/api/agents/"+url.PathEscape(args[0])+"/memory/activity", nil)
		}}

	return []*cobra.Command{learning, activity}
}

// storesDo sends body as JSON (nil for none) and decodes the envelope's
// data into out; a 204 leaves out untouched.
func (c *boxClient) storesDo(cmd *cobra.Command, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(cmd.Context(), method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the box at %s (set STACKBONE_URL): %w", c.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct{ Code, Message string }
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("the box answered %s with a body that is not the API envelope", resp.Status)
	}
	if env.Error != nil {
		return fmt.Errorf("%s: %s", env.Error.Code, env.Error.Message)
	}
	if resp.StatusCode >= 300 {
		return errors.New("the box answered " + resp.Status)
	}
	return json.Unmarshal(env.Data, out)
}
