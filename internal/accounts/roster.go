package accounts

// Rosters import class rosters: a CSV of people with
// a name, an email or student number, a section and a role. The student
// number (else the email) becomes the unique login name, so importing the
// same roster again updates people instead of duplicating them. A roster
// is checked whole first and every bad row reported at once (bounded);
// nothing is imported unless every row is good. New users' tokens are
// returned once, as CSV, and only their hashes are stored. The command
// line (npugrade user import) and the admin page both call Import.

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/npugrade/npugrade/internal/domain"
)

// Limits of one roster.
const (
	MaxRows     = 20000
	MaxBytes    = 4 << 20
	maxProblems = 100
)

// columns maps accepted header names (lower case, spaces as _) to the
// column they name.
var columns = map[string]string{
	"name": "name", "full_name": "name", "姓名": "name",
	"email": "email", "e-mail": "email", "邮箱": "email",
	"student_number": "number", "student_no": "number", "student_id": "number", "number": "number", "学号": "number",
	"section": "section", "class": "section", "班级": "section",
	"role": "role", "角色": "role",
	"cohort": "cohort", "course": "cohort", "课程": "cohort",
}

var (
	cohortSlug = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	numberRe   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	emailRe    = regexp.MustCompile(`^[^@\s,;<>"]{1,64}@[A-Za-z0-9.-]{1,189}\.[A-Za-z]{2,}$`)
	rosterRol  = map[string]domain.Role{"": domain.RoleLearner, "learner": domain.RoleLearner, "student": domain.RoleLearner,
		"instructor": domain.RoleInstructor, "teacher": domain.RoleInstructor, "ta": domain.RoleInstructor, "admin": domain.RoleAdmin}
)

// ParseRoster reads a roster and checks every row. It returns the entries, or
// EINVALID listing every problem (at most 100, then how many more).
func ParseRoster(r io.Reader) ([]domain.RosterEntry, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the roster: %w", err)
	}
	if len(data) > MaxBytes {
		return nil, domain.Errorf(domain.ETOOLARGE, "the roster is larger than %d MiB", MaxBytes>>20)
	}
	if !utf8.Valid(data) {
		return nil, domain.Errorf(domain.EINVALID, "the roster is not UTF-8 text (save it as CSV UTF-8)")
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // spreadsheets write a BOM
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	p := &parser{seen: map[string]int{}}
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, domain.Errorf(domain.EINVALID, "the roster is empty: it needs a header row (name, email or student_number, section, role)")
	}
	if err != nil {
		return nil, &domain.Error{Code: domain.EINVALID, Message: "the roster is not valid CSV", Problems: []string{err.Error()}}
	}
	if !p.header(header) {
		return nil, p.err()
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			p.problem(fmt.Sprintf("line %d: %v", line, err))
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				continue
			}
			break // a broken quote leaves the rest unreadable
		}
		if len(p.entries)+p.bad >= MaxRows {
			p.problem(fmt.Sprintf("the roster has more than %d rows; split it", MaxRows))
			break
		}
		p.row(line, rec)
	}
	if p.total > 0 {
		return nil, p.err()
	}
	if len(p.entries) == 0 {
		return nil, domain.Errorf(domain.EINVALID, "the roster has a header but no rows")
	}
	return p.entries, nil
}

type parser struct {
	index    map[string]int // column → position
	width    int
	entries  []domain.RosterEntry
	seen     map[string]int // login name → line
	problems []string
	total    int // problems found, listed or not
	bad      int // rows with a problem
}

func (p *parser) problem(s string) {
	p.total++
	if len(p.problems) < maxProblems {
		p.problems = append(p.problems, s)
	}
}

func (p *parser) err() error {
	probs := p.problems
	if more := p.total - len(probs); more > 0 {
		probs = append(probs, fmt.Sprintf("… and %d more problems", more))
	}
	return &domain.Error{Code: domain.EINVALID, Message: fmt.Sprintf("the roster has %d problem(s); nothing was imported", p.total), Problems: probs}
}

func (p *parser) header(rec []string) bool {
	p.index, p.width = map[string]int{}, len(rec)
	for i, h := range rec {
		key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(h)), " ", "_")
		col, ok := columns[key]
		switch {
		case !ok:
			p.problem(fmt.Sprintf("line 1: unknown column %q (want name, email, student_number, section, role, cohort)", h))
		case hasCol(p.index, col):
			p.problem(fmt.Sprintf("line 1: column %q appears twice", h))
		default:
			p.index[col] = i
		}
	}
	if !hasCol(p.index, "email") && !hasCol(p.index, "number") {
		p.problem("line 1: the roster needs an email or a student_number column (the login name)")
	}
	return p.total == 0
}

func hasCol(index map[string]int, col string) bool { _, ok := index[col]; return ok }

func (p *parser) field(rec []string, col string) string {
	if i, ok := p.index[col]; ok && i < len(rec) {
		return strings.TrimSpace(rec[i])
	}
	return ""
}

// row checks one record; its problems name the line.
func (p *parser) row(line int, rec []string) {
	if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
		return // a blank line
	}
	before := p.total
	bad := func(format string, args ...any) {
		p.problem(fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...))
	}
	if len(rec) != p.width {
		bad("%d fields, the header has %d", len(rec), p.width)
	}
	e := domain.RosterEntry{FullName: p.field(rec, "name"), Section: p.field(rec, "section"), Cohort: p.field(rec, "cohort"),
		KeepFullName: !hasCol(p.index, "name"), KeepSection: !hasCol(p.index, "section"), KeepRole: !hasCol(p.index, "role")}
	if e.Cohort != "" && !cohortSlug.MatchString(e.Cohort) {
		bad("cohort %q: lower-case letters, digits, '.', '_' or '-', at most 64", e.Cohort)
	}
	number, email := p.field(rec, "number"), strings.ToLower(p.field(rec, "email"))
	switch {
	case number != "":
		if !numberRe.MatchString(number) {
			bad("student number %q: letters, digits, '.', '_' or '-', at most 64", number)
		}
		e.Name = number
	case email != "":
		e.Name = email
	default:
		bad("no email or student number")
	}
	if email != "" && !emailRe.MatchString(email) {
		bad("email %q is not an address", email)
	}
	if !printable(e.FullName) || utf8.RuneCountInString(e.FullName) > 200 {
		bad("name: at most 200 printable characters")
	}
	if !printable(e.Section) || utf8.RuneCountInString(e.Section) > 64 {
		bad("section %q: at most 64 printable characters", e.Section)
	}
	role, ok := rosterRol[strings.ToLower(p.field(rec, "role"))]
	if !ok {
		bad("role %q: want learner, instructor or admin", p.field(rec, "role"))
	}
	e.Role = role
	if e.Name != "" {
		if first, dup := p.seen[e.Name]; dup {
			bad("%s is also on line %d", e.Name, first)
		} else {
			p.seen[e.Name] = line
		}
	}
	if p.total > before {
		p.bad++
		return
	}
	p.entries = append(p.entries, e)
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// RosterStore is what a roster import reads and writes of the database.
type RosterStore interface {
	ImportRoster(ctx context.Context, actor domain.User, entries []domain.RosterEntry) (domain.RosterResult, error)
	UsersByName(ctx context.Context, names []string) (map[string]domain.User, error)
}

// Rosters imports rosters into one database.
type Rosters struct {
	DB RosterStore
}

// Import parses and checks the roster (and that it names no runner
// account), then imports it in one transaction.
func (s *Rosters) Import(ctx context.Context, actor domain.User, r io.Reader) (domain.RosterResult, error) {
	return s.ImportInto(ctx, actor, r, "")
}

// ImportInto is Import with the cohort (a slug) the roster's learners
// and instructors join when a row names none ("": the default cohort
// for new users). The cohort must exist.
func (s *Rosters) ImportInto(ctx context.Context, actor domain.User, r io.Reader, cohort string) (domain.RosterResult, error) {
	entries, err := ParseRoster(r)
	if err != nil {
		return domain.RosterResult{}, err
	}
	for i := range entries {
		if entries[i].Cohort == "" {
			entries[i].Cohort = cohort
		}
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	existing, err := s.DB.UsersByName(ctx, names)
	if err != nil {
		return domain.RosterResult{}, err
	}
	var problems []string
	for _, e := range entries {
		u, ok := existing[e.Name]
		switch {
		case !ok || len(problems) >= maxProblems:
		case u.Role == domain.RoleRunner:
			problems = append(problems, fmt.Sprintf("%s is a runner account; a roster cannot change it", e.Name))
		case actor.ID != 0 && u.ID == actor.ID && !e.KeepRole && u.Role != e.Role:
			// An admin's own roster must not lock them out.
			problems = append(problems, fmt.Sprintf("%s is you: a roster cannot change your own role (%s → %s)", e.Name, u.Role, e.Role))
		}
	}
	if len(problems) > 0 {
		return domain.RosterResult{}, &domain.Error{Code: domain.EINVALID, Message: "the roster would change accounts it may not; nothing was imported", Problems: problems}
	}
	return s.DB.ImportRoster(ctx, actor, entries)
}

// WriteTokens writes the new users and their tokens as CSV (header
// login,name,section,role,token): the only copy of the tokens.
func WriteTokens(w io.Writer, created []domain.RosterToken) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"login", "name", "section", "role", "token"})
	for _, c := range created {
		_ = cw.Write([]string{csvSafe(c.Name), csvSafe(c.FullName), csvSafe(c.Section), string(c.Role), c.Token})
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe keeps a spreadsheet from reading a cell as a formula.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
