package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/stackbone/box/rag"
)

// ragCmd is `stackbone rag …`: collections, ingest, query and jobs on a
// running box (STACKBONE_URL, STACKBONE_API_KEY).
func ragCmd() *cobra.Command { return ragCommand(newBoxClient) }

// ragCommand builds the command on a client factory, so tests can point it
// at a test server.
func ragCommand(client func() *boxClient) *cobra.Command {
	cmd := &cobra.Command{Use: "rag", Short: "Collections, documents and retrieval on a running box (STACKBONE_URL, STACKBONE_API_KEY)"}
	cmd.AddCommand(ragCollectionsCmd(client), ragIngestCmd(client), ragQueryCmd(client), ragJobsCmd(client),
		ragJobAction(client, "retry", "Run a failed, cancelled or finished ingest job again", "retry"),
		ragJobAction(client, "cancel", "Cancel a waiting or running ingest job", "cancel"),
		ragDocumentsCmd(client), ragDeleteCmd(client))
	return cmd
}

// ragCollectionsCmd is `rag collections create|list`.
func ragCollectionsCmd(client func() *boxClient) *cobra.Command {
	collections := &cobra.Command{Use: "collections", Short: "Create and list collections"}
	var desc, model string
	var dims int
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a collection (embedded with openai/text-embedding-3-small unless --model)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var c rag.Collection
			body := rag.CreateCollection{Name: args[0], Description: desc, Model: model, Dimensions: dims}
			if err := client().ragJSON(cmd.Context(), http.MethodPost, "/api/rag/collections", body, &c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created collection %s (%s, %d dimensions)\n", c.Name, c.Model, c.Dimensions)
			return nil
		},
	}
	create.Flags().StringVar(&desc, "description", "", "what the collection holds")
	create.Flags().StringVar(&model, "model", "", "embedding model as provider/model (default openai/text-embedding-3-small)")
	create.Flags().IntVar(&dims, "dimensions", 0, "vector dimension (needed for a model the box does not know)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List collections with their model and counts",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cs []rag.Collection
			if err := client().ragJSON(cmd.Context(), http.MethodGet, "/api/rag/collections", nil, &cs); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMODEL\tDIMS\tDOCS\tCHUNKS\tDESCRIPTION")
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", c.Name, c.Model, c.Dimensions, c.Documents, c.Chunks, dash(c.Description))
			}
			return tw.Flush()
		},
	}
	collections.AddCommand(create, list)

	return collections
}

// ragIngestCmd is `rag ingest`.
func ragIngestCmd(client func() *boxClient) *cobra.Command {
	var collection, metadata string
	var noWait bool
	ingest := &cobra.Command{
		Use:   "ingest --collection NAME FILE...",
		Short: "Upload .txt, .md or .pdf files and wait for their ingest",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIngest(cmd, client(), collection, metadata, !noWait, args)
		},
	}
	ingest.Flags().StringVar(&collection, "collection", "default", "collection to fill")
	ingest.Flags().StringVar(&metadata, "metadata", "", `JSON object stored with every chunk, e.g. '{"lang":"en"}'`)
	ingest.Flags().BoolVar(&noWait, "no-wait", false, "return once uploaded, without waiting for the ingest jobs")
	return ingest
}

// ragQueryCmd is `rag query`.
func ragQueryCmd(client func() *boxClient) *cobra.Command {
	var queryCollection string
	var topK int
	var filter string
	var hybrid bool
	query := &cobra.Command{
		Use:   "query --collection NAME TEXT...",
		Short: "Retrieve the chunks nearest a question, as an agent's tool would",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := rag.RetrieveRequest{Text: strings.Join(args, " "), TopK: topK, Namespace: queryCollection}
			if filter != "" {
				if err := json.Unmarshal([]byte(filter), &req.Filter); err != nil || req.Filter == nil {
					return errors.New("--filter must be a JSON object")
				}
			}
			if cmd.Flags().Changed("hybrid") {
				req.Hybrid = &hybrid
			}
			var hits []rag.Hit
			if err := client().ragJSON(cmd.Context(), http.MethodPost, "/api/rag/retrieve", req, &hits); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(hits) == 0 {
				fmt.Fprintln(out, "no hits")
				return nil
			}
			fmt.Fprintf(out, "%d hits, embedded with %s\n", len(hits), hits[0].Model)
			for i, h := range hits {
				meta, _ := json.Marshal(h.Metadata)
				fmt.Fprintf(out, "\n%d. [%.4f] %s #%d %s\n%s\n", i+1, h.Score, h.DocumentID, h.ChunkIndex, meta, h.Content)
			}
			return nil
		},
	}
	query.Flags().StringVar(&queryCollection, "collection", "default", "collection to search")
	query.Flags().IntVar(&topK, "top-k", 5, "number of hits")
	query.Flags().StringVar(&filter, "filter", "", `JSON metadata filter (containment), e.g. '{"lang":"en"}'`)
	query.Flags().BoolVar(&hybrid, "hybrid", false, "fuse full-text ranking with vector similarity (default: the box's setting)")
	return query
}

// ragJobsCmd is `rag jobs`.
func ragJobsCmd(client func() *boxClient) *cobra.Command {
	var state, jobsCollection string
	var limit int
	jobsCmd := &cobra.Command{
		Use:   "jobs",
		Short: "List ingest jobs, newest first",
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			if state != "" {
				q.Set("state", state)
			}
			if jobsCollection != "" {
				q.Set("collection", jobsCollection)
			}
			q.Set("limit", strconv.Itoa(limit))
			var list []rag.Job
			if err := client().ragJSON(cmd.Context(), http.MethodGet, "/api/rag/jobs?"+q.Encode(), nil, &list); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB\tSTATE\tATTEMPT\tCOLLECTION\tFILE\tDOCUMENT\tDOC STATUS\tCREATED\tLAST ERROR")
			for _, j := range list {
				last := ""
				if n := len(j.Errors); n > 0 {
					last = j.Errors[n-1].Error
				}
				fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.State, j.Attempt, j.MaxAttempts, dash(j.Collection), dash(j.Filename),
					j.DocumentID, dash(j.DocumentStatus), j.CreatedAt.Local().Format(time.DateTime), dash(clipLine(last, 80)))
			}
			return tw.Flush()
		},
	}
	jobsCmd.Flags().StringVar(&state, "state", "", "only jobs in this state (available, running, retryable, completed, cancelled, discarded)")
	jobsCmd.Flags().StringVar(&jobsCollection, "collection", "", "only jobs of this collection")
	jobsCmd.Flags().IntVar(&limit, "limit", 50, "at most this many")
	return jobsCmd
}

// ragJobAction is `rag retry|cancel JOB_ID`: action on one ingest job.
func ragJobAction(client func() *boxClient, use, short, action string) *cobra.Command {
	return &cobra.Command{
		Use:   use + " JOB_ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := strconv.ParseInt(args[0], 10, 64); err != nil {
				return fmt.Errorf("%q is not a job id", args[0])
			}
			var j rag.Job
			if err := client().ragJSON(cmd.Context(), http.MethodPost, "/api/rag/jobs/"+args[0]+"/"+action, nil, &j); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %d is %s (document %s: %s)\n", j.ID, j.State, j.DocumentID, dash(j.DocumentStatus))
			return nil
		},
	}
}

// ragDocumentsCmd is `rag documents`.
func ragDocumentsCmd(client func() *boxClient) *cobra.Command {
	var docsCollection string
	docs := &cobra.Command{
		Use:   "documents --collection NAME",
		Short: "List a collection's documents with their ingest status",
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []rag.Document
			if err := client().ragJSON(cmd.Context(), http.MethodGet, "/api/rag/collections/"+url.PathEscape(docsCollection)+"/documents", nil, &list); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DOCUMENT\tSOURCE\tFILE\tSTATUS\tCHUNKS\tJOB\tRUN\tERROR")
			for _, d := range list {
				job, run, errCode := "-", "-", "-"
				if d.JobID != nil {
					job = strconv.FormatInt(*d.JobID, 10)
				}
				if d.RunID != nil {
					run = *d.RunID
				}
				if d.Error != nil {
					errCode = d.Error.Code
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", d.ID, d.Source, dash(d.Filename), d.Status, d.Chunks, job, run, errCode)
			}
			return tw.Flush()
		},
	}
	docs.Flags().StringVar(&docsCollection, "collection", "default", "collection to list")
	return docs
}

// ragDeleteCmd is `rag delete DOCUMENT_ID`.
func ragDeleteCmd(client func() *boxClient) *cobra.Command {
	return &cobra.Command{
		Use:   "delete DOCUMENT_ID",
		Short: "Delete a document, its chunks and its original",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client().ragJSON(cmd.Context(), http.MethodDelete, "/api/rag/documents/"+url.PathEscape(args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
			return nil
		},
	}
}

// runIngest uploads each file with a byte progress bar, then (wait) follows
// the ingest jobs with a bar over the documents until each succeeded,
// failed or was cancelled. It fails if any upload or ingest did.
func runIngest(cmd *cobra.Command, c *boxClient, collection, metadata string, wait bool, files []string) error {
	if metadata != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(metadata), &m); err != nil || m == nil {
			return errors.New("--metadata must be a JSON object")
		}
	}
	ctx := cmd.Context()
	errw := cmd.ErrOrStderr()
	type item struct {
		file  string
		doc   rag.Document
		err   error
		final bool
	}
	items := make([]*item, len(files))
	for i, f := range files {
		it := &item{file: f}
		items[i] = it
		var res rag.UploadResult
		it.err = c.ragUpload(ctx, collection, f, metadata, errw, &res)
		if it.err == nil {
			it.doc = res.Document
		} else {
			fmt.Fprintf(errw, "%s: %v\n", f, it.err)
		}
	}
	if wait {
		pending := 0
		for _, it := range items {
			if it.err == nil {
				pending++
			}
		}
		bar := progressbar.NewOptions(pending, progressbar.OptionSetWriter(errw), progressbar.OptionSetDescription("ingesting"),
			progressbar.OptionShowCount(), progressbar.OptionOnCompletion(func() { fmt.Fprintln(errw) }))
		for pending > 0 {
			for _, it := range items {
				if it.err != nil || it.final {
					continue
				}
				var d rag.Document
				if err := c.ragJSON(ctx, http.MethodGet, "/api/rag/documents/"+url.PathEscape(it.doc.ID), nil, &d); err != nil {
					return err
				}
				it.doc = d
				switch d.Status {
				case rag.StatusSucceeded, rag.StatusFailed, rag.StatusCancelled:
					it.final = true
					pending--
					_ = bar.Add(1)
				}
			}
			if pending > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(250 * time.Millisecond):
				}
			}
		}
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tDOCUMENT\tSTATUS\tCHUNKS\tJOB\tERROR")
	failed := 0
	for _, it := range items {
		switch {
		case it.err != nil:
			failed++
			fmt.Fprintf(tw, "%s\t-\tnot uploaded\t-\t-\t%s\n", it.file, clipLine(it.err.Error(), 100))
		default:
			job, errText := "-", "-"
			if it.doc.JobID != nil {
				job = strconv.FormatInt(*it.doc.JobID, 10)
			}
			if it.doc.Error != nil {
				errText = it.doc.Error.Code + ": " + clipLine(it.doc.Error.Message, 80)
			}
			if it.doc.Status == rag.StatusFailed || it.doc.Status == rag.StatusCancelled {
				failed++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", it.file, it.doc.ID, it.doc.Status, it.doc.Chunks, job, errText)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files were not ingested", failed, len(files))
	}
	return nil
}

// ragUpload streams one file as a multipart form with a byte progress bar.
func (c *boxClient) ragUpload(ctx context.Context, collection, path, metadata string, progress io.Writer, out any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() > rag.MaxUploadBytes {
		return fmt.Errorf("%s is %d MB; the limit is %d MB", path, st.Size()>>20, rag.MaxUploadBytes>>20)
	}
	bar := progressbar.NewOptions64(st.Size(), progressbar.OptionSetWriter(progress), progressbar.OptionShowBytes(true),
		progressbar.OptionSetDescription(filepath.Base(path)), progressbar.OptionOnCompletion(func() { fmt.Fprintln(progress) }))
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			if metadata != "" {
				if err := mw.WriteField("metadata", metadata); err != nil {
					return err
				}
			}
			fw, err := mw.CreateFormFile("file", filepath.Base(path))
			if err != nil {
				return err
			}
			if _, err := io.Copy(io.MultiWriter(fw, bar), f); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	return c.ragDo(ctx, http.MethodPost, "/api/rag/collections/"+url.PathEscape(collection)+"/documents", pr, mw.FormDataContentType(), out)
}

// ragJSON sends body as JSON (nil for none) and decodes the envelope's data.
func (c *boxClient) ragJSON(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	return c.ragDo(ctx, method, path, rd, "application/json", out)
}

func (c *boxClient) ragDo(ctx context.Context, method, path string, body io.Reader, contentType string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	// Uploads of large files over slow links take longer than the client's
	// default timeout; the context bounds them instead.
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the box at %s (set STACKBONE_URL): %w", c.base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
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
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Data, out)
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
