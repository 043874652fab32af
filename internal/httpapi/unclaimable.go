package httpapi

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/jobs"
)

// RunnerLister lists the runners seen since a time (store.DB.Runners).
type RunnerLister func(ctx context.Context, since time.Time) ([]fleet.Runner, error)

// WatchUnclaimable adds npugrade_jobs_unclaimable to the metrics: queued
// jobs that no runner seen in the last minute can take, by exercise and
// what they wait for (fleet.WaitingFor), read at scrape time. An alert
// on it catches a fleet in the wrong environment before learners do.
func (m *Metrics) WatchUnclaimable(q *jobs.Queue, runners RunnerLister) {
	m.Registry.MustRegister(&unclaimableCollector{q: q, runners: runners,
		desc: prometheus.NewDesc("npugrade_jobs_unclaimable", "Queued jobs no runner online can take, by exercise and what they wait for.",
			[]string{"exercise", "waiting_for"}, nil)})
}

type unclaimableCollector struct {
	q       *jobs.Queue
	runners RunnerLister
	desc    *prometheus.Desc
}

func (u *unclaimableCollector) Describe(ch chan<- *prometheus.Desc) { ch <- u.desc }

func (u *unclaimableCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pending, err := u.q.Pending(ctx, 1000)
	if err != nil {
		return
	}
	live, err := u.runners(ctx, time.Now().Add(-time.Minute))
	if err != nil {
		return
	}
	type key struct {
		exercise string
		req      domain.Requirement
	}
	counts := map[key]int{}
	for _, j := range pending {
		if j.State == domain.JobQueued {
			counts[key{j.ExerciseID, j.Requires}]++
		}
	}
	out := map[[2]string]int{}
	for k, n := range counts {
		if w := fleet.WaitingFor(k.req, live, false); w != "" {
			out[[2]string{k.exercise, w}] += n
		}
	}
	for k, n := range out {
		ch <- prometheus.MustNewConstMetric(u.desc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}
