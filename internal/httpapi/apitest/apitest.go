// Package apitest holds the HTTP test suites to api/openapi.yaml: Handler
// wraps a handler, Proxy fronts a running server, and both check every
// request and response that passes through against the document with
// kin-openapi, so the server and its contract cannot drift apart. Only
// tests import it.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// SpecPath is api/openapi.yaml of this checkout.
func SpecPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "api", "openapi.yaml")
}

var (
	loadOnce sync.Once
	router   routers.Router
	loadErr  error
)

// Router loads, validates and routes api/openapi.yaml once per test binary.
func Router() (routers.Router, error) {
	loadOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile(SpecPath())
		if err != nil {
			loadErr = fmt.Errorf("load api/openapi.yaml: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			loadErr = fmt.Errorf("api/openapi.yaml: %w", err)
			return
		}
		// Test servers listen on any loopback port: route by path only.
		doc.Servers = openapi3.Servers{{URL: "/"}}
		router, loadErr = gorillamux.NewRouter(doc)
		registerDecoders()
	})
	return router, loadErr
}

// registerDecoders teaches openapi3filter the media types the API serves
// besides JSON and forms: pages, CSV, notebooks.
func registerDecoders() {
	text := func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	}
	for _, ct := range []string{"text/html", "text/csv", "text/javascript", "text/css", "image/svg+xml", "image/png"} {
		openapi3filter.RegisterBodyDecoder(ct, text)
	}
	jsonish := func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		var v any
		err := json.NewDecoder(r).Decode(&v)
		return v, err
	}
	openapi3filter.RegisterBodyDecoder("application/x-ipynb+json", jsonish)
	openapi3filter.RegisterBodyDecoder("application/problem+json", jsonish)
}

// Handler returns h behind a check of every exchange against the
// document; a mismatch fails t (from any goroutine: t.Errorf is safe).
func Handler(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	r, err := Router()
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		check(t, r, h, w, req)
	})
}

// Proxy starts a reverse proxy to a running server at target that checks
// every exchange against the document, and returns its URL. Point every
// client of the test (learners, runners) at it.
func Proxy(t testing.TB, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	// A server that stops, or a client that gives up on a long poll, ends
	// the exchange in the proxy: that answer is the proxy's, not the
	// server's, so it is marked and not checked.
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		w.Header().Set(proxyErrorHeader, "1")
		w.WriteHeader(http.StatusBadGateway)
	}
	ts := httptest.NewServer(Handler(t, rp))
	t.Cleanup(ts.Close)
	return ts.URL
}

const proxyErrorHeader = "X-Apitest-Proxy-Error"

// maxChecked bounds the bodies kept for checking: bigger bodies (large
// notebooks, CSV exports) pass through with only their status and
// headers checked.
const maxChecked = 8 << 20

func check(t testing.TB, r routers.Router, h http.Handler, w http.ResponseWriter, req *http.Request) {
	route, params, err := r.FindRoute(req)
	if err != nil {
		// Unknown paths and methods are part of the tests too; they must
		// answer 404 or 405, which the server's tests check themselves.
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, req)
		if s := rec.status(); s != http.StatusNotFound && s != http.StatusMethodNotAllowed {
			t.Errorf("openapi: %s %s is not in api/openapi.yaml but answered %d", req.Method, req.URL.Path, s)
		}
		return
	}
	var body []byte
	if req.Body != nil && req.ContentLength <= maxChecked {
		body, _ = io.ReadAll(io.LimitReader(req.Body, maxChecked+1))
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	in := &openapi3filter.RequestValidationInput{
		Request: req.Clone(req.Context()), PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			MultiError:            true,
			IncludeResponseStatus: true,
			AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
			ExcludeRequestBody:    body == nil || len(body) > maxChecked,
		},
	}
	in.Request.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recorder{ResponseWriter: w}
	h.ServeHTTP(rec, req)
	status := rec.status()
	if rec.Header().Get(proxyErrorHeader) != "" {
		return
	}
	// A request the server refused may well not match the document: that
	// is what the server is for. Accepted requests must match.
	if status < 400 {
		if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
			t.Errorf("openapi: request %s %s (answered %d) does not match api/openapi.yaml: %v", req.Method, req.URL.RequestURI(), status, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: rec.Header(),
		Body:    io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true, ExcludeResponseBody: rec.overflow},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		t.Errorf("openapi: response %d to %s %s does not match api/openapi.yaml: %v\nbody: %s", status, req.Method, req.URL.RequestURI(),
			err, excerpt(rec.body.Bytes()))
	}
}

func excerpt(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// recorder passes the response through and keeps a copy of its status and
// first maxChecked bytes.
type recorder struct {
	http.ResponseWriter
	code     int
	body     bytes.Buffer
	overflow bool
}

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if !r.overflow {
		if r.body.Len()+len(b) > maxChecked {
			r.overflow = true
		} else {
			r.body.Write(b)
		}
	}
	return r.ResponseWriter.Write(b)
}

// Flush keeps streaming responses (long polls, exports) streaming.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer (deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
