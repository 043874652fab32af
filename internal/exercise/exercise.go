// Package exercise loads the exercise catalog: each exercise's config from
// exercises/<id>/exercise.json, its reference answer from answers/<id>/, the
// starter learners download (generated from the answer), and the recorded
// reference outputs per runner profile. Reference answers and reference
// outputs stay on the server; only the starter is ever served.
package exercise

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/npugrade/npugrade/internal/grading"
	"github.com/npugrade/npugrade/internal/notebook"
)

// Config is exercises/<id>/exercise.json.
type Config struct {
	ID          string              `json:"id"`
	Title       string              `json:"title"`
	TitleEN     string              `json:"title_en"`
	Starter     string              `json:"starter"`
	Answer      string              `json:"answer"`
	CellTimeout float64             `json:"cell_timeout"`
	JobTimeout  float64             `json:"job_timeout,omitempty"`
	Requires    grading.Requirement `json:"requires,omitempty"`
	MaxAttempts int                 `json:"max_attempts,omitempty"`
}

// Exercise is one loaded exercise.
type Exercise struct {
	Config
	Dir       string // exercises/<id>
	AnswerDir string // answers/<id>
	// Version is a digest of everything that decides a grade: the answer,
	// the config and the references. Scores record it.
	Version      string
	AnswerBytes  []byte
	Answer       *notebook.Notebook
	StarterNB    *notebook.Notebook
	StarterBytes []byte
	References   map[string]*Reference // by profile
	Graded       []GradedCell
}

// GradedCell is one cell that earns points, in notebook order.
type GradedCell struct {
	ID       string
	Points   float64
	Requires grading.Requirement
	Solution bool
}

// Reference is answers/<id>/references/<profile>.json: the answer's outputs
// on one runner profile.
type Reference struct {
	Exercise     string                        `json:"exercise"`
	Profile      string                        `json:"profile"`
	AnswerSHA256 string                        `json:"answer_sha256"`
	Cells        map[string][]*notebook.Output `json:"cells"`
}

// Catalog holds every exercise, by id.
type Catalog struct {
	list []*Exercise
	byID map[string]*Exercise
}

// List returns the exercises sorted by id.
func (c *Catalog) List() []*Exercise { return c.list }

// Get returns one exercise or ENOTFOUND.
func (c *Catalog) Get(id string) (*Exercise, error) {
	if ex, ok := c.byID[id]; ok {
		return ex, nil
	}
	return nil, grading.Errorf(grading.ENOTFOUND, "unknown exercise %q", id)
}

// Load reads every exercises/<id>/exercise.json with its answer. Every
// problem in every exercise is reported at once.
func Load(exercisesDir, answersDir string) (*Catalog, error) {
	entries, err := os.ReadDir(exercisesDir)
	if err != nil {
		return nil, fmt.Errorf("read exercises directory: %w", err)
	}
	cat := &Catalog{byID: map[string]*Exercise{}}
	var errs *multierror.Error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(exercisesDir, e.Name(), "exercise.json")); errors.Is(err, os.ErrNotExist) {
			continue
		}
		ex, err := LoadOne(filepath.Join(exercisesDir, e.Name()), filepath.Join(answersDir, e.Name()))
		if err != nil {
			errs = multierror.Append(errs, fmt.Errorf("exercise %s: %w", e.Name(), err))
			continue
		}
		cat.list = append(cat.list, ex)
		cat.byID[ex.ID] = ex
	}
	if err := errs.ErrorOrNil(); err != nil {
		return nil, err
	}
	sort.Slice(cat.list, func(i, j int) bool { return cat.list[i].ID < cat.list[j].ID })
	return cat, nil
}

// LoadOne loads one exercise from its two directories.
func LoadOne(dir, answerDir string) (*Exercise, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "exercise.json"))
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, "exercise.json"), err)
	}
	var errs *multierror.Error
	if cfg.ID != filepath.Base(dir) {
		errs = multierror.Append(errs, fmt.Errorf("id %q does not match its directory %q", cfg.ID, filepath.Base(dir)))
	}
	if cfg.Answer == "" || cfg.Starter == "" {
		errs = multierror.Append(errs, errors.New("exercise.json needs \"starter\" and \"answer\" notebook names"))
	}
	if cfg.CellTimeout <= 0 {
		cfg.CellTimeout = 60
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 3
	}
	if err := errs.ErrorOrNil(); err != nil {
		return nil, err
	}
	ex := &Exercise{Config: cfg, Dir: dir, AnswerDir: answerDir, References: map[string]*Reference{}}
	ex.AnswerBytes, err = os.ReadFile(filepath.Join(answerDir, cfg.Answer))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	ex.Answer, err = notebook.Parse(ex.AnswerBytes, notebook.Limits{RequireIDs: true})
	if err != nil {
		return nil, fmt.Errorf("answer %s: %w", cfg.Answer, err)
	}
	seen := map[string]bool{}
	for _, c := range ex.Answer.Cells {
		g := c.MustGrader()
		if g.ID == "" {
			continue
		}
		if seen[g.ID] {
			errs = multierror.Append(errs, fmt.Errorf("answer: grader id %q is used twice", g.ID))
		}
		seen[g.ID] = true
		if g.Graded() {
			ex.Graded = append(ex.Graded, GradedCell{ID: g.ID, Points: g.Points, Requires: g.Requires, Solution: g.Solution})
		}
	}
	if len(ex.Graded) == 0 {
		errs = multierror.Append(errs, errors.New("answer has no graded cells (metadata.grader.points > 0)"))
	}
	ex.StarterNB, err = notebook.Starter(ex.Answer)
	if err != nil {
		errs = multierror.Append(errs, err)
	} else if ex.StarterBytes, err = notebook.Encode(ex.StarterNB); err != nil {
		errs = multierror.Append(errs, err)
	}
	refs, _ := filepath.Glob(filepath.Join(answerDir, "references", "*.json"))
	h := sha256.New()
	h.Write(raw)
	h.Write(ex.AnswerBytes)
	for _, p := range refs {
		b, err := os.ReadFile(p)
		if err != nil {
			errs = multierror.Append(errs, fmt.Errorf("read reference %s: %w", p, err))
			continue
		}
		var ref Reference
		if err := json.Unmarshal(b, &ref); err != nil {
			errs = multierror.Append(errs, fmt.Errorf("parse reference %s: %w", p, err))
			continue
		}
		ex.References[ref.Profile] = &ref
		h.Write(b)
	}
	ex.Version = hex.EncodeToString(h.Sum(nil))[:16]
	if err := errs.ErrorOrNil(); err != nil {
		return nil, err
	}
	return ex, nil
}

// AnswerSHA256 is the digest references record, so a stale reference is detected.
func (ex *Exercise) AnswerSHA256() string {
	sum := sha256.Sum256(ex.AnswerBytes)
	return hex.EncodeToString(sum[:])
}

// Reference returns the reference outputs of profile, or an error saying
// that none were recorded (or that they are stale).
func (ex *Exercise) Reference(profile string) (*Reference, error) {
	ref, ok := ex.References[profile]
	if !ok {
		return nil, fmt.Errorf("exercise %s has no reference outputs for profile %q (record them with npugrade check --profile %s --update-reference)", ex.ID, profile, profile)
	}
	if ref.AnswerSHA256 != ex.AnswerSHA256() {
		return nil, fmt.Errorf("exercise %s: the reference outputs for profile %q were recorded from another version of the answer (re-record with --update-reference)", ex.ID, profile)
	}
	return ref, nil
}

// MaxPoints is the most a submission can score on a runner profile whose
// capabilities are given by satisfies.
func (ex *Exercise) MaxPoints(satisfies func(grading.Requirement) bool) float64 {
	var sum float64
	for _, g := range ex.Graded {
		if satisfies == nil || satisfies(g.Requires) {
			sum += g.Points
		}
	}
	return sum
}

// StarterPath is where the committed starter lives.
func (ex *Exercise) StarterPath() string { return filepath.Join(ex.Dir, ex.Config.Starter) }

// WriteReference records ref under answers/<id>/references/<profile>.json.
func (ex *Exercise) WriteReference(ref *Reference) error {
	dir := filepath.Join(ex.AnswerDir, "references")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(ref, "", " ")
	if err != nil {
		return fmt.Errorf("encode reference: %w", err)
	}
	path := filepath.Join(dir, ref.Profile+".json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ex.References[ref.Profile] = ref
	return nil
}
