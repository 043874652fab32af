// Package runnerproto is the runner protocol shared by the server's runner
// routes and the remote runner's HTTP client: message types, the base path
// and the protocol version. Bump Version on every incompatible change.
package runnerproto

import (
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
)

// Version of the runner protocol.
const Version = 1

// BasePath is where the runner routes live.
const BasePath = "/api/runner/v1"

// LeaseHeader carries a request's lease token ahead of its body: the
// server checks the lease before it reads a large completion.
const LeaseHeader = "Npugrade-Lease-Token"

// NotebookMediaType is the Jupyter notebook's media type. A claim that
// accepts it (Accept) gets the leased notebook as the response body,
// exactly as stored, and the rest of the lease in LeaseMetaHeader: the
// runner keeps the notebook's bytes without decoding them out of a JSON
// document, and the server writes them without copying them into one. A
// claim that does not ask gets the Lease as one JSON document, as in
// every release of protocol 1.
const NotebookMediaType = "application/x-ipynb+json"

// LeaseMetaHeader carries, with a NotebookMediaType claim response, the
// Lease without its notebook as one line of ASCII JSON.
const LeaseMetaHeader = "Npugrade-Lease"

// MaxPoll is the longest a claim waits on the server (proxies cut idle
// connections at 60 s; stay well below).
const MaxPoll = 25 * time.Second

// RegisterRequest announces a runner and its attested environment.
type RegisterRequest struct {
	Name   string            `json:"name"`
	Slots  int               `json:"slots"`
	Labels map[string]string `json:"labels,omitempty"`
	// Version is the runner's build (buildinfo.Version), for operators
	// matching runners to releases.
	Version string          `json:"version,omitempty"`
	Report  envprobe.Report `json:"report"`
	// WarmSpares is the runner's pre-started kernels (absent: it keeps
	// none). A runner registers once its spares are ready, so the memory
	// is what they hold.
	WarmSpares *WarmSpares `json:"warm_spares,omitempty"`
}

// WarmSpares is what a runner's pre-started kernels (--warm-spares per
// slot) cost: how many it keeps, how many wait for a job now and the
// memory those hold (each a sandboxed kernel with torch imported plus its
// driver). Operators size hosts by it.
type WarmSpares struct {
	PerSlot     int   `json:"per_slot"`
	Kept        int   `json:"kept"`
	Ready       int   `json:"ready"`
	MemoryBytes int64 `json:"memory_bytes"`
}

// RegisterResponse gives the runner its id and the server's lease settings.
type RegisterResponse struct {
	RunnerID        string  `json:"runner_id"`
	Protocol        int     `json:"protocol"`
	LeaseTTLSeconds float64 `json:"lease_ttl_s"`
	PollSeconds     float64 `json:"poll_s"`
	ServerVersion   string  `json:"server_version,omitempty"`
}

// ClaimRequest is a long poll for one job.
type ClaimRequest struct {
	RunnerID    string  `json:"runner_id"`
	WaitSeconds float64 `json:"wait_s,omitempty"`
}

// LeaseRequest carries the lease token that fences every job call.
type LeaseRequest struct {
	LeaseToken string `json:"lease_token"`
}

// HeartbeatRequest extends a lease. A runner may add its warm spares' state
// (with its id): the fleet page and the metrics then show their memory as
// it is now, not only as it was at registration.
type HeartbeatRequest struct {
	LeaseToken string      `json:"lease_token"`
	RunnerID   string      `json:"runner_id,omitempty"`
	WarmSpares *WarmSpares `json:"warm_spares,omitempty"`
}

// HeartbeatResponse tells the runner whether to stop.
type HeartbeatResponse struct {
	Cancel bool `json:"cancel"`
}

// CompleteRequest sends the executed notebook back.
type CompleteRequest struct {
	LeaseToken string                 `json:"lease_token"`
	RunnerID   string                 `json:"runner_id"`
	Result     domain.ExecutionResult `json:"result"`
}

// FailRequest reports an infrastructure failure (the job is retried).
type FailRequest struct {
	LeaseToken string `json:"lease_token"`
	Reason     string `json:"reason"`
}

// DrainRequest announces that a runner stopped claiming jobs (it got
// SIGTERM); it finishes or releases the jobs it holds, then exits.
type DrainRequest struct {
	RunnerID string `json:"runner_id"`
}
