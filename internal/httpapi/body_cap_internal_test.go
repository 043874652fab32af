package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/problem"
	"github.com/npugrade/npugrade/internal/web"
)

// endless yields 'x' for ever and counts what it yielded.
type endless struct{ n *atomic.Int64 }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

// TestEveryRouteCapsItsBody: on every route the router mounts (API,
// runner protocol and pages), a body that declares one byte more than
// the route's cap is answered 413 problem+json before it is read, even
// without a token. The two upload routes answer oversize bodies
// themselves (they count them against the learner's upload limit) and
// have their own tests.
func TestEveryRouteCapsItsBody(t *testing.T) {
	t.Parallel()
	s := &Server{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics(nil), MetricsToken: "m", MaxUpload: 8 << 20,
		Pages: web.New(web.Deps{})}
	h := s.Handler()
	engine := h.(*gin.Engine)
	ts := httptest.NewServer(h)
	defer ts.Close()
	param := regexp.MustCompile(`[:*][A-Za-z0-9_]+`)
	routes := 0
	for _, r := range engine.Routes() {
		bc := s.bodyCapOf(r.Path)
		if bc.handlerRefuses {
			continue
		}
		routes++
		var sent atomic.Int64
		req, _ := http.NewRequest(r.Method, ts.URL+param.ReplaceAllString(r.Path, "1"), io.LimitReader(endless{&sent}, bc.limit+1))
		req.ContentLength = bc.limit + 1
		req.Header.Set("Content-Type", "application/json")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Errorf("%s %s with %d bytes: %v", r.Method, r.Path, bc.limit+1, err)
			continue
		}
		var p problem.Detail
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") ||
			err != nil || p.Status != http.StatusRequestEntityTooLarge {
			t.Errorf("%s %s with %d bytes: %d %q %+v, want a 413 problem", r.Method, r.Path, bc.limit+1, resp.StatusCode, resp.Header.Get("Content-Type"), p)
		}
		if r.Method != http.MethodHead && !strings.Contains(p.Detail, "larger than") {
			t.Errorf("%s %s: detail %q", r.Method, r.Path, p.Detail)
		}
	}
	if routes < 50 {
		t.Errorf("only %d routes checked", routes)
	}
}
