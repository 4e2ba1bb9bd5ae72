package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// StartTracing exports spans over OTLP/HTTP to endpoint (a base URL such
// as http://collector:4318; spans go to /v1/traces) and makes it the
// process's tracer provider, the one OpenTelemetry's instrumentation
// finds. Tracing is off while it is not called: the spans the box starts
// then cost nothing. The returned function flushes and stops the exporter.
//
// Spans: one per HTTP request (Handler), per provider request (Transport),
// per call and per spoken turn (package voice). They carry ids, kinds,
// outcomes and timings, never what was said.
func StartTracing(ctx context.Context, endpoint string) (func(context.Context) error, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("telemetry: otlpEndpoint %q is not a URL", endpoint)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host)}
	if u.Scheme == "http" {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	if u.Path != "" && u.Path != "/" {
		opts = append(opts, otlptracehttp.WithURLPath(u.Path+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("stackbone"))))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return tp.Shutdown, nil
}

// Tracer is the box's tracer for one package.
func Tracer(pkg string) trace.Tracer { return otel.Tracer("github.com/stackbone/box/" + pkg) }

// Handler wraps the box's HTTP handler with a span per request, named by
// method and route pattern.
func Handler(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "http", otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
		return "HTTP " + r.Method
	}))
}

// TraceTransport gives each provider request a span, child of the turn
// that made it.
func TraceTransport(base http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(base, otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
		return "provider " + providerKind(r.URL.Path)
	}))
}

// LogHandler adds the trace and span ids of a record's context to it, so
// logs and traces meet.
func LogHandler(h slog.Handler) slog.Handler { return traceIDs{h} }

type traceIDs struct{ slog.Handler }

func (t traceIDs) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return t.Handler.Handle(ctx, r)
}

func (t traceIDs) WithAttrs(as []slog.Attr) slog.Handler { return traceIDs{t.Handler.WithAttrs(as)} }
func (t traceIDs) WithGroup(name string) slog.Handler    { return traceIDs{t.Handler.WithGroup(name)} }
