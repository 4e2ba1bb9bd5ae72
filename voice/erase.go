package voice

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// EraseTx removes one person of one agent from the agent's call records,
// in the erasure's transaction tx (memory's DeleteAll): each call the
// person was on (by the identity its memory used, its number or any
// identity it named) loses its heard transcript (with the entries of a
// call in progress, which writes no more and keeps none at its end), its
// number, identities and analysis, and the person in its memory report
// and snapshot. Times, outcome, metrics, usage and cost stay. It returns
// the calls' ids, for their events to be erased too.
func (m *Manager) EraseTx(ctx context.Context, tx pgx.Tx, agentID, userID string) ([]string, error) {
	rows, err := tx.Query(ctx, `WITH calls AS (
			UPDATE stackbone_platform.voice_calls SET erased_at = now(), transcript = '[]', phone_number = NULL,
				identities = '{}', analysis = NULL, memory = memory - 'identity', snapshot = snapshot - 'userId'
			WHERE agent_id = $1 AND (memory->>'identity' = $2 OR phone_number = $2 OR snapshot->>'userId' = $2
				OR EXISTS (SELECT 1 FROM jsonb_each_text(identities) i WHERE i.value = $2))
			RETURNING id),
		gone AS (DELETE FROM stackbone_platform.voice_call_entries e USING calls WHERE e.call_id = calls.id)
		SELECT id FROM calls`, agentID, userID)
	if err != nil {
		return nil, fmt.Errorf("voice: erase: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("voice: erase: %w", err)
	}
	return ids, nil
}
