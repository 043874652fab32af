package problem_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/problem"
)

// TestStatusAndCodeAgree: every domain code the map names comes back from
// its status, and a code it does not name is a 500 that is not shown.
func TestStatusAndCodeAgree(t *testing.T) {
	t.Parallel()
	for _, code := range []string{domain.EINVALID, domain.ENOTFOUND, domain.EUNAUTHORIZED, domain.EFORBIDDEN,
		domain.ECONFLICT, domain.ETOOLARGE, domain.ERATELIMIT, domain.EUNAVAILABLE, domain.ESTORAGE} {
		st, ok := problem.Status(code)
		if !ok || st < 400 || problem.Code(st) != code {
			t.Errorf("%s: status %d %v, back to %s", code, st, ok, problem.Code(st))
		}
	}
	if st, ok := problem.Status(domain.EINTERNAL); ok || st != http.StatusInternalServerError {
		t.Errorf("internal: %d %v", st, ok)
	}
}

// TestDecode: a client reads a problem as the server wrote it (every
// problem kept), and a body that is not one keeps its text.
func TestDecode(t *testing.T) {
	t.Parallel()
	e := problem.Decode(422, []byte(`{"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"the submission is not valid","problems":["a","b"]}`))
	if e.Code != domain.EINVALID || e.Message != "the submission is not valid" || strings.Join(e.Problems, ",") != "a,b" {
		t.Errorf("problem: %+v", e)
	}
	e = problem.Decode(502, []byte("  bad gateway from the proxy \n"))
	if e.Code != domain.EINTERNAL || e.Message != "HTTP 502: bad gateway from the proxy" {
		t.Errorf("not a problem: %+v", e)
	}
	if e := problem.Decode(429, nil); e.Code != domain.ERATELIMIT || !strings.Contains(e.Message, "Too Many Requests") {
		t.Errorf("empty body: %+v", e)
	}
}
