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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/importer"
	"github.com/npugrade/npugrade/internal/notebook"
)

// Config is exercises/<id>/exercise.json.
type Config struct {
	ID          string             `json:"id"`
	Title       string             `json:"title"`
	TitleEN     string             `json:"title_en"`
	Starter     string             `json:"starter"`
	Answer      string             `json:"answer"`
	CellTimeout float64            `json:"cell_timeout"`
	JobTimeout  float64            `json:"job_timeout,omitempty"`
	Requires    domain.Requirement `json:"requires,omitempty"`
	MaxAttempts int                `json:"max_attempts,omitempty"`

	// ProbeSeeds is the pool the per-job probe seed is drawn from; the
	// reference outputs hold the probes' outputs for every seed of it.
	ProbeSeeds []int64 `json:"probe_seeds,omitempty"`
	// Points overrides metadata.grader.points per graded cell id.
	Points map[string]float64 `json:"points,omitempty"`
	// Groups are all-or-nothing groups of graded cell ids (in addition to
	// metadata.grader.group).
	Groups map[string][]string `json:"groups,omitempty"`
	// Visibility overrides metadata.grader.visibility per graded cell id.
	Visibility map[string]string `json:"visibility,omitempty"`
	Policy
}

// Policy says which submission counts and when submissions are accepted.
type Policy struct {
	// Counts is "best" (default) or "latest".
	Counts string `json:"policy,omitempty"`
	// Deadline is the due date; nil means none.
	Deadline *time.Time `json:"deadline,omitempty"`
	// LatePenalty applies after the deadline: the step with the largest
	// After not exceeding the lateness multiplies the score.
	LatePenalty []LateStep `json:"late_penalty,omitempty"`
	// MaxSubmissions caps the graded submissions per learner (0 = no cap).
	MaxSubmissions int `json:"max_submissions,omitempty"`
	// RateLimit caps submissions per learner in a sliding window.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Checks are the uncounted checks learners may ask for (nil: the
	// default, DefaultChecks; "checks": false turns them off).
	Checks *Checks `json:"checks,omitempty"`
	// Feedback is when learners see the details of their feedback:
	// "immediate" (default: each cell's own visibility decides),
	// "after_due_date" (nothing before the deadline) or "on_release"
	// (nothing until an instructor releases it, for everyone or per learner).
	Feedback string `json:"feedback,omitempty"`
}

// Feedback policies.
const (
	FeedbackImmediate    = "immediate"
	FeedbackAfterDueDate = "after_due_date"
	FeedbackOnRelease    = "on_release"
)

// LateStep is one step of a late-penalty schedule.
type LateStep struct {
	After      Duration `json:"after"`
	Multiplier float64  `json:"multiplier"`
}

// RateLimit is "at most Count submissions per Per".
type RateLimit struct {
	Count int      `json:"count"`
	Per   Duration `json:"per"`
}

// Checks is the check policy: off, or at most Count per Per per learner.
// It is written as false, true (the default limit) or {"count", "per"}.
type Checks struct {
	Off bool
	RateLimit
}

// DefaultChecks allows a learner far more checks than submissions, few
// enough that a script cannot keep a runner busy.
var DefaultChecks = Checks{RateLimit: RateLimit{Count: 60, Per: Duration(10 * time.Minute)}}

// UnmarshalJSON reads false, true or {"count": 60, "per": "10m"}.
func (c *Checks) UnmarshalJSON(b []byte) error {
	var on bool
	if err := json.Unmarshal(b, &on); err == nil {
		*c = DefaultChecks
		c.Off = !on
		return nil
	}
	if err := json.Unmarshal(b, &c.RateLimit); err != nil {
		return fmt.Errorf("checks is false, true or {\"count\": 60, \"per\": \"10m\"}: %w", err)
	}
	return nil
}

// MarshalJSON writes false when off, else the limit.
func (c Checks) MarshalJSON() ([]byte, error) {
	if c.Off {
		return []byte("false"), nil
	}
	return json.Marshal(c.RateLimit)
}

// Window is the check limit: at most count checks per per.
func (c Checks) Window() (count int, per time.Duration) { return c.Count, time.Duration(c.Per) }

// CheckPolicy is ex's check policy with the default filled in.
func (ex *Exercise) CheckPolicy() Checks {
	if ex.Checks == nil {
		return DefaultChecks
	}
	return *ex.Checks
}

// Duration is a time.Duration written as a Go duration string ("90m", "24h").
type Duration time.Duration

// UnmarshalJSON reads "1h30m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"24h\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Policy names and visibility levels.
const (
	CountsBest          = "best"
	CountsLatest        = "latest"
	VisibilityVisible   = "visible"
	VisibilityAfterDue  = "after_due_date"
	VisibilityHidden    = "hidden"
	defaultProbeSeedOne = 17
)

// LateMultiplier is the factor a submission made at t gets (1 when on time).
func (p Policy) LateMultiplier(t time.Time) float64 {
	if p.Deadline == nil || !t.After(*p.Deadline) {
		return 1
	}
	late := t.Sub(*p.Deadline)
	m, best := 1.0, time.Duration(-1)
	for _, st := range p.LatePenalty {
		if a := time.Duration(st.After); a <= late && a > best {
			m, best = st.Multiplier, a
		}
	}
	return m
}

// Extension is one learner's own deadline. LatePenalty
// replaces the exercise's schedule after it when OwnPenalty is set (an
// empty one: no penalty at all).
type Extension struct {
	Deadline    time.Time
	LatePenalty []LateStep
	OwnPenalty  bool
}

// Extended is p as it applies to a learner with extension e (p itself
// when e is nil): the deadline moved, the schedule replaced when e has one.
func (p Policy) Extended(e *Extension) Policy {
	if e == nil {
		return p
	}
	d := e.Deadline
	p.Deadline = &d
	if e.OwnPenalty {
		p.LatePenalty = e.LatePenalty
	}
	return p
}

// DetailsVisible reports whether a learner may see the details (message,
// observed and expected output, explanation) of graded cell id at time
// now, by the cell's own visibility; released says an instructor has
// released the exercise's feedback to the learner (the exercise's feedback
// policy is package policy's: it needs the releases on record). An
// after_due_date cell opens at the deadline or at a release, whichever
// comes first; without a deadline only a release opens it, so an exercise
// that sets no deadline never shows its answers at the first submission.
func (ex *Exercise) DetailsVisible(id string, now time.Time, released bool) bool {
	afterDue := func() bool { return released || (ex.Deadline != nil && now.After(*ex.Deadline)) }
	for _, m := range ex.Manual {
		if m.ID == id {
			return m.Visibility != VisibilityHidden && (m.Visibility != VisibilityAfterDue || afterDue())
		}
	}
	for _, g := range ex.Graded {
		if g.ID != id {
			continue
		}
		switch g.Visibility {
		case VisibilityHidden:
			return false
		case VisibilityAfterDue:
			return afterDue()
		}
		return true
	}
	return true
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
	// Manual are the manually graded cells (metadata.grader.manual), in
	// notebook order; they are not in Graded.
	Manual []ManualCell
	// questions numbers cells by the question heading they follow.
	questions map[string]int
}

// ManualCell is a cell a person grades with its rubric.
type ManualCell struct {
	ID         string
	Points     float64
	Rubric     []notebook.RubricItem
	Visibility string
}

// ManualCell returns the manual cell id, or false.
func (ex *Exercise) ManualCell(id string) (ManualCell, bool) {
	for _, m := range ex.Manual {
		if m.ID == id {
			return m, true
		}
	}
	return ManualCell{}, false
}

// GradedCell is one cell that earns points, in notebook order.
type GradedCell struct {
	ID       string
	Points   float64
	Requires domain.Requirement
	Solution bool
	// Probe cells run hidden tests of the question For.
	Probe bool
	For   string
	// Group is the all-or-nothing group the cell belongs to ("" = none).
	Group      string
	Visibility string
}

// Reference is answers/<id>/references/<profile>.json: the answer's outputs
// on one runner profile.
type Reference struct {
	Exercise     string                        `json:"exercise"`
	Profile      string                        `json:"profile"`
	AnswerSHA256 string                        `json:"answer_sha256"`
	Cells        map[string][]*notebook.Output `json:"cells"`
	// Probes holds the probe cells' outputs per seed (decimal string), then
	// per probe cell id.
	Probes map[string]map[string][]*notebook.Output `json:"probes,omitempty"`
}

// ProbeOutputs returns the reference outputs of probe id under seed.
func (r *Reference) ProbeOutputs(seed int64, id string) ([]*notebook.Output, bool) {
	if r == nil {
		return nil, false
	}
	outs, ok := r.Probes[strconv.FormatInt(seed, 10)][id]
	return outs, ok
}

// Catalog holds every exercise, by id, and the exercises that could not be
// loaded, each with its problems.
type Catalog struct {
	list   []*Exercise
	byID   map[string]*Exercise
	broken []Broken
}

// Broken is an exercise directory that did not load.
type Broken struct {
	ID  string // the directory name
	Err error  // every problem found in it
}

// List returns the exercises sorted by id.
func (c *Catalog) List() []*Exercise { return c.list }

// Broken returns the exercises that did not load, sorted by id.
func (c *Catalog) Broken() []Broken { return c.broken }

// Err lists every broken exercise with its problems; nil when all loaded.
func (c *Catalog) Err() error {
	var errs *multierror.Error
	for _, b := range c.broken {
		errs = multierror.Append(errs, fmt.Errorf("exercise %s: %w", b.ID, b.Err))
	}
	return errs.ErrorOrNil()
}

// Get returns one exercise or ENOTFOUND.
func (c *Catalog) Get(id string) (*Exercise, error) {
	if ex, ok := c.byID[id]; ok {
		return ex, nil
	}
	return nil, domain.Errorf(domain.ENOTFOUND, "unknown exercise %q", id)
}

// Load reads every exercises/<id>/exercise.json with its answer. An
// exercise that does not load does not stop the others: it is listed in
// Broken (Err) with every problem found in it, and the error returned is
// only for a directory that cannot be read at all.
func Load(exercisesDir, answersDir string) (*Catalog, error) {
	entries, err := os.ReadDir(exercisesDir)
	if err != nil {
		return nil, fmt.Errorf("read exercises directory: %w", err)
	}
	cat := &Catalog{byID: map[string]*Exercise{}}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(exercisesDir, e.Name(), "exercise.json")); errors.Is(err, os.ErrNotExist) {
			continue
		}
		ex, err := LoadOne(filepath.Join(exercisesDir, e.Name()), filepath.Join(answersDir, e.Name()))
		if err != nil {
			cat.broken = append(cat.broken, Broken{ID: e.Name(), Err: err})
			continue
		}
		cat.list = append(cat.list, ex)
		cat.byID[ex.ID] = ex
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
	if first, perr := notebook.Parse(ex.AnswerBytes, notebook.Limits{}); perr == nil && !importer.HasGraderMetadata(first) {
		// An nbgrader, nbval, papermill or quiz-style notebook: grade it
		// through the importer's metadata.grader (npugrade exercise import
		// shows the result).
		if ex.AnswerBytes, _, err = importer.ImportBytes(ex.AnswerBytes); err != nil {
			return nil, fmt.Errorf("import answer %s: %w", cfg.Answer, err)
		}
	}
	ex.Answer, err = notebook.Parse(ex.AnswerBytes, notebook.Limits{RequireIDs: true})
	if err != nil {
		return nil, fmt.Errorf("answer %s: %w", cfg.Answer, err)
	}
	errs = multierror.Append(errs, ex.collectCells()...)
	errs = multierror.Append(errs, ex.applyConfig()...)
	if len(ex.Graded) == 0 && len(ex.Manual) == 0 {
		errs = multierror.Append(errs, errors.New("answer has no graded cells (metadata.grader.points > 0 or metadata.grader.manual)"))
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

// headingNumber finds the question number a heading gives: "第 13 题",
// "Question 13", "Q13", "Exercise 4", "Problem 2".
var headingNumber = regexp.MustCompile(`(?i)^#{1,6}\s*(?:第\s*(\d+)\s*题|(?:question|exercise|problem|task|q)\s*(\d+)\b)`)

// questionHeading reads the question number of a markdown cell that opens
// with such a heading.
func questionHeading(src string) (int, bool) {
	m := headingNumber.FindStringSubmatch(strings.TrimSpace(src))
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1] + m[2])
	return n, err == nil && n > 0
}

// Question is the number the notebook gives the question a graded or
// manual cell belongs to (its nearest heading before it, "第 13 题"); a
// probe belongs to the question of the cell it tests. False when the
// notebook numbers no question there.
func (ex *Exercise) Question(cellID string) (int, bool) {
	for _, g := range ex.Graded {
		if g.ID == cellID && g.Probe && g.For != "" {
			if n, ok := ex.questions[g.For]; ok {
				return n, true
			}
		}
	}
	n, ok := ex.questions[cellID]
	return n, ok
}

// IsProbe reports whether cellID is a hidden test (probe) cell.
func (ex *Exercise) IsProbe(cellID string) bool {
	for _, g := range ex.Graded {
		if g.ID == cellID {
			return g.Probe
		}
	}
	return false
}

// collectCells lists the answer's graded and manual cells, in notebook
// order; a grader id used twice is an error.
func (ex *Exercise) collectCells() []error {
	var errs []error
	seen := map[string]bool{}
	ex.questions = map[string]int{}
	question := 0
	for _, c := range ex.Answer.Cells {
		if c.CellType == "markdown" {
			if n, ok := questionHeading(string(c.Source)); ok {
				question = n
			}
		}
		g := c.MustGrader()
		if g.ID == "" {
			continue
		}
		if question > 0 {
			ex.questions[g.ID] = question
		}
		if seen[g.ID] {
			errs = append(errs, fmt.Errorf("answer: grader id %q is used twice", g.ID))
		}
		seen[g.ID] = true
		if g.Manual != nil {
			vis := g.Visibility
			if vis == "" {
				vis = VisibilityVisible
			}
			ex.Manual = append(ex.Manual, ManualCell{ID: g.ID, Points: g.Manual.Points, Rubric: g.Manual.Rubric, Visibility: vis})
		}
		if g.Graded() {
			ex.Graded = append(ex.Graded, GradedCell{ID: g.ID, Points: g.Points, Requires: g.Requires, Solution: g.Solution,
				Probe: g.Probe, For: g.For, Group: g.Group, Visibility: g.Visibility})
		}
	}
	return errs
}

// probeTarget checks what probe cell g tests (its for) and gives it the
// requirements of that cell when it names none.
func (ex *Exercise) probeTarget(g *GradedCell, byID map[string]*GradedCell) []error {
	var errs []error
	target, ok := byID[g.For]
	// A probe may also test an ungraded solution cell (Otter's
	// hidden tests): then it earns its own points and scales none.
	answer := ex.Answer.CellByGraderID(g.For)
	switch {
	case g.For == "":
		errs = append(errs, fmt.Errorf("probe cell %s: metadata.grader.for must name the question it tests", g.ID))
	case !ok && answer != nil && answer.MustGrader().Solution:
		if g.Requires.IsZero() {
			g.Requires = answer.MustGrader().Requires
		}
	case !ok || target.Probe:
		errs = append(errs, fmt.Errorf("probe cell %s: for %q is not a graded question or a solution cell of the answer", g.ID, g.For))
	case g.Requires.IsZero():
		g.Requires = target.Requires
	}
	return errs
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
		return nil, fmt.Errorf("%w: exercise %s has no reference outputs for profile %q (record them with npugrade check --profile %s --update-reference)", ErrNoReference, ex.ID, profile, profile)
	}
	if ref.AnswerSHA256 != ex.AnswerSHA256() {
		return nil, fmt.Errorf("%w: exercise %s: the reference outputs for profile %q were recorded from another version of the answer (npugrade check --profile %s --only %s names the cells that changed and says whether to record them again)", ErrStaleReference, ex.ID, profile, profile, ex.ID)
	}
	if ex.HasProbes() {
		for _, seed := range ex.Seeds() {
			if _, ok := ref.Probes[strconv.FormatInt(seed, 10)]; !ok {
				return nil, fmt.Errorf("%w: exercise %s: the reference outputs for profile %q hold no probe outputs for seed %d (npugrade check --profile %s --only %s says whether to record them again)", ErrStaleReference, ex.ID, profile, seed, profile, ex.ID)
			}
		}
	}
	return ref, nil
}

// ReferenceProfiles are the profiles ex is graded on: those with
// committed reference files, else cpu (references recorded by reference
// jobs live in the database).
func (ex *Exercise) ReferenceProfiles() []string {
	if len(ex.References) == 0 {
		return []string{"cpu"}
	}
	out := make([]string, 0, len(ex.References))
	for p := range ex.References {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// ErrNoReference marks an exercise that has no usable reference outputs
// for a profile: grading it again fails the same way until they are
// recorded, so a job that meets it is failed at once, not retried.
var ErrNoReference = errors.New("no usable reference outputs")

// ErrStaleReference marks reference outputs recorded from another version
// of the answer (or of its probes): the answer changed and they were not
// recorded again. It is an ErrNoReference too.
var ErrStaleReference = fmt.Errorf("%w: stale reference outputs", ErrNoReference)

// MaxPoints is the most a submission can score on a runner profile whose
// capabilities are given by satisfies.
func (ex *Exercise) MaxPoints(satisfies func(domain.Requirement) bool) float64 {
	var sum float64
	for _, g := range ex.Graded {
		if satisfies == nil || satisfies(g.Requires) {
			sum += g.Points
		}
	}
	for _, m := range ex.Manual {
		sum += m.Points
	}
	return sum
}

func (ex *Exercise) manualIndex(id string) int {
	for i, m := range ex.Manual {
		if m.ID == id {
			return i
		}
	}
	return -1
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

// HasProbes reports whether the answer holds probe cells.
func (ex *Exercise) HasProbes() bool {
	for _, g := range ex.Graded {
		if g.Probe {
			return true
		}
	}
	return false
}

// Seeds returns the probe seed pool (a default pool when the config sets none).
func (ex *Exercise) Seeds() []int64 {
	if len(ex.ProbeSeeds) > 0 {
		return ex.ProbeSeeds
	}
	return []int64{defaultProbeSeedOne, 4242, 90017}
}

// SeedFor picks the probe seed for a job from the pool, by a key such as a
// random nonce (intake) or a fixture name (check).
func (ex *Exercise) SeedFor(key string) int64 {
	pool := ex.Seeds()
	h := sha256.Sum256([]byte(key))
	n := int(h[0])<<8 | int(h[1])
	return pool[n%len(pool)]
}

// applyConfig validates the probe and policy keys and applies the config's
// per-cell overrides; it returns every problem found.
func (ex *Exercise) applyConfig() []error {
	var errs []error
	byID := map[string]*GradedCell{}
	for i := range ex.Graded {
		byID[ex.Graded[i].ID] = &ex.Graded[i]
	}
	for id, p := range ex.Config.Points {
		g, ok := byID[id]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("points: %q is not a graded cell of the answer", id))
		case p <= 0:
			errs = append(errs, fmt.Errorf("points: %q must be positive", id))
		default:
			g.Points = p
		}
	}
	for name, ids := range ex.Config.Groups {
		for _, id := range ids {
			if g, ok := byID[id]; ok {
				g.Group = name
			} else {
				errs = append(errs, fmt.Errorf("groups: %s: %q is not a graded cell of the answer", name, id))
			}
		}
	}
	for id, v := range ex.Config.Visibility {
		if g, ok := byID[id]; ok {
			g.Visibility = v
		} else if i := ex.manualIndex(id); i >= 0 {
			ex.Manual[i].Visibility = v
		} else {
			errs = append(errs, fmt.Errorf("visibility: %q is not a graded cell of the answer", id))
		}
	}
	for i := range ex.Graded {
		g := &ex.Graded[i]
		switch g.Visibility {
		case "", VisibilityVisible, VisibilityAfterDue, VisibilityHidden:
		default:
			errs = append(errs, fmt.Errorf("cell %s: visibility %q: want visible, after_due_date or hidden", g.ID, g.Visibility))
		}
		if g.Visibility == "" {
			g.Visibility = VisibilityVisible
		}
		if g.Probe {
			errs = append(errs, ex.probeTarget(g, byID)...)
		}
	}
	switch ex.Counts {
	case "":
		ex.Counts = CountsBest
	case CountsBest, CountsLatest:
	default:
		errs = append(errs, fmt.Errorf("policy %q: want best or latest", ex.Counts))
	}
	if err := ex.Requires.CheckEnvironment(); err != nil {
		errs = append(errs, err)
	}
	for i, st := range ex.LatePenalty {
		if st.Multiplier < 0 || st.Multiplier > 1 || st.After < 0 {
			errs = append(errs, fmt.Errorf("late_penalty[%d]: after must be >= 0 and multiplier in [0, 1]", i))
		}
	}
	if len(ex.LatePenalty) > 0 && ex.Deadline == nil {
		errs = append(errs, errors.New("late_penalty needs a deadline"))
	}
	switch ex.Feedback {
	case "":
		ex.Feedback = FeedbackImmediate
	case FeedbackImmediate, FeedbackAfterDueDate, FeedbackOnRelease:
		if ex.Feedback == FeedbackAfterDueDate && ex.Deadline == nil {
			errs = append(errs, errors.New("feedback \"after_due_date\" needs a deadline"))
		}
	default:
		errs = append(errs, fmt.Errorf("feedback %q: want immediate, after_due_date or on_release", ex.Feedback))
	}
	if ex.MaxSubmissions < 0 {
		errs = append(errs, errors.New("max_submissions must be >= 0"))
	}
	if rl := ex.RateLimit; rl != nil && (rl.Count <= 0 || rl.Per <= 0) {
		errs = append(errs, errors.New("rate_limit needs a positive count and a positive per duration"))
	}
	if c := ex.Checks; c != nil && !c.Off && (c.Count <= 0 || c.Per <= 0) {
		errs = append(errs, errors.New("checks needs a positive count and a positive per duration (or false)"))
	}
	seen := map[int64]bool{}
	for _, s := range ex.ProbeSeeds {
		if seen[s] {
			errs = append(errs, fmt.Errorf("probe_seeds: %d is listed twice", s))
		}
		seen[s] = true
	}
	return errs
}
