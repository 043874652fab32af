package similarity

import (
	"context"
	"fmt"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
)

// AuditReport is the audit action of a report being read.
const AuditReport = "similarity-report"

// Store is what the report reads and writes of the database.
type Store interface {
	LatestSubmissionsOf(ctx context.Context, exerciseID string, limit int) ([]domain.Submission, error)
	Blob(ctx context.Context, sha string) ([]byte, error)
	Audit(ctx context.Context, actor domain.User, action, subject, detail string) error
}

// Service builds reports over one database and catalog.
type Service struct {
	DB      Store
	Catalog *exercise.Catalog
}

// Report compares the solution cells of every learner's latest
// submission of exercise id, ignoring the starter's code. Who read it is
// recorded in the audit log.
func (s *Service) Report(ctx context.Context, actor domain.User, id string, o Options) (Report, error) {
	ex, err := s.Catalog.Get(id)
	if err != nil {
		return Report{}, err
	}
	starter, err := notebook.Starter(ex.Answer)
	if err != nil {
		return Report{}, fmt.Errorf("starter of %s: %w", ex.ID, err)
	}
	subs, err := s.DB.LatestSubmissionsOf(ctx, ex.ID, maxDocs)
	if err != nil {
		return Report{}, err
	}
	docs := make([]Doc, 0, len(subs))
	for _, sub := range subs {
		raw, err := s.DB.Blob(ctx, sub.NotebookSHA256)
		if err != nil {
			return Report{}, err
		}
		nb, err := notebook.ParseStored(raw)
		if err != nil {
			continue // intake accepted it; a notebook that no longer parses has nothing to compare
		}
		docs = append(docs, Doc{SubmissionID: sub.ID, Learner: sub.UserName, Source: solutionCode(nb)})
	}
	rep := Compare(ex.ID, allCode(starter), docs, o)
	if err := s.DB.Audit(ctx, actor, AuditReport, ex.ID, fmt.Sprintf("%d submissions, %d pairs reported", rep.Submissions, len(rep.Pairs))); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// maxDocs bounds one report (the pairs are counted through an index of
// shared fingerprints, so a class of a few thousand stays cheap).
const maxDocs = 5000

// solutionCode is the notebook's solution cells, one after another; a
// notebook whose grader metadata was stripped gives all its code.
func solutionCode(nb *notebook.Notebook) string {
	var b strings.Builder
	for _, c := range nb.Cells {
		if c.CellType == "code" && c.MustGrader().Solution {
			b.WriteString(string(c.Source))
			b.WriteString("\n")
		}
	}
	if b.Len() == 0 {
		return allCode(nb)
	}
	return b.String()
}

func allCode(nb *notebook.Notebook) string {
	var b strings.Builder
	for _, c := range nb.Cells {
		if c.CellType == "code" {
			b.WriteString(string(c.Source))
			b.WriteString("\n")
		}
	}
	return b.String()
}
