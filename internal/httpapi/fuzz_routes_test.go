package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// hostileValues are what the attack found in ids and filters: NUL,
// bytes that are not UTF-8, an overlong '/', and the usual suspects.
var hostileValues = []string{"%00", "%ff", "%c0%af", "x%00y", strings.Repeat("9", 400), "-1", "99999999999999999999", "..%2f..%2fetc", "%27%20OR%201%3D1--", "%e2%80%ae"}

// hostileBodies go to every route that takes a body.
var hostileBodies = []string{
	"",
	"\xff\xfe\x00",
	`{"runner_id": "\u0000", "lease_token": "\u0000", "name": "\u0000x", "profile": "\u0000", "exercise": "\u0000", "reason": "\u0000\ud800", "mode": "\u0000", "labels": {"\u0000": "\u0000"}, "slots": -5, "wait_seconds": 1e308}`,
	"exercise=%00&token=%ff&csrf=%00&name=%00&role=%00",
}

// TestEveryRouteSurvivesHostileInput drives every operation of
// api/openapi.yaml with hostile path parameters, query parameters and
// bodies, as each role (and none, and a browser session of each role),
// and requires that none answers 5xx, on SQLite and Postgres.
func TestEveryRouteSurvivesHostileInput(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type op struct {
		method, path string
		query        []string
	}
	var ops []op
	for path, item := range doc.Paths.Map() {
		for method, o := range item.Operations() {
			var q []string
			for _, p := range o.Parameters {
				if p.Value != nil && p.Value.In == "query" {
					q = append(q, p.Value.Name)
				}
			}
			ops = append(ops, op{strings.ToUpper(method), path, q})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	if len(ops) < 40 {
		t.Fatalf("only %d operations in api/openapi.yaml", len(ops))
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			type who struct{ token, cookie string }
			var callers []who
			callers = append(callers, who{})
			for _, r := range []domain.Role{domain.RoleLearner, domain.RoleInstructor, domain.RoleAdmin, domain.RoleRunner} {
				u, tok, err := e.db.CreateUser(e.ctx, "u-"+string(r), r)
				if err != nil {
					t.Fatal(err)
				}
				sid, _, err := e.db.CreateWebSession(e.ctx, u.ID, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				callers = append(callers, who{token: tok}, who{cookie: sid})
				if r == domain.RoleRunner {
					e.register(t, tok, "fuzz")
				}
			}
			var mu sync.Mutex
			var failures []string
			var n int
			sem := make(chan struct{}, 8)
			var wg sync.WaitGroup
			for _, o := range ops {
				for _, v := range hostileValues {
					path := o.path
					for strings.Contains(path, "{") {
						i, j := strings.Index(path, "{"), strings.Index(path, "}")
						path = path[:i] + v + path[j+1:]
					}
					query := "?x=" + v
					for _, q := range o.query {
						query += "&" + q + "=" + v
					}
					bodies := []string{""}
					if o.method != "GET" {
						bodies = hostileBodies
					}
					for _, body := range bodies {
						for _, c := range callers {
							wg.Add(1)
							sem <- struct{}{}
							go func() {
								defer wg.Done()
								defer func() { <-sem }()
								req, err := http.NewRequest(o.method, e.url+path+query, bytes.NewReader([]byte(body)))
								if err != nil {
									return // not a URL a client can send
								}
								if strings.HasPrefix(body, "exercise=") {
									req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
								} else {
									req.Header.Set("Content-Type", "application/json")
								}
								if c.token != "" {
									req.Header.Set("Authorization", "Bearer "+c.token)
								}
								if c.cookie != "" {
									req.Header.Set("Cookie", "npugrade_session="+c.cookie)
								}
								client := &http.Client{Timeout: 40 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
								resp, err := client.Do(req)
								mu.Lock()
								defer mu.Unlock()
								n++
								if err != nil {
									failures = append(failures, fmt.Sprintf("%s %s%s: %v", o.method, path, query, err))
									return
								}
								b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
								resp.Body.Close()
								if resp.StatusCode >= 500 {
									failures = append(failures, fmt.Sprintf("%s %s%s body %.40q: %d %s", o.method, path, query, body, resp.StatusCode, b))
								}
							}()
						}
					}
				}
			}
			wg.Wait()
			sort.Strings(failures)
			for i, f := range failures {
				if i == 400 {
					t.Errorf("… and %d more", len(failures)-400)
					break
				}
				t.Error(f)
			}
			t.Logf("%d requests over %d operations", n, len(ops))
		})
	}
}

// TestBadBytesInIdsAndFilters: NUL and non-UTF-8 bytes in an id are a 404
// problem, in a filter a 422 problem (the gradebook export used to answer
// 200 with only its header row), on both databases.
func TestBadBytesInIdsAndFilters(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			staff := e.token(t, "tom", domain.RoleInstructor)
			for path, want := range map[string]int{
				"/api/v1/submissions/%00":                 404,
				"/api/v1/submissions/%ff/history":         404,
				"/api/v1/exercises/%c0%af/score":          404,
				"/api/v1/submissions?exercise=%00":        422,
				"/api/v1/gradebook.csv?learner=%00":       422,
				"/api/v1/gradebook.csv?exercise=ch1%ff":   422,
				"/dashboard/submissions/x%00y":            404,
				"/api/v1/submissions?learner=" + "%e2%28": 422,
			} {
				st, body, hdr := e.call(t, "GET", path, staff, nil)
				if st != want || hdr.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s: %d %s %.200s, want a %d problem", path, st, hdr.Get("Content-Type"), body, want)
				}
			}
		})
	}
}
