package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// Audit actions the roster import writes.
const (
	AuditRosterImported = "roster-imported"
	AuditRosterUpdated  = "user-updated"
)

type auditRow struct {
	ID      int64 `gorm:"primaryKey"`
	At      time.Time
	ActorID *int64
	Actor   string
	Action  string
	Subject string
	Detail  string
}

func (auditRow) TableName() string { return "audit_log" }

// Audit records an event. Actor is the user who acted (zero for the
// command line, which is recorded as "cli").
func (db *DB) Audit(ctx context.Context, actor domain.User, action, subject, detail string) error {
	return db.audit(db.gorm.WithContext(ctx), actor, action, subject, detail)
}

// Audit records an event in tx, so that it commits with what it records.
func (tx *Tx) Audit(actor domain.User, action, subject, detail string) error {
	return tx.db.audit(tx.g, actor, action, subject, detail)
}

// audit records an event inside g (a transaction of the change it records).
func (db *DB) audit(g *gorm.DB, actor domain.User, action, subject, detail string) error {
	row := db.auditEntry(actor, action, subject, detail, db.Now())
	if err := g.Create(&row).Error; err != nil {
		return fmt.Errorf("write the audit log (%s %s): %w", action, subject, err)
	}
	return nil
}

// auditEntry is one row of the audit log; the command line acts as "cli".
func (db *DB) auditEntry(actor domain.User, action, subject, detail string, at time.Time) auditRow {
	row := auditRow{At: at, Actor: actor.Name, Action: action, Subject: subject, Detail: detail}
	if actor.ID != 0 {
		id := actor.ID
		row.ActorID = &id
	}
	if row.Actor == "" {
		row.Actor = "cli"
	}
	return row
}

// AuditEvents lists the newest events first, at most limit (default 200).
func (db *DB) AuditEvents(ctx context.Context, limit int) ([]domain.AuditEvent, error) {
	if limit <= 0 || limit > 5000 {
		limit = 200
	}
	var rows []auditRow
	if err := db.gorm.WithContext(ctx).Order("at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	out := make([]domain.AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = domain.AuditEvent{ID: r.ID, At: r.At, Actor: r.Actor, Action: r.Action, Subject: r.Subject, Detail: r.Detail}
		if r.ActorID != nil {
			out[i].ActorID = *r.ActorID
		}
	}
	return out, nil
}
