package compare

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"
)

func TestParseRuleDefaults(t *testing.T) {
	t.Parallel()
	for _, in := range []struct{ name, nb, cell string }{
		{"both nil", "", ""},
		{"null", "null", "null"},
		{"empty objects", "{}", " { } "},
		{"only other packages' keys", `{"id":"nb"}`, `{"id":"q1","points":2,"solution":true,"starter":"pass","requires":{"accelerator":"npu"},"timeout":10,"locked":true,"probe":false,"visibility":"hidden","group":"g","hidden":true}`},
	} {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRule(json.RawMessage(in.nb), json.RawMessage(in.cell))
			if err != nil {
				t.Fatalf("ParseRule: %v", err)
			}
			if r.Compare != ModeTokens || !slices.Equal(r.Targets, []string{"stdout", "text/plain"}) {
				t.Errorf("got compare %q targets %v, want tokens on [stdout text/plain]", r.Compare, r.Targets)
			}
			if r.ATol != nil || r.RTol != nil || r.CaseSensitive != nil || r.SpaceChangeSensitive != nil || r.ShowExpected || r.Sanitize != nil {
				t.Errorf("unset keys are set: %+v", r)
			}
			if r.caseSensitive() {
				t.Errorf("tokens must be case-insensitive by default")
			}
		})
	}
}

func TestParseRuleMerge(t *testing.T) {
	t.Parallel()
	nb := `{"compare":"numeric","atol":0.001,"rtol":0.01,"case_sensitive":true,"sanitize":[{"regex":"0x[0-9a-f]+","replace":"0xADDR"}],"targets":["stdout"],"show_expected":true}`
	tests := []struct {
		name  string
		cell  string
		check func(t *testing.T, r Rule)
	}{
		{"notebook defaults apply", `{"id":"q1"}`, func(t *testing.T, r Rule) {
			if r.Compare != ModeNumeric || *r.ATol != 0.001 || *r.RTol != 0.01 || !*r.CaseSensitive || !r.ShowExpected {
				t.Errorf("defaults not applied: %+v", r)
			}
			if len(r.Sanitize) != 1 || r.Sanitize[0].Replace != "0xADDR" || r.Sanitize[0].Regex.String() != "0x[0-9a-f]+" {
				t.Errorf("sanitize = %+v", r.Sanitize)
			}
			if !slices.Equal(r.Targets, []string{"stdout"}) {
				t.Errorf("targets = %v", r.Targets)
			}
		}},
		{"cell wins key by key", `{"compare":"exact","atol":0.5,"targets":["text/plain","stderr"],"sanitize":[{"regex":"\\d+"}]}`, func(t *testing.T, r Rule) {
			if r.Compare != ModeExact || *r.ATol != 0.5 || *r.RTol != 0.01 {
				t.Errorf("merge wrong: %+v", r)
			}
			if !slices.Equal(r.Targets, []string{"text/plain", "stderr"}) {
				t.Errorf("targets = %v", r.Targets)
			}
			if len(r.Sanitize) != 1 || r.Sanitize[0].Regex.String() != `\d+` || r.Sanitize[0].Replace != "" {
				t.Errorf("sanitize must be replaced, not appended: %+v", r.Sanitize)
			}
		}},
		{"null drops the notebook value", `{"atol":null,"case_sensitive":null,"sanitize":null,"targets":null,"compare":null,"show_expected":null}`, func(t *testing.T, r Rule) {
			if r.ATol != nil || r.CaseSensitive != nil || r.Sanitize != nil || r.ShowExpected {
				t.Errorf("null did not reset: %+v", r)
			}
			if r.Compare != ModeTokens || !slices.Equal(r.Targets, DefaultTargets()) {
				t.Errorf("reset keys must take defaults: %+v", r)
			}
		}},
		{"error keys", `{"compare":"error","ename":"ValueError","evalue":"bad"}`, func(t *testing.T, r Rule) {
			if r.Compare != ModeError || r.Ename != "ValueError" || r.Evalue != "bad" {
				t.Errorf("got %+v", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRule(json.RawMessage(nb), json.RawMessage(tc.cell))
			if err != nil {
				t.Fatalf("ParseRule: %v", err)
			}
			tc.check(t, r)
		})
	}
}

func TestParseRuleEveryMode(t *testing.T) {
	t.Parallel()
	for _, m := range Modes {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRule(nil, json.RawMessage(`{"compare":"`+m+`"}`))
			if err != nil || r.Compare != m {
				t.Fatalf("ParseRule(%q) = %+v, %v", m, r, err)
			}
		})
	}
}

func TestParseRuleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		nb   string
		cell string
		want []string // substrings, one per expected error
	}{
		{"unknown key", "", `{"compre":"exact"}`, []string{"cell metadata.grader.compre: unknown key"}},
		{"unknown mode", "", `{"compare":"fuzzy"}`, []string{`metadata.grader.compare: unknown mode "fuzzy"`}},
		{"compare not a string", "", `{"compare":3}`, []string{"metadata.grader.compare: must be a string, got number 3"}},
		{"negative atol", "", `{"atol":-1}`, []string{"metadata.grader.atol: must not be negative, got -1"}},
		{"rtol as string", "", `{"rtol":"1e-3"}`, []string{`metadata.grader.rtol: must be a number, got string "1e-3"`}},
		{"bool as string", "", `{"case_sensitive":"yes"}`, []string{"metadata.grader.case_sensitive: must be true or false"}},
		{"show_expected as number", "", `{"show_expected":1}`, []string{"metadata.grader.show_expected: must be true or false"}},
		{"ename as list", "", `{"ename":["ValueError"]}`, []string{"metadata.grader.ename: must be a string, got a list"}},
		{"targets not a list", "", `{"targets":"stdout"}`, []string{"metadata.grader.targets: must be a list of strings"}},
		{"targets empty", "", `{"targets":[]}`, []string{"metadata.grader.targets: must not be empty"}},
		{"targets bad item", "", `{"targets":["stdout", 3, "text plain", "error", "stdout"]}`, []string{
			"metadata.grader.targets: item 1 must be a string",
			`metadata.grader.targets: item 2 "text plain" is neither`,
			`metadata.grader.targets: "error" is not a target`,
			`metadata.grader.targets: "stdout" is listed twice`,
		}},
		{"sanitize bad regex", "", `{"sanitize":[{"regex":"(unclosed","replace":"x"}]}`, []string{"metadata.grader.sanitize[0].regex: invalid regular expression"}},
		{"sanitize shape", "", `{"sanitize":[{"replace":"x"}, "s", {"regex":"a","replace":1,"flags":"i"}, {"regex":""}]}`, []string{
			"metadata.grader.sanitize[0].regex: missing",
			"metadata.grader.sanitize[1]: must be an object",
			"metadata.grader.sanitize[2].flags: unknown key",
			"metadata.grader.sanitize[2].replace: must be a string",
			"metadata.grader.sanitize[3].regex: must not be empty",
		}},
		{"sanitize not a list", "", `{"sanitize":{"regex":"a"}}`, []string{"metadata.grader.sanitize: must be a list"}},
		{"not an object", "", `[1,2]`, []string{"cell metadata.grader: must be a JSON object, got a list"}},
		{"invalid JSON", "", `{"compare":`, []string{"cell metadata.grader: must be a JSON object"}},
		{"unknown null key", "", `{"nope":null}`, []string{"metadata.grader.nope: unknown key"}},
		{"errors from both levels at once", `{"compare":"bogus","atol":-0.5}`, `{"rtol":-2,"colour":"red","sanitize":[{"regex":"["}],"case_sensitive":0}`, []string{
			"notebook metadata.grader.compare: unknown mode",
			"notebook metadata.grader.atol: must not be negative",
			"cell metadata.grader.rtol: must not be negative",
			"cell metadata.grader.colour: unknown key",
			"cell metadata.grader.sanitize[0].regex: invalid regular expression",
			"cell metadata.grader.case_sensitive: must be true or false",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRule(json.RawMessage(tc.nb), json.RawMessage(tc.cell))
			if err == nil {
				t.Fatalf("ParseRule succeeded with %+v, want errors %q", r, tc.want)
			}
			var merr *multierror.Error
			if !errors.As(err, &merr) {
				t.Fatalf("error %T is not a *multierror.Error", err)
			}
			if len(merr.Errors) != len(tc.want) {
				t.Errorf("got %d errors, want %d:\n%v", len(merr.Errors), len(tc.want), err)
			}
			for _, w := range tc.want {
				found := false
				for _, e := range merr.Errors {
					if strings.Contains(e.Error(), w) {
						found = true
					}
				}
				if !found {
					t.Errorf("no error contains %q in:\n%v", w, err)
				}
			}
			if r.Compare != "" || r.Targets != nil {
				t.Errorf("rule on error must be the zero Rule, got %+v", r)
			}
		})
	}
}

func TestParseRuleRegexErrorWraps(t *testing.T) {
	t.Parallel()
	_, err := ParseRule(nil, json.RawMessage(`{"sanitize":[{"regex":"a(","replace":""}]}`))
	var merr *multierror.Error
	if !errors.As(err, &merr) || len(merr.Errors) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	if errors.Unwrap(merr.Errors[0]) == nil {
		t.Errorf("the regexp error must be wrapped: %v", merr.Errors[0])
	}
}

func TestRuleDefaultsPerMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule       Rule
		cs         bool
		atol, rtol float64
		tol        bool
	}{
		{Rule{}, false, 0, 0, false},
		{Rule{Compare: ModeExact}, true, 0, 0, false},
		{Rule{Compare: ModeRegex}, true, 0, 0, false},
		{Rule{Compare: ModeLinesUnordered}, true, 0, 0, false},
		{Rule{Compare: ModeNumeric}, false, DefaultATol, DefaultRTol, true},
		{Rule{Compare: ModeNumeric, ATol: ptr(0.1)}, false, 0.1, DefaultRTol, true},
		{Rule{Compare: ModeTokens, RTol: ptr(0.1)}, false, 0, 0.1, true},
		{Rule{Compare: ModeTokens, CaseSensitive: ptr(true)}, true, 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.rule.Mode(), func(t *testing.T) {
			t.Parallel()
			if got := tc.rule.caseSensitive(); got != tc.cs {
				t.Errorf("caseSensitive = %v, want %v", got, tc.cs)
			}
			atol, rtol, tol := tc.rule.tolerances()
			if atol != tc.atol || rtol != tc.rtol || tol != tc.tol {
				t.Errorf("tolerances = %v %v %v, want %v %v %v", atol, rtol, tol, tc.atol, tc.rtol, tc.tol)
			}
		})
	}
}
