package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// The claim: the per-request statement runners wait on, so it goes to the
// pool directly (no gorm statement building or reflection) as one
// statement, prepared once per connection (pgx's statement cache).

// claimColumns are the job columns a claim returns, in scan order.
const claimColumns = `id, submission_id, kind, exercise_id, state, requires, priority, attempt, max_attempts, payload_sha256,
    lease_token, runner_id, lease_expires_at, not_before, last_error, created_at, updated_at, profile`

// claimLease picks the first queued job in claim order that this runner
// may take, skipping rows other claimers hold locked (FOR UPDATE SKIP
// LOCKED, so 64 claimers never wait on one another and never get the same
// row), and leases it. The index jobs_queued_order (migration 00010)
// serves the pick. The first %s is a condition on the runner (or
// nothing), the second the requirement filter.
const claimLease = `leased AS (
  UPDATE jobs SET state = 'leased', lease_token = @token, runner_id = @runner, lease_expires_at = @expires,
    attempt = attempt + 1, updated_at = @now
  WHERE id = (SELECT id FROM jobs WHERE %sstate = 'queued' AND not_before <= @now%s
    ORDER BY priority DESC, turn, id LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING ` + claimColumns + `
), running AS (
  UPDATE submissions s SET status = 'running', started_at = @now, runner_id = @runner
  FROM leased WHERE s.id = leased.submission_id AND s.status IN ('queued', 'running')
)`

// claimPostgres is the whole claim as one statement: lease the job, mark
// its submission running and return it with its payload. %s is the
// requirement filter.
var claimPostgres = "WITH " + fmt.Sprintf(claimLease, "", "%s") + `
SELECT leased.*, b.data AS payload FROM leased LEFT JOIN blobs b ON b.sha256 = leased.payload_sha256`

// claimChecked is the claim for a runner that must be the caller's, as
// one statement: %s is where the runner comes from (CTE r), the rest
// records the poll in runners.last_seen (at most every
// lastSeenResolution) and leases only while r holds a runner that is not
// draining (a one-time filter in the pick: a draining or foreign runner
// locks no job).
const claimChecked = `r AS (%s), touch AS (
  UPDATE runners SET last_seen = @now FROM r WHERE runners.id = r.id AND r.last_seen < @stale
), `

// claimOwnedPostgres checks that runner @runner is registered to user
// @owner. One row comes back when it is (its draining flag, then the
// job's columns, null when none was leased); none when it is not.
var claimOwnedPostgres = "WITH " + fmt.Sprintf(claimChecked, "SELECT id, draining, last_seen FROM runners WHERE id = @runner AND user_id = @owner") +
	fmt.Sprintf(claimLease, "EXISTS (SELECT 1 FROM r WHERE NOT r.draining) AND ", "%s") + `
SELECT r.draining, leased.*, b.data AS payload FROM r LEFT JOIN leased ON true LEFT JOIN blobs b ON b.sha256 = leased.payload_sha256`

// claimAuthPostgres also authenticates the caller (CTE a, users.go's
// authentication): the runner must be registered to the user of token
// @hash, who has role @role (a valid token is admitted from any address,
// however many failed sign-ins it had). It always returns one row: the authentication's
// columns, whether the runner is the user's and drains, then the job's
// columns (null when none was leased). The whole claim of a runner that
// finds a job is this one statement.
var claimAuthPostgres = "WITH a AS (SELECT " + authSelect + "\n  FROM " + authFrom + "), " +
	fmt.Sprintf(claimChecked, `SELECT runners.id, runners.draining, runners.last_seen FROM runners, a
  WHERE runners.id = @runner AND runners.user_id = a.uid AND a.role = @role`) +
	fmt.Sprintf(claimLease, "EXISTS (SELECT 1 FROM r WHERE NOT r.draining) AND ", "%s") + `
SELECT a.*, r.id IS NOT NULL, coalesce(r.draining, false), leased.*, b.data AS payload
FROM a LEFT JOIN r ON true LEFT JOIN leased ON true LEFT JOIN blobs b ON b.sha256 = leased.payload_sha256`

// ClaimStatement is the Postgres claim statement for a runner of the
// requirement keys requiresSQL (an SQL list such as ('{}')), with named
// parameters @token, @runner, @expires and @now: make bench runs exactly
// this under pgbench as the baseline of the claim benchmark (the server
// runs it with the runner check of claimOwnedPostgres around it).
func ClaimStatement(requiresSQL string) string {
	return fmt.Sprintf(claimPostgres, " AND requires IN "+requiresSQL)
}

// ClaimAsStatement is the statement a runner's claim runs on Postgres
// (ClaimJobAs: authentication, runner check, lease), in ClaimStatement's
// form, with the named parameters of claimAuthPostgres: make bench runs
// it under pgbench too, to tell the statement's cost from the rest.
func ClaimAsStatement(requiresSQL string) string {
	return fmt.Sprintf(claimAuthPostgres, " AND requires IN "+requiresSQL)
}

// claimSQLite is the same pick and lease on SQLite, which has one writer
// (a claim cannot interleave with another) and no data-modifying WITH:
// the lease is one UPDATE … RETURNING, the runner check, the submission
// and the payload follow in the same transaction.
const claimSQLite = `UPDATE jobs SET state = 'leased', lease_token = @token, runner_id = @runner, lease_expires_at = @expires,
    attempt = attempt + 1, updated_at = @now
  WHERE id = (SELECT id FROM jobs WHERE state = 'queued' AND not_before <= @now%s
    ORDER BY priority DESC, turn, id LIMIT 1)
  RETURNING *`

// ClaimJob leases the first queued job in claim order (highest priority,
// then the learner's earliest turn, then oldest) that c allows, marks its submission running and returns it
// with its payload. It returns (nil, nil) when there is none; with an
// Owner, ErrRunnerUnknown or ErrRunnerDraining when the runner may not
// claim.
func (db *DB) ClaimJob(ctx context.Context, c Claim) (*Claimed, error) {
	if !c.Any && len(c.Requires) == 0 {
		// Nothing this runner can run is queued: only the runner check
		// (on Postgres the claim statement leasing nothing, one round
		// trip without gorm, as every re-query of an idle poll is).
		if c.Owner == 0 {
			return nil, nil
		}
		if db.Dialect != "postgres" {
			found, draining, err := db.TouchOwnRunner(ctx, c.RunnerID, c.Owner)
			return nil, runnerCheck(found, draining, err)
		}
	}
	keys := claimKeys(c)
	if db.Dialect == "postgres" {
		return db.claimPostgres(ctx, c, keys)
	}
	return db.claimSQLite(ctx, c, keys)
}

// claimKeys are the requirement keys claim c may lease: nil for any job,
// an empty list for none.
func claimKeys(c Claim) []string {
	if c.Any {
		return nil
	}
	keys := make([]string, len(c.Requires))
	for i, r := range c.Requires {
		keys[i] = requirementKey(r)
	}
	return keys
}

// nKeys is claimStatement's count for keys (claimKeys).
func nKeys(keys []string) int {
	if keys != nil && len(keys) == 0 {
		return noKeys
	}
	return len(keys)
}

// runnerCheck turns a runner check into a claim's error.
func runnerCheck(found, draining bool, err error) error {
	switch {
	case err != nil:
		return err
	case !found:
		return ErrRunnerUnknown
	case draining:
		return ErrRunnerDraining
	}
	return nil
}

// claimStatements caches the positional form of each claim statement
// (by mode and number of requirement keys).
var claimStatements sync.Map

// Claim statement modes.
const (
	claimPlain = iota // no runner check (in-process runners)
	claimOwned        // claimOwnedPostgres
	claimAuth         // claimAuthPostgres
)

// noKeys, as claimStatement's nKeys, leases nothing: the statement only
// authenticates and checks (and touches) the runner, for a runner that
// can run nothing queued, which is every idle runner's every poll.
const noKeys = -1

// claimStatement returns the claim statement of mode for nKeys
// requirement keys (0: any; noKeys: none).
func claimStatement(mode, nKeys int) positionalSQL {
	key := strconv.Itoa(mode) + "/" + strconv.Itoa(nKeys)
	if v, ok := claimStatements.Load(key); ok {
		return v.(positionalSQL)
	}
	filter := ""
	if nKeys == noKeys {
		filter = " AND false"
	}
	if nKeys > 0 {
		ks := make([]string, nKeys)
		for i := range ks {
			ks[i] = "@k" + strconv.Itoa(i)
		}
		filter = " AND requires IN (" + strings.Join(ks, ", ") + ")"
	}
	stmt := []string{claimPostgres, claimOwnedPostgres, claimAuthPostgres}[mode]
	p := positional(fmt.Sprintf(stmt, filter))
	claimStatements.Store(key, p)
	return p
}

// positionalSQL is a statement written with @name parameters, rewritten
// for the pool (which binds by position).
type positionalSQL struct {
	pg, sqlite string   // with $1, $2, … and ?1, ?2, …
	names      []string // parameter i+1 is names[i]
}

// text is p in db's dialect.
func (db *DB) text(p positionalSQL) string {
	if db.Dialect == "postgres" {
		return p.pg
	}
	return p.sqlite
}

// args are vals in p's parameter order.
func (p positionalSQL) args(vals map[string]any) []any {
	out := make([]any, len(p.names))
	for i, n := range p.names {
		out[i] = vals[n]
	}
	return out
}

// positional rewrites @name parameters as numbered ones in order of first use.
func positional(q string) positionalSQL {
	var pg, lite strings.Builder
	var names []string
	for i := 0; i < len(q); {
		if q[i] != '@' {
			pg.WriteByte(q[i])
			lite.WriteByte(q[i])
			i++
			continue
		}
		j := i + 1
		for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= '0' && q[j] <= '9') {
			j++
		}
		name, n := q[i+1:j], -1
		for k, have := range names {
			if have == name {
				n = k
			}
		}
		if n < 0 {
			names, n = append(names, name), len(names)
		}
		pg.WriteString("$" + strconv.Itoa(n+1))
		lite.WriteString("?" + strconv.Itoa(n+1))
		i = j
	}
	return positionalSQL{pg: pg.String(), sqlite: lite.String(), names: names}
}

// claimVals are the claim statement's parameter values.
func (db *DB) claimVals(c Claim, keys []string) map[string]any {
	now := db.Now()
	vals := map[string]any{"token": c.Token, "runner": c.RunnerID, "expires": c.Expires, "now": now,
		"owner": c.Owner, "stale": now.Add(-lastSeenResolution)}
	for i, k := range keys {
		vals["k"+strconv.Itoa(i)] = k
	}
	return vals
}

// claimPostgres runs the claim statement (plain or owned) and scans its row.
func (db *DB) claimPostgres(ctx context.Context, c Claim, keys []string) (*Claimed, error) {
	mode := claimPlain
	if c.Owner != 0 {
		mode = claimOwned
	}
	st := claimStatement(mode, nKeys(keys))
	var s claimScan
	dest := s.dest()
	var draining bool
	if c.Owner != 0 {
		dest = append([]any{&draining}, dest...)
	}
	err := db.pgxRow(ctx, st.pg, st.args(db.claimVals(c, keys)), dest...)
	if errors.Is(err, sql.ErrNoRows) { // pgx's ErrNoRows is sql.ErrNoRows too
		if c.Owner != 0 {
			return nil, ErrRunnerUnknown
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim a job: %w", translate(err))
	}
	if draining {
		return nil, ErrRunnerDraining
	}
	if !s.id.Valid {
		return nil, nil
	}
	return s.claimed()
}

// ClaimAuth authenticates a claim in the claim's own statement: the
// runner must be registered to the user of Token, who must have Role.
// The failed sign-ins of Addr within Window come back with the check (a
// bad token from an address over the limit is refused 429), but they
// never stop a valid token: behind a campus NAT a whole class, and its
// runners, share one address.
type ClaimAuth struct {
	Token, Addr string
	Window      time.Duration
	Role        domain.Role
}

// admits reports whether a lets the claim go ahead.
func (a ClaimAuth) admits(t TokenCheck) bool {
	return t.Valid && t.User.Role == a.Role
}

// ClaimJobAs is ClaimJob for a caller not authenticated yet (c.Owner is
// ignored): it returns the authentication, and leases a job only when a
// admits it and the runner is the token user's; then, as ClaimJob with
// that owner, ErrRunnerUnknown or ErrRunnerDraining. A refused
// authentication is no error: the caller answers it from the TokenCheck.
// On Postgres this is one statement.
func (db *DB) ClaimJobAs(ctx context.Context, c Claim, a ClaimAuth) (TokenCheck, *Claimed, error) {
	if db.Dialect != "postgres" {
		t, err := db.Authenticate(ctx, a.Token, a.Addr, a.Window)
		if err != nil || !a.admits(t) {
			return t, nil, err
		}
		c.Owner = t.User.ID
		claimed, err := db.ClaimJob(ctx, c)
		return t, claimed, err
	}
	keys := claimKeys(c)
	vals := db.claimVals(c, keys)
	db.authArgs(vals, a.Token, a.Addr, a.Window)
	vals["role"] = string(a.Role)
	st := claimStatement(claimAuth, nKeys(keys))
	var (
		as              authScan
		s               claimScan
		found, draining bool
	)
	dest := append(append(as.dest(), &found, &draining), s.dest()...)
	if err := db.pgxRow(ctx, st.pg, st.args(vals), dest...); err != nil {
		return TokenCheck{}, nil, fmt.Errorf("claim a job: %w", translate(err))
	}
	t := db.check(ctx, &as, a.Addr != "" && a.Window > 0)
	if !a.admits(t) {
		return t, nil, nil
	}
	if err := runnerCheck(found, draining, nil); err != nil || !s.id.Valid {
		return t, nil, err
	}
	claimed, err := s.claimed()
	return t, claimed, err
}

// pgxRow scans the one row of Postgres statement q into dest on one of
// the pool's connections, through pgx itself: database/sql would turn
// each of a claim's columns into a driver value first and copy the
// payload (tens of kilobytes) once more, per claim. The statement is
// prepared once per connection all the same (pgx's statement cache).
func (db *DB) pgxRow(ctx context.Context, q string, args []any, dest ...any) error {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the Postgres pool holds a %T, not a pgx connection", dc)
		}
		return c.Conn().QueryRow(ctx, q, args...).Scan(dest...)
	})
}

// claimScan receives a claim's row; every column may be null (no job
// leased for an owned runner).
type claimScan struct {
	id, priority, attempt, maxAttempts                                         sql.NullInt64
	sub, kind, exercise, state, requires, sha, token, runner, lastErr, profile sql.NullString
	expires, notBefore, created, updated                                       sql.NullTime
	payload                                                                    []byte
	row                                                                        jobRow // set by claimSQLite
}

func (s *claimScan) dest() []any {
	return []any{&s.id, &s.sub, &s.kind, &s.exercise, &s.state, &s.requires, &s.priority, &s.attempt, &s.maxAttempts, &s.sha,
		&s.token, &s.runner, &s.expires, &s.notBefore, &s.lastErr, &s.created, &s.updated, &s.profile, &s.payload}
}

// claimed is the leased job with its payload; a missing payload is an
// error, and the lease stays for the reaper to return (blobs are never
// deleted, so this is a broken database, said clearly).
func (s *claimScan) claimed() (*Claimed, error) {
	if s.id.Valid {
		s.row = s.jobRow()
	}
	r := s.row
	if s.payload == nil {
		return nil, fmt.Errorf("claim job %d: payload %s: %w", r.ID, r.PayloadSHA256, ErrNotFound)
	}
	return &Claimed{Job: r.job(), Payload: s.payload}, nil
}

func (s *claimScan) jobRow() jobRow {
	r := jobRow{ID: s.id.Int64, Kind: s.kind.String, ExerciseID: s.exercise.String, State: s.state.String,
		Requires: s.requires.String, Priority: int(s.priority.Int64), Attempt: int(s.attempt.Int64),
		MaxAttempts: int(s.maxAttempts.Int64), PayloadSHA256: s.sha.String, LeaseToken: s.token.String,
		RunnerID: s.runner.String, NotBefore: s.notBefore.Time, LastError: s.lastErr.String,
		CreatedAt: s.created.Time, UpdatedAt: s.updated.Time, Profile: s.profile.String}
	if s.sub.Valid {
		r.SubmissionID = &s.sub.String
	}
	if s.expires.Valid {
		t := s.expires.Time
		r.LeaseExpiresAt = &t
	}
	return r
}

// claimSQLite is the claim on SQLite: the runner check, lease, submission
// and payload in one transaction.
func (db *DB) claimSQLite(ctx context.Context, c Claim, keys []string) (*Claimed, error) {
	now := db.Now()
	args := map[string]any{"token": c.Token, "runner": c.RunnerID, "expires": c.Expires, "now": now}
	filter := ""
	if keys != nil {
		filter, args["requires"] = " AND requires IN @requires", keys
	}
	if c.Owner != 0 {
		if err := runnerCheck(db.TouchOwnRunner(ctx, c.RunnerID, c.Owner)); err != nil {
			return nil, err
		}
	}
	var out *claimScan
	err := translate(db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var leased []jobRow
		if err := tx.Raw(fmt.Sprintf(claimSQLite, filter), args).Scan(&leased).Error; err != nil {
			return fmt.Errorf("claim a job: %w", err)
		}
		if len(leased) == 0 {
			return nil
		}
		row := leased[0]
		if row.SubmissionID != nil {
			if err := db.markRunning(tx, *row.SubmissionID, row.RunnerID); err != nil {
				return err
			}
		}
		var blob blobRow
		if err := tx.Where("sha256 = ?", row.PayloadSHA256).Limit(1).Find(&blob).Error; err != nil {
			return fmt.Errorf("read payload of job %d: %w", row.ID, err)
		}
		out = &claimScan{row: row, payload: blob.Data}
		return nil
	}))
	if err != nil || out == nil {
		return nil, err
	}
	return out.claimed()
}

// lastSeenResolution is how stale runners.last_seen may be (the fleet
// page calls a runner stale after two minutes).
const lastSeenResolution = 5 * time.Second
