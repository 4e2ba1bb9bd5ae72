package jobs

import (
	"context"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/stackbone/box/telemetry"
)

// tracing gives each worked job a span: its kind, queue and attempt, and
// whether it failed (never its arguments, which may name a person).
type tracing struct{ river.MiddlewareDefaults }

func (tracing) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	ctx, span := telemetry.Tracer("jobs").Start(ctx, "job "+job.Kind)
	defer span.End()
	span.SetAttributes(attribute.String("job.kind", job.Kind), attribute.String("job.queue", job.Queue),
		attribute.Int("job.attempt", job.Attempt), attribute.Int64("job.id", job.ID))
	err := doInner(ctx)
	if err != nil {
		span.SetStatus(codes.Error, "the job failed")
	}
	return err
}
