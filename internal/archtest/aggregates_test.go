package archtest

import (
	"go/ast"
	"os"
	"path/filepath"
	"testing"
)

// TestPackagesAreAggregates: the middle is cut by aggregate (jobs, grade,
// policy, accounts, reference, intake, envprobe), a feature a file in one;
// none of the per-feature packages it was once cut into comes back.
func TestPackagesAreAggregates(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	for old, now := range map[string]string{
		"queue": "jobs", "dispatch": "jobs", "appeal": "grade", "extension": "grade",
		"feedback": "policy", "refreview": "reference", "roster": "accounts", "authguard": "accounts",
		"submission": "intake", "npudevice": "envprobe",
	} {
		if _, err := os.Stat(filepath.Join(root, "internal", old)); err == nil {
			t.Errorf("internal/%s exists: its code belongs in internal/%s", old, now)
		}
		if _, err := os.Stat(filepath.Join(root, "internal", now)); err != nil {
			t.Errorf("internal/%s: %v", now, err)
		}
	}
}

// TestStoreHasNoAliases: the domain's types and constants are spelled
// domain.X everywhere; the store re-exports none of them (a second name
// for one thing is a second place to look).
func TestStoreHasNoAliases(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, f := range sources(t, 0) {
		if f.dir != "internal/store" || f.test {
			continue
		}
		seen++
		for _, d := range f.ast.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, sp := range gd.Specs {
				switch sp := sp.(type) {
				case *ast.TypeSpec:
					if sp.Assign.IsValid() {
						t.Errorf("%s: type %s is an alias", f.path, sp.Name.Name)
					}
				case *ast.ValueSpec:
					for _, v := range sp.Values {
						if sel, ok := v.(*ast.SelectorExpr); ok {
							if id, ok := sel.X.(*ast.Ident); ok && id.Name == "domain" {
								t.Errorf("%s: %s is domain.%s again", f.path, sp.Names[0].Name, sel.Sel.Name)
							}
						}
					}
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("read only %d files of internal/store: the walk is broken", seen)
	}
}
