package envprobe

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PyVersion is a Python package version split the way the checks need it.
// torch reports "2.1.0+cpu" or "1.13.0a0+git…", torch_npu "2.1.0.post3" or
// "2.9.0.dev20260101"; only the release part is comparable across them.
type PyVersion struct {
	Release string // "2.1.0"
	Pre     string // "a0", "rc1"; empty when absent
	Post    int    // N of ".postN"; -1 when absent
	Dev     string // N of ".devN"; empty when absent
	IsDev   bool
	Local   string // after "+", e.g. "cpu"
}

// pep440 is a pragmatic subset of PEP 440: enough for torch and torch_npu.
var pep440 = regexp.MustCompile(`(?i)^v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|alpha|beta)(\d*))?(?:[-_.]?post(\d+))?(?:[-_.]?(dev)(\d*))?(?:\+([a-z0-9._]+))?$`)

// ParsePyVersion parses a torch or torch_npu version string.
func ParsePyVersion(s string) (PyVersion, error) {
	m := pep440.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return PyVersion{}, fmt.Errorf("parse version %q: not a PEP 440 version", s)
	}
	v := PyVersion{Release: m[1], Post: -1, IsDev: m[5] != "", Dev: m[6], Local: m[7]}
	if m[2] != "" {
		v.Pre = strings.ToLower(m[2]) + m[3]
	}
	if m[4] != "" {
		n, err := strconv.Atoi(m[4])
		if err != nil {
			return PyVersion{}, fmt.Errorf("parse version %q: post: %w", s, err)
		}
		v.Post = n
	}
	return v, nil
}

func hasDevSegment(s string) bool {
	s = strings.ToLower(s)
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	return strings.Contains(s, "dev")
}

// BaseVersion returns the release part ("2.1.0") of a torch or torch_npu
// version, dropping pre/post/dev/local segments. It returns the trimmed input
// when the string is not a recognisable version, so that a comparison of two
// unparsable strings still fails loudly instead of matching on "".
func BaseVersion(s string) string {
	v, err := ParsePyVersion(s)
	if err != nil {
		return strings.TrimSpace(s)
	}
	return v.Release
}

// IsDevBuild reports whether a version is a development build such as
// "2.9.0.dev20260101". Such builds are not in the version table.
func IsDevBuild(s string) bool {
	v, err := ParsePyVersion(s)
	if err != nil {
		return hasDevSegment(s)
	}
	return v.IsDev
}

var pythonMinorRE = regexp.MustCompile(`^\s*(\d+)\.(\d+)`)

// PythonMinor extracts "3.11" from "3.11.2" or from a full sys.version such
// as "3.11.2 (main, Apr 28 2025, 14:11:48) [GCC 12.2.0]".
func PythonMinor(s string) string {
	m := pythonMinorRE.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1] + "." + m[2]
}

var cannPrefix = regexp.MustCompile(`(?i)^\s*(\d+)\.(\d+)\.(rc\d+|\d+)(.*?)\s*$`)

// NormalizeCANN splits a CANN version into the prefix the version table uses
// ("8.5.0", "8.3.RC1", "9.0.0") and whatever follows it (".B120",
// "-beta.2"). ok is false when s does not start with major.minor.patch or
// major.minor.RCn.
func NormalizeCANN(s string) (prefix, suffix string, ok bool) {
	m := cannPrefix.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	patch := m[3]
	if strings.HasPrefix(strings.ToLower(patch), "rc") {
		patch = "RC" + patch[2:]
	}
	return m[1] + "." + m[2] + "." + patch, m[4], true
}

// release is a parsed TorchAir release: numbered ("7.3.0", "26.0.0") or master.
type release struct {
	master bool
	parts  []int
}

func parseRelease(s string) (release, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "master") {
		return release{master: true}, nil
	}
	fields := strings.Split(strings.TrimPrefix(s, "v"), ".")
	r := release{parts: make([]int, 0, len(fields))}
	for _, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return release{}, fmt.Errorf("TorchAir release %q: want numbers like 7.3.0 or \"master\"", s)
		}
		r.parts = append(r.parts, n)
	}
	return r, nil
}

// CompareReleases orders TorchAir releases numerically, component by
// component, so "26.0.0" is newer than "7.3.0" (a string comparison would say
// the opposite). "master" is newer than every numbered release. Missing
// components count as zero ("7.3" == "7.3.0").
func CompareReleases(a, b string) (int, error) {
	ra, err := parseRelease(a)
	if err != nil {
		return 0, err
	}
	rb, err := parseRelease(b)
	if err != nil {
		return 0, err
	}
	switch {
	case ra.master && rb.master:
		return 0, nil
	case ra.master:
		return 1, nil
	case rb.master:
		return -1, nil
	}
	for i := 0; i < max(len(ra.parts), len(rb.parts)); i++ {
		x, y := 0, 0
		if i < len(ra.parts) {
			x = ra.parts[i]
		}
		if i < len(rb.parts) {
			y = rb.parts[i]
		}
		if x != y {
			if x < y {
				return -1, nil
			}
			return 1, nil
		}
	}
	return 0, nil
}
