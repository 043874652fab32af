package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/runnerproto"
)

// Timeouts bound how long one connection may hold the server. Without
// them a slow or idle client keeps a connection (and its goroutine and
// buffers) open for ever: anyone who can reach the port can exhaust the
// server with a few hundred of them.
type Timeouts struct {
	ReadHeader time.Duration // request line and headers
	Read       time.Duration // the whole request, body included (an 8 MiB upload on a slow link)
	Write      time.Duration // the response; long polls and exports extend their own
	Idle       time.Duration // a keep-alive connection between requests
	// MaxHeaderBytes caps the request line and headers.
	MaxHeaderBytes int
}

// DefaultTimeouts are the limits of npugrade serve.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Read: 2 * time.Minute, Write: time.Minute, Idle: 30 * time.Second, MaxHeaderBytes: 64 << 10}
}

// HTTPServer is the http.Server for Handler with the connection limits t.
func (s *Server) HTTPServer(t Timeouts) *http.Server {
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		WriteTimeout: t.Write, IdleTimeout: t.Idle, MaxHeaderBytes: t.MaxHeaderBytes}
}

// extendWrite gives one response longer than the server's WriteTimeout:
// a long poll waits up to d before it writes anything, an export streams
// for as long as it has rows.
func extendWrite(c *gin.Context, d time.Duration) {
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(d))
}

// MaxPollsPerToken bounds a runner token's concurrent long polls: a
// runner needs one per slot, and a token that opens thousands would hold
// as many goroutines and connections.
const MaxPollsPerToken = 64

// pollLimiter counts open long polls per runner token (by its hash) in
// this process (each process bounds its own connections). A claim holds
// its place before the token is checked (the claim's statement checks
// it); a bad token's place goes with its 401.
type pollLimiter struct {
	mu   sync.Mutex
	open map[string]int
}

// acquire reserves a poll for token hash user, or reports that it holds too many.
func (p *pollLimiter) acquire(user string) (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open == nil {
		p.open = map[string]int{}
	}
	if p.open[user] >= MaxPollsPerToken {
		return nil, false
	}
	p.open[user]++
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.open[user]--; p.open[user] <= 0 {
			delete(p.open, user)
		}
	}, true
}

// boundPoll is claimJob's guard: it refuses a poll beyond the token's
// bound with 429 and lets the others write past WriteTimeout.
func (s *Server) boundPoll(c *gin.Context, token string) (release func(), ok bool) {
	release, ok = s.polls.acquire(auth.HashToken(token))
	if !ok {
		c.Header("Retry-After", "5")
		s.problem(c, domain.Errorf(domain.ERATELIMIT, "this runner token already holds %d open claims", MaxPollsPerToken))
		return nil, false
	}
	extendWrite(c, runnerproto.MaxPoll+15*time.Second)
	return release, true
}

// Request bodies are capped on every route, before any handler reads
// them: a JSON request or a form is at most defaultBodyLimit, and the
// few routes that take a notebook, a roster or a runner's registration
// have their own cap (bodyCapOf). A body that declares a larger length
// is refused with 413 before a byte of it is read; one sent without a
// length is cut at the cap (http.MaxBytesReader, which also closes the
// connection instead of draining it) and refused by the handler that
// reads it. Without this a runner token could register 85 MB bodies: each
// cost the server its size several times over, and was stored.
const (
	defaultBodyLimit = 1 << 20
	// registerBody bounds a runner's registration: a name, at most 64
	// labels of 256 bytes and an environment report of a few lines.
	registerBody = 64 << 10
)

// bodyCap is one route's body limit. handlerRefuses: the handler answers
// an oversize body itself (an upload refused is counted against the
// learner's upload limit), so the declared length is not checked here.
type bodyCap struct {
	limit          int64
	handlerRefuses bool
}

// bodyCapOf is the cap of route (gin's pattern; "" for no route).
func (s *Server) bodyCapOf(route string) bodyCap {
	switch route {
	case "/api/v1/submissions", "/exercises/:id/submissions":
		return bodyCap{limit: s.maxUpload() + formOverhead, handlerRefuses: true}
	case runnerproto.BasePath + "/jobs/:id/complete":
		return bodyCap{limit: completeRunnerBody}
	case "/api/v1/roster", "/admin/users/import":
		return bodyCap{limit: accounts.MaxBytes + formOverhead}
	case runnerproto.BasePath + "/register":
		return bodyCap{limit: registerBody}
	}
	return bodyCap{limit: defaultBodyLimit}
}

// maxUpload is the largest accepted notebook (MaxUpload, 8 MiB unset).
func (s *Server) maxUpload() int64 {
	if s.MaxUpload <= 0 {
		return 8 << 20
	}
	return s.MaxUpload
}

// capBodies applies bodyCapOf to every request.
func (s *Server) capBodies() gin.HandlerFunc {
	return func(c *gin.Context) {
		if c.Request.Body == nil || c.Request.Body == http.NoBody {
			return
		}
		bc := s.bodyCapOf(c.FullPath())
		if c.Request.ContentLength > bc.limit && !bc.handlerRefuses {
			// Not read: the server closes the connection after the answer.
			c.Header("Connection", "close")
			s.problem(c, tooLarge(bc.limit))
			c.Abort()
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, bc.limit)
	}
}

// tooLarge is the problem of a body over limit bytes.
func tooLarge(limit int64) error {
	return domain.Errorf(domain.ETOOLARGE, "the request body is larger than %s", byteSize(limit))
}

// byteSize writes n as KiB or MiB when it is a whole number of them.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// bindJSON decodes the request's JSON body into v. A body over the
// route's cap is answered 413; any other fault with invalid(err) (which
// words it as the route's EINVALID problem). It reports whether v was
// decoded.
func (s *Server) bindJSON(c *gin.Context, v any, invalid func(err error) error) bool {
	err := c.ShouldBindJSON(v)
	if err == nil {
		return true
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		s.problem(c, tooLarge(mbe.Limit))
	} else {
		s.problem(c, invalid(err))
	}
	return false
}
