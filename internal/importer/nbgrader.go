package importer

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/npugrade/npugrade/internal/notebook"
)

// autotestLine is nbgrader's "### AUTOTEST expr; expr" (and its HASHED
// form): nbgrader replaces it with asserts that the learner's values equal
// the instructor's. Here each expression's repr is printed and compared
// with the answer's, which is the same test done differentially.
var autotestLine = regexp.MustCompile(`^(\s*)### (HASHED )?AUTOTEST\s+(.*?)\s*$`)

// autotest rewrites the AUTOTEST lines of a test cell into prints of the
// expressions' values and grades the cell on them (tokens, with a relative
// tolerance for floats); any assert of the cell still fails it as an
// error. Values of HASHED AUTOTEST lines are never shown to learners.
// It reports whether the cell had any.
func autotest(c *notebook.Cell, g map[string]any) bool {
	lines := strings.Split(string(c.Source), "\n")
	found := false
	for i, ln := range lines {
		m := autotestLine.FindStringSubmatch(ln)
		if m == nil {
			continue
		}
		found = true
		if m[2] != "" {
			g["visibility"] = "hidden"
		}
		var out []string
		for _, expr := range strings.Split(m[3], ";") {
			if expr = strings.TrimSpace(expr); expr != "" {
				out = append(out, fmt.Sprintf("%sprint(%q, repr(%s))", m[1], "AUTOTEST "+expr+":", expr))
			}
		}
		lines[i] = strings.Join(out, "\n")
	}
	if found {
		c.Source = notebook.MultilineString(strings.Join(lines, "\n"))
		g["compare"], g["rtol"] = "tokens", 1e-6
	}
	return found
}

// defaultNbval reports whether a notebook with no marks is graded as nbval
// grades it by default (every code cell with outputs checked): it has
// recorded outputs and is neither an nbgrader nor a quiz notebook.
func defaultNbval(nb *notebook.Notebook) bool {
	outputs := false
	for _, c := range nb.Cells {
		if _, ok := c.Metadata["nbgrader"]; ok {
			return false
		}
		if c.CellType != "code" {
			continue
		}
		if len(quizVars(string(c.Source))) > 0 {
			return false
		}
		outputs = outputs || len(c.Outputs) > 0
	}
	return outputs
}
