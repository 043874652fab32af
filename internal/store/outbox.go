package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// outboxRow is the outbox table (migration 00005).
type outboxRow struct {
	ID          int64
	Kind        string
	Subject     string
	Payload     string
	Attempts    int
	LastError   string
	CreatedAt   time.Time
	NotBefore   time.Time
	DeliveredAt *time.Time
}

func (outboxRow) TableName() string { return "outbox" }

// addEvent writes an event inside tx, the transaction of the change it
// reports.
func (db *DB) addEvent(tx *gorm.DB, kind, subject string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", kind, err)
	}
	now := db.Now()
	row := outboxRow{Kind: kind, Subject: subject, Payload: string(b), CreatedAt: now, NotBefore: now}
	if err := tx.Create(&row).Error; err != nil {
		return fmt.Errorf("write %s event of %s: %w", kind, subject, err)
	}
	return nil
}

// ClaimEvents leases up to limit undelivered events that are due, for
// lease: each is taken with a compare-and-swap on its not_before, so two
// servers delivering at once do not take the same event (a deliverer that
// dies leaves it to be taken again when the lease ends).
func (db *DB) ClaimEvents(ctx context.Context, limit int, lease time.Duration) ([]domain.Event, error) {
	now := db.Now()
	var rows []outboxRow
	g := db.gorm.WithContext(ctx)
	if err := g.Where("delivered_at IS NULL AND not_before <= ?", now).Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the outbox: %w", translate(err))
	}
	var out []domain.Event
	for _, r := range rows {
		res := g.Model(&outboxRow{}).Where("id = ? AND delivered_at IS NULL AND not_before = ?", r.ID, r.NotBefore).
			Updates(map[string]any{"not_before": now.Add(lease), "attempts": gorm.Expr("attempts + 1")})
		if res.Error != nil {
			return out, fmt.Errorf("lease event %d: %w", r.ID, translate(res.Error))
		}
		if res.RowsAffected == 1 {
			out = append(out, domain.Event{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Payload: json.RawMessage(r.Payload),
				Attempts: r.Attempts + 1, CreatedAt: r.CreatedAt})
		}
	}
	return out, nil
}

// EventDelivered marks an event delivered.
func (db *DB) EventDelivered(ctx context.Context, id int64) error {
	err := db.gorm.WithContext(ctx).Model(&outboxRow{}).Where("id = ?", id).Update("delivered_at", db.Now()).Error
	if err != nil {
		return fmt.Errorf("mark event %d delivered: %w", id, translate(err))
	}
	return nil
}

// EventFailed records a failed delivery; the event is due again at retryAt.
func (db *DB) EventFailed(ctx context.Context, id int64, reason string, retryAt time.Time) error {
	err := db.gorm.WithContext(ctx).Model(&outboxRow{}).Where("id = ? AND delivered_at IS NULL", id).
		Updates(map[string]any{"last_error": Printable(reason), "not_before": retryAt}).Error
	if err != nil {
		return fmt.Errorf("record failed delivery of event %d: %w", id, translate(err))
	}
	return nil
}

// Events reads the outbox in id order after f.After, delivered or not:
// integrations follow scores by reading it with a cursor.
func (db *DB) Events(ctx context.Context, f domain.EventFilter) ([]domain.Event, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	q := db.gorm.WithContext(ctx).Model(&outboxRow{}).Where("outbox.id > ?", f.After)
	if len(f.Kinds) > 0 {
		q = q.Where("outbox.kind IN ?", f.Kinds)
	}
	if f.Submission != "" {
		q = q.Where("outbox.subject = ?", f.Submission)
	}
	if !f.Since.IsZero() {
		q = q.Where("outbox.created_at >= ?", f.Since)
	}
	if f.LearnerID != 0 || f.Exercise != "" {
		sub := db.gorm.Model(&submissionRow{}).Select("id")
		if f.LearnerID != 0 {
			sub = sub.Where("user_id = ?", f.LearnerID)
		}
		if f.Exercise != "" {
			sub = sub.Where("exercise_id = ?", f.Exercise)
		}
		q = q.Where("outbox.subject IN (?)", sub)
	}
	if cond, args := inScope(ctx, "cohort_id"); args != nil || cond != "1 = 1" {
		// A scoped reader (an instructor) follows the events of their
		// cohorts' submissions only; the others (a regrade applied over
		// every cohort) are an admin's.
		q = q.Where("outbox.subject IN (?)", db.gorm.Model(&submissionRow{}).Select("id").Where(cond, args...))
	}
	var rows []outboxRow
	if err := q.Order("outbox.id").Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read events: %w", translate(err))
	}
	out := make([]domain.Event, len(rows))
	for i, r := range rows {
		out[i] = domain.Event{ID: r.ID, Kind: r.Kind, Subject: r.Subject, Payload: json.RawMessage(r.Payload), Attempts: r.Attempts, CreatedAt: r.CreatedAt}
	}
	return out, nil
}
