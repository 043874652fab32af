package httpapi

import (
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

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
