package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/campaigns"
)

// campaignsCmd is `stackbone campaigns …`: batch outbound calling on a
// running box (STACKBONE_URL, STACKBONE_API_KEY; the key needs the scope
// voice).
func campaignsCmd() *cobra.Command { return campaignsCommand(newBoxClient) }

// campaignsCommand builds the command on a client factory, so tests can
// point it at a test box.
func campaignsCommand(client func() *boxClient) *cobra.Command {
	cmd := &cobra.Command{Use: "campaigns", Short: "Batch outbound calls on a running box: create, upload contacts, start, follow (STACKBONE_URL, STACKBONE_API_KEY)"}
	cl := campaignsCLI{client: client}
	cmd.AddCommand(cl.listCmd(), cl.createCmd(), cl.uploadCmd(), cl.showCmd(), cl.contactsCmd(),
		cl.action("start", "Start a draft campaign that has contacts"),
		cl.action("pause", "Stop new calls (calls up go on)"),
		cl.action("resume", "Run a paused campaign again"),
		cl.action("cancel", "End a campaign: waiting contacts are cancelled, calls up go on without retries"),
		cl.deleteCmd())
	return cmd
}

type campaignsCLI struct {
	client func() *boxClient
}

func campaignPath(id string) string { return "/api/voice/campaigns/" + url.PathEscape(id) }

func (cl campaignsCLI) listCmd() *cobra.Command {
	return &cobra.Command{Use: "list", Short: "List campaigns, newest first, with their progress", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []campaigns.Campaign
			if err := cl.client().ragJSON(cmd.Context(), http.MethodGet, "/api/voice/campaigns", nil, &list); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tAGENT\tSTATUS\tCONTACTS\tDONE\tIN PROGRESS\tWAITING\tFAILED\tCANCELLED\tCREATED")
			for _, c := range list {
				s := c.Progress.ByState
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", c.ID, clipLine(c.Name, 40), c.Agent, c.Status, c.Progress.Contacts,
					s[campaigns.StateDone], s[campaigns.StateQueued]+s[campaigns.StateCalling], s[campaigns.StateWaiting], s[campaigns.StateFailed],
					s[campaigns.StateCancelled], c.CreatedAt.Local().Format(time.DateTime))
			}
			return tw.Flush()
		}}
}

func (cl campaignsCLI) createCmd() *cobra.Command {
	var n campaigns.NewCampaign
	var windows []string
	retry := map[string]*string{"busy": new(string), "no-answer": new(string), "voicemail": new(string), "failed": new(string)}
	var jitter float64
	create := &cobra.Command{Use: "create --name NAME --agent AGENT", Short: "Create a draft campaign (then upload its contacts and start it)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, w := range windows {
				win, err := parseWindow(w)
				if err != nil {
					return err
				}
				n.Windows = append(n.Windows, win)
			}
			// Only the rules given change the box's default policy.
			var r campaigns.RetryChange
			changed := false
			for name, rule := range map[string]**campaigns.Rule{"busy": &r.Busy, "no-answer": &r.NoAnswer, "voicemail": &r.Voicemail, "failed": &r.Failed} {
				if *retry[name] == "" {
					continue
				}
				v, err := parseRule(*retry[name])
				if err != nil {
					return fmt.Errorf("--retry-%s: %w", name, err)
				}
				*rule, changed = &v, true
			}
			if cmd.Flags().Changed("jitter") {
				r.Jitter, changed = &jitter, true
			}
			if changed {
				n.Retry = &r
			}
			var c campaigns.Campaign
			if err := cl.client().ragJSON(cmd.Context(), http.MethodPost, "/api/voice/campaigns", n, &c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created campaign %s (%s): upload its contacts with `stackbone campaigns upload %s FILE`\n", c.ID, c.Status, c.ID)
			return nil
		}}
	f := create.Flags()
	f.StringVar(&n.Name, "name", "", "what the campaign is (required)")
	f.StringVar(&n.Agent, "agent", "", "the agent that makes the calls (required)")
	f.StringVar(&n.Trunk, "trunk", "", "outbound trunk (default: the first)")
	f.IntVar(&n.MaxConcurrent, "max-concurrent", 0, "calls up at once, across every box (default 5)")
	f.StringArrayVar(&windows, "window", nil, `calling window on each contact's clock, repeatable: "mon-fri 09:00-18:00", "sat,sun 10:00-14:00" or "09:00-20:00" (every day; the default)`)
	f.StringVar(&n.Zone, "zone", "", "time zone of contacts whose number names no country (e.g. Europe/Madrid)")
	for _, x := range []struct{ name, def string }{{"busy", "2x10m"}, {"no-answer", "2x30m"}, {"voicemail", "1x1h"}, {"failed", "1x5m"}} {
		f.StringVar(retry[x.name], "retry-"+x.name, "", "tries after a "+strings.ReplaceAll(x.name, "-", " ")+" outcome, TIMESxDELAY (default "+x.def+")")
	}
	f.Float64Var(&jitter, "jitter", 0.1, "spread of each retry's delay either way, 0 to 0.5")
	return create
}

var weekdays = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// parseWindow reads "mon-fri 09:00-18:00", "sat,sun 10:00-14:00" or
// "09:00-20:00" (every day).
func parseWindow(s string) (campaigns.Window, error) {
	fields := strings.Fields(s)
	bad := fmt.Errorf(`--window %q: write it as "mon-fri 09:00-18:00", "sat,sun 10:00-14:00" or "09:00-20:00"`, s)
	if len(fields) == 0 || len(fields) > 2 {
		return campaigns.Window{}, bad
	}
	start, end, ok := strings.Cut(fields[len(fields)-1], "-")
	if !ok {
		return campaigns.Window{}, bad
	}
	w := campaigns.Window{Start: start, End: end}
	if len(fields) == 1 {
		return w, nil
	}
	for _, part := range strings.Split(strings.ToLower(fields[0]), ",") {
		from, to, isRange := strings.Cut(part, "-")
		i, j := slices.Index(weekdays, from), slices.Index(weekdays, to)
		if !isRange {
			j = i
		}
		if i < 0 || j < i {
			return campaigns.Window{}, fmt.Errorf("--window %q: days are mon … sun, a range runs forward (mon-fri)", s)
		}
		w.Days = append(w.Days, weekdays[i:j+1]...)
	}
	return w, nil
}

// parseRule reads "2x10m" (two more tries, ten minutes apart) or "0" (no
// retry).
func parseRule(s string) (campaigns.Rule, error) {
	if s == "0" {
		return campaigns.Rule{}, nil
	}
	times, delay, ok := strings.Cut(strings.ToLower(s), "x")
	n, err := strconv.Atoi(times)
	d, derr := time.ParseDuration(delay)
	if !ok || err != nil || derr != nil || n < 0 || d < 0 {
		return campaigns.Rule{}, fmt.Errorf("%q: write TIMESxDELAY, like 2x10m or 1x1h30m (0: no retry)", s)
	}
	return campaigns.Rule{Attempts: n, Delay: campaigns.Duration(d)}, nil
}

func (cl campaignsCLI) uploadCmd() *cobra.Command {
	return &cobra.Command{Use: "upload CAMPAIGN FILE", Short: "Add contacts from a .csv (header: number, zone, identity.NAME, variables) or .json file, all or nothing", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var typ string
			switch strings.ToLower(filepath.Ext(args[1])) {
			case ".csv":
				typ = "text/csv"
			case ".json":
				typ = "application/json"
			default:
				return fmt.Errorf("%s: contacts are a .csv or .json file", args[1])
			}
			f, err := os.Open(args[1])
			if err != nil {
				return err
			}
			defer f.Close()
			var out struct{ Added int }
			err = cl.client().ragDo(cmd.Context(), http.MethodPost, campaignPath(args[0])+"/contacts", f, typ, &out)
			if err != nil {
				return refusedLines(cmd.OutOrStdout(), args[1], err)
			}
			noun := "contacts"
			if out.Added == 1 {
				noun = "contact"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added %d %s from %s\n", out.Added, noun, args[1])
			return nil
		}}
}

// refusedLines prints the bad lines a refused upload names, one a line,
// and returns the refusal's summary; another error is returned as it is.
func refusedLines(w io.Writer, file string, err error) error {
	const refused = " contact line(s) refused, nothing was added: "
	head, rest, ok := strings.Cut(err.Error(), refused)
	if !ok || !strings.HasPrefix(head, "campaign_invalid_request: ") {
		return err
	}
	total := head[strings.LastIndex(head, " ")+1:]
	more := ""
	if i := strings.LastIndex(rest, "; and "); i >= 0 && strings.HasSuffix(rest, " more") {
		rest, more = rest[:i], rest[i+len("; and "):]
	}
	var lines []string
	for _, part := range strings.Split(rest, "; line ") {
		lines = append(lines, strings.TrimPrefix(part, "line "))
	}
	for _, l := range lines {
		fmt.Fprintf(w, "%s:%s\n", file, l)
	}
	if more != "" {
		fmt.Fprintf(w, "%s: and %s\n", file, more)
	}
	return fmt.Errorf("%s: %s line(s) refused, nothing was added", file, total)
}

func (cl campaignsCLI) showCmd() *cobra.Command {
	return &cobra.Command{Use: "show CAMPAIGN", Short: "Show a campaign and its progress", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var c campaigns.Campaign
			if err := cl.client().ragJSON(cmd.Context(), http.MethodGet, campaignPath(args[0]), nil, &c); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			wins := make([]string, len(c.Windows))
			for i, w := range c.Windows {
				wins[i] = windowString(w)
			}
			s := c.Progress.ByState
			outcomes := make([]string, 0, len(c.Progress.ByOutcome))
			for o, n := range c.Progress.ByOutcome {
				outcomes = append(outcomes, fmt.Sprintf("%s %d", o, n))
			}
			slices.Sort(outcomes)
			for _, kv := range [][2]string{
				{"campaign", c.ID}, {"name", c.Name}, {"status", c.Status}, {"agent", c.Agent}, {"trunk", dash(c.Trunk)},
				{"max concurrent", strconv.Itoa(c.MaxConcurrent)}, {"windows", strings.Join(wins, "; ")}, {"zone", dash(c.Zone)},
				{"retry", retryString(c.Retry)},
				{"created", c.CreatedAt.Local().Format(time.DateTime) + " by " + dash(c.CreatedBy)},
				{"started", timeString(c.StartedAt)}, {"finished", timeString(c.FinishedAt)},
				{"contacts", fmt.Sprintf("%d: done %d, in progress %d (queued %d, calling %d), waiting %d, failed %d, cancelled %d",
					c.Progress.Contacts, s[campaigns.StateDone], s[campaigns.StateQueued]+s[campaigns.StateCalling], s[campaigns.StateQueued],
					s[campaigns.StateCalling], s[campaigns.StateWaiting], s[campaigns.StateFailed], s[campaigns.StateCancelled])},
				{"calls placed", strconv.Itoa(c.Progress.Attempts)},
				{"last outcomes", dash(strings.Join(outcomes, ", "))},
			} {
				fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
			}
			return tw.Flush()
		}}
}

func windowString(w campaigns.Window) string {
	if len(w.Days) == 0 || len(w.Days) == 7 {
		return "every day " + w.Start + "-" + w.End
	}
	return strings.Join(w.Days, ",") + " " + w.Start + "-" + w.End
}

func retryString(r campaigns.Retry) string {
	rule := func(x campaigns.Rule) string { return fmt.Sprintf("%dx%s", x.Attempts, time.Duration(x.Delay)) }
	return fmt.Sprintf("busy %s, no answer %s, voicemail %s, failed %s; jitter %.0f%%",
		rule(r.Busy), rule(r.NoAnswer), rule(r.Voicemail), rule(r.Failed), r.Jitter*100)
}

func timeString(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

func (cl campaignsCLI) contactsCmd() *cobra.Command {
	var state string
	var after, limit int
	contacts := &cobra.Command{Use: "contacts CAMPAIGN", Short: "List a campaign's contacts in upload order (--state, paged with --after)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if state != "" {
				q.Set("state", state)
			}
			if after > 0 {
				q.Set("after", strconv.Itoa(after))
			}
			var list []campaigns.Contact
			if err := cl.client().ragJSON(cmd.Context(), http.MethodGet, campaignPath(args[0])+"/contacts?"+q.Encode(), nil, &list); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tNUMBER\tSTATE\tCALLS\tNEXT TRY\tLAST OUTCOME\tLAST CALL\tREASON")
			for _, k := range list {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", k.Seq, k.Number, k.State, k.Attempts, timeString(k.NextAt),
					dash(deref(k.LastOutcome)), dash(deref(k.LastCallID)), dash(clipLine(deref(k.Reason), 80)))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(list) == limit {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: --after %d\n", list[len(list)-1].Seq)
			}
			return nil
		}}
	contacts.Flags().StringVar(&state, "state", "", "only contacts in this state ("+strings.Join(campaigns.States, ", ")+")")
	contacts.Flags().IntVar(&after, "after", 0, "contacts after this seq (the last of the previous page)")
	contacts.Flags().IntVar(&limit, "limit", 100, "at most this many (1 to 1000)")
	return contacts
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// action is `campaigns start|pause|resume|cancel CAMPAIGN`.
func (cl campaignsCLI) action(name, short string) *cobra.Command {
	return &cobra.Command{Use: name + " CAMPAIGN", Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var c campaigns.Campaign
			if err := cl.client().ragJSON(cmd.Context(), http.MethodPost, campaignPath(args[0])+"/"+name, nil, &c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "campaign %s is %s\n", c.ID, c.Status)
			return nil
		}}
}

func (cl campaignsCLI) deleteCmd() *cobra.Command {
	return &cobra.Command{Use: "delete CAMPAIGN", Short: "Delete a campaign that is not running, with its contacts (its calls stay)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cl.client().storesDo(cmd, http.MethodDelete, campaignPath(args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
			return nil
		}}
}
