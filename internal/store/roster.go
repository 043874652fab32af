package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
)

// rosterBatch bounds the rows of one INSERT and the names of one IN list
// (SQLite and Postgres both cap bound parameters per statement).
const rosterBatch = 500

// UsersByName returns the users among names, by name.
func (db *DB) UsersByName(ctx context.Context, names []string) (map[string]domain.User, error) {
	out := make(map[string]domain.User, len(names))
	for start := 0; start < len(names); start += rosterBatch {
		var rows []userRow
		chunk := names[start:min(start+rosterBatch, len(names))]
		if err := db.gorm.WithContext(ctx).Where("name IN ?", chunk).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("look up %d users: %w", len(chunk), err)
		}
		for _, r := range rows {
			out[r.Name] = toUser(r)
		}
	}
	return out, nil
}

// kept is e with the values it keeps (the roster's missing columns)
// taken from the user's row.
func kept(e domain.RosterEntry, old userRow) domain.RosterEntry {
	if e.KeepFullName {
		e.FullName = old.FullName
	}
	if e.KeepSection {
		e.Section = old.Section
	}
	if e.KeepRole {
		e.Role = domain.Role(old.Role)
	}
	return e
}

// ImportRoster creates the roster's new users (each with a token) and
// updates the full name, section and role of existing ones (those the
// roster has columns for), all in one
// transaction with batched inserts, and records every creation and
// change in the audit log. Importing the same roster again changes
// nothing. Runner accounts are never touched (ECONFLICT).
func (db *DB) ImportRoster(ctx context.Context, actor domain.User, entries []domain.RosterEntry) (domain.RosterResult, error) {
	var res domain.RosterResult
	err := db.InTx(ctx, func(tx *Tx) error {
		res = domain.RosterResult{}
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name
		}
		existing := map[string]userRow{}
		for start := 0; start < len(names); start += rosterBatch {
			var rows []userRow
			if err := tx.g.Where("name IN ?", names[start:min(start+rosterBatch, len(names))]).Find(&rows).Error; err != nil {
				return fmt.Errorf("look up the roster's users: %w", err)
			}
			for _, r := range rows {
				existing[r.Name] = r
			}
		}
		now := db.Now()
		var fresh []userRow
		var audits []auditRow
		for _, e := range entries {
			old, ok := existing[e.Name]
			if ok {
				e = kept(e, old)
			}
			switch {
			case !ok:
				fresh = append(fresh, userRow{Name: e.Name, Role: string(e.Role), CreatedAt: now, FullName: e.FullName, Section: e.Section})
			case old.Role == string(domain.RoleRunner):
				return domain.Errorf(domain.ECONFLICT, "%q is a runner account; a roster cannot change it", e.Name)
			case old.FullName == e.FullName && old.Section == e.Section && old.Role == string(e.Role):
				res.Unchanged++
			default:
				if err := tx.g.Model(&userRow{}).Where("id = ?", old.ID).
					Updates(map[string]any{"full_name": e.FullName, "section": e.Section, "role": string(e.Role)}).Error; err != nil {
					return fmt.Errorf("update user %q: %w", e.Name, err)
				}
				res.Updated = append(res.Updated, e.Name)
				audits = append(audits, db.auditEntry(actor, AuditRosterUpdated, e.Name,
					fmt.Sprintf("role %s → %s, section %q → %q", old.Role, e.Role, old.Section, e.Section), now))
			}
		}
		if len(fresh) > 0 {
			if err := tx.g.CreateInBatches(&fresh, rosterBatch).Error; err != nil {
				return fmt.Errorf("insert %d users: %w", len(fresh), translate(err))
			}
			tokens := make([]tokenRow, len(fresh))
			res.Created = make([]domain.RosterToken, len(fresh))
			for i, u := range fresh {
				token, err := auth.NewToken()
				if err != nil {
					return err
				}
				tokens[i] = tokenRow{UserID: u.ID, Hash: auth.HashToken(token), Prefix: token[:12], CreatedAt: now}
				res.Created[i] = domain.RosterToken{RosterEntry: domain.RosterEntry{Name: u.Name, FullName: u.FullName, Section: u.Section, Role: domain.Role(u.Role)}, Token: token}
				audits = append(audits, db.auditEntry(actor, domain.AuditUserCreated, u.Name, "role "+u.Role+", section "+u.Section+" (roster import)", now))
			}
			if err := tx.g.CreateInBatches(&tokens, rosterBatch).Error; err != nil {
				return fmt.Errorf("insert %d tokens: %w", len(tokens), err)
			}
		}
		if err := rosterCohorts(tx.g, entries, existing, fresh, now); err != nil {
			return err
		}
		audits = append(audits, db.auditEntry(actor, AuditRosterImported, fmt.Sprintf("%d rows", len(entries)),
			fmt.Sprintf("%d created, %d updated, %d unchanged", len(res.Created), len(res.Updated), res.Unchanged), now))
		if err := tx.g.CreateInBatches(&audits, rosterBatch).Error; err != nil {
			return fmt.Errorf("write the audit log of the roster import: %w", err)
		}
		return nil
	})
	db.auth.forget() // roles changed at once here; other servers at its notification
	return res, err
}

// Sections lists the sections users are in, sorted ("" left out).
func (db *DB) Sections(ctx context.Context) ([]string, error) {
	var out []string
	q := db.gorm.WithContext(ctx).Model(&userRow{}).Where("section <> ''")
	if cond, args := usersInScope(ctx, "id"); args != nil || cond != "1 = 1" {
		q = q.Where(cond, args...)
	}
	if err := q.Distinct("section").
		Order("section").Limit(1000).Pluck("section", &out).Error; err != nil {
		return nil, fmt.Errorf("list sections: %w", err)
	}
	return out, nil
}

// rosterCohorts puts the roster's learners and instructors into the
// cohorts their rows name, with their role (a new user whose row names
// none joins the default cohort; an existing one keeps their cohorts).
// A cohort that does not exist fails the whole import.
func rosterCohorts(g *gorm.DB, entries []domain.RosterEntry, existing map[string]userRow, fresh []userRow, now time.Time) error {
	ids := make(map[string]int64, len(existing)+len(fresh))
	for _, u := range existing {
		ids[u.Name] = u.ID
	}
	isNew := make(map[string]bool, len(fresh))
	for _, u := range fresh {
		ids[u.Name], isNew[u.Name] = u.ID, true
	}
	slugs := map[string]int64{}
	var rows []cohortMemberRow
	for _, e := range entries {
		if old, ok := existing[e.Name]; ok {
			e = kept(e, old)
		}
		if e.Role != domain.RoleLearner && e.Role != domain.RoleInstructor || e.Cohort == "" && !isNew[e.Name] {
			continue
		}
		cohort := defaultCohortID
		if e.Cohort != "" {
			id, ok := slugs[e.Cohort]
			if !ok {
				var c cohortRow
				err := g.Where("slug = ?", e.Cohort).Take(&c).Error
				if errors.Is(err, gorm.ErrRecordNotFound) {
					return domain.Errorf(domain.EINVALID, "cohort %q does not exist (npugrade cohort create %s); nothing was imported", e.Cohort, e.Cohort)
				}
				if err != nil {
					return fmt.Errorf("find cohort %q: %w", e.Cohort, err)
				}
				id, slugs[e.Cohort] = c.ID, c.ID
			}
			cohort = id
		}
		rows = append(rows, cohortMemberRow{CohortID: cohort, UserID: ids[e.Name], Role: string(e.Role), CreatedAt: now})
	}
	if len(rows) == 0 {
		return nil
	}
	err := g.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "cohort_id"}, {Name: "user_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"role"}),
	}).CreateInBatches(&rows, rosterBatch).Error
	if err != nil {
		return fmt.Errorf("put the roster into its cohorts: %w", translate(err))
	}
	return nil
}
