package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/stackbone/box/internal/realtime"
	"github.com/stackbone/box/provider/providertest"
)

// callsModel scripts the provider the calls load talks to: every utterance
// transcribes as "I would like some help.", the agent answers "Sure, I can
// help." and the memory extractor adds one fact.
func callsModel(s *providertest.Server) {
	s.DiscardRequests()
	s.RespondTranscripts(func([]byte) string { return "I would like some help." })
	s.RespondByModel(callsAnswer)
}

func callsAnswer(model string) providertest.Reply {
	if model == "extractor" {
		return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Called for help."}],"summary":"Asked for help."}`}
	}
	return providertest.Reply{Content: "Sure, I can help."}
}

// roomsModel scripts the provider the browser rooms load talks to.
func roomsModel(s *providertest.Server) {
	s.DiscardRequests()
	s.RespondByModel(func(string) providertest.Reply {
		return providertest.Reply{Content: "Sure, I can help with that."}
	})
	s.RespondTranscripts(func([]byte) string { return "Hello, I have a question about my order." })
}

// ModelConfig is the scripted provider `stackbone bench model` serves.
type ModelConfig struct {
	// Script is what it answers: "rooms" as bench rooms' model, else as
	// bench calls'.
	Script string
	// FailEvery, when 2 or more, fails one chat request in FailEvery
	// with a 500.
	FailEvery int
	Realtime  bool
}

// modelLine is a line `stackbone bench model` writes: its address as it
// starts, what it served as it stops.
type modelLine struct {
	URL     string `json:"url,omitempty"`
	Faulted int    `json:"faulted"`
	Streams int    `json:"streams"` // live transcription streams opened
	Finals  int    `json:"finals"`  // their final transcripts
	Error   string `json:"error,omitempty"`
}

// RunModel serves the calls load's scripted provider on loopback until in
// ends (the parent closes it) or ctx does: it writes {"url":...} once it
// listens and a last line with what it served.
func RunModel(ctx context.Context, cfg ModelConfig, in io.Reader, out io.Writer) error {
	standInGC()
	if cfg.Realtime {
		if release, err := realtime.Hold(); err == nil {
			defer release()
		}
	}
	s := providertest.Start()
	defer s.Close()
	if cfg.Script == "rooms" {
		roomsModel(s)
	} else {
		callsModel(s)
	}
	if cfg.FailEvery > 1 {
		s.SetFault(providertest.EndpointChat, providertest.Fault{Status: 500, Every: cfg.FailEvery})
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(modelLine{URL: s.URL()}); err != nil {
		return err
	}
	ended := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(ended)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
	}
	return enc.Encode(servedBy(s))
}

// servedBy is what s served: its chat faults and live transcription.
func servedBy(s *providertest.Server) modelLine {
	l := modelLine{Faulted: s.Faulted(providertest.EndpointChat)}
	for _, ls := range s.LiveSessions() {
		l.Streams++
		l.Finals += len(ls.Finals)
	}
	return l
}

// remoteModel is a `stackbone bench model` process.
type remoteModel struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
	url   string
}

// startRemoteModel starts the scripted provider in a process of its own
// (this executable), so the box's process measures only the box.
func startRemoteModel(ctx context.Context, cfg ModelConfig) (*remoteModel, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "bench", "model", "--fail-every", strconv.Itoa(cfg.FailEvery),
		"--script", cfg.Script, "--realtime="+strconv.FormatBool(cfg.Realtime))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench model: %w", err)
	}
	m := &remoteModel{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(out)}
	var first modelLine
	if !m.lines.Scan() || json.Unmarshal(m.lines.Bytes(), &first) != nil || first.URL == "" {
		_ = stdin.Close()
		_ = cmd.Wait()
		return nil, errors.New("bench model: the process did not say where it listens")
	}
	m.url = first.URL
	return m, nil
}

func (m *remoteModel) URL() string { return m.url }

// cpu is the process's CPU time so far.
func (m *remoteModel) cpu() time.Duration { return pidCPU(m.cmd.Process.Pid) }

// stop ends the process and returns what it served.
func (m *remoteModel) stop() (modelLine, error) {
	_ = m.stdin.Close()
	var last modelLine
	for m.lines.Scan() {
		_ = json.Unmarshal(m.lines.Bytes(), &last)
	}
	err := m.cmd.Wait()
	return last, err
}
