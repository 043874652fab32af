package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/npugrade/npugrade"

// goFile is one parsed source file of the module.
type goFile struct {
	path string // relative to the module root, slash-separated
	dir  string // its package directory, relative
	test bool
	ast  *ast.File
}

// moduleRoot walks up from the test's directory to go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// sources parses every .go file of the module (testdata, hidden and
// vendored folders left out), with mode.
func sources(t *testing.T, mode parser.Mode) []goFile {
	t.Helper()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var out []goFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, mode)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		out = append(out, goFile{path: rel, dir: filepath.ToSlash(filepath.Dir(rel)), test: strings.HasSuffix(name, "_test.go"), ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("read only %d Go files under %s: the walk is broken", len(out), root)
	}
	return out
}

// TestImportRules: gorm only in internal/store, gin only in internal/httpapi
// and internal/web, in every file of the module, tests included.
func TestImportRules(t *testing.T) {
	t.Parallel()
	rules := []struct {
		prefix  string   // an import path prefix
		allowed []string // package directories that may import it
	}{
		{"gorm.io/", []string{"internal/store"}},
		{"github.com/gin-gonic/", []string{"internal/httpapi", "internal/web"}},
	}
	seen := map[string]bool{}
	for _, f := range sources(t, parser.ImportsOnly) {
		for _, imp := range f.ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, r := range rules {
				if !strings.HasPrefix(path, r.prefix) {
					continue
				}
				seen[r.prefix] = true
				ok := false
				for _, a := range r.allowed {
					ok = ok || f.dir == a
				}
				if !ok {
					t.Errorf("%s imports %s: only %v may", f.path, path, r.allowed)
				}
			}
		}
	}
	for _, r := range rules {
		if !seen[r.prefix] {
			t.Errorf("no file imports %s at all: the rule checks nothing (was the walk cut short?)", r.prefix)
		}
	}
}

// TestRawSQLOnlyInTests: the store's raw-SQL helpers are for tests; the
// code that ships calls the store's named methods.
func TestRawSQLOnlyInTests(t *testing.T) {
	t.Parallel()
	raw := map[string]bool{"RawExec": true, "RawScan": true, "RawInsert": true}
	for _, f := range sources(t, 0) {
		if f.test || strings.HasPrefix(f.dir, "internal/store") {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && raw[sel.Sel.Name] {
				t.Errorf("%s calls %s: code outside package store uses its named methods", f.path, sel.Sel.Name)
			}
			return true
		})
	}
}

// TestHandlersDoNotReachTheStore: the pages and the API's handlers depend
// on services (domain's interfaces, fleet, policy), never on package store:
// who may read what is decided in policy, not in a handler. In httpapi only
// the server's Store interface (server.go, which names the store's row
// types) and the runner protocol (runner.go) still name the store. Tests
// may seed a database.
func TestHandlersDoNotReachTheStore(t *testing.T) {
	t.Parallel()
	const storePkg = module + "/internal/store"
	sealed := map[string][]string{ // package directory → files excepted
		"internal/web":     nil,
		"internal/httpapi": {"server.go", "runner.go"},
	}
	checked := map[string]bool{}
	for _, f := range sources(t, parser.ImportsOnly) {
		except, ok := sealed[f.dir]
		if f.test || !ok || slices.Contains(except, path.Base(f.path)) {
			continue
		}
		checked[f.dir] = true
		for _, imp := range f.ast.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == storePkg || strings.HasPrefix(p, storePkg+"/") {
				t.Errorf("%s imports %s: handlers use the services of package domain, fleet and policy", f.path, p)
			}
		}
	}
	for dir := range sealed {
		if !checked[dir] {
			t.Errorf("no source file in %s: the rule checks nothing", dir)
		}
	}
}

// TestServicesTakeInterfacesOfTheStore: outside package store and the
// composition root (cmd), no struct field or function parameter has the
// type *store.DB; each service declares the store methods it uses, so a
// rule that crosses two services cannot hide in the store.
func TestServicesTakeInterfacesOfTheStore(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, f := range sources(t, 0) {
		if f.test || strings.HasPrefix(f.dir, "internal/store") || strings.HasPrefix(f.dir, "cmd/") {
			continue
		}
		seen++
		ast.Inspect(f.ast, func(n ast.Node) bool {
			var fields *ast.FieldList
			switch n := n.(type) {
			case *ast.StructType:
				fields = n.Fields
			case *ast.FuncType:
				fields = n.Params
			}
			if fields == nil {
				return true
			}
			for _, fl := range fields.List {
				if star, ok := fl.Type.(*ast.StarExpr); ok {
					if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "DB" {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "store" {
							t.Errorf("%s: a field or parameter of type *store.DB; declare the methods used as an interface", f.path)
						}
					}
				}
			}
			return true
		})
	}
	if seen == 0 {
		t.Fatal("no source file checked: the rule checks nothing")
	}
}
