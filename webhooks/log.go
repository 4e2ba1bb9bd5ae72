package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusRetrying  = "retrying"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Delivery is one event sent to one subscription, with its attempts.
type Delivery struct {
	ID             string    `json:"id"`
	SubscriptionID string    `json:"subscriptionId"`
	EventID        string    `json:"eventId"`
	EventType      string    `json:"eventType"`
	Status         string    `json:"status"`
	Attempts       []Attempt `json:"attempts"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// Attempt is one try at a delivery: the receiver's status (nil when it
// gave none, Error saying why) and the time to it.
type Attempt struct {
	Attempt    int       `json:"attempt"`
	Replay     bool      `json:"replay"`
	At         time.Time `json:"at"`
	StatusCode *int      `json:"statusCode"`
	LatencyMS  int       `json:"latencyMs"`
	Error      *string   `json:"error"`
}

// DeliveryFilter selects a subscription's deliveries, newest first.
type DeliveryFilter struct {
	// Status, when set, keeps deliveries in that status.
	Status string
	// EventType, when set, keeps deliveries of that type.
	EventType string
	// Limit is at most 200 (default 50).
	Limit int
}

// Deliveries lists a subscription's deliveries, newest first, each with
// its attempts. Errors: ErrNotFound, ErrInvalidRequest, ErrUnavailable.
func (s *Service) Deliveries(ctx context.Context, subID string, f DeliveryFilter) ([]Delivery, error) {
	if _, err := s.Get(ctx, subID); err != nil {
		return nil, err
	}
	switch f.Status {
	case "", StatusPending, StatusRetrying, StatusDelivered, StatusFailed:
	default:
		return nil, fmt.Errorf("%w: status is one of pending, retrying, delivered, failed", ErrInvalidRequest)
	}
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 50
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT d.id, d.subscription_id, d.event_id, e.type, d.status, d.created_at, d.updated_at
		FROM stackbone_platform.webhook_deliveries d JOIN stackbone_platform.webhook_events e ON e.id = d.event_id
		WHERE d.subscription_id = $1 AND ($2 = '' OR d.status = $2) AND ($3 = '' OR e.type = $3)
		ORDER BY d.created_at DESC, d.id DESC LIMIT $4`, subID, f.Status, f.EventType, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	out := []Delivery{}
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.ID, &d.SubscriptionID, &d.EventID, &d.EventType, &d.Status, &d.CreatedAt, &d.UpdatedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		d.Attempts = []Attempt{}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := s.fillAttempts(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Delivery returns one delivery of a subscription with its attempts.
// Errors: ErrNotFound, ErrUnavailable.
func (s *Service) Delivery(ctx context.Context, subID, id string) (Delivery, error) {
	var d Delivery
	err := s.cfg.Pool.QueryRow(ctx, `SELECT d.id, d.subscription_id, d.event_id, e.type, d.status, d.created_at, d.updated_at
		FROM stackbone_platform.webhook_deliveries d JOIN stackbone_platform.webhook_events e ON e.id = d.event_id
		WHERE d.id = $1 AND d.subscription_id = $2`, id, subID).
		Scan(&d.ID, &d.SubscriptionID, &d.EventID, &d.EventType, &d.Status, &d.CreatedAt, &d.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Delivery{}, fmt.Errorf("%w: no delivery %s of subscription %s", ErrNotFound, id, subID)
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	d.Attempts = []Attempt{}
	list := []Delivery{d}
	if err := s.fillAttempts(ctx, list); err != nil {
		return Delivery{}, err
	}
	return list[0], nil
}

func (s *Service) fillAttempts(ctx context.Context, list []Delivery) error {
	if len(list) == 0 {
		return nil
	}
	ids := make([]string, len(list))
	at := map[string]int{}
	for i, d := range list {
		ids[i] = d.ID
		at[d.ID] = i
	}
	rows, err := s.cfg.Pool.Query(ctx, `SELECT delivery_id, attempt, replay, at, status_code, latency_ms, error
		FROM stackbone_platform.webhook_attempts WHERE delivery_id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var a Attempt
		if err := rows.Scan(&id, &a.Attempt, &a.Replay, &a.At, &a.StatusCode, &a.LatencyMS, &a.Error); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		list[at[id]].Attempts = append(list[at[id]].Attempts, a)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Replay sends a delivery again now, once, with the same event id (a
// receiver that already has it deduplicates it); the attempt joins the
// delivery's log. Errors: ErrNotFound, ErrUnavailable.
func (s *Service) Replay(ctx context.Context, subID, id, by string) error {
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM stackbone_platform.webhook_deliveries WHERE id = $1 AND subscription_id = $2)`,
			id, subID).Scan(&found); err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: no delivery %s of subscription %s", ErrNotFound, id, subID)
		}
		_, err := s.insert.InsertTx(ctx, tx, DeliverArgs{DeliveryID: id, Replay: true}, &river.InsertOpts{MaxAttempts: 1})
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	s.log.Info("webhook delivery replayed", "delivery", id, "subscription", subID, "by", by)
	return nil
}
