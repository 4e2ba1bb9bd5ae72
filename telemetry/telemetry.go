// Package telemetry holds the box's operational signals: Prometheus
// series served at /metrics, with no personal data in any label (no
// numbers, identities, keys or text: agents, directions, outcomes, routes,
// stages and kinds only).
//
//	m := telemetry.New()
//	voice.NewManager(voice.Config{..., Metrics: m})
//	mux.Handle("GET /metrics", m.Handler())
//
// Every package takes a *Metrics that may be nil: a nil *Metrics records
// nothing, so tests and tools that do not care need not build one.
package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stackbone/box/internal/realtime"
)

// Metrics are one box's series on their own registry.
type Metrics struct {
	reg *prometheus.Registry

	callsActive  *prometheus.GaugeVec
	callsTotal   *prometheus.CounterVec
	callSetup    *prometheus.HistogramVec
	turnStage    *prometheus.HistogramVec
	provider     *prometheus.HistogramVec
	memoryOps    *prometheus.HistogramVec
	httpRequests *prometheus.HistogramVec
	pacing       prometheus.Histogram
	turns        *prometheus.HistogramVec
	rag          *prometheus.HistogramVec
	costs        costSeries
}

// Buckets of latencies from a millisecond to a minute.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New returns the box's series, with the Go runtime and process collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{reg: reg,
		callsActive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stackbone_calls_active",
			Help: "Calls in progress on this box, by direction."}, []string{"direction"}),
		callsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stackbone_calls_total",
			Help: "Calls completed, by direction and outcome."}, []string{"direction", "outcome"}),
		callSetup: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stackbone_call_setup_seconds",
			Help: "From the call's open to its answer (the recall included), by direction.", Buckets: latencyBuckets},
			[]string{"direction"}),
		turnStage: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stackbone_turn_stage_seconds",
			Help: "A spoken turn's stages: end_of_speech (last voice to endpoint), speech_to_text, first_token, " +
				"first_audio (synthesis of the first sentence) and wire_to_wire (last voice to first agent audio).",
			Buckets: latencyBuckets}, []string{"stage"}),
		provider: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stackbone_provider_request_seconds",
			Help:    "Model provider requests by kind (chat, transcription, speech, embeddings) and result (ok, or the HTTP status class, or error).",
			Buckets: latencyBuckets}, []string{"kind", "result"}),
		memoryOps: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stackbone_memory_seconds",
			Help: "Person memory operations (recall, add, delete_all) by outcome (ok or the error code).", Buckets: latencyBuckets},
			[]string{"op", "outcome"}),
		httpRequests: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stackbone_http_request_seconds",
			Help: "HTTP requests by route pattern and status.", Buckets: latencyBuckets}, []string{"route", "status"}),
	}
	m.pacing = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "stackbone_sip_pacing_error_seconds",
		Help:    "How far each interval between the agent's RTP packets strayed from 20 ms.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .5}})
	m.turns = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stackbone_turns_seconds",
		Help: "Finished agent turns by wire (openai, anthropic, agui, voice...) and finish reason.", Buckets: latencyBuckets},
		[]string{"wire", "finish"})
	m.rag = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stackbone_rag_seconds",
		Help:    "Retrieval: retrieve (one search) and ingest (one attempt of a document's job), by result (ok or error).",
		Buckets: latencyBuckets}, []string{"op", "result"})
	realtimeGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "stackbone_media_realtime",
		Help: "1 while the box's threads run at real-time priority for its calls in progress (media.scheduling realtime; " +
			"not while the process is saturated), else 0."}, func() float64 {
		if realtime.Raised() {
			return 1
		}
		return 0
	})
	saturations := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "stackbone_media_realtime_saturations_total",
		Help: "How many times the box's threads left real-time priority while calls were in progress because the " +
			"process used 90 % of its processors over half a second (they return under 75 %)."},
		func() float64 { return float64(realtime.Saturations()) })
	reg.MustRegister(m.pacing, m.turns, m.rag, realtimeGauge, saturations)
	reg.MustRegister(m.callsActive, m.callsTotal, m.callSetup, m.turnStage, m.provider, m.memoryOps, m.httpRequests)
	m.costs = newCostSeries(reg)
	return m
}

// Handler serves the series in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// CallOpened counts a call in progress.
func (m *Metrics) CallOpened(direction string) {
	if m != nil {
		m.callsActive.WithLabelValues(direction).Inc()
	}
}

// CallAnswered records a call's setup time.
func (m *Metrics) CallAnswered(direction string, setup time.Duration) {
	if m != nil {
		m.callSetup.WithLabelValues(direction).Observe(setup.Seconds())
	}
}

// CallEnded counts a completed call.
func (m *Metrics) CallEnded(direction, outcome string) {
	if m != nil {
		m.callsActive.WithLabelValues(direction).Dec()
		m.callsTotal.WithLabelValues(direction, outcome).Inc()
	}
}

// Turn records one finished agent turn.
func (m *Metrics) Turn(wire, finish string, d time.Duration) {
	if m != nil {
		if wire == "" {
			wire = "other"
		}
		m.turns.WithLabelValues(wire, finish).Observe(d.Seconds())
	}
}

// RAG records one retrieval or ingest attempt.
func (m *Metrics) RAG(op string, err error, d time.Duration) {
	if m != nil {
		result := "ok"
		if err != nil {
			result = "error"
		}
		m.rag.WithLabelValues(op, result).Observe(d.Seconds())
	}
}

// Pacing records one agent packet's pacing error.
func (m *Metrics) Pacing(d time.Duration) {
	if m != nil {
		m.pacing.Observe(d.Seconds())
	}
}

// TurnStage records one stage of a spoken turn.
func (m *Metrics) TurnStage(stage string, d time.Duration) {
	if m != nil {
		m.turnStage.WithLabelValues(stage).Observe(d.Seconds())
	}
}

// Memory records one person-memory operation; code is "" on success.
func (m *Metrics) Memory(op, code string, d time.Duration) {
	if m != nil {
		if code == "" {
			code = "ok"
		}
		m.memoryOps.WithLabelValues(op, code).Observe(d.Seconds())
	}
}

// HTTP records one request by its route pattern ("" for none matched).
func (m *Metrics) HTTP(route string, status int, d time.Duration) {
	if m != nil {
		if route == "" {
			route = "unmatched"
		}
		m.httpRequests.WithLabelValues(route, strconv.Itoa(status)).Observe(d.Seconds())
	}
}

// Transport wraps an HTTP transport to the model providers, recording each
// request's kind, result and latency (to the response headers; streams
// are timed to their first byte).
func (m *Metrics) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if m == nil {
		return base
	}
	return roundTripper{m: m, base: base}
}

type roundTripper struct {
	m    *Metrics
	base http.RoundTripper
}

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := t.base.RoundTrip(r)
	result := "error"
	if err == nil {
		result = "ok"
		if res.StatusCode >= 300 {
			result = strconv.Itoa(res.StatusCode/100) + "xx"
		}
	}
	t.m.provider.WithLabelValues(providerKind(r.URL.Path), result).Observe(time.Since(start).Seconds())
	return res, err
}

func providerKind(path string) string {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return "chat"
	case strings.HasSuffix(path, "/audio/transcriptions"):
		return "transcription"
	case strings.HasSuffix(path, "/audio/speech"):
		return "speech"
	case strings.HasSuffix(path, "/embeddings"):
		return "embeddings"
	}
	return "other"
}

// WatchJobs adds a series of the job queue's jobs by queue and state, read
// from the database at each scrape.
func (m *Metrics) WatchJobs(pool *pgxpool.Pool, schema string) {
	if m != nil {
		m.reg.MustRegister(jobsCollector{pool: pool, schema: schema,
			desc: prometheus.NewDesc("stackbone_jobs", "Jobs in the queue by queue and state.", []string{"queue", "state"}, nil)})
	}
}

type jobsCollector struct {
	pool   *pgxpool.Pool
	schema string
	desc   *prometheus.Desc
}

func (c jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c jobsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// Every state of every queue a box has started (River's river_queue),
	// so an empty queue reads 0 instead of having no series.
	rows, err := c.pool.Query(ctx, `SELECT q.name, s.state::text, count(j.id)
		FROM `+c.schema+`.river_queue q
		CROSS JOIN unnest(enum_range(NULL::`+c.schema+`.river_job_state)) AS s(state)
		LEFT JOIN `+c.schema+`.river_job j ON j.queue = q.name AND j.state = s.state
		GROUP BY q.name, s.state`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var queue, state string
		var n int64
		if rows.Scan(&queue, &state, &n) == nil {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), queue, state)
		}
	}
}

// CircuitSample is one provider's circuit as /metrics shows it.
type CircuitSample struct {
	Provider string
	// Endpoint is chat, transcriptions or speech.
	Endpoint string
	// Open: the provider is skipped (open) or only probed (half-open).
	Open bool
	// Opened is how many times the circuit opened since the box started.
	Opened int
}

// WatchCircuits adds the providers' circuits, read at each scrape:
// stackbone_provider_circuit_open (1 while a provider is skipped or only
// probed) and stackbone_provider_circuit_opened_total.
func (m *Metrics) WatchCircuits(read func() []CircuitSample) {
	if m != nil {
		m.reg.MustRegister(circuitsCollector{read: read,
			open: prometheus.NewDesc("stackbone_provider_circuit_open",
				"1 while a provider endpoint's circuit is open or half-open (its requests skipped or probed), by provider and endpoint.", []string{"provider", "endpoint"}, nil),
			opened: prometheus.NewDesc("stackbone_provider_circuit_opened_total",
				"Times a provider endpoint's circuit opened, by provider and endpoint.", []string{"provider", "endpoint"}, nil)})
	}
}

type circuitsCollector struct {
	read         func() []CircuitSample
	open, opened *prometheus.Desc
}

func (c circuitsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.open; ch <- c.opened }

func (c circuitsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.read() {
		open := 0.0
		if s.Open {
			open = 1
		}
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, open, s.Provider, s.Endpoint)
		ch <- prometheus.MustNewConstMetric(c.opened, prometheus.CounterValue, float64(s.Opened), s.Provider, s.Endpoint)
	}
}
