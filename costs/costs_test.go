package costs_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/costs"
)

func ptr(v float64) *float64 { return &v }

func table() *costs.Table {
	return costs.NewTable(&config.Config{
		Providers: map[string]config.Provider{"openai": {Prices: map[string]config.Price{
			"chat":      {Input: 2, Output: 8},
			"whisper-1": {PerMinute: ptr(0.006)},
			"tts-1":     {PerMillionCharacters: ptr(15)},
		}}},
		SIP: config.SIP{Trunks: config.Trunks{Inbound: []config.InboundTrunk{{Name: "carrier", PricePerMinute: ptr(0.01)}, {Name: "free"}}}},
	})
}

// Each part is its usage times its price; a part with usage and no price
// is nil and named, and so is the total; a part with no usage costs 0.
func TestPrice(t *testing.T) {
	var m costs.Meter
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := costs.WithMeter(context.Background(), &m)
			costs.MeterOf(ctx).Tokens("openai/chat", 100, 10)
			costs.MeterOf(ctx).SpeechToText("openai/whisper-1", 8000, 8000)
			costs.MeterOf(ctx).TextToSpeech("openai/tts-1", 20)
		}()
	}
	wg.Wait()
	costs.MeterOf(context.Background()).Tokens("openai/chat", 1, 1) // no meter: nothing counted
	u := m.Usage()
	u.Telephony = costs.LineUsage{Seconds: 90, Trunk: "carrier"}
	if u.Model.InputTokens != 1000 || u.Model.OutputTokens != 100 || u.SpeechToText.Seconds != 10 || u.TextToSpeech.Characters != 200 {
		t.Fatalf("usage %+v", u)
	}
	c := table().Price(u)
	// Computed at run time in float64, as the table does (constants would
	// be exact).
	in, out, audio, chars, line := 1000.0, 100.0, 10.0, 200.0, 90.0
	want := map[string]float64{costs.PartModel: (in*2 + out*8) / 1e6, costs.PartSpeechToText: audio * 0.006 / 60,
		costs.PartTextToSpeech: chars * 15 / 1e6, costs.PartTelephony: line * 0.01 / 60}
	total := 0.0
	for _, part := range costs.Parts {
		if v := c.Part(part); v == nil || *v != want[part] {
			t.Fatalf("%s costs %v, want %v", part, v, want[part])
		}
		total += want[part]
	}
	if c.Currency != "USD" || c.Total == nil || *c.Total != total || len(c.Unpriced) != 0 {
		t.Fatalf("cost %+v, want total %v USD", c, total)
	}

	u.TextToSpeech.ByModel["openai/tts-hd"] = 5
	u.Telephony.Trunk = "free"
	c = table().Price(u)
	if c.TextToSpeech != nil || c.Telephony != nil || c.Total != nil || !slices.Equal(c.Unpriced, []string{costs.PartTextToSpeech, costs.PartTelephony}) ||
		c.Priced != want[costs.PartModel]+want[costs.PartSpeechToText] {
		t.Fatalf("unpriced parts: %+v", c)
	}

	c = table().Price(costs.NewUsage())
	if c.Total == nil || *c.Total != 0 || len(c.Unpriced) != 0 {
		t.Fatalf("nothing used: %+v", c)
	}
}

// Negative prices and a currency that is not an ISO 4217 code are
// refused.
func TestPricesValidated(t *testing.T) {
	_, err := config.Parse([]byte(`
costs: {currency: euro}
providers:
  openai: {prices: {tts-1: {perMillionCharacters: -1}}}
sip:
  trunks:
    inbound: [{name: carrier, sources: [127.0.0.1], pricePerMinute: -0.5, defaultAgent: a}]
agents:
  a: {model: openai/chat}
`))
	for _, want := range []string{"costs.currency", "perMillionCharacters must not be negative", "pricePerMinute must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want it to say %q", err, want)
		}
	}
}
