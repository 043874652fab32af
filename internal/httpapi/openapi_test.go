package httpapi

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestOpenAPIMatchesRoutes checks that api/openapi.yaml documents every route
// Handler mounts (method and path, gin's :id being OpenAPI's {id}) and
// nothing else. It needs no database: Handler only builds the router.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()

	s := &Server{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics(nil)}
	engine, ok := s.Handler().(*gin.Engine)
	if !ok {
		t.Fatalf("Handler() returned %T, want *gin.Engine", s.Handler())
	}
	param := regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)
	mounted := map[string]bool{}
	for _, r := range engine.Routes() {
		mounted[r.Method+" "+param.ReplaceAllString(r.Path, "{$1}")] = true
	}
	if len(mounted) == 0 {
		t.Fatal("Handler() mounted no routes")
	}

	documented := openAPIOperations(t, filepath.Join("..", "..", "api", "openapi.yaml"))
	if len(documented) == 0 {
		t.Fatal("api/openapi.yaml documents no operations")
	}

	var missing, extra []string
	for op := range mounted {
		if !documented[op] {
			missing = append(missing, op)
		}
	}
	for op := range documented {
		if !mounted[op] {
			extra = append(extra, op)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	for _, op := range missing {
		t.Errorf("route %s is mounted but not documented in api/openapi.yaml", op)
	}
	for _, op := range extra {
		t.Errorf("api/openapi.yaml documents %s, which Handler does not mount", op)
	}
}

// openAPIOperations reads "METHOD /path" pairs from the paths: section of an
// OpenAPI YAML file without a YAML library: a path key is the first key
// nested under paths: that starts with "/", an operation a key nested
// directly under a path whose name is an HTTP method.
func openAPIOperations(t *testing.T, name string) map[string]bool {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	methods := map[string]bool{"get": true, "put": true, "post": true, "delete": true,
		"options": true, "head": true, "patch": true, "trace": true}
	ops := map[string]bool{}
	inPaths := false
	pathIndent, methodIndent := -1, -1
	path := ""
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), " \t\r")
		trimmed := strings.TrimLeft(text, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasPrefix(trimmed, "\t") {
			t.Fatalf("%s:%d: tab indentation", name, line)
		}
		indent := len(text) - len(trimmed)
		if indent == 0 {
			inPaths = text == "paths:"
			path = ""
			continue
		}
		if !inPaths {
			continue
		}
		key, _, isKey := strings.Cut(trimmed, ":")
		if !isKey || strings.HasPrefix(trimmed, "- ") {
			continue
		}
		key = strings.Trim(key, `"'`)
		if pathIndent < 0 {
			pathIndent = indent
		}
		switch {
		case indent == pathIndent:
			if !strings.HasPrefix(key, "/") {
				t.Fatalf("%s:%d: key %q under paths: does not start with /", name, line, key)
			}
			if _, rest, _ := strings.Cut(trimmed, ":"); strings.TrimSpace(rest) != "" {
				t.Fatalf("%s:%d: path %s must be followed by a nested block", name, line, key)
			}
			path, methodIndent = key, -1
		case indent > pathIndent && path != "":
			if methodIndent < 0 {
				methodIndent = indent
			}
			if indent == methodIndent && methods[key] {
				op := strings.ToUpper(key) + " " + path
				if ops[op] {
					t.Fatalf("%s:%d: %s documented twice", name, line, op)
				}
				ops[op] = true
			}
		case indent < pathIndent:
			t.Fatalf("%s:%d: unexpected indentation under paths:", name, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ops
}
