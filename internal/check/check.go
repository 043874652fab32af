// Package check regression-tests the exercises without a server or a
// database: it executes each answer, each starter and each wrong-solution
// fixture on a runner profile, grades them with the same scoring code the
// server uses, and compares the verdicts with what is expected (answers at
// full marks, starters at zero, fixtures as their .expected.json says).
// It also records reference outputs (--update-reference) and finds cells
// whose outputs change from run to run (--rerun).
//
// Reference outputs are recorded, and advised to be recorded, only when
// they are safe to: when an exercise's recorded outputs are stale (its
// answer changed since) or --update-reference asks for new ones, the
// answer is executed for fresh outputs, the graded cells whose outputs
// changed are named, and the answer and every fixture are graded against
// the fresh outputs instead of the recorded ones. Only when they all grade
// as expected does check advise --update-reference (or, asked to, record).
package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/runner"
)

// Options configure a check run.
type Options struct {
	Profile         string
	Executor        runner.Executor
	Match           domain.Matcher
	CellTimeout     time.Duration
	JobTimeout      time.Duration
	UpdateReference bool
	Rerun           int
	Only            map[string]bool // exercise ids; empty = all
	Jobs            int             // notebooks executed at once
	Progress        io.Writer
	// Words word the progress lines (default English).
	Words Words
	// Seed, when set, is the probe seed of every notebook instead of the
	// one each draws from the pool by name: a submission's grade is
	// reproduced with the seed it was graded with.
	Seed *int64
	// Notebooks are learners' uploads to grade, as the server would, with
	// no expectations: only they run (Only names their one exercise).
	Notebooks []string
}

// Case is one graded cell of one notebook, with what was expected.
type Case struct {
	CellID  string
	Want    string // a verdict, or "!pass" for starters
	Got     domain.CellResult
	Counted bool
	Failure string // empty when as expected; Finding in English
	// Finding is the Failure as a sentence to word for the reader.
	Finding  Finding
	Duration time.Duration
}

// fail records what was not as expected.
func (c *Case) fail(f Finding) {
	c.Finding, c.Failure = f, f.String()
}

// Notebook is the outcome of one executed notebook.
type Notebook struct {
	Exercise string
	Kind     string // answer, starter, fixture, notebook
	Name     string
	Path     string
	Seed     int64 // the probe seed it ran with
	Score    float64
	Max      float64
	Cases    []Case
	ExecErr  string
	Duration time.Duration
	// execWhy is ExecErr to word for the reader.
	execWhy Finding
}

// execFailed records why the notebook could not be graded.
func (n *Notebook) execFailed(f Finding) {
	n.execWhy, n.ExecErr = f, f.String()
}

// OK reports whether everything in the notebook was as expected.
func (n *Notebook) OK() bool {
	if n.ExecErr != "" {
		return false
	}
	for _, c := range n.Cases {
		if c.Failure != "" {
			return false
		}
	}
	return true
}

// Report is a whole check run.
type Report struct {
	Profile   string
	Notebooks []*Notebook
	Unstable  []string // exercise/cell ids whose outputs changed between reruns
	// References are the exercises whose recorded reference outputs were
	// stale, or whose outputs --update-reference was asked to record.
	References []*References
	Duration   time.Duration
}

// References is what check found about an exercise's reference outputs
// when they were stale or to be recorded: the notebooks of the exercise
// were graded against the answer's fresh outputs.
type References struct {
	Exercise string
	Profile  string
	// Stale: the recorded outputs were recorded from another version of
	// the answer (or lack probe seeds).
	Stale bool
	// Update: --update-reference asked for the fresh outputs to be recorded.
	Update bool
	// Changed are the graded cells whose fresh outputs differ from the
	// recorded ones (probe cells: under any seed), in notebook order; a
	// cell the recorded outputs have and the answer no longer grades is
	// listed with "(no longer graded)". Nil when none were recorded.
	Changed []string
	// Disagree is what did not grade as expected against the fresh
	// outputs: the answer's or a fixture's cells, "KIND NAME CELL: why".
	Disagree []string
	// Err is why no fresh outputs could be had (the answer did not run,
	// or one of its cells raised).
	Err string
	// Recorded: the fresh outputs were written as the reference.
	Recorded bool
	// disagree are the Disagree, to word for the reader.
	disagree []Finding
}

// Safe reports whether the fresh outputs may be recorded: the answer ran,
// and it and every fixture grade as expected against them.
func (r *References) Safe() bool { return r.Err == "" && len(r.Disagree) == 0 }

// ExitCode is 0 when all is as expected, 2 on an execution error, else 1.
func (r *Report) ExitCode() int {
	code := 0
	for _, n := range r.Notebooks {
		if n.ExecErr != "" {
			return 2
		}
		if !n.OK() {
			code = 1
		}
	}
	if len(r.Unstable) > 0 && code == 0 {
		code = 1
	}
	for _, ref := range r.References {
		switch {
		case ref.Err != "":
			return 2
		case (ref.Stale || ref.Update) && !ref.Recorded && code == 0:
			code = 1 // the recorded outputs are stale, or recording was refused
		}
	}
	return code
}

type task struct {
	ex       *exercise.Exercise
	kind     string
	name     string
	path     string
	upload   *notebook.Notebook
	expected map[string]string
	// score is the fixture's expected score, when its .expected.json sets one.
	score *float64
}

// Run checks every exercise of cat.
func Run(ctx context.Context, cat *exercise.Catalog, opt Options) (*Report, error) {
	start := time.Now()
	if opt.Profile == "" {
		opt.Profile = "cpu"
	}
	if opt.Match == nil {
		opt.Match = domain.CPUMatcher
	}
	if opt.Jobs <= 0 {
		opt.Jobs = 1
	}
	rep := &Report{Profile: opt.Profile}
	var exs []*exercise.Exercise
	for _, ex := range cat.List() {
		if len(opt.Only) == 0 || opt.Only[ex.ID] {
			exs = append(exs, ex)
		}
	}
	// Answers first: their fresh outputs, where stale or to be recorded,
	// are what the rest is graded against.
	fresh := candidates{}
	for _, ex := range exs {
		_, refErr := ex.Reference(opt.Profile)
		if stale := errors.Is(refErr, exercise.ErrStaleReference); stale || opt.UpdateReference {
			rc := &References{Exercise: ex.ID, Profile: opt.Profile, Stale: stale, Update: opt.UpdateReference}
			ref, err := freshReference(ctx, ex, opt)
			switch {
			case err != nil && opt.UpdateReference:
				return nil, err
			case err != nil:
				rc.Err = err.Error()
			default:
				fresh[ex.ID] = ref
				if old := ex.References[opt.Profile]; old != nil {
					rc.Changed = changedCells(ex, old, ref)
				}
			}
			rep.References = append(rep.References, rc)
		}
		if opt.Rerun > 0 {
			unstable, err := rerun(ctx, ex, opt)
			if err != nil {
				return nil, err
			}
			rep.Unstable = append(rep.Unstable, unstable...)
		}
	}
	tasks, err := planTasks(exs, opt)
	if err != nil {
		return nil, err
	}
	results := make([]*Notebook, len(tasks))
	sem := make(chan struct{}, opt.Jobs)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, t := range tasks {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, t task) {
			defer wg.Done()
			defer func() { <-sem }()
			nb := runTask(ctx, t, opt, fresh)
			results[i] = nb
			if opt.Progress != nil {
				mu.Lock()
				say := wordsOr(opt.Words)
				status := say.F("ok")
				if nb.ExecErr != "" {
					status = say.F("EXECUTION ERROR: %s", nb.execFinding().Say(say))
				} else if !nb.OK() {
					status = say.F("UNEXPECTED")
				}
				fmt.Fprintf(opt.Progress, "%-4s %-8s %-44s %5.1f/%-5g %6.1fs  %s\n", nb.Exercise, kindIn(say, nb.Kind), nb.Name, nb.Score, nb.Max, nb.Duration.Seconds(), status)
				mu.Unlock()
			}
		}(i, t)
	}
	wg.Wait()
	rep.Notebooks = results
	for _, rc := range rep.References {
		if err := settle(rc, cat, fresh, results, opt); err != nil {
			return nil, err
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// settle lists what disagrees with an exercise's fresh outputs and, when
// asked to and nothing does, records them.
func settle(rc *References, cat *exercise.Catalog, fresh candidates, results []*Notebook, opt Options) error {
	if rc.Err != "" {
		return nil
	}
	for _, n := range results {
		if n.Exercise != rc.Exercise || n.Kind == "starter" {
			continue // a starter that passes is reported, but says nothing about the outputs
		}
		if n.ExecErr != "" {
			rc.Disagree = append(rc.Disagree, fmt.Sprintf("%s %s: %s", n.Kind, n.Name, n.ExecErr))
			rc.disagree = append(rc.disagree, found("%s %s: %s", kindName(n.Kind), n.Name, n.execFinding()))
		}
		for _, c := range n.Cases {
			if c.Failure != "" {
				rc.Disagree = append(rc.Disagree, fmt.Sprintf("%s %s %s: %s", n.Kind, n.Name, c.CellID, c.Failure))
				rc.disagree = append(rc.disagree, found("%s %s %s: %s", kindName(n.Kind), n.Name, c.CellID, c.Finding))
			}
		}
	}
	if !rc.Update || !rc.Safe() {
		return nil
	}
	ex, err := cat.Get(rc.Exercise)
	if err != nil {
		return err
	}
	ref := fresh[rc.Exercise]
	if err := ex.WriteReference(ref); err != nil {
		return err
	}
	rc.Recorded = true
	if opt.Progress != nil {
		fmt.Fprintf(opt.Progress, "%-4s %s\n", ex.ID, wordsOr(opt.Words).F("recorded reference outputs for profile %s (%d cells)", opt.Profile, len(ref.Cells)))
	}
	return nil
}

// candidates are fresh reference outputs, not recorded (yet), by exercise
// id: the notebooks of those exercises are graded against them.
type candidates map[string]*exercise.Reference

// Reference implements grade.References: the fresh outputs, else the
// recorded ones.
func (c candidates) Reference(_ context.Context, ex *exercise.Exercise, profile string) (*exercise.Reference, error) {
	if ref, ok := c[ex.ID]; ok {
		return ref, nil
	}
	ref, err := ex.Reference(profile)
	if errors.Is(err, exercise.ErrStaleReference) {
		// The advice is the report's (References), not the error's.
		return nil, fmt.Errorf("%w: "+staleNoFresh, exercise.ErrStaleReference, ex.ID, profile)
	}
	return ref, err
}

// staleNoFresh says that a notebook could not be graded: its exercise's
// recorded outputs are stale and fresh ones could not be had.
const staleNoFresh = "the reference outputs of %s for profile %q were recorded from another version of the answer, and the answer's fresh outputs could not be had"

// kindName is a notebook's kind as a Finding's argument, worded for the
// reader ("answer", "fixture").
func kindName(kind string) Finding { return found(kind) }

// kindIn is a notebook's kind in say's words.
func kindIn(say Words, kind string) string {
	switch kind {
	case "answer":
		return say.F("answer")
	case "starter":
		return say.F("starter")
	case "fixture":
		return say.F("fixture")
	case "notebook":
		return say.F("notebook")
	}
	return kind
}

// execFinding is why the notebook could not be graded, as a Finding.
func (n *Notebook) execFinding() Finding {
	if n.execWhy.Format == "" {
		return found("%s", Feedback(n.ExecErr))
	}
	return n.execWhy
}

// changedCells lists the graded cells of ex whose outputs in fresh differ
// from those in old (normalised as compared), in notebook order, then the
// cells old has that ex no longer grades.
func changedCells(ex *exercise.Exercise, old, fresh *exercise.Reference) []string {
	changed := []string{}
	graded := map[string]bool{}
	for _, g := range ex.Graded {
		graded[g.ID] = true
		differs := false
		if g.Probe {
			for seed, cells := range fresh.Probes {
				was, ok := old.Probes[seed][g.ID]
				now, okNow := cells[g.ID]
				differs = differs || ok != okNow || !sameOutputs(was, now)
			}
		} else {
			was, ok := old.Cells[g.ID]
			now, okNow := fresh.Cells[g.ID]
			differs = ok != okNow || !sameOutputs(was, now)
		}
		if differs {
			changed = append(changed, g.ID)
		}
	}
	var gone []string
	for id := range old.Cells {
		if !graded[id] {
			gone = append(gone, id+" (no longer graded)")
		}
	}
	sort.Strings(gone)
	return append(changed, gone...)
}

func sameOutputs(a, b []*notebook.Output) bool {
	ja, _ := json.Marshal(compare.Normalize(a))
	jb, _ := json.Marshal(compare.Normalize(b))
	return string(ja) == string(jb)
}

// planTasks lists the notebooks to grade: every exercise's answer, starter
// and fixtures, or only the learners' notebooks given. A seed given must be
// one the references hold probe outputs for.
func planTasks(exs []*exercise.Exercise, opt Options) ([]task, error) {
	if opt.Seed != nil {
		for _, ex := range exs {
			if ex.HasProbes() && !slices.Contains(ex.Seeds(), *opt.Seed) {
				return nil, domain.Errorf(domain.EINVALID, "seed %d is not in %s's probe seed pool %v: its references have no probe outputs for it", *opt.Seed, ex.ID, ex.Seeds())
			}
		}
	}
	if len(opt.Notebooks) > 0 {
		if len(exs) != 1 {
			return nil, domain.Errorf(domain.EINVALID, "grading a learner's notebook needs the one exercise it is for (--only), not %d", len(exs))
		}
		var tasks []task
		for _, p := range opt.Notebooks {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("read notebook: %w", err)
			}
			nb, err := notebook.Parse(data, notebook.Limits{})
			if err != nil {
				return nil, domain.Errorf(domain.EINVALID, "notebook %s: %v", p, err)
			}
			tasks = append(tasks, task{ex: exs[0], kind: "notebook", name: filepath.Base(p), path: p, upload: nb})
		}
		return tasks, nil
	}
	var tasks []task
	for _, ex := range exs {
		tasks = append(tasks, task{ex: ex, kind: "answer", name: ex.Config.Answer, path: filepath.Join(ex.AnswerDir, ex.Config.Answer), upload: ex.Answer})
		tasks = append(tasks, task{ex: ex, kind: "starter", name: ex.Config.Starter, path: ex.StarterPath(), upload: ex.StarterNB})
		fx, err := fixtures(ex)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, fx...)
	}
	return tasks, nil
}

func fixtures(ex *exercise.Exercise) ([]task, error) {
	paths, _ := filepath.Glob(filepath.Join(ex.AnswerDir, "fixtures", "*.ipynb"))
	sort.Strings(paths)
	var out []task
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read fixture: %w", err)
		}
		nb, err := notebook.Parse(data, notebook.Limits{})
		if err != nil {
			return nil, fmt.Errorf("fixture %s: %w", p, err)
		}
		expPath := strings.TrimSuffix(p, ".ipynb") + ".expected.json"
		raw, err := os.ReadFile(expPath)
		if err != nil {
			return nil, fmt.Errorf("fixture %s needs %s: %w", p, filepath.Base(expPath), err)
		}
		var exp struct {
			Cells map[string]string `json:"cells"`
			Score *float64          `json:"score"`
		}
		if err := json.Unmarshal(raw, &exp); err != nil {
			return nil, fmt.Errorf("parse %s: %w", expPath, err)
		}
		out = append(out, task{ex: ex, kind: "fixture", name: filepath.Base(p), path: p, upload: nb, expected: exp.Cells, score: exp.Score})
	}
	return out, nil
}

// execute rebuilds upload against the answer and runs it, as the server would.
// seed is the probe seed of the run.
func execute(ctx context.Context, ex *exercise.Exercise, upload *notebook.Notebook, seed int64, opt Options) (*notebook.Notebook, notebook.Integrity, domain.ExecutionResult, error) {
	rebuilt, integ, err := notebook.RebuildSeeded(ex.Answer, upload, seed)
	if err != nil {
		return nil, integ, domain.ExecutionResult{}, err
	}
	payload, err := notebook.Encode(rebuilt)
	if err != nil {
		return nil, integ, domain.ExecutionResult{}, err
	}
	cell := opt.CellTimeout
	if cell <= 0 {
		cell = time.Duration(ex.CellTimeout * float64(time.Second))
	}
	res, err := opt.Executor.Execute(ctx, payload, execution.Options{CellTimeout: cell, JobTimeout: opt.JobTimeout})
	if err != nil {
		return nil, integ, res, err
	}
	if res.Notebook == nil {
		return nil, integ, res, nil
	}
	nb, err := notebook.ParseExecuted(res.Notebook)
	return nb, integ, res, err
}

func runTask(ctx context.Context, t task, opt Options, refs grade.References) *Notebook {
	start := time.Now()
	out := &Notebook{Exercise: t.ex.ID, Kind: t.kind, Name: t.name, Path: t.path}
	defer func() { out.Duration = time.Since(start) }()
	// Fail before executing when there is nothing to compare with.
	if _, err := refs.Reference(ctx, t.ex, opt.Profile); err != nil {
		if errors.Is(err, exercise.ErrStaleReference) {
			// As the error says it, its sentinel's words first.
			out.execFailed(found("%s: "+staleNoFresh, Feedback(exercise.ErrStaleReference.Error()), t.ex.ID, opt.Profile))
		} else {
			out.execFailed(found("%s", Feedback(err.Error())))
		}
		return out
	}
	// Each notebook draws its seed from the pool by name, as a job would by
	// its nonce, so the fixtures exercise different seeds.
	out.Seed = t.ex.SeedFor(t.kind + "/" + t.name)
	if opt.Seed != nil {
		out.Seed = *opt.Seed
	}
	executed, integ, res, err := execute(ctx, t.ex, t.upload, out.Seed, opt)
	if err != nil {
		out.execFailed(found("%s", Feedback(err.Error())))
		return out
	}
	res.Profile = opt.Profile // the profile whose references this check compares with
	sc, err := grade.Grader{References: refs}.Grade(ctx, grade.Run{Exercise: t.ex, Integrity: integ, Executed: executed, Result: res})
	if err != nil {
		out.execFailed(found("%s", Feedback(err.Error())))
		return out
	}
	out.Score, out.Max = sc.Score, sc.MaxScore
	for _, cr := range sc.Cells {
		c := Case{CellID: cr.CellID, Got: cr, Counted: cr.Counted}
		switch t.kind {
		case "answer":
			c.Want = domain.VerdictPass
			if !cr.Counted {
				c.Want = domain.VerdictNotRun
			}
			if _, manual := t.ex.ManualCell(cr.CellID); manual {
				c.Want = domain.VerdictNeedsManual // a person grades it, never a run
			}
			if cr.Verdict != c.Want {
				c.fail(found("the answer got %s, want %s: %s", Verdict(cr.Verdict), Verdict(c.Want), Feedback(cr.Message)))
			}
		case "starter":
			c.Want = "!pass"
			if cr.Verdict == domain.VerdictPass {
				c.fail(found("the untouched starter passes this cell; the question gives its points away"))
			}
		case "notebook":
			c.Want = "" // no expectation: the grade is what is reported
		case "fixture":
			want, listed := t.expected[cr.CellID]
			if !listed {
				continue
			}
			c.Want = want
			if cr.Verdict != want {
				c.fail(found("got %s, want %s: %s", Verdict(cr.Verdict), Verdict(want), Feedback(cr.Message)))
			}
		}
		out.Cases = append(out.Cases, c)
	}
	if t.kind == "fixture" && t.score != nil && math.Abs(out.Score-*t.score) > 1e-9 {
		c := Case{CellID: "(score)", Want: fmt.Sprint(*t.score)}
		c.fail(found("the fixture scores %g, want %g", out.Score, *t.score))
		out.Cases = append(out.Cases, c)
	}
	if t.kind == "fixture" {
		seen := map[string]bool{}
		for _, c := range out.Cases {
			seen[c.CellID] = true
		}
		for id := range t.expected {
			if !seen[id] {
				c := Case{CellID: id, Want: t.expected[id]}
				c.fail(found("the fixture expects a verdict for %s, which is not a graded cell of %s", id, t.ex.ID))
				out.Cases = append(out.Cases, c)
			}
		}
	}
	return out
}

// freshReference executes the answer and returns its graded outputs as a
// reference of the profile, not written anywhere. With probe cells the
// answer is executed once per seed of the pool, and the probes' outputs
// are kept per seed.
func freshReference(ctx context.Context, ex *exercise.Exercise, opt Options) (*exercise.Reference, error) {
	ref := &exercise.Reference{Exercise: ex.ID, Profile: opt.Profile, AnswerSHA256: ex.AnswerSHA256(), Cells: map[string][]*notebook.Output{}}
	seeds := []int64{0}
	if ex.HasProbes() {
		seeds = ex.Seeds()
		ref.Probes = map[string]map[string][]*notebook.Output{}
	}
	for i, seed := range seeds {
		executed, _, res, err := execute(ctx, ex, ex.Answer, seed, opt)
		if err != nil {
			return nil, fmt.Errorf("record reference of %s (seed %d): %w", ex.ID, seed, err)
		}
		if executed == nil {
			return nil, fmt.Errorf("record reference of %s (seed %d): %s", ex.ID, seed, res.Reason)
		}
		probes := map[string][]*notebook.Output{}
		for _, g := range ex.Graded {
			if !g.Probe && i > 0 {
				continue
			}
			c := executed.CellByGraderID(g.ID)
			if c == nil || notebook.ReadCellMeta(c).Skipped != "" {
				continue
			}
			outs := notebook.StripVolatile(c.Outputs)
			if e := compare.FirstError(outs); e != nil && !expectsError(ex, g.ID) {
				return nil, fmt.Errorf("record reference of %s: the answer's cell %s raised %s: %s", ex.ID, g.ID, e.Ename, e.Evalue)
			}
			if g.Probe {
				probes[g.ID] = outs
			} else {
				ref.Cells[g.ID] = outs
			}
		}
		if ref.Probes != nil {
			ref.Probes[strconv.FormatInt(seed, 10)] = probes
		}
	}
	return ref, nil
}

func expectsError(ex *exercise.Exercise, id string) bool {
	return ex.Answer.CellByGraderID(id).MustGrader().Compare == "error"
}

// rerun executes the answer n times and lists the graded cells whose
// normalised outputs differ between runs.
func rerun(ctx context.Context, ex *exercise.Exercise, opt Options) ([]string, error) {
	seen := map[string]string{}
	unstable := map[string]bool{}
	for i := 0; i < opt.Rerun; i++ {
		executed, _, res, err := execute(ctx, ex, ex.Answer, ex.Seeds()[0], opt)
		if err != nil {
			return nil, fmt.Errorf("rerun %s: %w", ex.ID, err)
		}
		if executed == nil {
			return nil, fmt.Errorf("rerun %s: %s", ex.ID, res.Reason)
		}
		for _, g := range ex.Graded {
			c := executed.CellByGraderID(g.ID)
			if c == nil {
				continue
			}
			b, _ := json.Marshal(compare.Normalize(notebook.StripVolatile(c.Outputs)))
			if prev, ok := seen[g.ID]; ok && prev != string(b) {
				unstable[ex.ID+"/"+g.ID] = true
			}
			seen[g.ID] = string(b)
		}
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "%-4s %s\n", ex.ID, wordsOr(opt.Words).F("rerun %d/%d of the answer done", i+1, opt.Rerun))
		}
	}
	var out []string
	for k := range unstable {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}
