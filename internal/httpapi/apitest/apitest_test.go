package apitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// spy records the mismatches Handler reports instead of failing.
type spy struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (s *spy) Errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

// TestHandlerCatchesDrift: a response the document does not allow (a
// missing required field, an undocumented status, an undocumented route
// that answers) is reported; a conforming one is not.
func TestHandlerCatchesDrift(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, method, path string
		status             int
		body               string
		wantErr            string
	}{
		{"conforming", "GET", "/healthz", 200, `{"status":"ok","version":"dev"}`, ""},
		{"missing field", "GET", "/healthz", 200, `{"status":"ok"}`, "missing property 'version'"},
		{"wrong const", "GET", "/healthz", 200, `{"status":"fine","version":"dev"}`, "does not match api/openapi.yaml"},
		{"undocumented status", "GET", "/healthz", 418, `{"status":"ok","version":"dev"}`, "418"},
		{"undocumented route", "GET", "/api/v1/nothing-here", 200, `{}`, "is not in api/openapi.yaml"},
		{"unknown route 404", "GET", "/api/v1/nothing-here", 404, `{}`, ""},
		{"bad query value", "GET", "/api/v1/submissions?limit=abc", 200, `{"submissions":[]}`, "request GET /api/v1/submissions?limit=abc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := &spy{TB: t}
			h := Handler(s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}))
			req := httptest.NewRequest(c.method, c.path, nil)
			req.Header.Set("Authorization", "Bearer x")
			h.ServeHTTP(httptest.NewRecorder(), req)
			got := strings.Join(s.errs, "\n")
			switch {
			case c.wantErr == "" && got != "":
				t.Errorf("unexpected mismatch: %s", got)
			case c.wantErr != "" && !strings.Contains(got, c.wantErr):
				t.Errorf("want a mismatch mentioning %q, got %q", c.wantErr, got)
			}
		})
	}
}
