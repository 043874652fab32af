// Package fleet is what the server knows of its runners as instructors
// and admins see them: each registered runner with the environment it
// attested, the scope its runner token may register as, and the Service
// the pages and the API list and drain runners through (implemented by
// package store).
package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/envprobe"
)

// Service lists registered runners and drains them. A draining runner
// finishes what it holds and claims nothing new.
type Service interface {
	// Runners lists runners seen since since (zero: all), most recently
	// seen first.
	Runners(ctx context.Context, since time.Time) ([]Runner, error)
	// SetRunnerDrain drains (true) or resumes (false) runner id; an
	// unknown id is ENOTFOUND.
	SetRunnerDrain(ctx context.Context, id string, drain bool) error
}

// Runner is a registered runner as instructors see it.
type Runner struct {
	ID        string
	Name      string
	Slots     int
	Labels    map[string]string
	Profile   string
	Verdict   string
	Report    envprobe.Report
	Draining  bool
	LastSeen  time.Time
	CreatedAt time.Time
	// WarmSpares is the runner's pre-started kernels and the memory they
	// hold, as it last reported them (zero: it keeps none).
	WarmSpares WarmSpares
	// Allowed is the registering token's scope (a token bound to nothing
	// gets DefaultRunnerProfiles; nil: the server's in-process runner),
	// shown beside what the runner attested.
	Allowed *RunnerScope
}

// WarmSpares is what a runner's pre-started kernels cost: PerSlot and
// Kept (slots × per slot) as configured, Ready waiting for a job when it
// last reported, and the memory those held, in bytes.
type WarmSpares struct {
	PerSlot, Kept, Ready int
	MemoryBytes          int64
}

// RunnerScope is what one runner token may register as: its environment
// report's profile must be one of Profiles, and each of Labels must be
// the registration's value of that label.
type RunnerScope struct {
	Profiles []string          `json:"profiles"`
	Labels   map[string]string `json:"labels"`
}

// DefaultRunnerProfiles is what a runner token bound to no profiles may
// register as: a CPU runner. An NPU runner grades (and records
// references for) the NPU profiles, so claiming one takes an admin's
// `npugrade user add NAME --role runner --profiles npu-a2,cpu`; a token
// that could register any report could claim NPU jobs with made-up
// hardware.
var DefaultRunnerProfiles = []string{"cpu"}

// AllowedProfiles is s.Profiles, or DefaultRunnerProfiles when s binds none.
func (s RunnerScope) AllowedProfiles() []string {
	if len(s.Profiles) == 0 {
		return slices.Clone(DefaultRunnerProfiles)
	}
	return s.Profiles
}

// Refuses says why a registration with profile and labels is outside s,
// or "" when it is inside. The zero scope (a token not bound) allows
// DefaultRunnerProfiles with any labels.
func (s RunnerScope) Refuses(profile string, labels map[string]string) string {
	if allowed := s.AllowedProfiles(); !slices.Contains(allowed, profile) {
		if len(s.Profiles) == 0 {
			return fmt.Sprintf("this runner token is bound to no profiles, so it may register only %s, not %q: an admin allows more with `npugrade user add NAME --role runner --profiles %s,cpu`",
				strings.Join(allowed, ", "), profile, profile)
		}
		return fmt.Sprintf("this runner token may register only profiles %s, not %q", strings.Join(allowed, ", "), profile)
	}
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if labels[k] != s.Labels[k] {
			return fmt.Sprintf("this runner token must register with label %s=%s, not %q", k, s.Labels[k], labels[k])
		}
	}
	return ""
}
