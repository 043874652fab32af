package domain

import (
	"fmt"
	"strconv"
	"strings"
)

// MinVersion reads a minimum-version requirement (">=2.1", ">= 3.10",
// or a bare "2.1") and returns its version, dotted numbers only.
func MinVersion(spec string) (string, error) {
	v := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(spec), ">="))
	parts := strings.Split(v, ".")
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil || p == "" {
			return "", fmt.Errorf("%q is not a minimum version such as >=2.1", spec)
		}
	}
	return v, nil
}

// AtLeast reports whether version (as a package reports it: "2.6.0+cpu",
// "1.13.0a0", "3.11.2") is at least min (dotted numbers). Only the
// leading numbers of each component count: "1.13.0a0" is 1.13.0.
func AtLeast(version, min string) bool {
	have := strings.Split(strings.SplitN(version, "+", 2)[0], ".")
	for i, w := range strings.Split(min, ".") {
		want, _ := strconv.Atoi(w)
		got := 0
		if i < len(have) {
			got = leadingInt(have[i])
		}
		if got != want {
			return got > want
		}
	}
	return true
}

func leadingInt(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// CheckEnvironment reports a malformed python, torch or backend field.
func (r Requirement) CheckEnvironment() error {
	for _, f := range []struct{ name, spec string }{{"python", r.Python}, {"torch", r.Torch}} {
		if f.spec == "" {
			continue
		}
		if _, err := MinVersion(f.spec); err != nil {
			return fmt.Errorf("requires.%s: %w", f.name, err)
		}
	}
	if strings.TrimSpace(r.Backend) != r.Backend {
		return fmt.Errorf("requires.backend: %q has spaces", r.Backend)
	}
	return nil
}

// WithEnvironment is r with the python, torch and backend of own: a job
// for a profile (a reference run) still needs the environment its
// exercise was written for.
func (r Requirement) WithEnvironment(own Requirement) Requirement {
	r.Python, r.Torch, r.Backend = own.Python, own.Torch, own.Backend
	return r
}

// EnvironmentWords lists the environment r asks for, for a learner:
// "torch ≥ 2.1", "Python ≥ 3.10", "the npugraph_ex backend" (zh:
// "npugraph_ex 后端"); empty when it asks for none.
func (r Requirement) EnvironmentWords(chinese bool) []string {
	var out []string
	if v, err := MinVersion(r.Torch); r.Torch != "" && err == nil {
		out = append(out, "torch ≥ "+v)
	}
	if v, err := MinVersion(r.Python); r.Python != "" && err == nil {
		out = append(out, "Python ≥ "+v)
	}
	if r.Backend != "" {
		if chinese {
			out = append(out, r.Backend+" 后端")
		} else {
			out = append(out, "the "+r.Backend+" backend")
		}
	}
	return out
}
