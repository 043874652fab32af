// Package reference is what submissions are compared with: the reference
// outputs an exercise's answer gives on each runner profile. Stored looks
// them up (a committed file first, else the one a reference job recorded);
// Reviews is the instructor's review of reference outputs
// recorded by runners. A reference job's outputs become what every later
// submission on that profile is compared with, and a runner is hostile:
// it could return fabricated outputs. So a recording is staged (package
// store, staged_references) and shown as a per-cell diff against the
// reference grading uses now; only when an instructor accepts it does
// grading use it, and a rejected one is never used. The API
// (/api/v1/staged-references) and the dashboard pages both call Reviews.
package reference

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/store"
)

// Reviews lists, shows, accepts and rejects staged references.
type Reviews struct {
	DB      ReviewStore
	Catalog *exercise.Catalog
}

// Review is a staged reference as instructors see it.
type Review struct {
	ID           int64  `json:"id"`
	Exercise     string `json:"exercise"`
	Profile      string `json:"profile"`
	State        string `json:"state"`
	AnswerSHA256 string `json:"answer_sha256"`
	// Current: recorded from the answer as it is now (only such a
	// reference can be accepted).
	Current        bool       `json:"current"`
	Cells          int        `json:"cells"`
	RunnerID       string     `json:"runner_id,omitempty"`
	JobID          int64      `json:"job_id,omitempty"`
	EnvFingerprint string     `json:"env_fingerprint,omitempty"`
	RecordedAt     time.Time  `json:"recorded_at"`
	DecidedBy      string     `json:"decided_by,omitempty"`
	DecidedAt      *time.Time `json:"decided_at,omitempty"`
	Note           string     `json:"note,omitempty"`
	// Against is where the reference it is compared with comes from:
	// "file" (a committed reference file, which grading prefers even
	// after an accept), "database" (the one accepted before) or "none".
	Against string `json:"against,omitempty"`
	// Changed counts the cells whose outputs differ from it.
	Changed int        `json:"changed"`
	Diff    []CellDiff `json:"diff,omitempty"`
}

// CellDiff compares one graded cell's outputs.
type CellDiff struct {
	Cell string `json:"cell"`
	// Change is "same", "changed", "added" (no previous outputs) or
	// "removed" (the staged reference has none).
	Change   string `json:"change"`
	Previous string `json:"previous"`
	Staged   string `json:"staged"`
	Diff     string `json:"diff,omitempty"`
}

// ReviewFilter selects staged references: one exercise, one state (staged,
// accepted, rejected); empty matches all.
type ReviewFilter struct {
	Exercise string
	State    string
}

// List returns the staged references of f, newest first, without diffs.
func (s *Reviews) List(ctx context.Context, f ReviewFilter) ([]Review, error) {
	switch f.State {
	case "", store.ReferenceStaged, store.ReferenceAccepted, store.ReferenceRejected:
	default:
		return nil, domain.Errorf(domain.EINVALID, "state must be staged, accepted or rejected, not %q", f.State)
	}
	rows, err := s.DB.StagedReferences(ctx, store.StagedReferenceFilter{Exercise: f.Exercise, State: f.State})
	if err != nil {
		return nil, err
	}
	out := make([]Review, len(rows))
	for i, r := range rows {
		out[i] = s.review(r)
	}
	return out, nil
}

// Get returns one staged reference with its per-cell diff against the
// reference grading uses now.
func (s *Reviews) Get(ctx context.Context, id int64) (Review, error) {
	r, err := s.DB.StagedReference(ctx, id)
	if err != nil {
		return Review{}, err
	}
	rv := s.review(r)
	var staged map[string][]*notebook.Output
	if err := json.Unmarshal(r.Cells, &staged); err != nil {
		return Review{}, fmt.Errorf("decode staged reference %d: %w", id, err)
	}
	prev, against, err := s.previous(ctx, r.ExerciseID, r.Profile)
	if err != nil {
		return Review{}, err
	}
	rv.Against = against
	rv.Diff = diffCells(prev, staged)
	for _, d := range rv.Diff {
		if d.Change != "same" {
			rv.Changed++
		}
	}
	return rv, nil
}

// maxNote bounds the reason an instructor gives.
const maxNote = 1000

// Accept makes a staged reference the one grading uses for its exercise
// and profile (audit-logged). It must have been recorded from the
// current answer: an older one would be refused by grading anyway.
func (s *Reviews) Accept(ctx context.Context, id int64, actor domain.User, note string) (Review, error) {
	return s.decide(ctx, id, true, actor, note)
}

// Reject marks a staged reference as never to be used (audit-logged).
func (s *Reviews) Reject(ctx context.Context, id int64, actor domain.User, note string) (Review, error) {
	return s.decide(ctx, id, false, actor, note)
}

func (s *Reviews) decide(ctx context.Context, id int64, accept bool, actor domain.User, note string) (Review, error) {
	if utf8.RuneCountInString(note) > maxNote || !utf8.ValidString(note) || strings.ContainsRune(note, 0) {
		return Review{}, domain.Errorf(domain.EINVALID, "the note must be text without NUL, at most %d characters", maxNote)
	}
	if accept {
		r, err := s.DB.StagedReference(ctx, id)
		if err != nil {
			return Review{}, err
		}
		if !s.review(r).Current {
			return Review{}, domain.Errorf(domain.ECONFLICT, "staged reference %d was recorded from another version of the answer of %s: record it again", id, r.ExerciseID)
		}
	}
	r, err := s.DB.DecideReference(ctx, id, accept, actor, note)
	if err != nil {
		return Review{}, err
	}
	return s.review(r), nil
}

func (s *Reviews) review(r store.StagedReference) Review {
	rv := Review{ID: r.ID, Exercise: r.ExerciseID, Profile: r.Profile, State: r.State, AnswerSHA256: r.AnswerSHA256,
		RunnerID: r.RunnerID, JobID: r.JobID, EnvFingerprint: r.EnvFingerprint, RecordedAt: r.RecordedAt,
		DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt, Note: r.Note}
	if ex, err := s.Catalog.Get(r.ExerciseID); err == nil {
		rv.Current = ex.AnswerSHA256() == r.AnswerSHA256
	}
	var cells map[string]json.RawMessage
	if json.Unmarshal(r.Cells, &cells) == nil {
		rv.Cells = len(cells)
	}
	return rv
}

// previous is the reference grading uses now for exercise on profile: a
// committed file first (it wins over the database), then the accepted one.
func (s *Reviews) previous(ctx context.Context, exerciseID, profile string) (map[string][]*notebook.Output, string, error) {
	if ex, err := s.Catalog.Get(exerciseID); err == nil {
		if ref, ok := ex.References[profile]; ok {
			return ref.Cells, "file", nil
		}
	}
	stored, err := s.DB.Reference(ctx, exerciseID, profile)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "none", nil
	}
	if err != nil {
		return nil, "", err
	}
	var cells map[string][]*notebook.Output
	if err := json.Unmarshal(stored.Cells, &cells); err != nil {
		return nil, "", fmt.Errorf("decode reference %s/%s: %w", exerciseID, profile, err)
	}
	return cells, "database", nil
}

// diffCells compares two references cell by cell, in cell id order.
func diffCells(prev, staged map[string][]*notebook.Output) []CellDiff {
	ids := make([]string, 0, len(prev)+len(staged))
	for id := range prev {
		ids = append(ids, id)
	}
	for id := range staged {
		if _, ok := prev[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make([]CellDiff, 0, len(ids))
	for _, id := range ids {
		p, hadPrev := prev[id]
		n, hasNew := staged[id]
		d := CellDiff{Cell: id, Previous: OutputsText(p), Staged: OutputsText(n)}
		switch {
		case !hadPrev:
			d.Change = "added"
		case !hasNew:
			d.Change = "removed"
		case d.Previous == d.Staged:
			d.Change = "same"
		default:
			d.Change = "changed"
		}
		if d.Change != "same" {
			d.Diff = compare.LineDiff("previous "+id, "staged "+id, d.Previous, d.Staged)
		}
		out = append(out, d)
	}
	return out
}

// maxShown bounds each side's text in a diff (a reference may hold large
// outputs; the page shows their start).
const maxShown = 16 << 10

// OutputsText renders outputs as reviewable text: each output on its own
// lines, labelled with its kind; binary data by size, not content.
func OutputsText(outs []*notebook.Output) string {
	var sb strings.Builder
	for _, o := range outs {
		if o == nil {
			continue
		}
		switch o.OutputType {
		case notebook.OutputStream:
			fmt.Fprintf(&sb, "[%s]\n%s\n", o.Name, strings.TrimRight(string(o.Text), "\n"))
		case notebook.OutputError:
			fmt.Fprintf(&sb, "[error] %s: %s\n", o.Ename, o.Evalue)
		default:
			mimes := make([]string, 0, len(o.Data))
			for m := range o.Data {
				mimes = append(mimes, m)
			}
			sort.Strings(mimes)
			for _, m := range mimes {
				v := string(o.Data[m])
				if strings.HasPrefix(m, "image/") {
					fmt.Fprintf(&sb, "[%s] %d bytes (base64)\n", m, len(v))
					continue
				}
				fmt.Fprintf(&sb, "[%s]\n%s\n", m, strings.TrimRight(v, "\n"))
			}
		}
		if sb.Len() > maxShown {
			break
		}
	}
	s := store.Printable(sb.String())
	if len(s) > maxShown {
		s = strings.ToValidUTF8(s[:maxShown], "") + "\n…"
	}
	return s
}
