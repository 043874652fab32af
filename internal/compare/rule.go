package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// Comparison modes, the values of metadata.grader.compare.
const (
	ModeExact          = "exact"
	ModeTokens         = "tokens"
	ModeNumeric        = "numeric"
	ModeRegex          = "regex"
	ModeLinesUnordered = "lines-unordered"
	ModeError          = "error"
	ModeNoError        = "no-error"
	ModeImage          = "image"
	ModeIgnore         = "ignore"
	ModeSkip           = "skip"
	// ModeChoice compares quiz answers (choice.go).
	ModeChoice = "choice"
)

// Modes lists every comparison mode, in the order the contract lists them.
var Modes = []string{
	ModeExact, ModeTokens, ModeNumeric, ModeRegex, ModeLinesUnordered,
	ModeError, ModeNoError, ModeImage, ModeIgnore, ModeSkip, ModeChoice,
}

// DefaultMode is the mode of a rule that does not set compare.
const DefaultMode = ModeTokens

// Stream targets; every other target is a MIME type.
const (
	TargetStdout = "stdout"
	TargetStderr = "stderr"
)

// Defaults of the numeric mode and of the image mode.
const (
	DefaultATol            = 1e-9
	DefaultRTol            = 1e-6
	DefaultMaxHashDistance = 5
)

// DefaultTargets returns the targets compared when a rule sets none: what
// the cell prints and the text form of its results. stderr, HTML and images
// are left out by default because they carry warnings, library-version
// markup and rendering noise (see the prior-art notes on nondeterminism).
func DefaultTargets() []string { return []string{TargetStdout, "text/plain"} }

// Sanitizer is one {"regex": ..., "replace": ...} entry of
// metadata.grader.sanitize. Replace may refer to groups ($1, ${name}) as in
// regexp.Regexp.ReplaceAllString.
type Sanitizer struct {
	Regex   *regexp.Regexp
	Replace string
}

// Rule holds the comparison keys of metadata.grader. The zero Rule is valid
// and means the defaults: tokens on stdout and text/plain.
//
// Pointer fields are nil when the key is unset, because their default depends
// on the mode (case_sensitive is true for exact but false for tokens) or
// because "unset" differs from zero (an unset rtol means 1e-6 in numeric
// mode).
type Rule struct {
	// Compare is the mode; empty means DefaultMode.
	Compare string
	// Targets are the outputs compared; empty means DefaultTargets().
	Targets []string
	// ATol and RTol are the absolute and relative tolerances.
	ATol, RTol *float64
	// CaseSensitive defaults to true for exact, regex and lines-unordered,
	// false for tokens and numeric.
	CaseSensitive *bool
	// SpaceChangeSensitive defaults to false.
	SpaceChangeSensitive *bool
	// Sanitize is applied, in order, to both sides before comparing.
	Sanitize []Sanitizer
	// Ename and Evalue are the exception expected by the error mode.
	Ename, Evalue string
	// ShowExpected lets a Result carry the expected output and a diff.
	ShowExpected bool
	// MaxHashDistance is the largest Hamming distance between the 64-bit
	// perceptual hashes of two images that still counts as the same image.
	// 0 means DefaultMaxHashDistance; a negative value demands equal hashes.
	// It has no metadata key (the contract in docs/grader-metadata.md does
	// not define one), so only Go callers set it.
	MaxHashDistance int
}

// Mode returns the comparison mode, DefaultMode when unset.
func (r Rule) Mode() string {
	if r.Compare == "" {
		return DefaultMode
	}
	return r.Compare
}

// EffectiveTargets returns the targets compared, DefaultTargets when unset.
func (r Rule) EffectiveTargets() []string {
	if len(r.Targets) == 0 {
		return DefaultTargets()
	}
	return r.Targets
}

func (r Rule) caseSensitive() bool {
	if r.CaseSensitive != nil {
		return *r.CaseSensitive
	}
	switch r.Mode() {
	case ModeTokens, ModeNumeric:
		return false
	}
	return true
}

func (r Rule) spaceChangeSensitive() bool {
	return r.SpaceChangeSensitive != nil && *r.SpaceChangeSensitive
}

func (r Rule) maxHashDistance() int {
	switch {
	case r.MaxHashDistance == 0:
		return DefaultMaxHashDistance
	case r.MaxHashDistance < 0:
		return 0
	}
	return r.MaxHashDistance
}

// tolerances returns the tolerances in force and whether any is. numeric
// always compares with tolerances (unset ones take their defaults); tokens
// only when the rule sets one, and then an unset one is 0, as with the
// judges' float_absolute_tolerance / float_relative_tolerance flags.
func (r Rule) tolerances() (atol, rtol float64, on bool) {
	if r.Mode() == ModeNumeric {
		atol, rtol = DefaultATol, DefaultRTol
		on = true
	}
	if r.ATol != nil {
		atol, on = *r.ATol, true
	}
	if r.RTol != nil {
		rtol, on = *r.RTol, true
	}
	return atol, rtol, on
}

// ignoredKeys belong to other packages (notebook, exercise, scoring); they
// are accepted here without a look so that one grader object serves all.
var ignoredKeys = map[string]bool{
	"id": true, "points": true, "solution": true, "starter": true,
	"requires": true, "timeout": true, "locked": true, "probe": true,
	"visibility": true, "group": true, "hidden": true, "for": true,
	"feedback": true, "otter": true,
}

// targetPattern is what a MIME type target must look like; it keeps typos
// such as "text plain" from silently comparing nothing.
var targetPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9.+_-]*/[a-zA-Z0-9][a-zA-Z0-9.+_-]*$`)

// ParseRule reads the comparison keys of metadata.grader. notebookDefaults is
// the notebook-level metadata.grader, cell the cell's; either may be nil or
// empty. The cell's keys win over the notebook's key by key (a list such as
// sanitize is replaced, not appended to), and a key set to null in the cell
// drops the notebook's value for it.
//
// Keys of other packages (id, points, solution, ...) are ignored. Every other
// problem (an unknown key, a wrong type, an unknown mode or target, a bad
// regular expression, a negative tolerance) is collected, and all of them are
// returned together as a *multierror.Error whose entries each name the key,
// e.g. "cell metadata.grader.atol: must not be negative, got -1". On error the
// returned Rule is the zero Rule and must not be used.
func ParseRule(notebookDefaults, cell json.RawMessage) (Rule, error) {
	var errs *multierror.Error
	var r Rule
	parseInto(&r, "notebook", notebookDefaults, &errs)
	parseInto(&r, "cell", cell, &errs)
	if err := errs.ErrorOrNil(); err != nil {
		return Rule{}, err
	}
	if r.Compare == "" {
		r.Compare = DefaultMode
	}
	if len(r.Targets) == 0 {
		r.Targets = DefaultTargets()
	}
	return r, nil
}

// parseInto applies the keys of one grader object to r, appending problems
// to errs. where is "notebook" or "cell", so that a message says which of
// the two objects to fix.
func parseInto(r *Rule, where string, raw json.RawMessage, errs **multierror.Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		*errs = multierror.Append(*errs, fmt.Errorf("%s metadata.grader: must be a JSON object, got %s", where, jsonKind(raw)))
		return
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	// Sorted so that the error list is stable from run to run.
	slices.Sort(keys)
	for _, key := range keys {
		if ignoredKeys[key] {
			continue
		}
		val := bytes.TrimSpace(obj[key])
		fail := func(format string, args ...any) {
			*errs = multierror.Append(*errs, fmt.Errorf("%s metadata.grader.%s: %s", where, key, fmt.Sprintf(format, args...)))
		}
		if string(val) == "null" {
			if !resetKey(r, key) {
				fail("unknown key")
			}
			continue
		}
		switch key {
		case "compare":
			var s string
			if json.Unmarshal(val, &s) != nil {
				fail("must be a string, got %s", jsonKind(val))
				continue
			}
			if !slices.Contains(Modes, s) {
				fail("unknown mode %q (want one of %s)", s, strings.Join(Modes, ", "))
				continue
			}
			r.Compare = s
		case "targets":
			if t, ok := parseTargets(val, fail); ok {
				r.Targets = t
			}
		case "atol", "rtol":
			var f float64
			if json.Unmarshal(val, &f) != nil {
				fail("must be a number, got %s", jsonKind(val))
				continue
			}
			if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				fail("must not be negative, got %v", f)
				continue
			}
			if key == "atol" {
				r.ATol = &f
			} else {
				r.RTol = &f
			}
		case "case_sensitive", "space_change_sensitive", "show_expected":
			var b bool
			if json.Unmarshal(val, &b) != nil {
				fail("must be true or false, got %s", jsonKind(val))
				continue
			}
			switch key {
			case "case_sensitive":
				r.CaseSensitive = &b
			case "space_change_sensitive":
				r.SpaceChangeSensitive = &b
			default:
				r.ShowExpected = b
			}
		case "ename", "evalue":
			var s string
			if json.Unmarshal(val, &s) != nil {
				fail("must be a string, got %s", jsonKind(val))
				continue
			}
			if key == "ename" {
				r.Ename = s
			} else {
				r.Evalue = s
			}
		case "sanitize":
			if s, ok := parseSanitize(val, where, errs); ok {
				r.Sanitize = s
			}
		default:
			fail("unknown key")
		}
	}
}

// resetKey handles "key": null, which drops a notebook-level value; it
// reports false for a key it does not know.
func resetKey(r *Rule, key string) bool {
	switch key {
	case "compare":
		r.Compare = ""
	case "targets":
		r.Targets = nil
	case "atol":
		r.ATol = nil
	case "rtol":
		r.RTol = nil
	case "case_sensitive":
		r.CaseSensitive = nil
	case "space_change_sensitive":
		r.SpaceChangeSensitive = nil
	case "show_expected":
		r.ShowExpected = false
	case "ename":
		r.Ename = ""
	case "evalue":
		r.Evalue = ""
	case "sanitize":
		r.Sanitize = nil
	default:
		return false
	}
	return true
}

func parseTargets(val json.RawMessage, fail func(string, ...any)) ([]string, bool) {
	var list []json.RawMessage
	if json.Unmarshal(val, &list) != nil {
		fail("must be a list of strings, got %s", jsonKind(val))
		return nil, false
	}
	if len(list) == 0 {
		fail("must not be empty")
		return nil, false
	}
	ok := true
	targets := make([]string, 0, len(list))
	for i, item := range list {
		var t string
		if json.Unmarshal(item, &t) != nil {
			fail("item %d must be a string, got %s", i, jsonKind(item))
			ok = false
			continue
		}
		switch {
		case t == TargetStdout || t == TargetStderr:
		case t == "error":
			fail("%q is not a target: exceptions are checked with compare \"error\" or \"no-error\"", t)
			ok = false
			continue
		case !targetPattern.MatchString(t):
			fail("item %d %q is neither stdout, stderr nor a MIME type", i, t)
			ok = false
			continue
		}
		if slices.Contains(targets, t) {
			fail("%q is listed twice", t)
			ok = false
			continue
		}
		targets = append(targets, t)
	}
	return targets, ok
}

func parseSanitize(val json.RawMessage, where string, errs **multierror.Error) ([]Sanitizer, bool) {
	failAt := func(path, format string, args ...any) {
		*errs = multierror.Append(*errs, fmt.Errorf("%s metadata.grader.%s: %s", where, path, fmt.Sprintf(format, args...)))
	}
	var list []json.RawMessage
	if json.Unmarshal(val, &list) != nil {
		failAt("sanitize", "must be a list of {\"regex\": ..., \"replace\": ...} objects, got %s", jsonKind(val))
		return nil, false
	}
	ok := true
	out := make([]Sanitizer, 0, len(list))
	for i, item := range list {
		path := fmt.Sprintf("sanitize[%d]", i)
		var obj map[string]json.RawMessage
		if json.Unmarshal(item, &obj) != nil || obj == nil {
			failAt(path, "must be an object with \"regex\" and \"replace\", got %s", jsonKind(item))
			ok = false
			continue
		}
		var s Sanitizer
		itemOK := true
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if k != "regex" && k != "replace" {
				failAt(path+"."+k, "unknown key")
				itemOK = false
			}
		}
		if rawRe, has := obj["regex"]; !has {
			failAt(path+".regex", "missing")
			itemOK = false
		} else {
			var pat string
			switch {
			case json.Unmarshal(rawRe, &pat) != nil:
				failAt(path+".regex", "must be a string, got %s", jsonKind(rawRe))
				itemOK = false
			case pat == "":
				failAt(path+".regex", "must not be empty")
				itemOK = false
			default:
				re, err := regexp.Compile(pat)
				if err != nil {
					*errs = multierror.Append(*errs, fmt.Errorf("%s metadata.grader.%s.regex: invalid regular expression: %w", where, path, err))
					itemOK = false
				}
				s.Regex = re
			}
		}
		if rawRep, has := obj["replace"]; has {
			if json.Unmarshal(rawRep, &s.Replace) != nil {
				failAt(path+".replace", "must be a string, got %s", jsonKind(rawRep))
				itemOK = false
			}
		}
		if !itemOK {
			ok = false
			continue
		}
		out = append(out, s)
	}
	return out, ok
}

// jsonKind names the JSON type of raw for error messages, quoting short
// scalars so that the author recognises the value.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	show := func(kind string) string {
		if len(raw) <= 40 {
			return kind + " " + string(raw)
		}
		return kind
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return show("string")
	case 't', 'f':
		return show("boolean")
	case 'n':
		return "null"
	}
	return show("number")
}
