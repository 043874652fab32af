// Package runnerclient is the remote runner's side of the runner protocol:
// an HTTP implementation of runner.Source that holds only a runner token,
// never database credentials.
package runnerclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
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
	// WarmSpares, when set, says what the runner's pre-started kernels
	// hold now; registration and heartbeats carry it to the server.
	WarmSpares func() *runnerproto.WarmSpares
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

// Claim implements runner.Source.
func (c *Client) Claim(ctx context.Context) (*domain.Lease, error) {
	wait := c.Wait
	if wait <= 0 {
		wait = runnerproto.MaxPoll
	}
	var l domain.Lease
	err := c.call(ctx, "/jobs/claim", runnerproto.ClaimRequest{RunnerID: c.RunnerID, WaitSeconds: wait.Seconds()}, &l)
	if err == errNoContent {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
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

func (c *Client) call(ctx context.Context, path string, body, out any) error {
	return c.callLease(ctx, path, "", body, out)
}

// callLease is call with the lease token also in runnerproto.LeaseHeader,
// so that the server checks the lease before it reads the body.
func (c *Client) callLease(ctx context.Context, path, lease string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.Server, "/")+runnerproto.BasePath+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if lease != "" {
		req.Header.Set(runnerproto.LeaseHeader, lease)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: runnerproto.MaxPoll + 30*time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 128<<20))
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return errNoContent
	case resp.StatusCode == http.StatusConflict:
		return domain.LeaseLost(fmt.Errorf("server: %s", strings.TrimSpace(string(data))))
	case resp.StatusCode >= 300:
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(data, &p)
		if p.Detail == "" {
			p.Detail = strings.TrimSpace(string(data))
		}
		return fmt.Errorf("server answered %d: %s", resp.StatusCode, p.Detail)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}
