package voice

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/telemetry"
)

// callUsage is what a call used as it goes: the speech engines count on
// its meter (carried by the call's context), each answered turn its
// tokens.
type callUsage struct {
	costs.Meter
	mu sync.Mutex
	// runs are the turns whose result carried no usage (failed or
	// cancelled mid-answer): what the provider reported for them is in
	// their runs, read once the call ends.
	runs []uuid.UUID
}

// countTurn counts one model turn of the call.
func (c *Call) countTurn(res agent.Result, err error) {
	if err == nil {
		c.usage.Tokens(res.Model, res.Usage.InputTokens, res.Usage.OutputTokens)
		return
	}
	if res.RunID != uuid.Nil {
		c.usage.mu.Lock()
		c.usage.runs = append(c.usage.runs, res.RunID)
		c.usage.mu.Unlock()
	}
}

// finalUsage is the call's usage at its end: the meter's counts, the
// tokens of its failed and cancelled turns from their runs, and the
// answered time on its trunk.
func (c *Call) finalUsage(ctx context.Context, ended time.Time) costs.Usage {
	u := c.usage.Usage()
	c.usage.mu.Lock()
	ids := c.usage.runs
	c.usage.mu.Unlock()
	if len(ids) > 0 {
		if err := c.m.runTokens(ctx, ids, &u); err != nil {
			c.m.log.Warn("voice: the tokens of the call's failed turns", "call", c.info.ID, "error", err)
		}
	}
	u.Telephony = lineUsage(c.info.Direction, c.info.Trunk, c.answered, ended)
	return u
}

// runTokens adds the runs' tokens to u, by model. The runs are found by
// key: the batch has the statement planned for these ids (customPlan),
// as a plan the connection cached while the table of runs was small
// scans every run ever made.
func (m *Manager) runTokens(ctx context.Context, ids []uuid.UUID, u *costs.Usage) error {
	var b pgx.Batch
	b.Queue(customPlan)
	b.Queue(`SELECT model, sum(input_tokens), sum(output_tokens) FROM stackbone_platform.runs
		WHERE id = ANY($1) AND model IS NOT NULL GROUP BY model`, ids)
	br := m.cfg.Pool.SendBatch(ctx, &b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return err
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	var model string
	var t costs.Tokens
	_, err = pgx.ForEachRow(rows, []any{&model, &t.InputTokens, &t.OutputTokens}, func() error {
		u.AddTokens(model, t)
		return nil
	})
	if err != nil {
		return err
	}
	return br.Close()
}

// lineUsage is a phone call's answered time on its trunk: zero for a
// browser call and a call never answered.
func lineUsage(direction, trunk string, answered *time.Time, ended time.Time) costs.LineUsage {
	if direction == Browser || trunk == "" || answered == nil || !ended.After(*answered) {
		return costs.LineUsage{}
	}
	return costs.LineUsage{Seconds: ended.Sub(*answered).Seconds(), Trunk: trunk}
}

// priced is a call's usage and its cost by the price table, as stored.
func (m *Manager) priced(u costs.Usage) (usage, cost []byte, c costs.Cost) {
	c = m.prices.Price(u)
	usage, _ = json.Marshal(u)
	cost, _ = json.Marshal(c)
	return usage, cost, c
}

// countCost adds an ended call's usage and cost to the box's metrics.
func (m *Manager) countCost(agent string, u costs.Usage, c costs.Cost) {
	used := []telemetry.Used{
		{Part: costs.PartModel, Unit: "input_tokens", Amount: float64(u.Model.InputTokens)},
		{Part: costs.PartModel, Unit: "output_tokens", Amount: float64(u.Model.OutputTokens)},
		{Part: costs.PartSpeechToText, Unit: "seconds", Amount: u.SpeechToText.Seconds},
		{Part: costs.PartTextToSpeech, Unit: "characters", Amount: float64(u.TextToSpeech.Characters)},
		{Part: costs.PartTelephony, Unit: "seconds", Amount: u.Telephony.Seconds},
	}
	priced := map[string]float64{}
	for _, part := range costs.Parts {
		if v := c.Part(part); v != nil {
			priced[part] = *v
		}
	}
	m.cfg.Metrics.CallCost(agent, c.Currency, used, priced, c.Unpriced)
}

// usageJSON is what the persister keeps of the call's usage so far.
func (c *Call) usageJSON() []byte {
	b, _ := json.Marshal(c.usage.Usage())
	return b
}

// meteredLive counts a live transcriber's audio on the call's meter: a
// stream by its time from open to close (streaming providers bill the
// audio streamed, and the call streams all of it, silence included), an
// utterance it transcribes whole by its samples.
type meteredLive struct {
	StreamingTranscriber
	id string
}

// Listen implements StreamingTranscriber.
func (l meteredLive) Listen(ctx context.Context, rate int) (TranscriptStream, error) {
	s, err := l.StreamingTranscriber.Listen(ctx, rate)
	m := costs.MeterOf(ctx)
	if err != nil || m == nil {
		return s, err
	}
	return &meteredStream{TranscriptStream: s, meter: m, id: l.id, rate: rate, opened: time.Now()}, nil
}

// Transcribe implements Transcriber.
func (l meteredLive) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	text, err := l.StreamingTranscriber.Transcribe(ctx, pcm, rate)
	if err == nil {
		costs.MeterOf(ctx).SpeechToText(l.id, len(pcm), rate)
	}
	return text, err
}

// meteredStream is a live stream counted once it closes.
type meteredStream struct {
	TranscriptStream
	meter  *costs.Meter
	id     string
	rate   int
	opened time.Time
	once   sync.Once
}

// Close implements TranscriptStream.
func (s *meteredStream) Close() error {
	err := s.TranscriptStream.Close()
	s.once.Do(func() {
		s.meter.SpeechToText(s.id, int(time.Since(s.opened).Seconds()*float64(s.rate)), s.rate)
	})
	return err
}
