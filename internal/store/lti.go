package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
)

// LTI 1.3 (migration 00030): platforms, npugrade's keys, launch nonces,
// linked contexts, line items and the scores owed to them.

type ltiPlatformRow struct {
	ID            int64
	Name          string
	Issuer        string
	ClientID      string
	DeploymentIDs string
	AuthLoginURL  string
	TokenURL      string
	JWKSURL       string `gorm:"column:jwks_url"`
	Audience      string
	CreatedAt     time.Time
}

func (ltiPlatformRow) TableName() string { return "lti_platforms" }

func (r ltiPlatformRow) domain() domain.LTIPlatform {
	p := domain.LTIPlatform{ID: r.ID, Name: r.Name, Issuer: r.Issuer, ClientID: r.ClientID, AuthLoginURL: r.AuthLoginURL,
		TokenURL: r.TokenURL, JWKSURL: r.JWKSURL, Audience: r.Audience, CreatedAt: r.CreatedAt}
	_ = json.Unmarshal([]byte(r.DeploymentIDs), &p.DeploymentIDs)
	return p
}

// AddLTIPlatform registers a platform; one (issuer, client id) is
// registered once (ECONFLICT).
func (db *DB) AddLTIPlatform(ctx context.Context, p domain.LTIPlatform) (domain.LTIPlatform, error) {
	deps, _ := json.Marshal(p.DeploymentIDs)
	row := ltiPlatformRow{Name: p.Name, Issuer: p.Issuer, ClientID: p.ClientID, DeploymentIDs: string(deps), AuthLoginURL: p.AuthLoginURL,
		TokenURL: p.TokenURL, JWKSURL: p.JWKSURL, Audience: p.Audience, CreatedAt: db.Now()}
	if err := db.gorm.WithContext(ctx).Create(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return domain.LTIPlatform{}, domain.Errorf(domain.ECONFLICT, "platform %s with client id %s is already registered", p.Issuer, p.ClientID)
		}
		return domain.LTIPlatform{}, fmt.Errorf("register platform %s: %w", p.Issuer, err)
	}
	return row.domain(), nil
}

// LTIPlatforms lists the registered platforms by id.
func (db *DB) LTIPlatforms(ctx context.Context) ([]domain.LTIPlatform, error) {
	var rows []ltiPlatformRow
	if err := db.gorm.WithContext(ctx).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list platforms: %w", translate(err))
	}
	out := make([]domain.LTIPlatform, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// LTIPlatformByID returns a platform (ENOTFOUND when absent).
func (db *DB) LTIPlatformByID(ctx context.Context, id int64) (domain.LTIPlatform, error) {
	var row ltiPlatformRow
	err := db.gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.LTIPlatform{}, domain.Errorf(domain.ENOTFOUND, "platform %d is not registered", id)
	}
	if err != nil {
		return domain.LTIPlatform{}, fmt.Errorf("find platform %d: %w", id, err)
	}
	return row.domain(), nil
}

// LTIPlatformByIssuer finds the platform of issuer and clientID; an
// empty clientID (a login initiation may leave it out) finds the
// issuer's only platform. Unknown ones are ENOTFOUND, an ambiguous one
// EINVALID.
func (db *DB) LTIPlatformByIssuer(ctx context.Context, issuer, clientID string) (domain.LTIPlatform, error) {
	q := db.gorm.WithContext(ctx).Where("issuer = ?", issuer)
	if clientID != "" {
		q = q.Where("client_id = ?", clientID)
	}
	var rows []ltiPlatformRow
	if err := q.Order("id").Limit(2).Find(&rows).Error; err != nil {
		return domain.LTIPlatform{}, fmt.Errorf("find platform %s: %w", issuer, err)
	}
	switch len(rows) {
	case 0:
		return domain.LTIPlatform{}, domain.Errorf(domain.ENOTFOUND, "no platform %s (client id %q) is registered", issuer, clientID)
	case 1:
		return rows[0].domain(), nil
	}
	return domain.LTIPlatform{}, domain.Errorf(domain.EINVALID, "platform %s has several client ids registered and the launch names none", issuer)
}

type ltiKeyRow struct {
	KID        string `gorm:"column:kid;primaryKey"`
	PrivatePEM string `gorm:"column:private_pem"`
	CreatedAt  time.Time
	RetiredAt  *time.Time
}

func (ltiKeyRow) TableName() string { return "lti_keys" }

// RotateLTIKey makes k the signing key and retires the one before it,
// in one transaction (two servers rotating at once leave one active).
func (db *DB) RotateLTIKey(ctx context.Context, k domain.LTIKey) error {
	now := db.Now()
	return db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&ltiKeyRow{}).Where("retired_at IS NULL").Update("retired_at", now).Error; err != nil {
			return fmt.Errorf("retire the LTI key: %w", err)
		}
		row := ltiKeyRow{KID: k.KID, PrivatePEM: k.PrivatePEM, CreatedAt: now}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("add LTI key %s: %w", k.KID, err)
		}
		return nil
	})
}

// LTIKeys returns the signing key (first, RetiredAt nil) and the keys
// retired after since, newest first.
func (db *DB) LTIKeys(ctx context.Context, since time.Time) ([]domain.LTIKey, error) {
	var rows []ltiKeyRow
	err := db.gorm.WithContext(ctx).Where("retired_at IS NULL OR retired_at > ?", since).
		Order("created_at DESC, kid").Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read LTI keys: %w", err)
	}
	out := make([]domain.LTIKey, len(rows))
	for i, r := range rows {
		out[i] = domain.LTIKey{KID: r.KID, PrivatePEM: r.PrivatePEM, CreatedAt: r.CreatedAt, RetiredAt: r.RetiredAt}
	}
	return out, nil
}

type ltiNonceRow struct {
	NonceHash string `gorm:"primaryKey"`
	ExpiresAt time.Time
}

func (ltiNonceRow) TableName() string { return "lti_nonces" }

// UseLTINonce records a launch's nonce until expires; a nonce seen
// before is EUNAUTHORIZED (a replayed launch), on any server.
func (db *DB) UseLTINonce(ctx context.Context, nonce string, expires time.Time) error {
	g := db.gorm.WithContext(ctx)
	if err := g.Where("expires_at < ?", db.Now()).Delete(&ltiNonceRow{}).Error; err != nil {
		return fmt.Errorf("drop expired nonces: %w", err)
	}
	err := g.Create(&ltiNonceRow{NonceHash: auth.HashToken(nonce), ExpiresAt: expires}).Error
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return domain.Errorf(domain.EUNAUTHORIZED, "this launch's nonce was already used: a launch is accepted once")
	}
	if err != nil {
		return fmt.Errorf("record nonce: %w", err)
	}
	return nil
}

type ltiContextRow struct {
	ID             int64
	PlatformID     int64
	ContextID      string
	Title          string
	CohortID       int64
	LineItemsURL   string `gorm:"column:lineitems_url"`
	MembershipsURL string
	CreatedAt      time.Time
}

func (ltiContextRow) TableName() string { return "lti_contexts" }

func (r ltiContextRow) domain() domain.LTIContext {
	return domain.LTIContext{ID: r.ID, PlatformID: r.PlatformID, ContextID: r.ContextID, Title: r.Title, CohortID: r.CohortID,
		LineItemsURL: r.LineItemsURL, MembershipsURL: r.MembershipsURL}
}

// LTIContext returns the context of a platform (ENOTFOUND when it is
// not linked to a cohort yet).
func (db *DB) LTIContext(ctx context.Context, platformID int64, contextID string) (domain.LTIContext, error) {
	var row ltiContextRow
	err := db.gorm.WithContext(ctx).Where("platform_id = ? AND context_id = ?", platformID, contextID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.LTIContext{}, domain.Errorf(domain.ENOTFOUND, "course %q is not linked to a cohort", contextID)
	}
	if err != nil {
		return domain.LTIContext{}, fmt.Errorf("find context %q: %w", contextID, err)
	}
	return row.domain(), nil
}

// LTIContextByID returns a context by its row id (ENOTFOUND).
func (db *DB) LTIContextByID(ctx context.Context, id int64) (domain.LTIContext, error) {
	var row ltiContextRow
	err := db.gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.LTIContext{}, domain.Errorf(domain.ENOTFOUND, "context %d not found", id)
	}
	if err != nil {
		return domain.LTIContext{}, fmt.Errorf("find context %d: %w", id, err)
	}
	return row.domain(), nil
}

// SaveLTIContext links a context to c.CohortID, or updates a linked
// one's title and service URLs (its cohort is kept); it returns the row.
func (db *DB) SaveLTIContext(ctx context.Context, c domain.LTIContext) (domain.LTIContext, error) {
	var out ltiContextRow
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Where("platform_id = ? AND context_id = ?", c.PlatformID, c.ContextID).Take(&out).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			out = ltiContextRow{PlatformID: c.PlatformID, ContextID: c.ContextID, Title: c.Title, CohortID: c.CohortID,
				LineItemsURL: c.LineItemsURL, MembershipsURL: c.MembershipsURL, CreatedAt: db.Now()}
			return tx.Create(&out).Error
		}
		if err != nil {
			return err
		}
		upd := map[string]any{}
		if c.Title != "" {
			upd["title"], out.Title = c.Title, c.Title
		}
		if c.LineItemsURL != "" {
			upd["lineitems_url"], out.LineItemsURL = c.LineItemsURL, c.LineItemsURL
		}
		if c.MembershipsURL != "" {
			upd["memberships_url"], out.MembershipsURL = c.MembershipsURL, c.MembershipsURL
		}
		if len(upd) == 0 {
			return nil
		}
		return tx.Model(&ltiContextRow{}).Where("id = ?", out.ID).Updates(upd).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return domain.LTIContext{}, domain.Errorf(domain.ECONFLICT, "course %q was linked by another launch at once; launch again", c.ContextID)
	}
	if err != nil {
		return domain.LTIContext{}, fmt.Errorf("link context %q: %w", c.ContextID, err)
	}
	return out.domain(), nil
}

// LTIContextsOfCohort lists the contexts linked to a cohort.
func (db *DB) LTIContextsOfCohort(ctx context.Context, cohortID int64) ([]domain.LTIContext, error) {
	var rows []ltiContextRow
	if err := db.gorm.WithContext(ctx).Where("cohort_id = ?", cohortID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("contexts of cohort %d: %w", cohortID, err)
	}
	out := make([]domain.LTIContext, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

type ltiLineItemRow struct {
	ContextPK  int64  `gorm:"column:context_pk;primaryKey"`
	ExerciseID string `gorm:"primaryKey"`
	URL        string `gorm:"column:url"`
	ClaimedAt  *time.Time
}

func (ltiLineItemRow) TableName() string { return "lti_line_items" }

// LTILineItem returns the line item URL of an exercise in a context
// ("" when there is none yet).
func (db *DB) LTILineItem(ctx context.Context, contextPK int64, exerciseID string) (string, error) {
	var rows []ltiLineItemRow
	if err := db.gorm.WithContext(ctx).Where("context_pk = ? AND exercise_id = ?", contextPK, exerciseID).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("line item of %s: %w", exerciseID, err)
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].URL, nil
}

// ClaimLTILineItem returns the line item URL of an exercise in a
// context, or, when there is none, whether this caller may create it: the
// first claim wins, and a claim older than lease (its server died) may be
// taken over. claimed is false while another server creates it.
func (db *DB) ClaimLTILineItem(ctx context.Context, contextPK int64, exerciseID string, lease time.Duration) (url string, claimed bool, err error) {
	now := db.Now()
	g := db.gorm.WithContext(ctx)
	var rows []ltiLineItemRow
	if err := g.Where("context_pk = ? AND exercise_id = ?", contextPK, exerciseID).Find(&rows).Error; err != nil {
		return "", false, fmt.Errorf("line item of %s: %w", exerciseID, err)
	}
	if len(rows) == 0 {
		err := g.Create(&ltiLineItemRow{ContextPK: contextPK, ExerciseID: exerciseID, ClaimedAt: &now}).Error
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return "", false, nil // another server claimed it just now
		}
		if err != nil {
			return "", false, fmt.Errorf("claim the line item of %s: %w", exerciseID, err)
		}
		return "", true, nil
	}
	r := rows[0]
	if r.URL != "" {
		return r.URL, false, nil
	}
	if r.ClaimedAt != nil && r.ClaimedAt.After(now.Add(-lease)) {
		return "", false, nil
	}
	q := g.Model(&ltiLineItemRow{}).Where("context_pk = ? AND exercise_id = ? AND url = ''", contextPK, exerciseID)
	if r.ClaimedAt == nil {
		q = q.Where("claimed_at IS NULL")
	} else {
		q = q.Where("claimed_at = ?", *r.ClaimedAt)
	}
	res := q.Update("claimed_at", now)
	if res.Error != nil {
		return "", false, fmt.Errorf("take over the line item of %s: %w", exerciseID, res.Error)
	}
	return "", res.RowsAffected == 1, nil
}

// SetLTILineItem records the line item URL of an exercise in a context.
func (db *DB) SetLTILineItem(ctx context.Context, contextPK int64, exerciseID, url string) error {
	g := db.gorm.WithContext(ctx)
	res := g.Model(&ltiLineItemRow{}).Where("context_pk = ? AND exercise_id = ?", contextPK, exerciseID).Update("url", url)
	if res.Error != nil {
		return fmt.Errorf("record line item of %s: %w", exerciseID, res.Error)
	}
	if res.RowsAffected == 0 {
		err := g.Create(&ltiLineItemRow{ContextPK: contextPK, ExerciseID: exerciseID, URL: url}).Error
		if err != nil && !errors.Is(err, gorm.ErrDuplicatedKey) {
			return fmt.Errorf("record line item of %s: %w", exerciseID, err)
		}
	}
	return nil
}

// LTISubject returns the platform's user id (sub) of a user, from the
// identity a launch linked ("" when the user never launched from it).
func (db *DB) LTISubject(ctx context.Context, issuer string, userID int64) (string, error) {
	var rows []identityRow
	if err := db.gorm.WithContext(ctx).Where("issuer = ? AND user_id = ?", issuer, userID).Limit(1).Find(&rows).Error; err != nil {
		return "", fmt.Errorf("identity of user %d at %s: %w", userID, issuer, err)
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0].Subject, nil
}

type ltiScoreRow struct {
	ContextPK    int64  `gorm:"column:context_pk;primaryKey"`
	ExerciseID   string `gorm:"primaryKey"`
	UserID       int64  `gorm:"primaryKey"`
	Score        float64
	MaxScore     float64
	Progress     string
	SubmissionID string
	ScoredAt     time.Time
	Version      int64
	SentVersion  int64
	Attempts     int
	LastError    string
	NotBefore    time.Time
	SentAt       *time.Time
}

func (ltiScoreRow) TableName() string { return "lti_scores" }

func (r ltiScoreRow) domain() domain.LTIScore {
	return domain.LTIScore{ContextPK: r.ContextPK, ExerciseID: r.ExerciseID, UserID: r.UserID, Score: r.Score, MaxScore: r.MaxScore,
		Progress: r.Progress, SubmissionID: r.SubmissionID, ScoredAt: r.ScoredAt, Version: r.Version, Attempts: r.Attempts}
}

// OweLTIScore records the score a line item should show. It is a new
// version, due at once, only when score, maximum or progress differ from
// the one owed now (a repeated event changes nothing); it reports
// whether it was.
func (db *DB) OweLTIScore(ctx context.Context, s domain.LTIScore) (bool, error) {
	now := db.Now()
	changed := false
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row ltiScoreRow
		err := tx.Where("context_pk = ? AND exercise_id = ? AND user_id = ?", s.ContextPK, s.ExerciseID, s.UserID).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			changed = true
			return tx.Create(&ltiScoreRow{ContextPK: s.ContextPK, ExerciseID: s.ExerciseID, UserID: s.UserID, Score: s.Score,
				MaxScore: s.MaxScore, Progress: s.Progress, SubmissionID: s.SubmissionID, ScoredAt: now, Version: 1, NotBefore: now}).Error
		}
		if err != nil {
			return err
		}
		if math.Abs(row.Score-s.Score) < 1e-9 && math.Abs(row.MaxScore-s.MaxScore) < 1e-9 && row.Progress == s.Progress {
			return nil
		}
		changed = true
		return tx.Model(&ltiScoreRow{}).Where("context_pk = ? AND exercise_id = ? AND user_id = ?", s.ContextPK, s.ExerciseID, s.UserID).
			Updates(map[string]any{"score": s.Score, "max_score": s.MaxScore, "progress": s.Progress, "submission_id": s.SubmissionID,
				"scored_at": now, "version": gorm.Expr("version + 1"), "attempts": 0, "not_before": now}).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return false, domain.Errorf(domain.ECONFLICT, "score of %s recorded twice at once; retried", s.ExerciseID)
	}
	if err != nil {
		return false, fmt.Errorf("owe score of %s to context %d: %w", s.ExerciseID, s.ContextPK, err)
	}
	return changed, nil
}

// ClaimLTIScores leases up to limit due scores for lease, each by a
// compare-and-swap on its not_before, so that senders on several
// servers never post one version twice at once.
func (db *DB) ClaimLTIScores(ctx context.Context, limit int, lease time.Duration) ([]domain.LTIScore, error) {
	now := db.Now()
	g := db.gorm.WithContext(ctx)
	var rows []ltiScoreRow
	if err := g.Where("sent_version < version AND not_before <= ?", now).Order("not_before").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read due scores: %w", err)
	}
	var out []domain.LTIScore
	for _, r := range rows {
		res := g.Model(&ltiScoreRow{}).
			Where("context_pk = ? AND exercise_id = ? AND user_id = ? AND version = ? AND not_before = ?", r.ContextPK, r.ExerciseID, r.UserID, r.Version, r.NotBefore).
			Updates(map[string]any{"not_before": now.Add(lease), "attempts": gorm.Expr("attempts + 1")})
		if res.Error != nil {
			return out, fmt.Errorf("lease score: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			r.Attempts++
			out = append(out, r.domain())
		}
	}
	return out, nil
}

// LTIScoreSent records that the platform accepted s's version; a newer
// version owed meanwhile is due at once.
func (db *DB) LTIScoreSent(ctx context.Context, s domain.LTIScore) error {
	now := db.Now()
	err := db.gorm.WithContext(ctx).Model(&ltiScoreRow{}).
		Where("context_pk = ? AND exercise_id = ? AND user_id = ? AND sent_version < ?", s.ContextPK, s.ExerciseID, s.UserID, s.Version).
		Updates(map[string]any{"sent_version": s.Version, "sent_at": now, "attempts": 0, "last_error": "", "not_before": now}).Error
	if err != nil {
		return fmt.Errorf("record score of %s sent: %w", s.ExerciseID, err)
	}
	return nil
}

// LTIScoreFailed records a failed post of s; it is due again at retryAt.
func (db *DB) LTIScoreFailed(ctx context.Context, s domain.LTIScore, reason string, retryAt time.Time) error {
	err := db.gorm.WithContext(ctx).Model(&ltiScoreRow{}).
		Where("context_pk = ? AND exercise_id = ? AND user_id = ? AND version = ?", s.ContextPK, s.ExerciseID, s.UserID, s.Version).
		Updates(map[string]any{"last_error": Printable(reason), "not_before": retryAt}).Error
	if err != nil {
		return fmt.Errorf("record failed score of %s: %w", s.ExerciseID, err)
	}
	return nil
}

// LTIContexts lists every linked context, by id.
func (db *DB) LTIContexts(ctx context.Context) ([]domain.LTIContext, error) {
	var rows []ltiContextRow
	if err := db.gorm.WithContext(ctx).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list contexts: %w", err)
	}
	out := make([]domain.LTIContext, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// UpdateLTIPlatform replaces a registration's name, deployment ids,
// URLs and audience (issuer and client id stay: they are its identity).
func (db *DB) UpdateLTIPlatform(ctx context.Context, p domain.LTIPlatform) (domain.LTIPlatform, error) {
	deps, _ := json.Marshal(p.DeploymentIDs)
	res := db.gorm.WithContext(ctx).Model(&ltiPlatformRow{}).Where("id = ?", p.ID).Updates(map[string]any{
		"name": p.Name, "deployment_ids": string(deps), "auth_login_url": p.AuthLoginURL, "token_url": p.TokenURL,
		"jwks_url": p.JWKSURL, "audience": p.Audience})
	if res.Error != nil {
		return domain.LTIPlatform{}, fmt.Errorf("update platform %d: %w", p.ID, res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.LTIPlatform{}, domain.Errorf(domain.ENOTFOUND, "platform %d is not registered", p.ID)
	}
	return db.LTIPlatformByID(ctx, p.ID)
}
