package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store"
)

// runnerRoutes mounts the runner protocol (api/openapi.yaml, /api/runner/v1).
// Only runner tokens are accepted here.
func (s *Server) runnerRoutes(r *gin.Engine) {
	// A claim authenticates in its own statement (claimJob).
	r.POST(runnerproto.BasePath+"/jobs/claim", s.claimJob)
	g := r.Group(runnerproto.BasePath, s.authenticate(true))
	g.POST("/register", s.registerRunner)
	g.POST("/jobs/:id/heartbeat", s.heartbeatJob)
	g.POST("/jobs/:id/complete", s.completeJob)
	g.POST("/jobs/:id/fail", s.failJob)
	g.POST("/jobs/:id/release", s.releaseJob)
	g.POST("/drain", s.drainRunner)
}

// runnerState caches registered runners' environment reports for routing
// (the database holds them too, for other server processes and restarts).
type runnerState struct {
	mu      sync.Mutex
	reports map[string]envprobe.Report
}

func (s *Server) registerRunner(c *gin.Context) {
	var req runnerproto.RegisterRequest
	if !s.bindJSON(c, &req, func(err error) error { return domain.Errorf(domain.EINVALID, "invalid registration: %v", err) }) {
		return
	}
	u := currentUser(c)
	if p := registrationProblems(req); len(p) > 0 {
		s.problem(c, &domain.Error{Code: domain.EINVALID, Message: "invalid registration", Problems: p})
		return
	}
	// A token with no scope gets the zero scope: cpu only (fleet.DefaultRunnerProfiles).
	scope, _, err := s.DB.RunnerScopeOf(c.Request.Context(), u.ID)
	if err != nil {
		s.problem(c, err)
		return
	}
	profile := req.Report.Profile
	if profile == "" {
		profile = "cpu"
	}
	if why := scope.Refuses(profile, req.Labels); why != "" {
		s.Log.Warn("runner registration refused", "user", u.Name, "profile", profile, "reason", why)
		s.problem(c, domain.Errorf(domain.EFORBIDDEN, "%s", why))
		return
	}
	if req.Name == "" {
		req.Name = u.Name
	}
	if req.Report.Profile == "" {
		req.Report.Profile = "cpu"
	}
	if req.Version != "" && len(req.Version) <= 64 {
		// Shown with the labels, so instructors see which build grades.
		if req.Labels == nil {
			req.Labels = map[string]string{}
		}
		req.Labels["version"] = req.Version
	}
	id := runnerID(u.ID, req.Name)
	if err := s.DB.UpsertRunner(c.Request.Context(), store.RunnerRegistration{ID: id, Name: req.Name, UserID: u.ID, Slots: req.Slots,
		Labels: req.Labels, Profile: req.Report.Profile, Verdict: req.Report.Verdict, Report: req.Report,
		WarmSpares: warmSpares(req.WarmSpares)}); errors.Is(err, store.ErrRunnerTaken) {
		s.problem(c, domain.Errorf(domain.ECONFLICT, "runner id %s belongs to another token; register under another name", id))
		return
	} else if err != nil {
		s.problem(c, err)
		return
	}
	s.runnerReports().set(id, req.Report)
	s.Log.Info("runner registered", "runner", id, "profile", req.Report.Profile, "verdict", req.Report.Verdict, "slots", req.Slots,
		"runner_version", req.Version)
	c.JSON(http.StatusOK, runnerproto.RegisterResponse{
		RunnerID: id, Protocol: runnerproto.Version, LeaseTTLSeconds: s.Dispatch.LeaseTTL.Seconds(),
		PollSeconds: runnerproto.MaxPoll.Seconds(), ServerVersion: buildinfo.Version(),
	})
}

// runnerID is the id of the runner name registered by user: a runner is
// its token's user and its name (npugrade runner --name, by default the
// host name), so the same runner registering again (a restart, a retry)
// gets the same id and updates its row instead of adding one. The name
// leads the id, for people reading logs; the hash of both keeps ids of
// different users and long names apart.
func runnerID(user int64, name string) string {
	h := sha256.Sum256([]byte(strconv.FormatInt(user, 10) + "\x00" + name))
	return cutRunes(name, 64) + "-" + hex.EncodeToString(h[:6])
}

// cutRunes is s cut to at most n bytes on a character boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// registrationProblems lists the fields of a registration that are not
// short NUL-free text (they are stored and shown).
func registrationProblems(req runnerproto.RegisterRequest) []string {
	var p []string
	check := func(what, v string) {
		if !cleanText(v, maxParamBytes) {
			p = append(p, what+" must be text without NUL, at most 256 bytes")
		}
	}
	check("name", req.Name)
	check("report.profile", req.Report.Profile)
	check("report.verdict", req.Report.Verdict)
	if len(req.Labels) > 64 {
		p = append(p, "at most 64 labels")
	}
	for k, v := range req.Labels {
		check("label "+store.Printable(truncate(k, 32)), k+v)
	}
	if req.Slots < 0 || req.Slots > 1024 {
		p = append(p, "slots must be 0–1024")
	}
	return append(p, warmSpareProblems(req.WarmSpares)...)
}

// warmSpareProblems lists what is out of range in a runner's warm spares
// report (nil is fine: the runner keeps none).
func warmSpareProblems(ws *runnerproto.WarmSpares) []string {
	if ws == nil {
		return nil
	}
	var p []string
	if ws.PerSlot < 0 || ws.PerSlot > 1024 {
		p = append(p, "warm_spares.per_slot must be 0–1024")
	}
	if ws.Kept < 0 || ws.Kept > 1<<20 {
		p = append(p, "warm_spares.kept must be 0–1048576")
	}
	if ws.Ready < 0 || ws.Ready > ws.Kept {
		p = append(p, "warm_spares.ready must be 0–kept")
	}
	if ws.MemoryBytes < 0 || ws.MemoryBytes > 1<<50 {
		p = append(p, "warm_spares.memory_bytes must be 0–2^50")
	}
	return p
}

// warmSpares converts the wire form (nil: none kept).
func warmSpares(ws *runnerproto.WarmSpares) fleet.WarmSpares {
	if ws == nil {
		return fleet.WarmSpares{}
	}
	return fleet.WarmSpares{PerSlot: ws.PerSlot, Kept: ws.Kept, Ready: ws.Ready, MemoryBytes: ws.MemoryBytes}
}

func (s *Server) runnerReports() *runnerState {
	s.runnersOnce.Do(func() { s.runners = &runnerState{reports: map[string]envprobe.Report{}} })
	return s.runners
}

func (rs *runnerState) set(id string, r envprobe.Report) {
	rs.mu.Lock()
	rs.reports[id] = r
	rs.mu.Unlock()
}

func (rs *runnerState) get(id string) (envprobe.Report, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.reports[id]
	return r, ok
}

// matcher routes by the runner's attested environment.
func matcher(rep envprobe.Report) domain.Matcher { return rep.Satisfies }

// claimJob leases a job to a runner, long-polling up to the wait it asks
// for. The claim's statement also authenticates the token and checks
// that the runner is its own and not draining (store.ClaimAuth): a claim
// that finds a job is one statement, where it was four (the per-claim
// work is what limits claims per second, see make bench). Refused tokens
// get authenticate's answers (401, 429, 403) all the same.
func (s *Server) claimJob(c *gin.Context) {
	token, ok := s.bearer(c)
	if !ok {
		return
	}
	release, ok := s.boundPoll(c, token)
	if !ok {
		return
	}
	defer release()
	req, rep, ok := s.claimRequest(c, token)
	if !ok {
		return
	}
	wait := time.Duration(req.WaitSeconds * float64(time.Second))
	if wait <= 0 || wait > runnerproto.MaxPoll {
		wait = runnerproto.MaxPoll
	}
	// A shutting-down server answers its long polls at once (204) instead
	// of holding Shutdown for up to MaxPoll.
	ctx, cancel := context.WithCancel(c.Request.Context())
	defer cancel()
	if s.Stopping != nil {
		go func() {
			select {
			case <-s.Stopping:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	g := s.Auth
	_, w := g.Limits()
	var refused error
	admit := func(t store.TokenCheck) (int64, error) {
		u, err := g.Admit(ctx, c.ClientIP(), c.Request.URL.Path, token, t)
		if err == nil {
			err = roleAllowed(u, true)
		}
		if err != nil {
			refused = err
			return 0, err
		}
		c.Set(userKey, u)
		return u.ID, nil
	}
	l, err := s.Dispatch.ClaimAs(ctx, store.ClaimAuth{Token: token, Addr: c.ClientIP(), Window: w, Role: domain.RoleRunner},
		admit, req.RunnerID, matcher(rep), wait)
	if refused != nil {
		s.authProblem(c, refused)
		return
	}
	if errors.Is(err, store.ErrRunnerDraining) {
		// No new jobs; answer after a short pause so that a runner that
		// keeps asking does not spin.
		sleepCtx(c.Request.Context(), min(wait, 2*time.Second))
		c.Status(http.StatusNoContent)
		return
	}
	if errors.Is(err, store.ErrRunnerUnknown) {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "runner %q is not registered with this token; register first", req.RunnerID))
		return
	}
	if err != nil {
		s.problem(c, err)
		return
	}
	if l == nil {
		c.Status(http.StatusNoContent)
		return
	}
	if c.Request.Context().Err() != nil {
		// The runner hung up (it is shutting down) while the job was being
		// leased: hand the job straight back instead of letting the lease
		// run out and count an attempt.
		if err := s.Dispatch.Release(context.WithoutCancel(c.Request.Context()), l.JobID, l.Token); err != nil {
			s.Log.Warn("release job of a runner that hung up", "job", l.JobID, "err", err)
		}
		return
	}
	if acceptsNotebook(c.GetHeader("Accept")) && len(l.Notebook) > 0 {
		writeLeaseNotebook(c, l)
		return
	}
	writeLease(c, l)
}

// claimRequest reads a claim's body and its runner's report. A claim it
// refuses is authenticated first, so that a bad token still gets 401.
func (s *Server) claimRequest(c *gin.Context, token string) (req runnerproto.ClaimRequest, rep envprobe.Report, ok bool) {
	refuse := func(err error) {
		if _, ok := s.plainAuth(c, token); ok {
			s.problem(c, err)
		}
	}
	// A claim is a runner id and a wait: bounded like a heartbeat, and
	// read before the token is checked, so a stranger cannot make the
	// server read a large body.
	if err := json.NewDecoder(http.MaxBytesReader(c.Writer, c.Request.Body, smallRunnerBody)).Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			refuse(domain.Errorf(domain.ETOOLARGE, "the request body is larger than %d bytes", mbe.Limit))
			return req, rep, false
		}
		refuse(domain.Errorf(domain.EINVALID, "invalid claim: %v", err))
		return req, rep, false
	}
	if !cleanText(req.RunnerID, maxParamBytes) {
		refuse(domain.Errorf(domain.ENOTFOUND, "runner %s is not registered with this token; register first", store.Printable(truncate(req.RunnerID, 64))))
		return req, rep, false
	}
	// The report routes the claim (the database holds it for runners
	// registered with another server).
	rep, ok = s.runnerReports().get(req.RunnerID)
	if !ok {
		rep, ok = s.DB.RunnerReport(c.Request.Context(), req.RunnerID)
	}
	if !ok {
		refuse(domain.Errorf(domain.ENOTFOUND, "runner %q is not registered with this token; register first", req.RunnerID))
		return req, rep, false
	}
	if rep.Verdict == "unsupported" && rep.Profile != "cpu" {
		// Said only to the runner's own token; others get 404.
		u, ok := s.plainAuth(c, token)
		if !ok {
			return req, rep, false
		}
		if own, _, err := s.DB.TouchOwnRunner(c.Request.Context(), req.RunnerID, u.ID); err != nil || !own {
			s.problem(c, domain.Errorf(domain.ENOTFOUND, "runner %q is not registered with this token; register first", req.RunnerID))
		} else {
			s.problem(c, domain.Errorf(domain.EFORBIDDEN, "runner %q reported an unsupported environment; it gets no jobs", req.RunnerID))
		}
		return req, rep, false
	}
	return req, rep, true
}

// plainAuth authenticates a runner route's request on its own (as
// authenticate does) and answers when it is refused.
func (s *Server) plainAuth(c *gin.Context, token string) (domain.User, bool) {
	u, err := s.Auth.User(c.Request.Context(), c.ClientIP(), c.Request.URL.Path, token)
	if err == nil {
		err = roleAllowed(u, true)
	}
	if err != nil {
		s.authProblem(c, err)
		return u, false
	}
	c.Set(userKey, u)
	return u, true
}

// writeLease answers a claim with l. The notebook is spliced into the
// JSON as it is stored: encoding/json would compact and re-validate every
// byte of it (a fifth of a claim's CPU for a 40 KB notebook), and the
// server wrote those bytes itself as JSON at intake.
func writeLease(c *gin.Context, l *domain.Lease) {
	nb := l.Notebook
	if len(nb) == 0 {
		nb = json.RawMessage("null")
	}
	head := *l
	head.Notebook = json.RawMessage(leaseNotebookMark)
	b, err := json.Marshal(head)
	i := bytes.Index(b, []byte(`"notebook":`+leaseNotebookMark))
	if err != nil || i < 0 {
		c.JSON(http.StatusOK, l)
		return
	}
	i += len(`"notebook":`)
	// One buffer, one write with its length: the parts written one by one
	// went out as chunks, a system call each. The buffers are reused: a
	// notebook-sized allocation per claim kept the collector busy.
	buf := leaseBuffers.Get().(*[]byte)
	out := append(append(append((*buf)[:0], b[:i]...), nb...), b[i+len(leaseNotebookMark):]...)
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Header("Content-Length", strconv.Itoa(len(out)))
	c.Header("Vary", "Accept")
	c.Status(http.StatusOK)
	// An error is the runner hanging up; its lease runs out and the reaper returns the job.
	_, _ = c.Writer.Write(out)
	if cap(out) <= maxPooledLease {
		*buf = out
		leaseBuffers.Put(buf)
	}
}

// acceptsNotebook reports whether an Accept header lists
// runnerproto.NotebookMediaType (with a q above 0).
func acceptsNotebook(accept string) bool {
	for accept != "" {
		var part string
		part, accept, _ = strings.Cut(accept, ",")
		mt, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(mt), runnerproto.NotebookMediaType) {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			if k, v, _ := strings.Cut(p, "="); strings.EqualFold(strings.TrimSpace(k), "q") {
				if q, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil || q <= 0 {
					return false
				}
			}
		}
		return true
	}
	return false
}

// writeLeaseNotebook answers a claim that accepts the notebook media type:
// the stored notebook is the body, written as it is (no copy, no JSON
// around it), and the rest of the lease is runnerproto.LeaseMetaHeader.
func writeLeaseNotebook(c *gin.Context, l *domain.Lease) {
	head := *l
	head.Notebook = nil
	meta, err := json.Marshal(head)
	if err != nil {
		writeLease(c, l)
		return
	}
	// Without its (null) notebook: a `,"notebook":` with an unescaped
	// quote occurs in JSON only as a member, never inside a string.
	meta = bytes.Replace(meta, []byte(`,"notebook":null`), nil, 1)
	h := c.Writer.Header()
	h.Set(runnerproto.LeaseMetaHeader, string(asciiJSON(meta)))
	h.Set("Content-Type", runnerproto.NotebookMediaType)
	h.Set("Content-Length", strconv.Itoa(len(l.Notebook)))
	h.Set("Vary", "Accept")
	c.Status(http.StatusOK)
	// An error is the runner hanging up; its lease runs out and the reaper returns the job.
	_, _ = c.Writer.Write(l.Notebook)
}

// asciiJSON escapes b's non-ASCII characters (which JSON has only inside
// strings) as \u escapes, so that b may be a header value.
func asciiJSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] < utf8.RuneSelf {
		i++
	}
	if i == len(b) {
		return b
	}
	out := append(make([]byte, 0, len(b)+16), b[:i]...)
	for _, r := range string(b[i:]) {
		switch {
		case r < utf8.RuneSelf:
			out = append(out, byte(r))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return out
}

// leaseBuffers holds the buffers of written leases, up to maxPooledLease
// bytes each (a larger notebook's buffer is left to the collector).
var leaseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

const maxPooledLease = 1 << 20

// leaseNotebookMark stands for the notebook while the rest of a lease is
// encoded; no other field can contain it unescaped.
const leaseNotebookMark = `"\u0000notebook"`

// drainRunner records that a runner stopped claiming (SIGTERM): it
// finishes or hands back the jobs it holds, and instructors see it draining.
func (s *Server) drainRunner(c *gin.Context) {
	var req runnerproto.DrainRequest
	if !s.bindJSON(c, &req, func(err error) error { return domain.Errorf(domain.EINVALID, "invalid drain request: %v", err) }) {
		return
	}
	if !s.ownRunner(c, req.RunnerID) {
		return
	}
	ok, err := s.DB.SetRunnerDraining(c.Request.Context(), req.RunnerID)
	if err != nil {
		s.problem(c, err)
		return
	}
	if !ok {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "runner %q is not registered", req.RunnerID))
		return
	}
	s.Log.Info("runner draining", "runner", req.RunnerID)
	s.audit(c, domain.AuditRunnerDrain, req.RunnerID, "the runner announced it (SIGTERM)")
	c.Status(http.StatusNoContent)
}

// ownRunner reports whether runner id was registered with the caller's
// token, answering 404 when not: a runner token acts only as the runners
// it registered, never as another token's.
func (s *Server) ownRunner(c *gin.Context, id string) bool {
	if !cleanText(id, maxParamBytes) {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "runner %s is not registered with this token; register first", store.Printable(truncate(id, 64))))
		return false
	}
	owner, ok, err := s.DB.RunnerOwner(c.Request.Context(), id)
	if err != nil {
		s.problem(c, err)
		return false
	}
	if !ok || owner != currentUser(c).ID {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "runner %q is not registered with this token; register first", id))
		return false
	}
	return true
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func jobID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	return id, err == nil
}

// Runner request bodies are capped per endpoint: a heartbeat or a release
// is a lease token, a failure a reason, a completion an executed notebook.
const (
	smallRunnerBody    = 4 << 10
	failRunnerBody     = 64 << 10
	completeRunnerBody = 96 << 20
	// unfencedBody is the most a completion may send without the lease
	// token in its header (checked before the body is read).
	unfencedBody = 1 << 20
)

// leaseCall decodes {lease_token, ...} of at most limit bytes and maps a
// lost lease to 409. A body larger than unfencedBody is read only after
// the lease named in the runnerproto.LeaseHeader header is checked, so a
// runner without a live lease cannot make the server read megabytes.
func (s *Server) leaseCall(c *gin.Context, limit int64, body any, token func() string, call func(ctx context.Context, id int64, token string) error) {
	id, ok := jobID(c)
	if !ok {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "job %q not found", c.Param("id")))
		return
	}
	header := c.GetHeader(runnerproto.LeaseHeader)
	if limit > unfencedBody {
		if header == "" {
			limit = unfencedBody
		} else if job, err := s.Queue.Job(c.Request.Context(), id); err != nil || job.State != domain.JobLeased || job.LeaseToken != header {
			s.problem(c, domain.Errorf(domain.ECONFLICT, "the lease on job %d is no longer yours", id))
			return
		}
	}
	if err := json.NewDecoder(http.MaxBytesReader(c.Writer, c.Request.Body, limit)).Decode(body); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.problem(c, domain.Errorf(domain.ETOOLARGE, "the request body is larger than %d bytes", mbe.Limit))
			return
		}
		s.problem(c, domain.Errorf(domain.EINVALID, "invalid body: %v", err))
		return
	}
	if !cleanText(token(), maxParamBytes) {
		// Not a token the server ever issued: no lease of this job.
		s.problem(c, domain.Errorf(domain.ECONFLICT, "the lease on job %d is no longer yours", id))
		return
	}
	if header != "" && header != token() {
		s.problem(c, domain.Errorf(domain.EINVALID, "the %s header and the body name different leases", runnerproto.LeaseHeader))
		return
	}
	err := call(c.Request.Context(), id, token())
	if errors.Is(err, domain.ErrLeaseLost) {
		s.problem(c, domain.Errorf(domain.ECONFLICT, "the lease on job %d is no longer yours", id))
		return
	}
	if err != nil {
		s.problem(c, err)
		return
	}
	if !c.Writer.Written() {
		c.Status(http.StatusNoContent)
	}
}

func (s *Server) heartbeatJob(c *gin.Context) {
	var req runnerproto.HeartbeatRequest
	s.leaseCall(c, smallRunnerBody, &req, func() string { return req.LeaseToken }, func(ctx context.Context, id int64, token string) error {
		if p := warmSpareProblems(req.WarmSpares); len(p) > 0 {
			return &domain.Error{Code: domain.EINVALID, Message: "invalid heartbeat", Problems: p}
		}
		cancel, err := s.Dispatch.Heartbeat(ctx, id, token)
		if err != nil {
			return err
		}
		// Only after the lease checked out, and only for this token's own
		// runner: a runner reports its own spares, nobody else's.
		if runnerID := strings.TrimSpace(req.RunnerID); req.WarmSpares != nil && runnerID != "" {
			if !s.ownRunner(c, runnerID) {
				return nil // answered
			}
			if _, err := s.DB.SetRunnerWarmSpares(ctx, runnerID, warmSpares(req.WarmSpares)); err != nil {
				s.Log.Warn("record warm spares", "runner", runnerID, "err", err)
			}
		}
		c.JSON(http.StatusOK, runnerproto.HeartbeatResponse{Cancel: cancel})
		return nil
	})
}

func (s *Server) completeJob(c *gin.Context) {
	var req runnerproto.CompleteRequest
	s.leaseCall(c, completeRunnerBody, &req, func() string { return req.LeaseToken }, func(ctx context.Context, id int64, token string) error {
		runnerID := strings.TrimSpace(req.RunnerID)
		if runnerID != "" && !s.ownRunner(c, runnerID) {
			return nil // answered
		}
		return s.Dispatch.Complete(ctx, id, token, runnerID, req.Result)
	})
}

func (s *Server) failJob(c *gin.Context) {
	var req runnerproto.FailRequest
	s.leaseCall(c, failRunnerBody, &req, func() string { return req.LeaseToken }, func(ctx context.Context, id int64, token string) error {
		return s.Dispatch.Fail(ctx, id, token, req.Reason)
	})
}

func (s *Server) releaseJob(c *gin.Context) {
	var req runnerproto.LeaseRequest
	s.leaseCall(c, smallRunnerBody, &req, func() string { return req.LeaseToken }, s.Dispatch.Release)
}

// audit records an action of the request's user; a failure to record is
// logged (the action itself has happened).
func (s *Server) audit(c *gin.Context, action, subject, detail string) {
	if err := s.DB.Audit(c.Request.Context(), currentUser(c), action, subject, detail); err != nil {
		s.Log.Warn("audit log", "action", action, "err", err)
	}
}
