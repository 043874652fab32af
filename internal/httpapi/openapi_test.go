package httpapi

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/web"
)

// openAPIPath is api/openapi.yaml relative to this package's directory.
var openAPIPath = filepath.Join("..", "..", "api", "openapi.yaml")

var (
	openAPIOnce sync.Once
	openAPIDoc  *openapi3.T
	openAPIErr  error
)

// loadOpenAPI parses and validates api/openapi.yaml once per test binary;
// every test that needs the contract shares the result.
func loadOpenAPI(t testing.TB) *openapi3.T {
	t.Helper()
	openAPIOnce.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromFile(openAPIPath)
		if err != nil {
			openAPIErr = err
			return
		}
		// Examples are checked against their schemas too: a wrong example
		// misleads an integrator as much as a wrong schema.
		openAPIErr = doc.Validate(context.Background(), openapi3.EnableExamplesValidation())
		openAPIDoc = doc
	})
	if openAPIErr != nil {
		t.Fatalf("api/openapi.yaml: %v", openAPIErr)
	}
	return openAPIDoc
}

// TestOpenAPIValid loads api/openapi.yaml with kin-openapi and validates it
// as an OpenAPI 3.1 document (structure, references, schemas, examples).
func TestOpenAPIValid(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi: %s, want 3.1", doc.OpenAPI)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			if op.Responses == nil || op.Responses.Len() == 0 {
				t.Errorf("%s %s documents no responses", method, path)
			}
		}
	}
}

// TestOpenAPIMatchesRoutes checks that api/openapi.yaml documents every route
// Handler mounts (method and path, gin's :id being OpenAPI's {id}) and
// nothing else. It needs no database: Handler only builds the router.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()

	s := &Server{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics(nil), MetricsToken: "m", Pages: web.New(web.Deps{})}
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

	documented := map[string]bool{}
	for path, item := range loadOpenAPI(t).Paths.Map() {
		for method := range item.Operations() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
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
