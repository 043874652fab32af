package archtest

import (
	"go/ast"
	"go/token"
	"strings"
	"testing"
)

// notScores are the functions outside internal/scoring that add up points
// which are not a submission's score.
var notScores = map[string]string{
	"internal/exercise/exercise.go MaxPoints": "the maximum a profile can score, from the configuration",
	"internal/grade/manual.go ManualPoints":   "one manual cell's points from its rubric items",
}

// TestOnlyScoringAddsUpPoints: no shipped code outside internal/scoring
// adds up points (`x += c.Points`) but notScores: a score is summed in one
// place (scoring.Points), so the doors that change a score cannot disagree
// on what it is.
func TestOnlyScoringAddsUpPoints(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	seen := 0
	for _, f := range shipped(t, fset) {
		file := f.ast
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				as, ok := n.(*ast.AssignStmt)
				if !ok || as.Tok != token.ADD_ASSIGN {
					return true
				}
				for _, rhs := range as.Rhs {
					if sel, ok := rhs.(*ast.SelectorExpr); ok && sel.Sel.Name == "Points" {
						seen++
						if _, ok := notScores[f.path+" "+fn.Name.Name]; !ok && !strings.HasPrefix(f.path, "internal/scoring/") {
							t.Errorf("%s:%d: %s adds up points outside internal/scoring", f.path, fset.Position(as.Pos()).Line, fn.Name.Name)
						}
					}
				}
				return true
			})
		}
	}
	if seen == 0 {
		t.Fatal("found no sum of points at all, scoring's included: the walk is broken")
	}
}
