package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the house limit: no function under internal/ or cmd/ is this
// long or longer, counted from its func line to its closing brace.
const maxFuncLines = 100

// shipped parses the non-test Go files under internal/ and cmd/ again,
// with positions in fset (sources keeps its own set).
func shipped(t *testing.T, fset *token.FileSet) []goFile {
	t.Helper()
	root := moduleRoot(t)
	var out []goFile
	for _, f := range sources(t, 0) {
		if f.test || !(strings.HasPrefix(f.path, "internal/") || strings.HasPrefix(f.path, "cmd/")) {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(f.path)), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.ast = file
		out = append(out, f)
	}
	return out
}

// TestNoLongFunctions: every function and function literal under
// internal/ and cmd/ stays under maxFuncLines lines. Test files are left out: a
// table-driven test is long by nature and reads top to bottom; the rule
// is for the code that ships.
func TestNoLongFunctions(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	checked := 0
	for _, f := range shipped(t, fset) {
		file := f.ast
		ast.Inspect(file, func(n ast.Node) bool {
			var name string
			switch d := n.(type) {
			case *ast.FuncDecl:
				if d.Body == nil {
					return true
				}
				name = d.Name.Name
			case *ast.FuncLit:
				name = "func literal"
			default:
				return true
			}
			checked++
			start, end := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
			if lines := end - start + 1; lines >= maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines (the limit is under %d)", f.path, start, name, lines, maxFuncLines)
			}
			return true
		})
	}
	if checked < 500 {
		t.Fatalf("checked only %d functions: the walk is broken", checked)
	}
}
