// Package costs prices what calls and text sessions used: model tokens,
// speech-to-text audio, text-to-speech characters and telephone minutes,
// by the price table of the config (the providers' model prices and the
// SIP trunks' prices per minute, in the config's currency). Usage with no
// price is counted and its cost is "not priced" (nil), never 0.
//
//	table := costs.NewTable(cfg)
//	var m costs.Meter
//	m.SpeechToText("openai/whisper-1", samples, 8000)
//	cost := table.Price(m.Usage())
//	cost.Total // nil while a part with usage has no price
package costs

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/stackbone/box/config"
)

// Parts of a call's or a session's usage, as its cost names them.
const (
	PartModel        = "model"
	PartSpeechToText = "speechToText"
	PartTextToSpeech = "textToSpeech"
	PartTelephony    = "telephony"
)

// Parts lists the parts in the order a cost sums them.
var Parts = []string{PartModel, PartSpeechToText, PartTextToSpeech, PartTelephony}

// Usage is what a call or a session used, per part.
type Usage struct {
	Model        ModelUsage `json:"model"`
	SpeechToText AudioUsage `json:"speechToText"`
	TextToSpeech TextUsage  `json:"textToSpeech"`
	Telephony    LineUsage  `json:"telephony"`
}

// Tokens are a model's input (prompt) and output (completion) tokens as
// the provider reported them.
type Tokens struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
}

// ModelUsage is the tokens of the turns, in all and by provider/model id.
type ModelUsage struct {
	Tokens
	ByModel map[string]Tokens `json:"byModel"`
}

// AudioUsage is the audio sent to speech-to-text: seconds in all and by
// provider/model id.
type AudioUsage struct {
	Seconds float64            `json:"seconds"`
	ByModel map[string]float64 `json:"byModel"`
}

// TextUsage is the characters (Unicode code points) sent to
// text-to-speech, in all and by provider/model id.
type TextUsage struct {
	Characters int64            `json:"characters"`
	ByModel    map[string]int64 `json:"byModel"`
}

// LineUsage is a phone call's answered time on its trunk; zero for a call
// that was not a phone call or was never answered.
type LineUsage struct {
	Seconds float64 `json:"seconds"`
	Trunk   string  `json:"trunk,omitempty"`
}

// Cost is a usage priced, in Currency. A part's cost is nil when some of
// its usage has no price (the part is then in Unpriced); a part with no
// usage costs 0.
type Cost struct {
	Currency     string   `json:"currency"`
	Model        *float64 `json:"model"`
	SpeechToText *float64 `json:"speechToText"`
	TextToSpeech *float64 `json:"textToSpeech"`
	Telephony    *float64 `json:"telephony"`
	// Total is the sum of the parts, nil while any part is not priced.
	Total *float64 `json:"total"`
	// Priced is the sum of the parts that are priced: what is known of
	// the cost when Total is nil.
	Priced float64 `json:"priced"`
	// Unpriced names the parts with usage and no price.
	Unpriced []string `json:"unpriced"`
}

// Part returns a part's cost by name (Parts).
func (c Cost) Part(name string) *float64 {
	switch name {
	case PartModel:
		return c.Model
	case PartSpeechToText:
		return c.SpeechToText
	case PartTextToSpeech:
		return c.TextToSpeech
	case PartTelephony:
		return c.Telephony
	}
	return nil
}

// Table is the price table of a config. It is immutable and safe for
// concurrent use.
type Table struct {
	currency string
	models   map[string]config.Price // by provider/model id
	trunks   map[string]*float64     // per minute, by trunk name
}

// NewTable reads the prices of cfg: each provider's model prices and each
// SIP trunk's price per minute.
func NewTable(cfg *config.Config) *Table {
	t := &Table{currency: cfg.Costs.Currency, models: map[string]config.Price{}, trunks: map[string]*float64{}}
	if t.currency == "" {
		t.currency = config.DefaultCurrency
	}
	for name, p := range cfg.Providers {
		for model, pr := range p.Prices {
			t.models[name+"/"+model] = pr
		}
	}
	for _, tr := range cfg.SIP.Trunks.Inbound {
		t.trunks[tr.Name] = tr.PricePerMinute
	}
	for _, tr := range cfg.SIP.Trunks.Outbound {
		if _, ok := t.trunks[tr.Name]; !ok || tr.PricePerMinute != nil {
			t.trunks[tr.Name] = tr.PricePerMinute
		}
	}
	return t
}

// Currency is the ISO 4217 code of the table's prices.
func (t *Table) Currency() string { return t.currency }

// Price prices u. Each part sums its models in the order of their ids:
// tokens as (input×Input + output×Output)/10⁶, audio as
// seconds×PerMinute/60, characters as characters×PerMillionCharacters/10⁶,
// the line as seconds×PricePerMinute/60; the total sums the parts in the
// order of Parts.
func (t *Table) Price(u Usage) Cost {
	c := Cost{Currency: t.currency, Unpriced: []string{}}
	c.Model = priceEach(u.Model.ByModel, func(id string, n Tokens) *float64 {
		p, ok := t.models[id]
		if !ok {
			return nil
		}
		v := (float64(n.InputTokens)*p.Input + float64(n.OutputTokens)*p.Output) / 1e6
		return &v
	})
	c.SpeechToText = priceEach(u.SpeechToText.ByModel, func(id string, s float64) *float64 {
		p := t.models[id].PerMinute
		if p == nil {
			return nil
		}
		v := s * *p / 60
		return &v
	})
	c.TextToSpeech = priceEach(u.TextToSpeech.ByModel, func(id string, n int64) *float64 {
		p := t.models[id].PerMillionCharacters
		if p == nil {
			return nil
		}
		v := float64(n) * *p / 1e6
		return &v
	})
	zero := 0.0
	c.Telephony = &zero
	if u.Telephony.Seconds > 0 {
		c.Telephony = nil
		if p := t.trunks[u.Telephony.Trunk]; p != nil {
			v := u.Telephony.Seconds * *p / 60
			c.Telephony = &v
		}
	}
	total := 0.0
	for _, part := range Parts {
		v := c.Part(part)
		if v == nil {
			c.Unpriced = append(c.Unpriced, part)
			continue
		}
		total += *v
	}
	c.Priced = total
	if len(c.Unpriced) == 0 {
		c.Total = &total
	}
	return c
}

// priceEach sums price over m in the order of its keys; nil when any
// entry has no price.
func priceEach[V any](m map[string]V, price func(id string, v V) *float64) *float64 {
	sum := 0.0
	for _, id := range sortedKeys(m) {
		v := price(id, m[id])
		if v == nil {
			return nil
		}
		sum += *v
	}
	return &sum
}

// Meter counts one call's usage as it goes. Its zero value is ready to
// use; its methods are safe for concurrent use and do nothing on a nil
// Meter. Callers count once per request (an utterance, a sentence), never
// per audio frame.
type Meter struct {
	mu      sync.Mutex
	tokens  map[string]Tokens
	samples map[sttKey]int64
	chars   map[string]int64
}

type sttKey struct {
	model string
	rate  int
}

// NewMeter returns an empty Meter.
func NewMeter() *Meter { return &Meter{} }

// Tokens counts a model's tokens.
func (m *Meter) Tokens(model string, in, out int) {
	if m == nil || model == "" || in == 0 && out == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string]Tokens{}
	}
	t := m.tokens[model]
	t.InputTokens += int64(in)
	t.OutputTokens += int64(out)
	m.tokens[model] = t
}

// SpeechToText counts samples of audio at rate sent to a speech-to-text
// model. Audio is kept in samples, so the seconds do not depend on the
// order the requests finished in.
func (m *Meter) SpeechToText(model string, samples, rate int) {
	if m == nil || samples <= 0 || rate <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.samples == nil {
		m.samples = map[sttKey]int64{}
	}
	m.samples[sttKey{model, rate}] += int64(samples)
}

// TextToSpeech counts characters sent to a text-to-speech model.
func (m *Meter) TextToSpeech(model string, characters int) {
	if m == nil || characters <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.chars == nil {
		m.chars = map[string]int64{}
	}
	m.chars[model] += int64(characters)
}

// NewUsage returns a usage of nothing, its maps empty.
func NewUsage() Usage {
	return Usage{Model: ModelUsage{ByModel: map[string]Tokens{}}, SpeechToText: AudioUsage{ByModel: map[string]float64{}},
		TextToSpeech: TextUsage{ByModel: map[string]int64{}}}
}

// Usage is what the meter counted so far (the line is the caller's to
// add).
func (m *Meter) Usage() Usage {
	u := NewUsage()
	if m == nil {
		return u
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, t := range m.tokens {
		u.AddTokens(id, t)
	}
	// Seconds of one model at several rates are summed in the order of
	// the rates, so the figure is the same every time.
	keys := make([]sttKey, 0, len(m.samples))
	for k := range m.samples {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b sttKey) int { return a.rate - b.rate })
	for _, k := range keys {
		s := float64(m.samples[k]) / float64(k.rate)
		u.SpeechToText.ByModel[k.model] += s
	}
	for _, id := range sortedKeys(u.SpeechToText.ByModel) {
		u.SpeechToText.Seconds += u.SpeechToText.ByModel[id]
	}
	for id, n := range m.chars {
		u.TextToSpeech.ByModel[id] += n
		u.TextToSpeech.Characters += n
	}
	return u
}

// AddTokens adds a model's tokens to u.
func (u *Usage) AddTokens(model string, t Tokens) {
	if u.Model.ByModel == nil {
		u.Model.ByModel = map[string]Tokens{}
	}
	have := u.Model.ByModel[model]
	have.InputTokens += t.InputTokens
	have.OutputTokens += t.OutputTokens
	u.Model.ByModel[model] = have
	u.Model.InputTokens += t.InputTokens
	u.Model.OutputTokens += t.OutputTokens
}

func sortedKeys[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

type meterKey struct{}

// WithMeter gives ctx a meter: the speech engines count the requests made
// with ctx on it.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// MeterOf is ctx's meter, or nil (which counts nothing).
func MeterOf(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}
