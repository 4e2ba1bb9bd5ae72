package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

// costSeries are what calls used and cost, by agent and part.
type costSeries struct {
	cost     *prometheus.CounterVec
	usage    *prometheus.CounterVec
	unpriced *prometheus.CounterVec
}

func newCostSeries(reg *prometheus.Registry) costSeries {
	s := costSeries{
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stackbone_cost_total",
			Help: "What ended calls cost by the price table, by agent, part (model, speechToText, textToSpeech, telephony) " +
				"and currency; usage with no price adds nothing here (see stackbone_unpriced_calls_total)."},
			[]string{"agent", "part", "currency"}),
		usage: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stackbone_usage_total",
			Help: "What ended calls used, priced or not, by agent, part and unit (input_tokens, output_tokens, seconds, characters)."},
			[]string{"agent", "part", "unit"}),
		unpriced: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stackbone_unpriced_calls_total",
			Help: "Ended calls with usage of a part the price table has no price for, by agent and part."},
			[]string{"agent", "part"}),
	}
	reg.MustRegister(s.cost, s.usage, s.unpriced)
	return s
}

// Used is an amount of one part's usage in a unit (input_tokens,
// output_tokens, seconds, characters).
type Used struct {
	Part, Unit string
	Amount     float64
}

// CallCost counts an ended call: what it used, the cost of each priced
// part in currency, and the parts with usage and no price.
func (m *Metrics) CallCost(agent, currency string, used []Used, cost map[string]float64, unpriced []string) {
	if m == nil {
		return
	}
	s := m.costs
	for _, u := range used {
		if u.Amount > 0 {
			s.usage.WithLabelValues(agent, u.Part, u.Unit).Add(u.Amount)
		}
	}
	for part, v := range cost {
		if v > 0 {
			s.cost.WithLabelValues(agent, part, currency).Add(v)
		}
	}
	for _, part := range unpriced {
		s.unpriced.WithLabelValues(agent, part).Inc()
	}
}
