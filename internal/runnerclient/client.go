// Package runnerclient is the remote runner's side of the runner protocol:
// an HTTP implementation of runner.Source that holds only a runner token,
// never database credentials.
package runnerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/problem"
	"github.com/npugrade/npugrade/internal/runner"
	"github.com/npugrade/npugrade/internal/runnerproto"
)

// Client talks to one server.
type Client struct {
	Server   string
	Token    string
	HTTP     *http.Client
	RunnerID string
	Wait     time.Duration
	// Lang, when set, is sent as Accept-Language on every request: the
	// server words the problems it answers with in the runner's language.
	Lang string
	// WarmSpares, when set, says what the runner's pre-started kernels
	// hold now; registration and heartbeats carry it to the server.
	WarmSpares func() *runnerproto.WarmSpares

	// jsonLeases is set once a notebook-form answer arrived without its
	// lease header (a proxy between runner and server strips unknown
	// headers): later claims ask for the JSON form only.
	jsonLeases atomic.Bool
}

func (c *Client) warmSpares() *runnerproto.WarmSpares {
	if c.WarmSpares == nil {
		return nil
	}
	return c.WarmSpares()
}

var (
	_ runner.Source  = (*Client)(nil)
	_ runner.Drainer = (*Client)(nil)
)

// Register announces the runner and remembers its id.
func (c *Client) Register(ctx context.Context, name string, slots int, labels map[string]string, rep envprobe.Report) (runnerproto.RegisterResponse, error) {
	var resp runnerproto.RegisterResponse
	err := c.call(ctx, "/register", runnerproto.RegisterRequest{Name: name, Slots: slots, Labels: labels, Version: buildinfo.Version(), Report: rep,
		WarmSpares: c.warmSpares()}, &resp)
	if err != nil {
		return resp, fmt.Errorf("register runner: %w", err)
	}
	if resp.Protocol != runnerproto.Version {
		return resp, fmt.Errorf("register runner: the server speaks runner protocol %d, this runner %d", resp.Protocol, runnerproto.Version)
	}
	c.RunnerID = resp.RunnerID
	return resp, nil
}

// Claim implements runner.Source. It asks for the notebook as the
// response body (runnerproto.NotebookMediaType): the lease's notebook is
// then the body's bytes as the server stored them, never decoded here. A
// server that answers with the Lease as JSON works all the same.
func (c *Client) Claim(ctx context.Context) (*domain.Lease, error) {
	wait := c.Wait
	if wait <= 0 {
		wait = runnerproto.MaxPoll
	}
	accept := runnerproto.NotebookMediaType + ", application/json;q=0.5"
	if c.jsonLeases.Load() {
		accept = "application/json"
	}
	resp, data, err := c.send(ctx, "/jobs/claim", "", runnerproto.ClaimRequest{RunnerID: c.RunnerID, WaitSeconds: wait.Seconds()}, accept)
	if err == errNoContent {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	l, err := decodeLease(resp.Header, data)
	if errors.Is(err, errNoLeaseHeader) {
		// This job's lease is lost to us (no token): the server's reaper
		// queues it again when the lease expires.
		c.jsonLeases.Store(true)
		return nil, fmt.Errorf("claim: %w; asking for the JSON lease form from now on", err)
	}
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	return l, nil
}

// errNoLeaseHeader: a notebook-form claim answer without
// runnerproto.LeaseMetaHeader.
var errNoLeaseHeader = errors.New("the notebook came without its " + runnerproto.LeaseMetaHeader + " header (stripped by a proxy?)")

// decodeLease reads a claim's 200 answer: the notebook as the body with
// the rest in runnerproto.LeaseMetaHeader, or the whole Lease as JSON.
func decodeLease(h http.Header, body []byte) (*domain.Lease, error) {
	var l domain.Lease
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	if !strings.EqualFold(strings.TrimSpace(mt), runnerproto.NotebookMediaType) {
		if err := json.Unmarshal(body, &l); err != nil {
			return nil, fmt.Errorf("decode lease: %w", err)
		}
		return &l, nil
	}
	meta := h.Get(runnerproto.LeaseMetaHeader)
	if meta == "" {
		return nil, errNoLeaseHeader
	}
	if err := json.Unmarshal([]byte(meta), &l); err != nil {
		return nil, fmt.Errorf("decode %s header: %w", runnerproto.LeaseMetaHeader, err)
	}
	l.Notebook = body
	return &l, nil
}

// Heartbeat implements runner.Source.
func (c *Client) Heartbeat(ctx context.Context, l *domain.Lease) (bool, error) {
	var resp runnerproto.HeartbeatResponse
	req := runnerproto.HeartbeatRequest{LeaseToken: l.Token}
	if ws := c.warmSpares(); ws != nil {
		req.RunnerID, req.WarmSpares = c.RunnerID, ws
	}
	err := c.callLease(ctx, fmt.Sprintf("/jobs/%d/heartbeat", l.JobID), l.Token, req, &resp)
	if err != nil {
		return false, fmt.Errorf("heartbeat job %d: %w", l.JobID, err)
	}
	return resp.Cancel, nil
}

// Complete implements runner.Source.
func (c *Client) Complete(ctx context.Context, l *domain.Lease, res domain.ExecutionResult) error {
	err := c.callLease(ctx, fmt.Sprintf("/jobs/%d/complete", l.JobID), l.Token, runnerproto.CompleteRequest{LeaseToken: l.Token, RunnerID: c.RunnerID, Result: res}, nil)
	if err != nil && err != errNoContent {
		return fmt.Errorf("complete job %d: %w", l.JobID, err)
	}
	return nil
}

// Fail implements runner.Source.
func (c *Client) Fail(ctx context.Context, l *domain.Lease, reason string) error {
	err := c.callLease(ctx, fmt.Sprintf("/jobs/%d/fail", l.JobID), l.Token, runnerproto.FailRequest{LeaseToken: l.Token, Reason: reason}, nil)
	if err != nil && err != errNoContent {
		return fmt.Errorf("fail job %d: %w", l.JobID, err)
	}
	return nil
}

// Release implements runner.Source.
func (c *Client) Release(ctx context.Context, l *domain.Lease) error {
	err := c.callLease(ctx, fmt.Sprintf("/jobs/%d/release", l.JobID), l.Token, runnerproto.LeaseRequest{LeaseToken: l.Token}, nil)
	if err != nil && err != errNoContent {
		return fmt.Errorf("release job %d: %w", l.JobID, err)
	}
	return nil
}

// Drain implements runner.Drainer: the server marks this runner draining.
func (c *Client) Drain(ctx context.Context) error {
	err := c.call(ctx, "/drain", runnerproto.DrainRequest{RunnerID: c.RunnerID}, nil)
	if err != nil && err != errNoContent {
		return fmt.Errorf("announce drain: %w", err)
	}
	return nil
}

var errNoContent = fmt.Errorf("no content")

// ServerError is a problem the server answered with (not a lost lease):
// its status and its message, worded in the client's Lang.
type ServerError struct {
	Status  int
	Message string
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("server answered %d: %s", e.Status, e.Message)
}

// defaultHTTP is the client of a Client without its own. Its transport
// keeps up to 64 idle connections to the server (the most long polls a
// token may hold), where http.DefaultTransport keeps 2: a runner of more
// slots would otherwise open a new connection for most claims.
var defaultHTTP = &http.Client{Timeout: runnerproto.MaxPoll + 30*time.Second, Transport: func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}()}

func (c *Client) call(ctx context.Context, path string, body, out any) error {
	return c.callLease(ctx, path, "", body, out)
}

// callLease is call with the lease token also in runnerproto.LeaseHeader,
// so that the server checks the lease before it reads the body.
func (c *Client) callLease(ctx context.Context, path, lease string, body, out any) error {
	_, data, err := c.send(ctx, path, lease, body, "")
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// maxResponse bounds what the client reads of an answer.
const maxResponse = 128 << 20

// send posts body as JSON (with lease in runnerproto.LeaseHeader when
// set, and accept as the Accept header when set) and returns a 2xx
// answer's response and body; errNoContent for 204, a lost lease for 409,
// the problem's detail for other errors.
func (c *Client) send(ctx context.Context, path, lease string, body any, accept string) (*http.Response, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.Server, "/")+runnerproto.BasePath+path, bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if lease != "" {
		req.Header.Set(runnerproto.LeaseHeader, lease)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.Lang != "" {
		req.Header.Set("Accept-Language", c.Lang)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := readBody(resp)
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return resp, nil, errNoContent
	case resp.StatusCode == http.StatusConflict:
		return resp, nil, domain.LeaseLost(fmt.Errorf("server: %s", strings.TrimSpace(string(data))))
	case resp.StatusCode >= 300:
		e := problem.Decode(resp.StatusCode, data)
		msg := e.Message
		if len(e.Problems) > 0 {
			msg += ": " + strings.Join(e.Problems, "; ")
		}
		return resp, nil, &ServerError{Status: resp.StatusCode, Message: msg}
	case err != nil:
		return resp, nil, fmt.Errorf("read the answer: %w", err)
	}
	return resp, data, nil
}

// readBody reads an answer of at most maxResponse bytes, into one buffer
// of its announced length (a lease's notebook is tens of kilobytes:
// growing a buffer for it copies it several times).
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= maxResponse {
		buf := make([]byte, n)
		_, err := io.ReadFull(resp.Body, buf)
		return buf, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err == nil && len(data) > maxResponse {
		err = fmt.Errorf("the answer is larger than %d bytes", maxResponse)
	}
	return data, err
}
