package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/tools"
)

// toolsCmd lets operators see and try an agent's http and mcp tools as the
// box would offer and run them: with the same configuration and
// environment (secrets), from the machine the command runs on.
func toolsCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "See and try an agent's http and mcp tools (run here, with the config and environment given)",
	}
	cmd.PersistentFlags().StringVar(&configPath, "config", "", "config file (default: configs/dev.yaml if present, else the embedded copy)")
	open := func(cmd *cobra.Command, agentName string) (*tools.Service, error) {
		cfg, err := loadDevConfig(configPath)
		if err != nil {
			return nil, err
		}
		if _, ok := cfg.Agents[agentName]; !ok {
			return nil, fmt.Errorf("no agent %q in the config (agents: %s)", agentName, strings.Join(cfg.AgentNames(), ", "))
		}
		svc, err := tools.New(tools.Config{Agents: cfg.Agents, Logger: quietLogger()})
		if err != nil {
			return nil, err
		}
		svc.Start(cmd.Context())
		return svc, nil
	}
	list := &cobra.Command{
		Use:   "list AGENT",
		Short: "List the agent's http and mcp tools as the model is offered them (and servers left out, with why)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := open(cmd, args[0])
			if err != nil {
				return err
			}
			defer svc.Close()
			return printTools(cmd.OutOrStdout(), svc.List(cmd.Context(), args[0]))
		},
	}
	var argsJSON string
	call := &cobra.Command{
		Use:   "call AGENT TOOL --args JSON",
		Short: "Call one of the agent's tools with the given arguments and print what the model would see",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !json.Valid([]byte(argsJSON)) {
				return errors.New("--args must be a JSON object, such as '{\"orderId\":\"A-1001\"}'")
			}
			svc, err := open(cmd, args[0])
			if err != nil {
				return err
			}
			defer svc.Close()
			for _, st := range svc.List(cmd.Context(), args[0]) {
				if st.Def.Name != args[1] || st.Unavailable != "" {
					continue
				}
				start := time.Now()
				out, err := st.Run(cmd.Context(), agent.ToolCall{ID: "cli", Name: args[1], Arguments: argsJSON}, agent.Scope{Agent: args[0]})
				outcome := agent.OutcomeOK
				var te *agent.ToolError
				if errors.As(err, &te) {
					out, outcome, err = te.Message, te.Outcome, nil
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "outcome %s in %s\n", outcome, time.Since(start).Round(time.Millisecond))
				fmt.Fprintln(cmd.OutOrStdout(), out)
				return nil
			}
			return fmt.Errorf("agent %s has no http or mcp tool %q available now (see: stackbone tools list %s)", args[0], args[1], args[0])
		},
	}
	call.Flags().StringVar(&argsJSON, "args", "{}", "the tool's arguments, a JSON object")
	cmd.AddCommand(list, call)
	return cmd
}

func printTools(w io.Writer, list []agent.ServerTool) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "The agent declares no http or mcp tool.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDESCRIPTION\tPARAMETERS")
	for _, st := range list {
		if st.Unavailable != "" {
			fmt.Fprintf(tw, "%s\t(left out: %s)\t\n", st.Def.Name, st.Unavailable)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Def.Name, oneLine(st.Def.Description, 60), oneLine(string(st.Def.Parameters), 80))
	}
	return tw.Flush()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// quietLogger keeps the tool service's logs (an MCP server down) on
// stderr, warnings only, apart from the command's output.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
