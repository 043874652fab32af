package web

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
)

// TestEveryMessageTranslated fails when a message key lacks its English or
// Chinese text, or when a verdict, status or role has no key.
func TestEveryMessageTranslated(t *testing.T) {
	t.Parallel()
	for key, m := range messages {
		if strings.TrimSpace(m[0]) == "" || strings.TrimSpace(m[1]) == "" {
			t.Errorf("message %q lacks a translation: en %q, zh-CN %q", key, m[0], m[1])
		}
	}
	var keys []string
	for _, v := range verdicts {
		keys = append(keys, "v."+v)
	}
	for _, s := range []string{domain.StatusQueued, domain.StatusRunning, domain.StatusGraded, domain.StatusFailed} {
		keys = append(keys, "st."+s)
	}
	for _, r := range []domain.Role{domain.RoleLearner, domain.RoleInstructor, domain.RoleAdmin, domain.RoleRunner} {
		keys = append(keys, "role."+string(r))
	}
	for _, k := range keys {
		if _, ok := messages[k]; !ok {
			t.Errorf("no message %q", k)
		}
	}
	for _, lang := range []string{langEN, langZH} {
		for _, c := range []struct {
			key  string
			n    int
			want string
		}{
			{"n.questions", 1, map[string]string{langEN: "1 question", langZH: "1 道题"}[lang]},
			{"n.questions", 10, map[string]string{langEN: "10 questions", langZH: "10 道题"}[lang]},
			{"n.attempts_left", 1, map[string]string{langEN: "1 attempt left", langZH: "还可提交 1 次"}[lang]},
			{"n.attempts_left", 3, map[string]string{langEN: "3 attempts left", langZH: "还可提交 3 次"}[lang]},
		} {
			if got := plural(lang, c.key, c.n); got != c.want {
				t.Errorf("plural(%s, %s, %d) = %q, want %q", lang, c.key, c.n, got, c.want)
			}
		}
	}
}

// TestFeedbackCatalogCoversGrader reads the grader's sources, builds a
// sample of every feedback message they can write (format verbs filled
// in), and checks that each clause has a Chinese pattern: a new message
// in the grader without a translation fails here.
func TestFeedbackCatalogCoversGrader(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../scoring/*.go")
	more, _ := filepath.Glob("../compare/*.go")
	files = append(append(files, more...), "../notebook/template.go")
	msgFuncs := map[string]bool{"compareText": true, "compareExact": true, "compareRegex": true, "compareLinesUnordered": true,
		"compareBinary": true, "errorMismatch": true, "compareImage": true, "compareTokens": true}
	samples := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		add := func(e ast.Expr) {
			// Empty results mean "pass"; ": "+v continues a message above,
			// "\n"+text appends the exercise author's own feedback.
			if s, lit := messageSample(e); lit && s != "" && !strings.HasPrefix(s, ": ") && !strings.HasPrefix(s, "\n") {
				samples[strings.TrimPrefix(s, "; ")] = fset.Position(e.Pos()).String()
			}
		}
		ast.Inspect(f, func(node ast.Node) bool {
			switch x := node.(type) {
			case *ast.FuncDecl:
				if msgFuncs[x.Name.Name] && x.Body != nil {
					ast.Inspect(x.Body, func(n ast.Node) bool {
						if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) > 0 {
							add(r.Results[len(r.Results)-1])
						}
						return true
					})
				}
			case *ast.AssignStmt:
				for i, l := range x.Lhs {
					if i < len(x.Rhs) && isMessageTarget(l) {
						add(x.Rhs[i])
					}
				}
			case *ast.CallExpr:
				if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "append" && len(x.Args) > 1 {
					if v, ok := x.Args[0].(*ast.Ident); ok && (v.Name == "msgs" || v.Name == "why") {
						for _, a := range x.Args[1:] {
							add(a)
						}
					}
				}
			}
			return true
		})
	}
	if len(samples) < 40 {
		t.Fatalf("found only %d grader messages; the scan is broken", len(samples))
	}
	latin := regexp.MustCompile(`[A-Za-z]{3,}`)
	for s, where := range samples {
		zh := translateFeedback(langZH, s)
		// What may stay Latin is what the sample filled in ("x") and
		// what the grader quotes: MIME types, exception names, os._exit.
		rest := strings.NewReplacer("text/plain", "", "os._exit", "", "atol", "", "rtol", "").Replace(zh)
		if zh == s || latin.MatchString(rest) {
			t.Errorf("%s: grader message %q has no Chinese translation (got %q)", where, s, zh)
		}
		if en := translateFeedback(langEN, s); en != s {
			t.Errorf("English feedback changed: %q -> %q", s, en)
		}
	}
}

func isMessageTarget(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name == "Message"
	case *ast.IndexExpr:
		s, ok := x.X.(*ast.SelectorExpr)
		return ok && s.Sel.Name == "Messages"
	}
	return false
}

// messageSample renders a message expression with sample values for what
// is not a literal; lit reports whether any literal text was in it.
func messageSample(e ast.Expr) (s string, lit bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			v, _ := strconv.Unquote(x.Value)
			return v, true
		}
	case *ast.ParenExpr:
		return messageSample(x.X)
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			a, la := messageSample(x.X)
			b, lb := messageSample(x.Y)
			return a + b, la || lb
		}
	case *ast.CallExpr:
		name := ""
		switch f := x.Fun.(type) {
		case *ast.SelectorExpr:
			name = f.Sel.Name
		case *ast.Ident:
			name = f.Name
		}
		switch name {
		case "lineCounts":
			return "", false
		case "plural":
			if len(x.Args) == 3 {
				return messageSample(x.Args[2])
			}
		case "Sprintf":
			format, ok := messageSample(x.Args[0])
			if !ok {
				return "x", false
			}
			var args []any
			verbs := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`).FindAllString(format, -1)
			for i, v := range verbs {
				arg := "x"
				if i+1 < len(x.Args) {
					if s, lit := messageSample(x.Args[i+1]); lit || s == "" {
						arg = s
					}
				}
				switch v[len(v)-1] {
				case 'd':
					args = append(args, 3)
				case 'g', 'f':
					args = append(args, 1.5)
				default:
					args = append(args, arg)
				}
			}
			return fmt.Sprintf(format, args...), true
		}
	}
	return "x", false
}
