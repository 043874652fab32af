package intake

import (
	"fmt"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
)

// uploadedFor returns the other exercise an upload for ex is, or nil.
// The judgement is conservative, since a refusal costs the learner
// nothing but a correct upload refused would be a bug: the upload must
// have changed locked graded cells of ex (it would be graded tampered
// there), and be, against another exercise, whole and untouched: every
// graded and solution cell of that exercise present, none of its locked
// cells changed. The exercises' grader ids alone cannot tell (every
// chapter has a q1), and the starters record no exercise in their
// metadata. Chapter 2's starter uploaded as chapter 1 used to be graded
// 3/27 with q13-q17 tampered.
func (s *Service) uploadedFor(ex *exercise.Exercise, nb *notebook.Notebook, integ notebook.Integrity) *exercise.Exercise {
	if !tampered(integ) || s.Catalog == nil {
		return nil
	}
	for _, other := range s.Catalog.List() {
		if other.ID == ex.ID {
			continue
		}
		t, err := s.template(other)
		if err != nil {
			continue
		}
		if oi := t.Check(nb); len(oi.Verdicts) == 0 && len(oi.MissingSolutions) == 0 {
			return other
		}
	}
	return nil
}

func tampered(integ notebook.Integrity) bool {
	for _, v := range integ.Verdicts {
		if v == domain.VerdictTampered {
			return true
		}
	}
	return false
}

// WrongExerciseError refuses a notebook uploaded for one exercise that is
// another's (422): its message says which, in English; Chinese gives it
// in Chinese, for a learner who reads the pages or asks the API in it.
type WrongExerciseError struct {
	err     *domain.Error
	chinese string
}

func newWrongExercise(ex, other *exercise.Exercise) *WrongExerciseError {
	en := fmt.Sprintf("this notebook is exercise %s's (%s), not %s's (%s): submit it as %s, or download the starter of %s",
		other.ID, titleEN(other), ex.ID, titleEN(ex), other.ID, ex.ID)
	zh := fmt.Sprintf("这个笔记本是练习 %s（%s）的，不是 %s（%s）的：请把它提交到 %s，或下载 %s 的起始笔记本",
		other.ID, other.Title, ex.ID, ex.Title, other.ID, ex.ID)
	return &WrongExerciseError{err: &domain.Error{Code: domain.EINVALID, Message: "the notebook is another exercise's", Problems: []string{en}},
		chinese: zh}
}

func titleEN(ex *exercise.Exercise) string {
	if ex.TitleEN != "" {
		return ex.TitleEN
	}
	return ex.Title
}

func (e *WrongExerciseError) Error() string { return e.err.Error() }

// Unwrap gives the *domain.Error (422) with the English text.
func (e *WrongExerciseError) Unwrap() error { return e.err }

// Chinese is the same refusal in Chinese.
func (e *WrongExerciseError) Chinese() error {
	return &domain.Error{Code: domain.EINVALID, Message: "笔记本属于另一个练习", Problems: []string{e.chinese}}
}
