package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/fleet"
)

// RunnerRegistration is what a runner announces when it registers.
type RunnerRegistration struct {
	ID      string
	Name    string
	UserID  int64
	Slots   int
	Labels  map[string]string
	Profile string
	Verdict string
	Report  envprobe.Report
	// WarmSpares: the runner's pre-started kernels (zero: none).
	WarmSpares fleet.WarmSpares
}

// ErrRunnerTaken is UpsertRunner's answer when reg.ID is another user's
// runner: that row is left as it is.
var ErrRunnerTaken = errors.New("the runner id belongs to another token")

// UpsertRunner records a runner registration with its environment report.
// Registering an id again updates its row (it is not draining any more),
// but only for the user it was registered by: another user's id is
// ErrRunnerTaken.
func (db *DB) UpsertRunner(ctx context.Context, reg RunnerRegistration) error {
	if reg.Labels == nil {
		reg.Labels = map[string]string{}
	}
	lb, _ := json.Marshal(reg.Labels)
	rb, _ := json.Marshal(reg.Report)
	now := db.Now()
	var userID *int64 // the in-process runner has no runner user
	if reg.UserID != 0 {
		userID = &reg.UserID
	}
	row := runnerRow{ID: reg.ID, Name: reg.Name, UserID: userID, Labels: string(lb), Profile: reg.Profile, Report: string(rb),
		Verdict: reg.Verdict, Slots: reg.Slots, LastSeen: now, CreatedAt: now,
		WarmSparesPerSlot: reg.WarmSpares.PerSlot, WarmSpares: reg.WarmSpares.Kept, WarmSparesReady: reg.WarmSpares.Ready,
		WarmSpareMemory: reg.WarmSpares.MemoryBytes}
	res := db.gorm.WithContext(ctx).Clauses(clause.OnConflict{
		Columns: []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"name", "labels", "profile", "report", "verdict", "slots", "last_seen", "draining",
			"warm_spares_per_slot", "warm_spares", "warm_spares_ready", "warm_spare_memory"}),
		// The in-process runner has no user (NULL on both sides).
		Where: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "coalesce(runners.user_id, 0) = coalesce(excluded.user_id, 0)"}}},
	}).Create(&row)
	if res.Error != nil {
		return fmt.Errorf("register runner %s: %w", reg.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("register runner %s: %w", reg.ID, ErrRunnerTaken)
	}
	return nil
}

// SetRunnerWarmSpares records what runner id's warm spares hold now (its
// heartbeat says). It reports whether the runner exists.
func (db *DB) SetRunnerWarmSpares(ctx context.Context, id string, ws fleet.WarmSpares) (bool, error) {
	res := db.gorm.WithContext(ctx).Model(&runnerRow{}).Where("id = ?", id).Updates(map[string]any{
		"warm_spares_per_slot": ws.PerSlot, "warm_spares": ws.Kept, "warm_spares_ready": ws.Ready, "warm_spare_memory": ws.MemoryBytes})
	if res.Error != nil {
		return false, fmt.Errorf("record warm spares of runner %s: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// TouchRunner records that a runner polled and reports whether it is
// draining (it announced a shutdown, or an admin drained it): a draining
// runner gets no new jobs.
func (db *DB) TouchRunner(ctx context.Context, id string) (draining bool, err error) {
	if err := db.gorm.WithContext(ctx).Model(&runnerRow{}).Where("id = ?", id).Update("last_seen", db.Now()).Error; err != nil {
		return false, fmt.Errorf("touch runner %s: %w", id, err)
	}
	var row runnerRow
	if err := db.gorm.WithContext(ctx).Select("draining").Where("id = ?", id).Take(&row).Error; err != nil {
		return false, fmt.Errorf("read runner %s: %w", id, err)
	}
	return row.Draining, nil
}

// SetRunnerDraining records that a runner stopped taking jobs (it is
// finishing or handing back the ones it holds). It reports whether the
// runner exists.
func (db *DB) SetRunnerDraining(ctx context.Context, id string) (bool, error) {
	res := db.gorm.WithContext(ctx).Model(&runnerRow{}).Where("id = ?", id).
		Updates(map[string]any{"draining": true, "last_seen": db.Now()})
	if res.Error != nil {
		return false, fmt.Errorf("mark runner %s draining: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// RunnerReport returns the environment report a runner registered with.
func (db *DB) RunnerReport(ctx context.Context, id string) (envprobe.Report, bool) {
	var row runnerRow
	if err := db.gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return envprobe.Report{}, false
	}
	var rep envprobe.Report
	if err := json.Unmarshal([]byte(row.Report), &rep); err != nil {
		return envprobe.Report{}, false
	}
	return rep, true
}

// Runners lists registered runners seen since since (zero: all), most
// recently seen first.
func (db *DB) Runners(ctx context.Context, since time.Time) ([]fleet.Runner, error) {
	var rows []runnerRow
	q := db.gorm.WithContext(ctx).Order("last_seen DESC, id")
	if !since.IsZero() {
		q = q.Where("last_seen >= ?", since)
	}
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	var scopeRows []runnerScopeRow
	if err := db.gorm.WithContext(ctx).Find(&scopeRows).Error; err != nil {
		return nil, fmt.Errorf("list runner scopes: %w", err)
	}
	scopes := map[int64]*fleet.RunnerScope{}
	for _, sr := range scopeRows {
		sc := &fleet.RunnerScope{}
		if sr.Profiles != "" {
			sc.Profiles = strings.Split(sr.Profiles, ",")
		}
		_ = json.Unmarshal([]byte(sr.Labels), &sc.Labels)
		scopes[sr.UserID] = sc
	}
	out := make([]fleet.Runner, 0, len(rows))
	for _, r := range rows {
		rn := fleet.Runner{ID: r.ID, Name: r.Name, Slots: r.Slots, Profile: r.Profile, Verdict: r.Verdict,
			Draining: r.Draining, LastSeen: r.LastSeen, CreatedAt: r.CreatedAt, Labels: map[string]string{},
			WarmSpares: fleet.WarmSpares{PerSlot: r.WarmSparesPerSlot, Kept: r.WarmSpares, Ready: r.WarmSparesReady, MemoryBytes: r.WarmSpareMemory}}
		if r.UserID != nil {
			// A token bound to nothing may still register cpu runners.
			sc := scopes[*r.UserID]
			if sc == nil {
				sc = &fleet.RunnerScope{}
			}
			rn.Allowed = &fleet.RunnerScope{Profiles: sc.AllowedProfiles(), Labels: sc.Labels}
		}
		_ = json.Unmarshal([]byte(r.Labels), &rn.Labels)
		_ = json.Unmarshal([]byte(r.Report), &rn.Report)
		out = append(out, rn)
	}
	return out, nil
}

// RunnerOwner returns the user whose runner token registered runner id;
// ok is false when no such runner is registered.
func (db *DB) RunnerOwner(ctx context.Context, id string) (userID int64, ok bool, err error) {
	var row runnerRow
	err = db.gorm.WithContext(ctx).Select("id", "user_id").Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("find runner %q: %w", id, err)
	}
	if row.UserID == nil {
		return 0, true, nil
	}
	return *row.UserID, true, nil
}

type runnerScopeRow struct {
	UserID   int64 `gorm:"primaryKey"`
	Profiles string
	Labels   string
}

func (runnerScopeRow) TableName() string { return "runner_scopes" }

// SetRunnerScope binds runner token owner userID to a scope.
func (db *DB) SetRunnerScope(ctx context.Context, userID int64, s fleet.RunnerScope) error {
	labels, err := json.Marshal(s.Labels)
	if err != nil {
		return err
	}
	row := runnerScopeRow{UserID: userID, Profiles: strings.Join(s.Profiles, ","), Labels: string(labels)}
	if err := db.gorm.WithContext(ctx).Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
		return fmt.Errorf("set runner scope of user %d: %w", userID, err)
	}
	return nil
}

// RunnerScopeOf returns userID's scope; ok is false for a token without
// one (it may register only fleet.DefaultRunnerProfiles, with any labels).
func (db *DB) RunnerScopeOf(ctx context.Context, userID int64) (s fleet.RunnerScope, ok bool, err error) {
	var row runnerScopeRow
	err = db.gorm.WithContext(ctx).Where("user_id = ?", userID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("read runner scope of user %d: %w", userID, err)
	}
	if row.Profiles != "" {
		s.Profiles = strings.Split(row.Profiles, ",")
	}
	_ = json.Unmarshal([]byte(row.Labels), &s.Labels)
	return s, true, nil
}

// TouchOwnRunner is a claim's one look at its runner: it reports whether
// runner id exists and was registered by user userID (a runner token acts
// only as its own runners), and whether it is draining. It records the
// poll in last_seen, at most every lastSeenResolution: runners poll
// continuously, and a write per claim would cost more than the claim's
// own. On Postgres this is one statement.
func (db *DB) TouchOwnRunner(ctx context.Context, id string, userID int64) (found, draining bool, err error) {
	now := db.Now()
	var rows []struct {
		Draining bool
		LastSeen time.Time
	}
	g := db.gorm.WithContext(ctx)
	if db.Dialect == "postgres" {
		err = g.Raw(`WITH r AS (SELECT id, draining, last_seen FROM runners WHERE id = ? AND user_id = ?),
  t AS (UPDATE runners SET last_seen = ? FROM r WHERE runners.id = r.id AND r.last_seen < ?)
SELECT draining, last_seen FROM r`, id, userID, now, now.Add(-lastSeenResolution)).Scan(&rows).Error
	} else {
		err = g.Raw("SELECT draining, last_seen FROM runners WHERE id = ? AND user_id = ?", id, userID).Scan(&rows).Error
		if err == nil && len(rows) == 1 && rows[0].LastSeen.Before(now.Add(-lastSeenResolution)) {
			err = g.Exec("UPDATE runners SET last_seen = ? WHERE id = ?", now, id).Error
		}
	}
	if err != nil {
		return false, false, fmt.Errorf("touch runner %s: %w", id, translate(err))
	}
	if len(rows) == 0 {
		return false, false, nil
	}
	return true, rows[0].Draining, nil
}
