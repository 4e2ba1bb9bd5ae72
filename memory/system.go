package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider"
)

// Keys of the extraction settings in stackbone_platform.system_settings.
const (
	keySelection = "memory.extraction.selection"
	keyPrompt    = "memory.extraction.prompt"
)

// MaxGuidanceChars bounds the extraction guidance prompt.
const MaxGuidanceChars = 20000

// Selection is the extraction model chosen in System. Nil fields are not
// selected and fall through to the request, the environment and the default.
type Selection struct {
	Model           *string `json:"model"`
	ReasoningEffort *string `json:"reasoningEffort"`
}

// GuidancePrompt is the extraction guidance: a draft being edited and the
// published text that runs.
type GuidancePrompt struct {
	Draft        *string    `json:"draft"`
	DraftSavedAt *time.Time `json:"draftSavedAt"`
	Published    *string    `json:"published"`
	PublishedAt  *time.Time `json:"publishedAt"`
}

// ExtractionSettings is what GET /api/system/memory-extraction shows.
type ExtractionSettings struct {
	Selection Selection `json:"selection"`
	// Fallback is what runs when nothing is selected and the request names
	// nothing: the box's environment or config, else the platform default.
	Fallback struct {
		Model           string `json:"model"`
		ReasoningEffort string `json:"reasoningEffort"`
	} `json:"fallback"`
	Prompt GuidancePrompt `json:"prompt"`
	// ActiveGuidance is "published" or "built-in".
	ActiveGuidance  string `json:"activeGuidance"`
	BuiltInGuidance string `json:"builtInGuidance"`
}

type extraction struct {
	model           string
	reasoningEffort string
	guidance        string
}

// settingsQuery reads the System selection and guidance of the extractor.
const settingsQuery = `SELECT key, value FROM stackbone_platform.system_settings WHERE key = ANY($1)`

var settingsKeys = []string{keySelection, keyPrompt}

// readSettings scans settingsQuery's rows.
func readSettings(rows pgx.Rows) (map[string][]byte, error) {
	vals := map[string][]byte{}
	var k string
	var v []byte
	_, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
		vals[k] = slices.Clone(v)
		return nil
	})
	if err != nil {
		return nil, dbError(ErrUnavailable, "read extraction settings", err)
	}
	return vals, nil
}

// extraction resolves the model, reasoning effort and guidance for one add:
// System selection, then the request, then the box's fallback. Unreadable
// model settings fail the add; a prompt that cannot be read falls back to
// the built-in guidance and says so in the log.
func (s *Service) extraction(vals map[string][]byte, reqModel, reqEffort string) (extraction, error) {
	var sel Selection
	if v, ok := vals[keySelection]; ok {
		if err := json.Unmarshal(v, &sel); err != nil {
			return extraction{}, fmt.Errorf("%w: extraction selection is unreadable", ErrUnavailable)
		}
	}
	ex := extraction{model: s.cfg.FallbackModel, reasoningEffort: s.cfg.FallbackReasoningEffort, guidance: BuiltInGuidance}
	switch {
	case sel.Model != nil:
		ex.model = *sel.Model
	case reqModel != "":
		ex.model = reqModel
	}
	switch {
	case sel.ReasoningEffort != nil:
		ex.reasoningEffort = *sel.ReasoningEffort
	case reqEffort != "":
		ex.reasoningEffort = reqEffort
	}
	if v, ok := vals[keyPrompt]; ok {
		var gp GuidancePrompt
		if err := json.Unmarshal(v, &gp); err != nil {
			s.log.Warn("memory: extraction guidance unreadable; using the built-in guidance", "error", "decode")
		} else if gp.Published != nil && strings.TrimSpace(*gp.Published) != "" {
			ex.guidance = *gp.Published
		}
	}
	return ex, nil
}

// ExtractionSettings reads what System shows.
func (s *Service) ExtractionSettings(ctx context.Context) (ExtractionSettings, error) {
	var out ExtractionSettings
	out.Fallback.Model = s.cfg.FallbackModel
	out.Fallback.ReasoningEffort = s.cfg.FallbackReasoningEffort
	out.BuiltInGuidance = BuiltInGuidance
	if _, err := readSetting(ctx, s.cfg.Pool, keySelection, &out.Selection); err != nil {
		return out, err
	}
	if _, err := readSetting(ctx, s.cfg.Pool, keyPrompt, &out.Prompt); err != nil {
		return out, err
	}
	out.ActiveGuidance = "built-in"
	if p := out.Prompt.Published; p != nil && strings.TrimSpace(*p) != "" {
		out.ActiveGuidance = "published"
	}
	return out, nil
}

// SelectionPatch changes the System selection. A field that is absent stays;
// Clear* removes the selection of that field.
type SelectionPatch struct {
	Model                *string
	ClearModel           bool
	ReasoningEffort      *string
	ClearReasoningEffort bool
}

// SetSelection validates and stores the System selection. It returns
// ErrInvalidRequest for an unusable model or effort.
func (s *Service) SetSelection(ctx context.Context, actor string, p SelectionPatch) (ExtractionSettings, error) {
	var fields []string
	if p.Model != nil || p.ClearModel {
		fields = append(fields, "model")
	}
	if p.ReasoningEffort != nil || p.ClearReasoningEffort {
		fields = append(fields, "reasoningEffort")
	}
	if len(fields) == 0 {
		return ExtractionSettings{}, invalid("nothing to change: send model and/or reasoningEffort")
	}
	if p.Model != nil {
		// A known provider that lacks credentials today is still a valid choice.
		if _, err := s.cfg.Models.Resolve(*p.Model); err != nil && !errors.Is(err, provider.ErrNotConfigured) {
			return ExtractionSettings{}, invalid("model: %v", err)
		}
	}
	if e := p.ReasoningEffort; e != nil && !config.ValidReasoningEffort(*e) {
		return ExtractionSettings{}, invalid("reasoningEffort must be one of %s", strings.Join(config.ReasoningEfforts, ", "))
	}
	err := s.updateSetting(ctx, keySelection, actor, "memory.extraction.selection.saved", fields, func(v []byte) (any, error) {
		var sel Selection
		if v != nil {
			if err := json.Unmarshal(v, &sel); err != nil {
				return nil, err
			}
		}
		switch {
		case p.ClearModel:
			sel.Model = nil
		case p.Model != nil:
			sel.Model = p.Model
		}
		switch {
		case p.ClearReasoningEffort:
			sel.ReasoningEffort = nil
		case p.ReasoningEffort != nil:
			sel.ReasoningEffort = p.ReasoningEffort
		}
		return sel, nil
	})
	if err != nil {
		return ExtractionSettings{}, err
	}
	return s.ExtractionSettings(ctx)
}

// SaveGuidanceDraft stores a draft; it does not run until published.
func (s *Service) SaveGuidanceDraft(ctx context.Context, actor, text string) (ExtractionSettings, error) {
	if utf8.RuneCountInString(text) > MaxGuidanceChars || strings.ContainsRune(text, 0) {
		return ExtractionSettings{}, invalid("text must be at most %d characters", MaxGuidanceChars)
	}
	now := s.cfg.Now().UTC()
	err := s.updateSetting(ctx, keyPrompt, actor, "memory.extraction.prompt.draft_saved", []string{"draft"}, func(v []byte) (any, error) {
		var gp GuidancePrompt
		if v != nil {
			if err := json.Unmarshal(v, &gp); err != nil {
				return nil, err
			}
		}
		gp.Draft, gp.DraftSavedAt = &text, &now
		return gp, nil
	})
	if err != nil {
		return ExtractionSettings{}, err
	}
	return s.ExtractionSettings(ctx)
}

// PublishGuidance makes the saved draft the guidance of the next extraction.
// Blank text publishes the built-in guidance. It returns ErrInvalidRequest
// when there is no draft.
func (s *Service) PublishGuidance(ctx context.Context, actor string) (ExtractionSettings, error) {
	now := s.cfg.Now().UTC()
	err := s.updateSetting(ctx, keyPrompt, actor, "memory.extraction.prompt.published", []string{"published"}, func(v []byte) (any, error) {
		var gp GuidancePrompt
		if v != nil {
			if err := json.Unmarshal(v, &gp); err != nil {
				return nil, err
			}
		}
		if gp.Draft == nil {
			return nil, invalid("there is no draft to publish: save one first")
		}
		gp.Published, gp.PublishedAt = gp.Draft, &now
		return gp, nil
	})
	if err != nil {
		return ExtractionSettings{}, err
	}
	return s.ExtractionSettings(ctx)
}

// ResetGuidance unpublishes the guidance prompt and removes the draft, so
// the built-in guidance runs.
func (s *Service) ResetGuidance(ctx context.Context, actor string) (ExtractionSettings, error) {
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return ExtractionSettings{}, dbError(ErrUnavailable, "begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `DELETE FROM stackbone_platform.system_settings WHERE key = $1`, keyPrompt); err != nil {
		return ExtractionSettings{}, dbError(ErrUnavailable, "reset guidance", err)
	}
	if err := logActivity(ctx, tx, actor, "memory.extraction.prompt.reset", "system", []string{"draft", "published"}); err != nil {
		return ExtractionSettings{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return ExtractionSettings{}, dbError(ErrUnavailable, "commit", err)
	}
	return s.ExtractionSettings(ctx)
}

// updateSetting read-modify-writes one system setting under a row lock and
// records the change in the activity log (field names only).
func (s *Service) updateSetting(ctx context.Context, key, actor, action string, fields []string, change func([]byte) (any, error)) error {
	tx, err := s.cfg.Pool.Begin(ctx)
	if err != nil {
		return dbError(ErrUnavailable, "begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Make sure the row exists so FOR UPDATE has something to lock.
	if _, err := tx.Exec(ctx, `INSERT INTO stackbone_platform.system_settings (key, value) VALUES ($1, 'null')
	                           ON CONFLICT (key) DO NOTHING`, key); err != nil {
		return dbError(ErrUnavailable, "write setting", err)
	}
	var cur []byte
	if err := tx.QueryRow(ctx, `SELECT value FROM stackbone_platform.system_settings WHERE key = $1 FOR UPDATE`, key).Scan(&cur); err != nil {
		return dbError(ErrUnavailable, "read setting", err)
	}
	if string(cur) == "null" {
		cur = nil
	}
	next, err := change(cur)
	if err != nil {
		if errors.Is(err, ErrInvalidRequest) {
			return err
		}
		return fmt.Errorf("%w: setting %s is unreadable", ErrUnavailable, key)
	}
	b, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("%w: encode setting: %v", ErrUnavailable, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.system_settings SET value = $2, updated_at = now() WHERE key = $1`, key, b); err != nil {
		return dbError(ErrUnavailable, "write setting", err)
	}
	if err := logActivity(ctx, tx, actor, action, "system", fields); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return dbError(ErrUnavailable, "commit", err)
	}
	return nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readSetting decodes one system setting into v; it reports whether the
// setting exists.
func readSetting(ctx context.Context, q querier, key string, v any) (bool, error) {
	var b []byte
	err := q.QueryRow(ctx, `SELECT value FROM stackbone_platform.system_settings WHERE key = $1`, key).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, dbError(ErrUnavailable, "read setting", err)
	}
	if string(b) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%w: setting %s is unreadable", ErrUnavailable, key)
	}
	return true, nil
}

// LogActivity records an operator's change in the activity log that GET
// /api/activity shows, inside tx so it commits with the change: the actor
// ("key:NAME"), the action, the subject ("agent:NAME") and the names of the
// fields changed, never their values. The log is this package's table;
// other packages' settings (an agent's provider chains) write through here.
// It returns ErrUnavailable or ErrSchemaMissing.
func LogActivity(ctx context.Context, tx pgx.Tx, actor, action, subject string, fields []string) error {
	return logActivity(ctx, tx, actor, action, subject, fields)
}

func logActivity(ctx context.Context, tx pgx.Tx, actor, action, subject string, fields []string) error {
	if _, err := tx.Exec(ctx, `INSERT INTO stackbone_platform.activity_log (actor, action, subject, fields) VALUES ($1, $2, $3, $4)`,
		actor, action, subject, fields); err != nil {
		return dbError(ErrUnavailable, "activity log", err)
	}
	return nil
}
